"""The agent pool gpushare asks AKS for, straight from the pure request (no engine): what each pool shape sends,
which inputs replace the pool, and when `count` is left as stored. The names and enum strings are checked against
azure-native's own `AgentPool` signature and enums, so the request is what the SDK takes."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
from pulumi_azure_native import containerservice

from gpushare.azure.agent_pool_request import CREATE_ONLY_REPLACED_BY_GPUSHARE, agent_pool_request

LEFT_TO_AKS = ("osDiskType", "osDiskSizeGB", "maxPods")
"""What a pool that sets no OS disk and no max pods ignores."""
from gpushare.model.catalog import MigProfile, find_vm_size
from gpushare.model.stack import (
    Autoscale,
    DriverOwner,
    GpuPool,
    OsDisk,
    OsDiskType,
    Sharing,
    SharingStrategy,
    Spot,
    SpotEviction,
)
from gpushare.sharing.pool_facts import derive_pool_facts
from tests.builders import stack

MIG = GpuPool(name="a100mig", vm_size=find_vm_size("Standard_ND96asr_v4"), mig=MigProfile.MIG1G)
T4 = GpuPool(name="t4ts", vm_size=find_vm_size("Standard_NC4as_T4_v3"),
             sharing=Sharing(SharingStrategy.TIME_SLICING, 4), count=None, autoscale=Autoscale(1, 3), zones=("1", "2"))
SPOT = GpuPool(name="t4spot", vm_size=T4.vm_size, spot=Spot(max_price=0.35, eviction=SpotEviction.DEALLOCATE))


def request(pool: GpuPool, driver: DriverOwner = DriverOwner.AKS, **kwargs):
    facts = derive_pool_facts(stack(pool, driver=driver))[pool.name]
    return agent_pool_request(facts, driver, cluster_name="c1", resource_group_name="c1-rg", **kwargs)


@pytest.mark.parametrize("pool", [MIG, T4, SPOT], ids=["mig", "autoscaled", "spot"])
def test_every_input_is_an_agent_pool_argument(pool):
    """azure-native v3 takes exactly these keyword names: a misspelt one would be a TypeError at deploy."""
    accepted = set(inspect.signature(containerservice.AgentPool._internal_init).parameters)
    assert set(request(pool, DriverOwner.OPERATOR).inputs) <= accepted


def test_the_enum_strings_are_azure_natives():
    inputs = request(SPOT, DriverOwner.OPERATOR).inputs
    assert inputs["mode"] == containerservice.AgentPoolMode.USER
    assert inputs["type"] == containerservice.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS
    assert inputs["os_type"] == containerservice.OSType.LINUX
    assert inputs["scale_set_priority"] == containerservice.ScaleSetPriority.SPOT
    assert inputs["scale_set_eviction_policy"] == containerservice.ScaleSetEvictionPolicy.DEALLOCATE
    assert inputs["gpu_profile"] == {"driver": containerservice.GPUDriver.NONE}


def test_a_mig_pool_sends_its_profile_labels_taint_and_the_cluster_it_joins():
    made = request(MIG)
    inputs = made.inputs
    assert (inputs["agent_pool_name"], inputs["resource_name_"], inputs["resource_group_name"]) == (
        "a100mig", "c1", "c1-rg")
    assert (inputs["vm_size"], inputs["gpu_instance_profile"], inputs["os_sku"]) == (
        "Standard_ND96asr_v4", "MIG1g", "Ubuntu")
    assert inputs["node_labels"]["gpushare.io/pool"] == "a100mig"
    assert inputs["node_taints"] == ["nvidia.com/gpu=present:NoSchedule"]
    assert inputs["count"] == 1 and "enable_auto_scaling" not in inputs
    assert inputs["gpu_profile"] is None, "driver owned by AKS: gpuProfile unset (AKS default Install)"
    assert inputs["upgrade_settings"] == {"max_surge": "0", "max_unavailable": "1"}
    assert made.protect is True and made.ignore_changes == LEFT_TO_AKS


def test_the_operator_driver_tells_aks_to_install_none():
    assert request(MIG, DriverOwner.OPERATOR).inputs["gpu_profile"] == {"driver": "None"}


def test_an_autoscaled_pool_without_a_live_count_starts_at_min_and_keeps_the_stored_count():
    made = request(T4)
    assert (made.inputs["enable_auto_scaling"], made.inputs["min_count"], made.inputs["max_count"]) == (True, 1, 3)
    assert made.inputs["count"] == 1 and made.ignore_changes == ("count", *LEFT_TO_AKS)
    assert made.inputs["availability_zones"] == ["1", "2"]


@pytest.mark.parametrize(("live", "sent"), [(7, 3), (0, 1), (2, 2)])
def test_an_autoscaled_pool_with_a_live_count_sends_it_clamped_and_not_ignored(live, sent):
    made = request(T4, live_count=live)
    assert made.inputs["count"] == sent and made.ignore_changes == LEFT_TO_AKS


def test_settled_create_only_inputs_are_ignored_after_count():
    sized = dataclasses.replace(T4, os_disk=OsDisk(type=OsDiskType.MANAGED), max_pods=110)
    assert request(sized, settled=("osDiskType", "maxPods")).ignore_changes == (
        "count", "osDiskType", "maxPods", "osDiskSizeGB")


def test_an_os_disk_or_max_pods_the_stack_leaves_to_aks_is_ignored_so_leaving_it_out_never_replaces():
    """The engine diffs new inputs against those in its state: a pool created with `osDisk: {type: Ephemeral}` whose
    stack then drops it would send no osDiskType, a changed replaceOnChanges input, a replace (delete first).
    Ignored, the stored value stands; a creation has no stored value and AKS picks its default."""
    assert request(MIG).ignore_changes == ("osDiskType", "osDiskSizeGB", "maxPods")
    assert {"osDiskType", "osDiskSizeGB", "maxPods"} <= set(request(MIG).replace_on_changes)
    sized = GpuPool(name="disk", vm_size=MIG.vm_size, os_disk=OsDisk(size_gb=256, type=OsDiskType.EPHEMERAL),
                    max_pods=50)
    assert request(sized).ignore_changes == (), "a value the stack sets is compared, and a change replaces"
    recreated = dataclasses.replace(MIG, recreate=True)
    assert request(recreated).ignore_changes == (), "recreate: true creates the pool again as the stack says"


def test_create_only_inputs_replace_the_pool_but_an_os_change_does_not():
    made = request(MIG)
    assert made.replace_on_changes == CREATE_ONLY_REPLACED_BY_GPUSHARE
    assert "osSKU" not in made.replace_on_changes


def test_a_spot_pool_sends_priority_eviction_and_price_fixed_at_creation_and_no_upgrade_settings():
    made = request(SPOT)
    assert (made.inputs["scale_set_priority"], made.inputs["scale_set_eviction_policy"],
            made.inputs["spot_max_price"]) == ("Spot", "Deallocate", 0.35)
    assert made.inputs["upgrade_settings"] is None
    assert made.replace_on_changes == (*CREATE_ONLY_REPLACED_BY_GPUSHARE, "spotMaxPrice")


def test_named_subnets_are_sent_and_fixed_at_creation():
    made = request(MIG, subnet_id="/subnets/nodes", pod_subnet_id="/subnets/pods")
    assert (made.inputs["vnet_subnet_id"], made.inputs["pod_subnet_id"]) == ("/subnets/nodes", "/subnets/pods")
    assert made.replace_on_changes[-2:] == ("vnetSubnetID", "podSubnetID")
    assert request(MIG).inputs["vnet_subnet_id"] is None


def test_only_the_disk_and_max_pods_the_stack_sets_are_sent():
    assert not {"os_disk_size_gb", "os_disk_type", "max_pods"} & set(request(MIG).inputs)
    sized = GpuPool(name="disk", vm_size=MIG.vm_size, os_disk=OsDisk(size_gb=256, type=OsDiskType.EPHEMERAL),
                    max_pods=50)
    inputs = request(sized).inputs
    assert (inputs["os_disk_size_gb"], inputs["os_disk_type"], inputs["max_pods"]) == (256, "Ephemeral", 50)


def test_recreate_lifts_protection_for_the_run():
    again = GpuPool(name="again", vm_size=MIG.vm_size, mig=MigProfile.MIG2G, recreate=True)
    assert request(again).protect is False


def test_tags_are_sent_only_when_there_are_some():
    assert request(MIG).inputs["tags"] is None
    assert request(MIG, tags={"team": "ml"}).inputs["tags"] == {"team": "ml"}
