"""The guard's create-only rules: which settings of a live GPU pool AKS cannot change in place, how the stack's
and the deployed pool's compare, and what the user is told."""

from __future__ import annotations

import dataclasses

import pytest

from gpushare.azure.guard.guard_report import GuardReport
from gpushare.model.stack import DriverOwner, OsDisk, OsDiskType, Spot, SpotEviction
from tests.azure.guard_builders import MIG_POOL, SOURCE, SYSTEM_POOL, T4_POOL, deployed_like, gpu_stack, run

# (stack pool, stack driver, deployed changes, field, deployed as shown, wanted as shown)
CREATE_ONLY_CHANGES = {
    "vm-size": (MIG_POOL, DriverOwner.AKS, {"vm_size": "Standard_ND96amsr_A100_v4"},
                "vmSize", "Standard_ND96amsr_A100_v4", "Standard_ND96asr_v4"),
    "mig-profile": (MIG_POOL, DriverOwner.AKS, {"gpu_instance_profile": "MIG3g"},
                    "gpuInstanceProfile", "MIG3g", "MIG1g"),
    "mig-added": (MIG_POOL, DriverOwner.AKS, {"gpu_instance_profile": None},
                  "gpuInstanceProfile", "none (whole GPUs)", "MIG1g"),
    "mig-removed": (dataclasses.replace(MIG_POOL, mig=None), DriverOwner.AKS, {"gpu_instance_profile": "MIG1g"},
                    "gpuInstanceProfile", "MIG1g", "none (whole GPUs)"),
    "driver-to-operator": (T4_POOL, DriverOwner.OPERATOR, {"gpu_driver": None},
                           "gpuProfile.driver", "Install", "None"),
    "driver-to-aks": (T4_POOL, DriverOwner.AKS, {"gpu_driver": "None"},
                      "gpuProfile.driver", "None", "Install"),
    "zones-added": (MIG_POOL, DriverOwner.AKS, {"availability_zones": ("1",)},
                    "availabilityZones", '["1"]', '["1", "2"]'),
    "zones-from-none": (MIG_POOL, DriverOwner.AKS, {"availability_zones": ()},
                        "availabilityZones", "[]", '["1", "2"]'),
    "os-disk-type": (dataclasses.replace(T4_POOL, os_disk=OsDisk(type=OsDiskType.EPHEMERAL)), DriverOwner.AKS,
                     {"os_disk_type": "Managed"}, "osDiskType", "Managed", "Ephemeral"),
    "os-disk-size": (dataclasses.replace(T4_POOL, os_disk=OsDisk(size_gb=256)), DriverOwner.AKS,
                     {"os_disk_size_gb": 128}, "osDiskSizeGB", "128", "256"),
    "max-pods": (dataclasses.replace(T4_POOL, max_pods=60), DriverOwner.AKS, {"max_pods": 30},
                 "maxPods", "30", "60"),
    "made-spot": (dataclasses.replace(T4_POOL, spot=Spot()), DriverOwner.AKS,
                  {"scale_set_priority": None, "scale_set_eviction_policy": None, "spot_max_price": None},
                  "scaleSetPriority", "Regular", "Spot"),
    "spot-made-regular": (T4_POOL, DriverOwner.AKS, {"scale_set_priority": "Spot"},
                          "scaleSetPriority", "Spot", "Regular"),
    "spot-eviction": (dataclasses.replace(T4_POOL, spot=Spot(eviction=SpotEviction.DEALLOCATE)), DriverOwner.AKS,
                      {"scale_set_priority": "Spot", "scale_set_eviction_policy": "Delete"},
                      "scaleSetEvictionPolicy", "Delete", "Deallocate"),
    # aks-docs spot-node-pool.md: "You can't change ScaleSetPriority or SpotMaxPrice after creation".
    "spot-price-raised": (dataclasses.replace(T4_POOL, spot=Spot(max_price=0.7)), DriverOwner.AKS,
                          {"spot_max_price": 0.5}, "spotMaxPrice", "0.5 USD per node-hour", "0.7 USD per node-hour"),
    "spot-price-capped": (dataclasses.replace(T4_POOL, spot=Spot(max_price=0.7)), DriverOwner.AKS,
                          {"spot_max_price": -1.0}, "spotMaxPrice", "-1 (up to the on-demand price)",
                          "0.7 USD per node-hour"),
}


@pytest.mark.parametrize("spot", [Spot(), Spot(max_price=0.98765, eviction=SpotEviction.DEALLOCATE)],
                         ids=["market-price", "capped"])
def test_a_spot_pool_deployed_as_the_stack_says_passes(spot):
    gpu_pool = dataclasses.replace(T4_POOL, spot=spot)
    report = run(gpu_stack(gpu_pool), [SYSTEM_POOL, deployed_like(gpu_pool)])
    assert report.violations == ()


def test_a_spot_price_azure_does_not_report_is_unknown_and_refused_as_one_that_may_replace():
    """A deployed Spot pool whose `spotMaxPrice` the file leaves out is unknown, never -1 (read as -1 it would say
    the cap of 0.7 changes). Unknown is no proof either: Pulumi compares the 0.7 sent with the price in its state."""
    gpu_pool = dataclasses.replace(T4_POOL, spot=Spot(max_price=0.7))
    report = run(gpu_stack(gpu_pool), [SYSTEM_POOL, deployed_like(gpu_pool, spot_max_price=None)])
    assert [(v.field, v.deployed, v.wanted) for v in report.violations] == [
        ("spotMaxPrice", "not reported", "0.7 USD per node-hour")]
    assert "cannot show that pool t4ts keeps it" in report.violations[0].message


