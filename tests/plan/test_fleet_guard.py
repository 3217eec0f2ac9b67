"""The guard's rules hold for every fleet member: no fleet change deletes or replaces a GPU pool.

Two halves. The fleet's own program (`fleet_program`) registers Fleet Manager resources only, never an agent pool
or a cluster, so nothing it does can touch a pool (`test_the_fleet_program_registers_no_pool_or_cluster`). What a
fleet change does to a member reaches it through its own stack (`gpushare:fleet` adds the fleet's tenants), planned
and deployed by the member's own run, where its guard judges it: every change to the fleet file leaves each member's
pools and their create-only inputs as they are, and the guard, given the pools as the base deployed them, finds
nothing to refuse (`test_no_fleet_change_deletes_or_replaces_a_members_gpu_pool`); a member's own change that would
replace a pool is still refused by its run (`test_each_members_own_run_still_refuses_a_pool_replacement`)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from gpushare.azure.agent_pool_request import CREATE_ONLY_INPUTS
from gpushare.azure.deployed import DeployedPool, read_file
from gpushare.azure.guard.guard_runs import evaluate
from gpushare.components.fleet_program import fleet_program
from gpushare.plan.fleet_plan import build_fleet_plan
from gpushare.plan.stack_plan import StackPlan, build_plan
from gpushare.render.mock_engine import run_pulumi
from gpushare.stackfile.config import parse_stack_file
from gpushare.stackfile.files import read_stack_file
from gpushare.stackfile.fleet_config import load_fleet
from tests.fleet_files import MEMBER_STACKS, VISION_GROUP, fleet_doc, write_fleet
from tests.stack_files import run_cli

CS = "azure-native:containerservice"
FLEET_MANAGER_TYPES = {"azure-native:resources:ResourceGroup", f"{CS}:Fleet", f"{CS}:FleetMember",
                       f"{CS}:FleetUpdateStrategy", f"{CS}:AutoUpgradeProfile"}


def _tenant_added(fleet: dict, stacks: dict) -> None:
    """A second fleet tenant, on eu's A100 slices and on the canary lab's T4 shares."""
    fleet["tenants"].append({"name": "speech", "groups": ["9b2f0c1e-5d4a-4b3c-8e2f-1a0b9c8d7e6f"],
                             "members": {"eu": {"pools": ["a100mig"], "quota": {"pools": {"a100mig": 2}}},
                                         "lab": {"pools": ["t4ts"]}}})


def _tenant_removed(fleet: dict, stacks: dict) -> None:
    """vision leaves the fleet: us's H100 pool, dedicated to it, is dedicated to no one."""
    fleet["tenants"] = []


def _quota_changed(fleet: dict, stacks: dict) -> None:
    fleet["tenants"][0]["members"]["eu"]["quota"] = {"pools": {"a100mig": 2}}


def _roles_changed(fleet: dict, stacks: dict) -> None:
    """us joins the canary stage, and dispatch moves to it."""
    fleet["members"][2] = {"stack": "us", "canary": True, "group": "canary"}
    fleet["dispatch"]["manager"] = "us"


def _timing_changed(fleet: dict, stacks: dict) -> None:
    fleet["updates"] = {"canaryWaitSeconds": 600}


def _member_leaves(fleet: dict, stacks: dict) -> None:
    """us leaves the fleet (and its stack file names the fleet no more); it keeps vision as its own tenant."""
    fleet["members"] = fleet["members"][:2]
    del fleet["tenants"][0]["members"]["us"]
    del stacks["us"]["gpushare:fleet"]
    stacks["us"]["gpushare:tenants"] = [{"name": "vision", "groups": [VISION_GROUP], "pools": ["h100"]}]


FLEET_CHANGES = [_tenant_added, _tenant_removed, _quota_changed, _roles_changed, _timing_changed, _member_leaves]


def _stacks_after(base: Path, head: Path) -> dict[str, Any]:
    """Each base member's stack as the head validates it: through the head fleet, or on its own once it left."""
    fleet = load_fleet(head / "fleet.yaml")
    return {stack: fleet.stacks.get(stack) or parse_stack_file(read_stack_file(head / f"Pulumi.{stack}.yaml"))
            for stack in load_fleet(base / "fleet.yaml").stacks}


def deployed_as_planned(plan: StackPlan) -> list[DeployedPool]:
    """The cluster's pools as Azure reports them once `plan` is deployed: its system pool and each GPU pool as its
    AgentPool request sent it (read through the guard's own file reader)."""
    profiles: list[dict[str, Any]] = [{"name": "system", "vmSize": "Standard_D4ds_v5", "count": 2, "mode": "System",
                                       "osSKU": "Ubuntu"}]
    for name, pool in plan.pools.items():
        inputs = pool.request.inputs
        profile = {"name": name, "vmSize": inputs["vm_size"], "mode": "User", "osSKU": inputs["os_sku"],
                   "nodeLabels": inputs["node_labels"], "nodeTaints": inputs["node_taints"],
                   "count": inputs["count"], "enableAutoScaling": bool(inputs.get("enable_auto_scaling")),
                   "minCount": inputs.get("min_count"), "maxCount": inputs.get("max_count")}
        if inputs["gpu_instance_profile"]:
            profile["gpuInstanceProfile"] = inputs["gpu_instance_profile"]
        profiles.append(profile)
    return profiles


