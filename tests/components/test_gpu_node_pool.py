"""GpuNodePool under the mock engine: what the AgentPool sends to Azure and which options protect it."""

import pulumi
import pytest

from gpushare.azure.agent_pool_request import agent_pool_request
from gpushare.components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from gpushare.model.catalog import MigProfile, find_vm_size
from gpushare.model.stack import Autoscale, DriverOwner, GpuPool, Sharing, SharingStrategy, Spot, Upgrade
from gpushare.render.mock_engine import run_pulumi
from gpushare.sharing.node_labels import pool_node_labels
from gpushare.sharing.pool_facts import derive_pool_facts
from tests.builders import stack

AGENT_POOL = "azure-native:containerservice:AgentPool"


def request(pool: GpuPool, driver=DriverOwner.AKS, **kwargs):
    """The pool's request, named by cluster c1 in c1-rg, as the plan builds it."""
    return agent_pool_request(derive_pool_facts(stack(pool, driver=driver))[pool.name], driver, cluster_name="c1",
                              resource_group_name="c1-rg", **kwargs)


def build(*pools: GpuPool, driver=DriverOwner.AKS):
    """Register the pools chained in order, as the program does."""
    config = stack(*pools, driver=driver)

    def program():
        previous = None
        for pool in pools:
            facts = derive_pool_facts(config)[pool.name]
            node_pool = GpuNodePool(pool.name, GpuNodePoolArgs(
                request=agent_pool_request(facts, driver, cluster_name="c1", resource_group_name="c1-rg"),
                cluster_name="c1", resource_group_name="c1-rg", after=previous))
            previous = node_pool.agent_pool
    return run_pulumi(program)


MIG = GpuPool(name="a100mig", vm_size=find_vm_size("Standard_ND96asr_v4"), mig=MigProfile.MIG1G)
T4 = GpuPool(name="t4ts", vm_size=find_vm_size("Standard_NC4as_T4_v3"),
             sharing=Sharing(SharingStrategy.TIME_SLICING, 4), count=None, autoscale=Autoscale(0, 3), zones=("1", "2"))
WHOLE = GpuPool(name="h100", vm_size=find_vm_size("Standard_NC40ads_H100_v5"), count=2)


def test_mig_pool_sends_profile_labels_and_taint():
    agent_pool = build(MIG).get(AGENT_POOL, "a100mig-agentpool")
    inputs = agent_pool.inputs
    assert inputs["gpuInstanceProfile"] == "MIG1g"
    assert inputs["vmSize"] == "Standard_ND96asr_v4"
    assert inputs["agentPoolName"] == "a100mig"
    assert (inputs["resourceName"], inputs["resourceGroupName"]) == ("c1", "c1-rg")
    assert inputs["mode"] == "User" and inputs["osType"] == "Linux" and inputs["osSKU"] == "Ubuntu"
    assert inputs["nodeTaints"] == ["nvidia.com/gpu=present:NoSchedule"]
    assert inputs["nodeLabels"] == pool_node_labels(stack(MIG), MIG)
    assert inputs["nodeLabels"]["gpushare.io/pool"] == "a100mig"
    assert inputs["count"] == 1
    assert "gpuProfile" not in inputs, "driver owned by AKS: leave gpuProfile unset (AKS default Install)"
    assert agent_pool.parent == "a100mig"


@pytest.mark.parametrize("pool", [T4, WHOLE], ids=["time-slicing", "whole-gpu"])
def test_non_mig_pools_never_send_gpu_instance_profile(pool):
    inputs = build(pool).get(AGENT_POOL, f"{pool.name}-agentpool").inputs
    assert "gpuInstanceProfile" not in inputs


def test_every_gpu_pool_is_protected_unless_recreate_is_accepted():
    recording = build(MIG, GpuPool(name="again", vm_size=MIG.vm_size, mig=MigProfile.MIG2G, recreate=True))
    assert recording.get(AGENT_POOL, "a100mig-agentpool").protect is True
    assert recording.get(AGENT_POOL, "again-agentpool").protect is False


def test_create_only_fields_replace_the_pool_deleting_the_old_one_first():
    agent_pool = build(MIG).get(AGENT_POOL, "a100mig-agentpool")
    # azure-native force-replaces vmSize and gpuInstanceProfile itself; gpushare adds the other create-only inputs.
    assert sorted(agent_pool.replace_on_changes) == [
        "availabilityZones", "gpuProfile", "maxPods", "osDiskSizeGB", "osDiskType", "scaleSetEvictionPolicy",
        "scaleSetPriority"]
    # AKS migrates the OS in place (rolling reimage): an osSKU change must stay an update.
    assert "osSKU" not in agent_pool.replace_on_changes
    assert agent_pool.delete_before_replace is True


