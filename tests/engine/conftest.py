"""The engine tier's session: the tools built (tools/pulumi/build), a real control plane of its own
(tests/controlplane/controlplane.py; not the one tests/controlplane shares, whose objects this stack's would clash
with) and the stand-in chart repository."""

from __future__ import annotations

import shutil

import pytest

from tests.controlplane.controlplane import start_control_plane, stop_control_plane
from tests.engine.chart_repo import ChartRepository
from tests.engine.engine import Engine, built_tools


@pytest.fixture(scope="session")
def engine_tools():
    return built_tools()


@pytest.fixture(scope="session")
def engine_control_plane(engine_tools):
    plane = start_control_plane({})
    try:
        yield plane
    finally:
        stop_control_plane(plane)


@pytest.fixture(scope="session")
def chart_repository():
    from gpushare.model.stack import DEFAULT_CHART_VERSION

    with ChartRepository(DEFAULT_CHART_VERSION) as repository:
        yield repository


@pytest.fixture(scope="session")
def engine(engine_tools):
    started = Engine.start(engine_tools)
    yield started
    shutil.rmtree(started.folder, ignore_errors=True)
