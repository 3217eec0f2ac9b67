"""`gpushare fleet preflight FLEET_FILE` end to end against the local HTTPS ARM stub, through the real SDK clients:
every member's own checks, and the vCPU quota of each subscription's region counted once across the members there.
Two members in westeurope each need 48 NCads A100 vCPUs where 48 are free: each passes its own `preflight`, the
fleet's fails, short by 48; a member in another subscription and region has its own quota."""

from __future__ import annotations

import json

import pytest

from tests.azure.preflight_region import NO_CLUSTER, kubernetes_versions, serve_region, usages, vm_sizes
from tests.azure_stub import (
    StubResponse,
    agent_pools_path,
    arm_agent_pool,
    arm_usage,
    arm_vm_sku,
    kubernetes_versions_path,
    managed_cluster_id,
    reached_arm,
    resource_skus_path,
    usages_path,
)
from tests.fleet_files import write_fleet
from tests.stack_files import run_cli

SUB = "3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3"
US_SUB = "0b9e1c2d-3a4f-4e5d-8c7b-6a5f4e3d2c1b"
NC_A100 = "Standard_NC24ads_A100_v4"
NC_A100_FAMILY = "StandardNCADSA100v4Family"
H100 = "Standard_NC40ads_H100_v5"
H100_FAMILY = "StandardNCadsH100v5Family"
CLUSTERS = {"eu1": ("gpu-eu1", "rg-gpu-eu1"), "eu2": ("gpu-eu2", "rg-gpu-eu2"), "us": ("gpu-us", "rg-gpu-us")}


def member(stack: str, region: str, pool: dict, extra: dict | None = None) -> dict:
    name, group = CLUSTERS[stack]
    return {"azure-native:location": region, **(extra or {}),
            # The stub region's calendar is older than gpushare's: 1.33 is LTS-only now (as test_preflight_command).
            "gpushare:cluster": {"name": name, "resourceGroup": group, "kubernetesVersion": "1.33",
                                 "tier": "Premium", "supportPlan": "AKSLongTermSupport"},
            "gpushare:pools": [pool], "gpushare:fleet": "fleet.yaml"}


STACKS = {
    "eu1": member("eu1", "westeurope", {"name": "a100", "vmSize": NC_A100, "count": 2}),
    "eu2": member("eu2", "westeurope", {"name": "a100", "vmSize": NC_A100, "count": 2}),
    "us": member("us", "eastus", {"name": "h100", "vmSize": H100, "count": 1},
                 {"azure-native:subscriptionId": US_SUB}),
}
FLEET = {"fleet": {"name": "gpu-fleet", "resourceGroup": "rg-gpu-fleet", "location": "westeurope"},
         "members": [{"stack": "eu1", "canary": True, "group": "canary"}, {"stack": "eu2", "group": "rest"},
                     {"stack": "us", "group": "rest"}]}


def a100_usages(current: int = 0, limit: int = 48) -> list[dict]:
    return [*usages(), arm_usage(NC_A100_FAMILY, "Standard NCADS_A100_v4 Family vCPUs", current, limit)]


def serve(arm, a100: list[dict] | None = None, eu2_pools: StubResponse = NO_CLUSTER) -> dict[str, str]:
    """westeurope in SUB (eu1, eu2) and eastus in US_SUB (us), no cluster made yet unless `eu2_pools`."""
    paths = serve_region(arm, SUB, CLUSTERS["eu1"][1], CLUSTERS["eu1"][0],
                         skus=vm_sizes(arm_vm_sku(NC_A100, NC_A100_FAMILY, 24, "westeurope", gpus=1)),
                         quota=a100_usages() if a100 is None else a100)
    name, group = CLUSTERS["eu2"]
    arm.route(agent_pools_path(SUB, group, name), eu2_pools)
    arm.route(managed_cluster_id(SUB, group, name), NO_CLUSTER)
    arm.route(resource_skus_path(US_SUB), StubResponse(200, {"value": [
        arm_vm_sku("Standard_D4ds_v5", "standardDDSv5Family", 4, "eastus"),
        arm_vm_sku(H100, H100_FAMILY, 40, "eastus", zones=("1", "2"), gpus=1)]}))
    arm.route(usages_path(US_SUB, "eastus"), StubResponse(200, {"value": usages()}))
    arm.route(kubernetes_versions_path(US_SUB, "eastus"), StubResponse(200, kubernetes_versions()))
    name, group = CLUSTERS["us"]
    arm.route(agent_pools_path(US_SUB, group, name), NO_CLUSTER)
    arm.route(managed_cluster_id(US_SUB, group, name), NO_CLUSTER)
    return paths


@pytest.fixture
def arm(monkeypatch):
    with reached_arm(monkeypatch, SUB) as stub:
        yield stub