def _read(profiles: list[dict[str, Any]], tmp_path: Path) -> list[DeployedPool]:
    path = tmp_path / "deployed.json"
    path.write_text(json.dumps(profiles))
    return read_file(path)


def _create_only(plan: StackPlan) -> dict[str, dict[str, Any]]:
    return {name: {entry.keyword: pool.request.inputs.get(entry.keyword) for entry in CREATE_ONLY_INPUTS}
            for name, pool in plan.pools.items()}


@pytest.mark.parametrize("change", FLEET_CHANGES, ids=lambda change: change.__name__.strip("_"))
def test_no_fleet_change_deletes_or_replaces_a_members_gpu_pool(change, tmp_path):
    write_fleet(tmp_path / "base")
    fleet, stacks = fleet_doc(), copy.deepcopy(MEMBER_STACKS)
    change(fleet, stacks)
    write_fleet(tmp_path / "head", fleet, stacks)
    base = build_fleet_plan(load_fleet(tmp_path / "base" / "fleet.yaml"))
    after = _stacks_after(tmp_path / "base", tmp_path / "head")
    for member in base.members:
        stack = member.member.stack
        head_plan = build_plan(after[stack])
        # The same pools, each with the inputs AKS fixes at creation unchanged: nothing to replace or delete.
        assert list(head_plan.pools) == list(member.plan.pools), stack
        assert _create_only(head_plan) == _create_only(member.plan), stack
        # The member's guard, given its pools as the base deployed them, refuses nothing.
        deployed = _read(deployed_as_planned(member.plan), tmp_path)
        report = evaluate(after[stack], deployed, "deployed.json", head_plan.pool_facts)
        assert report.violations == (), (stack, [v.message for v in report.violations])
        assert report.recreated == () and report.removed == (), stack


def test_the_fleet_program_registers_no_pool_or_cluster(tmp_path):
    """Whatever the fleet file says (each change above), the fleet stack's AKS resources are Fleet Manager's only:
    no agent pool, no managed cluster (what else it registers on the members' clusters, for dispatch, are
    Kubernetes objects, which cannot delete or replace an AKS node pool)."""
    for change in [None, *FLEET_CHANGES]:
        fleet, stacks = fleet_doc(), copy.deepcopy(MEMBER_STACKS)
        if change:
            change(fleet, stacks)
        path = write_fleet(tmp_path / (change.__name__ if change else "base"), fleet, stacks)
        recording = run_pulumi(fleet_program, config={"gpushare:fleetFile": str(path)})
        types = {r.type for r in recording.resources if r.custom}
        assert not types & {f"{CS}:AgentPool", f"{CS}:ManagedCluster"}
        assert {t for t in types if t.startswith(f"{CS}:")} <= FLEET_MANAGER_TYPES
        assert f"{CS}:FleetMember" in types


def test_each_members_own_run_still_refuses_a_pool_replacement(tmp_path, capsys):
    """A member's run (here `plan STACK --deployed FILE`, the real program with the guard) with the fleet's tenants
    merged in is guarded as any stack: a deployed pool of another MIG profile is a replacement it refuses."""
    path = write_fleet(tmp_path)
    plans = {m.member.stack: m.plan for m in build_fleet_plan(load_fleet(path)).members}
    profiles = deployed_as_planned(plans["eu"])
    profiles[1]["gpuInstanceProfile"] = "MIG2g"
    deployed = tmp_path / "eu-deployed.json"
    deployed.write_text(json.dumps(profiles))
    code, out, err = run_cli(capsys, "plan", str(tmp_path / "Pulumi.eu.yaml"), "--deployed", str(deployed))
    assert code == 3, err  # the guard's refusal (GuardViolationError), as `pulumi up` would stop
    assert "a100mig" in err and "gpuInstanceProfile" in err and "MIG2g" in err
    # As deployed, the member (vision, the fleet's tenant, included) plans with its guard satisfied.
    deployed.write_text(json.dumps(deployed_as_planned(plans["eu"])))
    code, out, err = run_cli(capsys, "plan", str(tmp_path / "Pulumi.eu.yaml"), "--deployed", str(deployed), "--json")
    assert code == 0, err
    assert {t["name"] for t in json.loads(out)["tenants"]} == {"nlp", "vision"}
