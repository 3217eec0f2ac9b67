"""GpuFleet and the fleet program under the mock engine, against the pinned pulumi-azure-native's Fleet types: the
Fleet, a FleetMember per member cluster (the existing one too) with its ARM ID and update group, the update strategy
whose stages follow the fleet file, the NodeImage auto-upgrade profile on it, and never an agent pool or a cluster."""

import pulumi
import pytest

from gpushare.components.fleet_program import fleet_plan, fleet_program
from gpushare.components.gpu_fleet import GpuFleet, GpuFleetArgs
from gpushare.render.mock_engine import MOCK_SUBSCRIPTION, run_pulumi
from tests.fleet_files import EU_SUBSCRIPTION, fleet_doc, write_fleet

CS = "azure-native:containerservice"


def test_the_fleet_its_members_strategy_and_auto_upgrade(tmp_path):
    plan = fleet_plan(write_fleet(tmp_path))
    recording = run_pulumi(lambda: GpuFleet("fleet", GpuFleetArgs(plan=plan.manager)))
    assert recording.get("azure-native:resources:ResourceGroup", "fleet-rg").inputs == {
        "resourceGroupName": "rg-gpu-fleet", "location": "westeurope"}
    assert recording.get(f"{CS}:Fleet", "fleet-fleet").inputs == {
        "resourceGroupName": "rg-gpu-fleet", "fleetName": "gpu-fleet", "location": "westeurope"}
    members = {r.name: r.inputs for r in recording.resources if r.type == f"{CS}:FleetMember"}
    cluster_id = "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.ContainerService/managedClusters/{}"
    assert members == {
        # lab is an existing cluster and names no subscription: the fleet program's own.
        "fleet-member-lab": {"resourceGroupName": "rg-gpu-fleet", "fleetName": "gpu-fleet", "fleetMemberName": "lab",
                             "group": "canary",
                             "clusterResourceId": cluster_id.format(MOCK_SUBSCRIPTION, "rg-platform", "platform-aks")},
        "fleet-member-eu": {"resourceGroupName": "rg-gpu-fleet", "fleetName": "gpu-fleet", "fleetMemberName": "eu",
                            "group": "regions",
                            "clusterResourceId": cluster_id.format(EU_SUBSCRIPTION, "rg-gpu-eu", "gpu-eu")},
        "fleet-member-us": {"resourceGroupName": "rg-gpu-fleet", "fleetName": "gpu-fleet", "fleetMemberName": "us",
                            "group": "regions",
                            "clusterResourceId": cluster_id.format(MOCK_SUBSCRIPTION, "rg-gpu-us", "gpu-us")},
    }
    strategy = recording.get(f"{CS}:FleetUpdateStrategy", "fleet-strategy")
    assert strategy.inputs == {
        "resourceGroupName": "rg-gpu-fleet", "fleetName": "gpu-fleet", "updateStrategyName": "gpushare",
        "strategy": {"stages": [
            {"name": "gpu-canary", "groups": [{"name": "canary"}], "afterStageWaitInSeconds": 1800},
            {"name": "fleet", "groups": [{"name": "regions"}]}]}}
    # A stage names groups that must exist on members, so the strategy waits for every member.
    assert set(strategy.depends_on) >= {"fleet-member-lab", "fleet-member-eu", "fleet-member-us"}
    auto = recording.get(f"{CS}:AutoUpgradeProfile", "fleet-auto-upgrade")
    assert auto.inputs["channel"] == "NodeImage"
    assert auto.inputs["nodeImageSelection"] == {"type": "Latest"}
    assert auto.inputs["autoUpgradeProfileName"] == "gpushare-nodeimage"
    assert auto.inputs["updateStrategyId"]  # the strategy's ID: node-image runs follow its stages
    assert "fleet-strategy" in auto.depends_on
    types = {r.type for r in recording.resources if r.custom}
    assert not types & {f"{CS}:AgentPool", f"{CS}:ManagedCluster"}  # no fleet change can touch a GPU pool


def test_without_auto_upgrade_and_in_an_existing_resource_group(tmp_path):
    document = fleet_doc()
    del document["updates"]["autoUpgrade"]
    document["fleet"]["resourceGroupExists"] = True
    plan = fleet_plan(write_fleet(tmp_path, document))
    recording = run_pulumi(lambda: GpuFleet("fleet", GpuFleetArgs(plan=plan.manager)))
    types = [r.type for r in recording.resources if r.custom]
    assert f"{CS}:AutoUpgradeProfile" not in types and "azure-native:resources:ResourceGroup" not in types
    assert types.count(f"{CS}:FleetMember") == 3


def test_the_fleet_program_exports_and_refuses_a_bad_file(tmp_path):
    path = write_fleet(tmp_path)
    recording = run_pulumi(fleet_program, config={"gpushare:fleetFile": str(path)})
    assert recording.exports["members"] == {
        "lab": {"group": "canary", "stage": "gpu-canary", "region": "swedencentral"},
        "eu": {"group": "regions", "stage": "fleet", "region": "westeurope"},
        "us": {"group": "regions", "stage": "fleet", "region": "eastus"}}
    document = fleet_doc()
    document["members"][0]["canary"] = False
    bad = write_fleet(tmp_path / "bad", document)
    with pytest.raises(pulumi.RunError, match="members: no canary"):
        fleet_plan(bad)