def test_two_members_in_one_region_share_its_quota_once(arm, tmp_path, capsys):
    path = write_fleet(tmp_path, FLEET, STACKS)
    paths = serve(arm)
    # Alone, each westeurope member fits: 2 nodes x 24 vCPUs = 48, and 48 are free.
    for stack in ("eu1", "eu2"):
        code, out, err = run_cli(capsys, "preflight", str(tmp_path / f"Pulumi.{stack}.yaml"))
        assert code == 0, out + err
    arm.requests.clear()

    code, out, err = run_cli(capsys, "fleet", "preflight", str(path), "--json")

    assert code == 1
    report = json.loads(out)
    assert report["kind"] == "gpushare-fleet-preflight" and report["passed"] is False
    assert [m["stack"] for m in report["members"]] == ["eu1", "eu2", "us"]
    assert all(c["check"] != "quota" for m in report["members"] for c in m["checks"])
    assert all(m["passed"] for m in report["members"])  # every member's own checks pass
    quota = {(q["subscriptionId"], q["region"]): q for q in report["quota"]}
    assert set(quota) == {(SUB, "westeurope"), (US_SUB, "eastus")}
    west = quota[(SUB, "westeurope")]
    assert west["members"] == ["eu1", "eu2"]
    (a100,) = [c for c in west["checks"] if c["subject"] == NC_A100_FAMILY]
    assert a100["verdict"] == "fail"
    assert a100["detail"] == ("needs 96 vCPUs at most (eu1 pool a100 2 x 24; eu2 pool a100 2 x 24); 48 free "
                              "(limit 48, in use 0): short by 48 vCPUs in westeurope")
    assert "value=96" in a100["fix"]
    # The regional total sums both clusters too: their system pools and A100s.
    (cores,) = [c for c in west["checks"] if c["subject"] == "cores"]
    assert "eu1 system pool" in cores["detail"] and "eu2 pool a100" in cores["detail"]
    assert quota[(US_SUB, "eastus")]["members"] == ["us"]
    assert {c["verdict"] for c in quota[(US_SUB, "eastus")]["checks"]} == {"pass"}
    # One error naming the failed row; the region's three reads once for its two members.
    assert err.startswith("error: fleet preflight: 1 check failed for fleet gpu-fleet: westeurope (subscription "
                          f"{SUB}): quota {NC_A100_FAMILY}")
    assert {name: arm.count(p) for name, p in paths.items() if name != "pools"} == {
        "skus": 1, "usages": 1, "versions": 1}
    assert arm.count(usages_path(US_SUB, "eastus")) == 1
    assert len(arm.requests) == 3 + 3 + 3  # two regions' reads, and each member's agent pools


def test_quota_that_fits_all_members_passes_with_the_table(arm, tmp_path, capsys):
    path = write_fleet(tmp_path, FLEET, STACKS)
    serve(arm, a100=a100_usages(limit=96))
    code, out, err = run_cli(capsys, "fleet", "preflight", str(path))
    assert code == 0, err
    assert out.startswith(f"Fleet preflight for gpu-fleet ({path}): 3 members in 2 regions")
    assert f"Quota in westeurope, subscription {SUB}: members eu1, eu2 counted together" in out
    assert "eu1 pool a100 2 x 24; eu2 pool a100 2 x 24); 96 free" in out
    assert out.count("Preflight for stack ") == 3
    assert out.rstrip().endswith("All checks passed")


def test_a_running_cluster_counts_only_its_growth(arm, tmp_path, capsys):
    """eu2's cluster runs its 2 A100 nodes already (in use 48 of 96): only eu1's 48 more are needed."""
    path = write_fleet(tmp_path, FLEET, STACKS)
    name, group = CLUSTERS["eu2"]
    running = StubResponse(200, {"value": [
        arm_agent_pool(SUB, group, name, "system", vmSize="Standard_D4ds_v5", count=2, mode="System"),
        arm_agent_pool(SUB, group, name, "a100", vmSize=NC_A100, count=2, mode="User")]})
    serve(arm, a100=a100_usages(current=48, limit=96), eu2_pools=running)
    code, out, err = run_cli(capsys, "fleet", "preflight", str(path), "--json")
    assert code == 0, err
    west = next(q for q in json.loads(out)["quota"] if q["region"] == "westeurope")
    (a100,) = [c for c in west["checks"] if c["subject"] == NC_A100_FAMILY]
    assert a100["detail"] == ("needs 48 vCPUs more than the clusters run now (eu1 pool a100 2 x 24; eu2 pool a100 "
                              "2 - 2 running x 24); 48 free (limit 96, in use 48)")


def test_no_subscription_for_members_exits_2_naming_each_before_any_call(arm, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID")
    code, out, err = run_cli(capsys, "fleet", "preflight", str(write_fleet(tmp_path, FLEET, STACKS)))
    assert code == 2 and out == ""
    assert "member eu1: " in err and "member eu2: " in err and "member us" not in err
    assert arm.requests == []


def test_an_invalid_fleet_exits_2(arm, tmp_path, capsys):
    document = {**FLEET, "members": [{"stack": "eu1", "canary": True}, {"stack": "nowhere"}]}
    code, _, err = run_cli(capsys, "fleet", "preflight", str(write_fleet(tmp_path, document, STACKS)))
    assert code == 2 and "members[1].stack: no stack file" in err
    assert arm.requests == []
