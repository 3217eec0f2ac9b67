"""Preflight inside `pulumi preview`/`up`: the real program (`gpushare.components.program.program`, what `__main__.py` runs) under the mock engine, its Azure reads (the guard's
agent-pool list, preflight's three region reads) going to the local ARM stub through the real SDK clients, in the
subscription the provider reports."""

from __future__ import annotations

import pulumi
import pytest

from gpushare.render.mock_engine import MOCK_SUBSCRIPTION, run_program
from gpushare.stackfile.config import encode_engine_config, read_stack_file
from gpushare.stackfile.project import resolve_stack_file
from tests.azure.preflight_region import A100, A100_FAMILY, NO_CLUSTER, serve_region, usages, vm_sizes
from tests.azure_stub import (
    ArmStub,
    StubResponse,
    arm_agent_pool,
    arm_error,
    arm_managed_cluster,
    managed_cluster_id,
    reach_from_environment,
)

AGENT_POOL = "azure-native:containerservice:AgentPool"
STACK = "contoso-prod"  # one pool: a100mig, 1 x Standard_ND96asr_v4 (96 vCPUs), westeurope
RG, CLUSTER = "contoso-prod-rg", "contoso-prod"
CLUSTER_PATH = managed_cluster_id(MOCK_SUBSCRIPTION, RG, CLUSTER)
A100_SHORT = usages(**{A100_FAMILY: (350, 400)})  # 50 free, 96 needed


@pytest.fixture
def arm(monkeypatch):
    """The stub as the program reaches it: GPUSHARE_ARM_ENDPOINT, its CA through REQUESTS_CA_BUNDLE, no proxy."""
    with ArmStub() as stub:
        reach_from_environment(monkeypatch, stub)
        # The cluster guard's read: no cluster yet, unless a test routes one.
        stub.route(CLUSTER_PATH, NO_CLUSTER)
        yield stub


def program(*, live: bool = True, deployed=None, **settings: str):
    raw = read_stack_file(resolve_stack_file(STACK)).config
    raw.update({f"gpushare:{key}": value for key, value in settings.items()})
    return run_program(STACK, encode_engine_config(raw), live_guard=live, deployed=deployed, check=False)


def test_passing_preflight_deploys_after_four_reads_sharing_the_guards(arm):
    paths = serve_region(arm, MOCK_SUBSCRIPTION, RG, CLUSTER)

    recording = program()

    assert recording.error is None, recording.error
    assert len(recording.by_type(AGENT_POOL)) == 1
    assert {path: arm.count(path) for path in paths.values()} == {path: 1 for path in paths.values()}
    assert arm.count(CLUSTER_PATH) == 1  # and the cluster guard's one cluster read
    assert len(arm.requests) == 5


def test_strict_failure_stops_before_any_pool_registers(arm):
    serve_region(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, quota=A100_SHORT)

    recording = program()

    assert isinstance(recording.error, pulumi.RunError)
    message = str(recording.error)
    assert message.startswith("preflight: 1 check failed for stack contoso-prod in westeurope")
    assert f"- quota {A100_FAMILY}: needs 96 vCPUs at most (a100mig 1 x 96); 50 free" in message
    assert "fix: request a limit of at least 446 vCPUs" in message
    assert recording.by_type(AGENT_POOL) == []


def test_warn_logs_the_findings_and_deploys(arm):
    serve_region(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, skus=[s for s in vm_sizes() if s["name"] != A100])

    recording = program(preflight="warn")

    assert recording.error is None
    assert len(recording.by_type(AGENT_POOL)) == 1
    assert any(w.startswith(f"preflight (gpushare:preflight is warn): vm-size pool a100mig ({A100}): {A100} is not "
                            "offered in westeurope") for w in recording.warnings), recording.warnings


def test_off_reads_only_what_the_guard_needs(arm):
    paths = serve_region(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, quota=A100_SHORT)

    recording = program(preflight="off")

    assert recording.error is None
    assert [r.path for r in arm.requests] == [paths["pools"], CLUSTER_PATH]


def test_existing_cluster_uses_the_guards_read(arm):
    running = StubResponse(200, {"value": [
        arm_agent_pool(MOCK_SUBSCRIPTION, RG, CLUSTER, "system", vmSize="Standard_D4ds_v5", count=2, mode="System"),
        arm_agent_pool(MOCK_SUBSCRIPTION, RG, CLUSTER, "a100mig", vmSize=A100, count=1, mode="User",
                       gpuInstanceProfile="MIG1g", nodeLabels={"gpushare.io/pool": "a100mig"}),
    ]})
    # The running node's 96 vCPUs are in the usage already: only 50 more are free, and none are needed.
    paths = serve_region(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, pools=running, quota=A100_SHORT)
    arm.route(CLUSTER_PATH, StubResponse(200, arm_managed_cluster(MOCK_SUBSCRIPTION, RG, CLUSTER)))

    recording = program()

    assert recording.error is None, recording.error
    assert arm.count(paths["pools"]) == 1


def test_unreadable_region_follows_the_guard_setting(arm):
    paths = serve_region(arm, MOCK_SUBSCRIPTION, RG, CLUSTER)
    arm.route(paths["usages"], StubResponse(403, arm_error("AuthorizationFailed", "refused")))

    strict = program()
    warn = program(guard="warn")

    assert isinstance(strict.error, pulumi.RunError)
    assert "Reader role on the subscription" in str(strict.error)
    assert "`gpushare:guard: warn` deploys without these checks" in str(strict.error)
    assert strict.by_type(AGENT_POOL) == []
    assert warn.error is None and len(warn.by_type(AGENT_POOL)) == 1
    assert any("Continuing without preflight because gpushare:guard is warn" in w for w in warn.warnings)


def test_offline_plan_and_deployed_file_read_nothing(arm, tmp_path):
    serve_region(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, quota=A100_SHORT)
    saved = tmp_path / "pools.json"
    saved.write_text('[{"name": "system", "vmSize": "Standard_D4ds_v5", "count": 2, "mode": "System"}]')

    offline = program(live=False)
    against_file = program(live=False, deployed=saved)

    assert offline.error is None and against_file.error is None
    assert arm.requests == []
