"""One real control plane per test session (`tests/controlplane/controlplane.py`), for the tenant stack of
tests/kubernetes/test_tenants.py: its users (an admin, one user per tenant group) and its pools' Nodes."""

from __future__ import annotations

import pytest
import yaml

from gpushare.stackfile.config import parse_config
from tests.controlplane.controlplane import group_user, register_nodes, start_control_plane, stop_control_plane
from tests.kubernetes.test_tenants import STACK_YAML


@pytest.fixture(scope="session")
def stack():
    return parse_config(yaml.safe_load(STACK_YAML)["config"], source="stacks/Pulumi.shared.yaml", stack="shared")


@pytest.fixture(scope="session")
def control_plane(stack):
    users = {group_user(group): [group] for tenant in stack.tenants for group in tenant.groups}
    users["stranger@example.com"] = ["00000000-0000-4000-8000-00000000dead"]
    plane = start_control_plane(users)
    try:
        plane.nodes = register_nodes(plane, stack)
        yield plane
    finally:
        stop_control_plane(plane)