@pytest.mark.parametrize(
    "gpu_pool, driver, changes, field, deployed, wanted",
    CREATE_ONLY_CHANGES.values(),
    ids=CREATE_ONLY_CHANGES.keys(),
)
def test_rejects_create_only_change(gpu_pool, driver, changes, field, deployed, wanted):
    config = gpu_stack(gpu_pool, driver=driver)
    report = run(config, [SYSTEM_POOL, deployed_like(gpu_pool, driver, **changes)])

    assert [(v.pool, v.field, v.deployed, v.wanted) for v in report.violations] == [
        (gpu_pool.name, field, deployed, wanted)
    ]
    assert report.warnings == ()


def test_violation_message_names_everything_the_on_call_engineer_needs():
    config = gpu_stack(MIG_POOL)
    report = run(config, [SYSTEM_POOL, deployed_like(MIG_POOL, gpu_instance_profile="MIG3g")])

    (violation,) = report.violations
    assert violation.message == (
        "stack dev, cluster gpushare-dev, pool a100mig: gpuInstanceProfile MIG3g -> MIG1g.\n"
        "  AKS cannot change the MIG profile (gpuInstanceProfile) of an existing node pool: applying this would "
        "delete pool a100mig and every pod running on it, then create it again.\n"
        "  Ways forward:\n"
        "  - blue/green: add a pool with a new name and gpuInstanceProfile MIG1g, move the workloads to it, then "
        "retire a100mig: drain it (kubectl drain -l kubernetes.azure.com/agentpool=a100mig --ignore-daemonsets "
        "--delete-emptydir-data), set `count: 0` (instead of any `autoscale`) and `recreate: true` on it in "
        "stacks/Pulumi.dev.yaml and apply, then remove it from the stack and apply again;\n"
        "  - or accept the outage: set `recreate: true` on pool a100mig in stacks/Pulumi.dev.yaml to delete and "
        "recreate it in the next run."
    )


def test_rejects_every_changed_field_of_a_pool():
    config = gpu_stack(T4_POOL, driver=DriverOwner.OPERATOR)
    deployed = deployed_like(T4_POOL, vm_size="Standard_NC8as_T4_v3", os_sku="AzureLinux", availability_zones=("3",))

    report = run(config, [SYSTEM_POOL, deployed])

    assert [v.field for v in report.violations] == ["vmSize", "gpuProfile.driver", "availabilityZones"]
    assert [note.split(".")[0] for note in report.notes] == ["pool t4ts: osSKU AzureLinux -> Ubuntu"]


SAME_AFTER_NORMALISING = {
    "vm-size-case": (MIG_POOL, DriverOwner.AKS, {"vm_size": "standard_nd96asr_v4"}),
    "mig-profile-case": (MIG_POOL, DriverOwner.AKS, {"gpu_instance_profile": "mig1g"}),
    "driver-unset-is-install": (MIG_POOL, DriverOwner.AKS, {"gpu_driver": None}),
    "driver-install-explicit": (MIG_POOL, DriverOwner.AKS, {"gpu_driver": "Install"}),
    "driver-none-case": (T4_POOL, DriverOwner.OPERATOR, {"gpu_driver": "none"}),
    "zones-order-and-duplicates": (MIG_POOL, DriverOwner.AKS, {"availability_zones": ("2", "1", "2")}),
    "no-zones": (T4_POOL, DriverOwner.AKS, {"availability_zones": ()}),
    "os-sku-unset-is-ubuntu": (T4_POOL, DriverOwner.AKS, {"os_sku": None}),
    "os-sku-case": (T4_POOL, DriverOwner.AKS, {"os_sku": "ubuntu"}),
}


@pytest.mark.parametrize(
    "gpu_pool, driver, changes", SAME_AFTER_NORMALISING.values(), ids=SAME_AFTER_NORMALISING.keys()
)
def test_accepts_same_setting_written_differently(gpu_pool, driver, changes):
    report = run(gpu_stack(gpu_pool, driver=driver), [SYSTEM_POOL, deployed_like(gpu_pool, driver, **changes)])

    assert report == GuardReport(SOURCE)


def test_settings_the_stack_leaves_to_aks_are_not_compared():
    # A pool deployed with AKS's own OS disk and max pods: the stack sets neither, so nothing would change.
    report = run(gpu_stack(T4_POOL), [SYSTEM_POOL, deployed_like(T4_POOL, os_disk_type="Ephemeral",
                                                                 os_disk_size_gb=128, max_pods=30)])
    assert report.violations == ()


def test_a_max_pods_change_explains_the_migration():
    pool = dataclasses.replace(T4_POOL, max_pods=60)
    (violation,) = run(gpu_stack(pool), [SYSTEM_POOL, deployed_like(T4_POOL, max_pods=30)]).violations
    assert "AKS fixes the maximum pods per node (maxPods) when it creates a node pool" in violation.message
    assert "blue/green: add a pool with a new name and maxPods 60" in violation.message