def test_operator_owned_driver_skips_the_aks_driver():
    inputs = build(MIG, driver=DriverOwner.OPERATOR).get(AGENT_POOL, "a100mig-agentpool").inputs
    assert inputs["gpuProfile"] == {"driver": "None"}


def test_autoscaled_pool_without_a_live_count_starts_at_min_and_keeps_the_stored_count():
    agent_pool = build(T4).get(AGENT_POOL, "t4ts-agentpool")
    assert agent_pool.inputs["nodeLabels"]["gpushare.io/sharing"] == "time-slicing-4"
    assert agent_pool.inputs["enableAutoScaling"] is True
    assert (agent_pool.inputs["minCount"], agent_pool.inputs["maxCount"], agent_pool.inputs["count"]) == (0, 3, 0)
    assert agent_pool.inputs["availabilityZones"] == ["1", "2"]
    assert agent_pool.ignore_changes == ["count", "osDiskType", "osDiskSizeGB", "maxPods"]  # the disk and max pods: left to AKS


def test_fixed_pool_keeps_count_under_pulumi():
    agent_pool = build(WHOLE).get(AGENT_POOL, "h100-agentpool")
    assert agent_pool.inputs["count"] == 2
    assert "enableAutoScaling" not in agent_pool.inputs
    assert agent_pool.ignore_changes == ["osDiskType", "osDiskSizeGB", "maxPods"]  # left to AKS, never count


def test_pools_are_chained_in_order():
    recording = build(MIG, T4, WHOLE)
    depends = {r.name: r.depends_on for r in recording.by_type(AGENT_POOL)}
    assert depends == {"a100mig-agentpool": [], "t4ts-agentpool": ["a100mig-agentpool"],
                       "h100-agentpool": ["t4ts-agentpool"]}


def test_component_outputs_the_pool_name_and_id():
    seen = {}

    def program():
        node_pool = GpuNodePool("a100mig", GpuNodePoolArgs(request=request(MIG), cluster_name="c1",
                                                          resource_group_name="c1-rg"))
        pulumi.Output.all(node_pool.name, node_pool.resource_id).apply(lambda v: seen.update(name=v[0], id=v[1]))

    run_pulumi(program)
    assert seen["name"] == "a100mig"
    assert seen["id"].endswith("/a100mig")


def test_autoscaled_pool_with_a_known_live_count_sends_it_clamped_and_does_not_ignore_count():
    """ignore_changes would make the engine send the stored creation-time count, outside the new bounds."""
    def program():
        GpuNodePool("t4ts", GpuNodePoolArgs(request=request(T4, live_count=7), cluster_name="c1",
                                            resource_group_name="c1-rg"))

    agent_pool = run_pulumi(program).get(AGENT_POOL, "t4ts-agentpool")
    assert (agent_pool.inputs["minCount"], agent_pool.inputs["maxCount"], agent_pool.inputs["count"]) == (0, 3, 3)
    assert agent_pool.ignore_changes == ["osDiskType", "osDiskSizeGB", "maxPods"]  # left to AKS, never count


def test_gpu_pools_upgrade_without_surging_an_extra_gpu_vm():
    """AKS's default surges an extra node per pool on upgrades: a GPU VM the quota may not have."""
    inputs = build(MIG).get(AGENT_POOL, "a100mig-agentpool").inputs
    assert inputs["upgradeSettings"] == {"maxSurge": "0", "maxUnavailable": "1"}


def test_a_spot_pool_sends_its_price_fixed_at_creation_and_no_upgrade_settings():
    """AKS refuses maxSurge and maxUnavailable on a Spot pool ("Spot pools can't set max surge") and fixes its
    spotMaxPrice at creation (aks-docs spot-node-pool.md): a price change must be a replace, which protection
    stops in preview."""
    spot = GpuPool(name="t4spot", vm_size=T4.vm_size, spot=Spot(max_price=0.35), upgrade=Upgrade("2", "0"))
    agent_pool = build(spot).get(AGENT_POOL, "t4spot-agentpool")
    assert (agent_pool.inputs["scaleSetPriority"], agent_pool.inputs["spotMaxPrice"]) == ("Spot", 0.35)
    assert "upgradeSettings" not in agent_pool.inputs
    assert "spotMaxPrice" in agent_pool.replace_on_changes and agent_pool.protect is True
