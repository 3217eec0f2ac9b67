"""One real control plane per test session (`tests/controlplane/controlplane.py`), for the tenant stack of
tests/kubernetes/admission/test_tenant_admission.py: its users (an admin, one user per tenant group, a reader), its
pools' Nodes, and every Kubernetes object `plan` renders for it, applied once (`applied`)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
import yaml

from gpushare.cli import main
from gpushare.stackfile.config import parse_config
from tests.controlplane.controlplane import (
    READER,
    apply_rendered,
    group_user,
    register_nodes,
    start_control_plane,
    stop_control_plane,
)
from tests.kubernetes.admission.test_tenant_admission import STACK_YAML


@pytest.fixture(scope="session")
def stack():
    return parse_config(yaml.safe_load(STACK_YAML)["config"], source="stacks/Pulumi.shared.yaml", stack="shared")


@pytest.fixture(scope="session")
def stack_file(tmp_path_factory):
    """STACK_YAML as a stack file, for the commands (`plan`, `verify`)."""
    path = tmp_path_factory.mktemp("stack") / "Pulumi.shared.yaml"
    path.write_text(STACK_YAML)
    return path


@pytest.fixture(scope="session")
def plan_document(stack_file):
    """`gpushare plan STACK --json`, run in-process."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", str(stack_file), "--json"]) == 0
    return json.loads(out.getvalue())


@pytest.fixture(scope="session")
def control_plane(stack):
    users = {group_user(group): [group] for tenant in stack.tenants for group in tenant.groups}
    users["stranger@example.com"] = ["00000000-0000-4000-8000-00000000dead"]
    users[READER] = []
    plane = start_control_plane(users)
    try:
        plane.nodes = register_nodes(plane, stack)
        yield plane
    finally:
        stop_control_plane(plane)


@pytest.fixture(scope="session")
def applied(control_plane, stack, plan_document):
    """Every Kubernetes object the plan renders but the GPU Operator's Helm release, created as the admin in the
    plan's order (`apply_rendered`); (the plan's resources, the objects, what the API server returned)."""
    return apply_rendered(control_plane, stack, plan_document)
