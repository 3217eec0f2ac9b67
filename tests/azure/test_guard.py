"""The guard's decisions: which stack edits would delete a live GPU pool, and what the user is told."""

from __future__ import annotations

import dataclasses

import pytest

from gpushare.azure.guard.messages import offline_warnings
from gpushare.azure.guard.report import GuardReport, Violation, raise_for_violations
from gpushare.azure.guard.run import evaluate
from gpushare.errors import GuardViolationError
from gpushare.model.catalog import MigProfile, find_vm_size
from gpushare.model.stack import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    MIG_STRATEGY_LABEL,
    NO_SHARING,
    POOL_LABEL,
    SHARING_LABEL,
    Autoscale,
    DriverOwner,
    MigStrategy,
    OsDisk,
    OsDiskType,
    OsSku,
    Spot,
    SpotEviction,
    sharing_label,
)
from gpushare.sharing.node_labels import pool_node_labels
from tests.azure.guard_builders import (
    MIG_POOL,
    SYSTEM_POOL,
    T4_POOL,
    deployed_cluster,
    deployed_like,
    gpu_stack,
)
from tests.builders import mps, time_slicing

SOURCE = "deployed.json"


def run(config, deployed):
    return evaluate(config, deployed, SOURCE)


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


def test_a_spot_price_azure_does_not_report_is_not_compared():
    """A deployed Spot pool whose `spotMaxPrice` Azure leaves out is unknown, never -1: read as -1 it would refuse a
    stack's cap of 0.7 as a change that deletes the pool."""
    gpu_pool = dataclasses.replace(T4_POOL, spot=Spot(max_price=0.7))
    report = run(gpu_stack(gpu_pool), [SYSTEM_POOL, deployed_like(gpu_pool, spot_max_price=None)])
    assert report.violations == () and report.warnings == ()


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


OS_SKU_CHANGES = {
    "ubuntu-to-azure-linux": (dataclasses.replace(T4_POOL, os_sku=OsSku.AZURE_LINUX), "Ubuntu", "Ubuntu -> AzureLinux"),
    "azure-linux-to-ubuntu": (T4_POOL, "AzureLinux", "AzureLinux -> Ubuntu"),
    "unset-is-ubuntu": (dataclasses.replace(T4_POOL, os_sku=OsSku.AZURE_LINUX), None, "Ubuntu -> AzureLinux"),
}


@pytest.mark.parametrize("gpu_pool, deployed_os, change", OS_SKU_CHANGES.values(), ids=OS_SKU_CHANGES.keys())
def test_notes_os_sku_change_as_an_in_place_reimage(gpu_pool, deployed_os, change):
    # AKS migrates a pool between Ubuntu and AzureLinux in place (`az aks nodepool update --os-sku`).
    report = run(gpu_stack(gpu_pool), [SYSTEM_POOL, deployed_like(gpu_pool, os_sku=deployed_os)])

    assert report.violations == ()
    assert report.notes == (
        f"pool t4ts: osSKU {change}. AKS migrates the OS in place (as `az aks nodepool update --os-sku` does): it "
        "reimages every node of the pool, one after another, so each node is drained and its pods restart; the pool "
        "and its name stay. Every GPU pool changes OS together (the GPU Operator supports one OS per cluster).",
    )
    assert report.headline == "no change deletes a GPU pool"


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


IN_PLACE_CHANGES = {
    "node-count": (MIG_POOL, {"count": 5}),
    "autoscale-bounds": (T4_POOL, {"min_count": 1, "max_count": 10, "count": 4}),
    "autoscale-turned-on": (MIG_POOL, {"enable_auto_scaling": True, "min_count": 1, "max_count": 4}),
    "labels": (T4_POOL, {"node_labels": {POOL_LABEL: "t4ts", "team": "vision"}}),
    "taints": (MIG_POOL, {"node_taints": ()}),
}


@pytest.mark.parametrize("gpu_pool, changes", IN_PLACE_CHANGES.values(), ids=IN_PLACE_CHANGES.keys())
def test_accepts_change_aks_makes_in_place(gpu_pool, changes):
    report = run(gpu_stack(gpu_pool), [SYSTEM_POOL, deployed_like(gpu_pool, **changes)])

    assert report == GuardReport(SOURCE)


SHARING_CHANGES = {
    "replicas": (T4_POOL, "time-slicing-2", "time-slicing-2 -> time-slicing-4"),
    "strategy": (dataclasses.replace(T4_POOL, sharing=mps(2)), "time-slicing-4", "time-slicing-4 -> mps-2"),
    "sharing-removed": (dataclasses.replace(T4_POOL, sharing=None), "time-slicing-4", "time-slicing-4 -> none"),
    "sharing-added": (dataclasses.replace(MIG_POOL, sharing=time_slicing(4)), NO_SHARING, "none -> time-slicing-4"),
}


@pytest.mark.parametrize("gpu_pool, deployed_label, change", SHARING_CHANGES.values(), ids=SHARING_CHANGES.keys())
def test_notes_sharing_change(gpu_pool, deployed_label, change):
    deployed = deployed_like(gpu_pool, node_labels={**pool_node_labels(gpu_stack(gpu_pool), gpu_pool),
                                                        SHARING_LABEL: deployed_label})

    report = run(gpu_stack(gpu_pool), [SYSTEM_POOL, deployed])

    assert report.violations == ()
    assert report.notes == (
        f"pool {gpu_pool.name}: sharing {change}. AKS applies this in place, no node is replaced, but the NVIDIA "
        "device plugin on the pool's nodes restarts with the new configuration and the number of GPU slots pods "
        "can request changes.",
    )


def test_pool_deployed_without_sharing_label_has_no_sharing_note():
    deployed = deployed_like(T4_POOL, node_labels=pool_node_labels(gpu_stack(T4_POOL), T4_POOL))

    assert run(gpu_stack(T4_POOL), [SYSTEM_POOL, deployed]) == GuardReport(SOURCE)


@pytest.mark.parametrize(
    "sharing, label",
    [(None, "none"), (time_slicing(4), "time-slicing-4"), (mps(2), "mps-2")],
    ids=["none", "time-slicing", "mps"],
)
def test_sharing_label(sharing, label):
    assert sharing_label(sharing) == label


def test_rejects_removing_managed_pool_that_has_nodes():
    config = gpu_stack(MIG_POOL)
    removed = deployed_like(T4_POOL, count=3)

    report = run(config, [SYSTEM_POOL, deployed_like(MIG_POOL), removed])

    assert report.violations == (
        Violation(
            pool="t4ts",
            field="pool",
            deployed="deployed, 3 nodes",
            wanted="removed from the stack",
            message=(
                "stack dev, cluster gpushare-dev, pool t4ts: the pool is deployed (Standard_NC4as_T4_v3, 3 nodes) "
                "and managed by gpushare (label gpushare.io/pool), but the stack no longer lists it.\n"
                "  Applying this would delete pool t4ts and every pod running on it. If you renamed it: AKS cannot "
                "rename a pool, the new name is a new pool; keep the old one in the stack until its workloads have "
                "moved.\n"
                "  To remove it deliberately, keep it in the stack one more run and retire it: drain it (kubectl "
                "drain -l kubernetes.azure.com/agentpool=t4ts --ignore-daemonsets --delete-emptydir-data), set "
                "`count: 0` (instead of any `autoscale`) and `recreate: true` on it in stacks/Pulumi.dev.yaml and "
                "apply, then remove it from the stack and apply again."
            ),
        ),
    )


def test_removing_managed_pool_without_nodes_warns_that_protection_still_decides():
    report = run(gpu_stack(MIG_POOL), [SYSTEM_POOL, deployed_like(MIG_POOL), deployed_like(T4_POOL, count=0)])

    assert report.violations == ()
    assert report.notes == ()
    assert report.warnings == (
        "stack dev, cluster gpushare-dev, pool t4ts: the pool has no nodes and the stack no longer lists it. Pulumi "
        "deletes it only if an earlier run applied `recreate: true` on it (which lifted its protection in the "
        "state); otherwise this run stops with Pulumi's 'marked for protection' error and nothing is deleted: put "
        "the pool back in stacks/Pulumi.dev.yaml with `count: 0` and `recreate: true`, apply, then remove it and "
        "apply again.",
    )
    assert report.removed == ("t4ts",)
    assert report.headline == (
        "deletes empty pool t4ts only if an earlier run applied `recreate: true` on it, otherwise Pulumi stops on "
        "its protection"
    )


def test_removing_managed_pool_whose_node_count_is_unknown_is_refused():
    # `count: null` (Azure or a hand-written file did not say) may hide running nodes: never taken as empty.
    report = run(gpu_stack(MIG_POOL), [SYSTEM_POOL, deployed_like(MIG_POOL), deployed_like(T4_POOL, count=None)])

    assert [(v.pool, v.field, v.deployed) for v in report.violations] == [("t4ts", "pool", "deployed, node count unknown")]
    assert report.removed == ()
    assert report.headline == "1 change would delete running GPU pools"


def test_ignores_pools_gpushare_does_not_manage():
    by_hand = deployed_like(T4_POOL, name="batch", node_labels={DEVICE_PLUGIN_CONFIG_LABEL: "batch"}, count=4)

    report = run(gpu_stack(MIG_POOL), [SYSTEM_POOL, deployed_like(MIG_POOL), by_hand])

    assert report == GuardReport(SOURCE)


def test_compares_same_named_pool_even_without_gpushare_label():
    # A pool deployed before gpushare labelled its pools is still the pool Pulumi updates.
    deployed = deployed_like(MIG_POOL, node_labels={}, gpu_instance_profile="MIG7g")

    report = run(gpu_stack(MIG_POOL), [SYSTEM_POOL, deployed])

    assert [(v.field, v.deployed, v.wanted) for v in report.violations] == [("gpuInstanceProfile", "MIG7g", "MIG1g")]


def test_accepts_new_pool():
    config = gpu_stack(MIG_POOL, T4_POOL)

    report = run(config, [SYSTEM_POOL, deployed_like(MIG_POOL)])

    assert report == GuardReport(SOURCE)


def test_new_pool_does_not_stop_checking_the_pools_after_it():
    config = gpu_stack(T4_POOL, MIG_POOL)

    report = run(config, [SYSTEM_POOL, deployed_like(MIG_POOL, vm_size="Standard_ND96isr_H100_v5")])

    assert [(v.pool, v.field) for v in report.violations] == [("a100mig", "vmSize")]


def test_first_deployment_has_nothing_to_guard():
    report = run(gpu_stack(), None)

    assert report == GuardReport(
        SOURCE, notes=("cluster gpushare-dev does not exist yet: first deployment, nothing to guard",)
    )


def test_recreate_turns_violations_into_a_warning():
    wanted = dataclasses.replace(MIG_POOL, mig=MigProfile.MIG3G, vm_size=find_vm_size("Standard_ND96amsr_A100_v4"),
                                 recreate=True)

    report = run(gpu_stack(wanted), [SYSTEM_POOL, deployed_like(MIG_POOL)])

    assert report.violations == ()
    assert report.warnings == (
        "will delete and recreate pool a100mig (stack dev, cluster gpushare-dev, pool a100mig): vmSize "
        "Standard_ND96asr_v4 -> Standard_ND96amsr_A100_v4; gpuInstanceProfile MIG1g -> MIG3g. Every pod running on "
        "it is deleted (`recreate: true`); remove the flag once the pool has been recreated.",
    )


def test_recreate_headline_says_the_pool_is_deleted_and_recreated():
    wanted = dataclasses.replace(MIG_POOL, mig=MigProfile.MIG3G, recreate=True)

    report = run(gpu_stack(wanted, T4_POOL), [SYSTEM_POOL, deployed_like(MIG_POOL), deployed_like(T4_POOL)])

    assert report.recreated == ("a100mig",)
    assert report.headline == "deletes and recreates pool a100mig (`recreate: true`)"
    assert "no change deletes" not in report.headline


def test_headline_lists_violations_and_recreates_together():
    config = gpu_stack(dataclasses.replace(MIG_POOL, mig=MigProfile.MIG2G, recreate=True), T4_POOL)
    deployed = [SYSTEM_POOL, deployed_like(MIG_POOL), deployed_like(T4_POOL, vm_size="Standard_NC8as_T4_v3")]

    assert run(config, deployed).headline == (
        "1 change would delete running GPU pools; deletes and recreates pool a100mig (`recreate: true`)"
    )


def test_recreate_without_change_headline_says_protection_is_lifted():
    report = run(gpu_stack(dataclasses.replace(MIG_POOL, recreate=True)), [SYSTEM_POOL, deployed_like(MIG_POOL)])

    assert report.headline == "no change deletes a GPU pool; protection lifted on pool a100mig (`recreate: true`)"


def test_warns_about_recreate_on_a_pool_not_deployed_yet():
    report = run(gpu_stack(MIG_POOL, dataclasses.replace(T4_POOL, recreate=True)), [SYSTEM_POOL, deployed_like(MIG_POOL)])

    assert report.warnings == (
        "stack dev, cluster gpushare-dev, pool t4ts: `recreate: true` is set on a pool that is not deployed yet: it "
        "is created without protection, so a later edit or removal could delete it; remove the flag.",
    )
    assert report.recreated == ()


def test_offline_warnings_cover_every_recreate_flag():
    config = gpu_stack(dataclasses.replace(MIG_POOL, recreate=True), dataclasses.replace(T4_POOL, recreate=True))

    warnings = offline_warnings(config)

    assert [w.split(":")[0] for w in warnings] == [
        "stack dev, cluster gpushare-dev, pool a100mig", "stack dev, cluster gpushare-dev, pool t4ts"]
    assert all("`recreate: true` lifts the pool's protection for the next run" in w for w in warnings)
    assert offline_warnings(gpu_stack(MIG_POOL, T4_POOL)) == []


def test_warns_about_recreate_flag_without_create_only_change():
    report = run(gpu_stack(dataclasses.replace(MIG_POOL, recreate=True)), [SYSTEM_POOL, deployed_like(MIG_POOL)])

    assert report.violations == ()
    assert report.warnings == (
        "stack dev, cluster gpushare-dev, pool a100mig: `recreate: true` is set but no create-only setting changes, "
        "so nothing is recreated; the pool's protection is still lifted for this run. Remove the flag unless you "
        "are retiring the pool.",
    )


def test_recreate_on_one_pool_leaves_others_guarded():
    config = gpu_stack(dataclasses.replace(MIG_POOL, mig=MigProfile.MIG2G, recreate=True),
                       dataclasses.replace(T4_POOL, autoscale=Autoscale(0, 5)))
    deployed = [SYSTEM_POOL, deployed_like(MIG_POOL), deployed_like(T4_POOL, vm_size="Standard_NC8as_T4_v3")]

    report = run(config, deployed)

    assert [(v.pool, v.field) for v in report.violations] == [("t4ts", "vmSize")]
    assert len(report.warnings) == 1
    assert report.warnings[0].startswith("will delete and recreate pool a100mig ")


def test_raise_for_violations_lists_every_violation():
    config = gpu_stack(MIG_POOL)
    changed, removed = deployed_like(MIG_POOL, vm_size="Standard_ND96isr_H100_v5"), deployed_like(T4_POOL, count=1)
    deployed = [SYSTEM_POOL, changed, removed]
    report = run(config, deployed)

    with pytest.raises(GuardViolationError) as caught:
        raise_for_violations(report)

    assert caught.value.exit_code == 3
    assert str(caught.value) == "\n\n".join(
        ["2 changes would delete running GPU pools (deployed pools read from deployed.json):"]
        + [v.message for v in report.violations]
    )


def test_raise_for_violations_passes_a_clean_report():
    raise_for_violations(GuardReport(SOURCE, notes=("a note",), warnings=("a warning",)))


def test_report_to_json():
    config = gpu_stack(MIG_POOL)
    report = run(config, [SYSTEM_POOL, deployed_like(MIG_POOL, vm_size="Standard_ND96isr_H100_v5")])

    assert report.to_json() == {
        "source": SOURCE,
        "headline": "1 change would delete running GPU pools",
        "violations": [
            {
                "pool": "a100mig",
                "field": "vmSize",
                "deployed": "Standard_ND96isr_H100_v5",
                "wanted": "Standard_ND96asr_v4",
                "message": report.violations[0].message,
            }
        ],
        "notes": [],
        "warnings": [],
    }


def test_report_carries_the_pools_it_read_for_preflight():
    pools = deployed_cluster(gpu_stack())

    assert run(gpu_stack(), pools).deployed == tuple(pools)
    assert run(gpu_stack(), None).deployed is None  # no cluster yet


def deployed_with_strategy(gpu_pool, strategy: str | None):
    labels = pool_node_labels(gpu_stack(gpu_pool), gpu_pool)
    labels.pop(MIG_STRATEGY_LABEL, None)
    if strategy is not None:
        labels[MIG_STRATEGY_LABEL] = strategy
    return deployed_like(gpu_pool, node_labels=labels)


H100_TS = dataclasses.replace(
    MIG_POOL, name="h100ts", vm_size=find_vm_size("Standard_NC40ads_H100_v5"), mig=MigProfile.MIG2G,
    sharing=time_slicing(3), zones=(),
)


def test_warns_that_a_mig_strategy_change_renames_every_mig_pools_resource():
    config = dataclasses.replace(
        gpu_stack(MIG_POOL, T4_POOL, H100_TS),
        operator=dataclasses.replace(gpu_stack().operator, mig_strategy=MigStrategy.MIXED),
    )
    deployed = [SYSTEM_POOL, deployed_with_strategy(MIG_POOL, "single"), deployed_like(T4_POOL),
                deployed_with_strategy(H100_TS, "single")]

    report = run(config, deployed)

    assert report.violations == ()
    assert report.warnings == (
        "stack dev, cluster gpushare-dev: gpushare:operator.migStrategy is mixed, which renames the resource these "
        "MIG pools advertise: a100mig nvidia.com/gpu -> nvidia.com/mig-1g.5gb (deployed with single); h100ts "
        "nvidia.com/gpu.shared -> nvidia.com/mig-2g.24gb.shared (deployed with single). The device plugin switches "
        "in place and running pods keep their devices, but every pod created or restarted with the old resource "
        "name stays Pending: change the workloads' resource requests to the new names together with this change.",
    )


def test_mig_strategy_back_to_single_names_the_old_mixed_resource():
    report = run(gpu_stack(MIG_POOL), [SYSTEM_POOL, deployed_with_strategy(MIG_POOL, "mixed")])

    (warning,) = report.warnings
    assert "a100mig nvidia.com/mig-1g.5gb -> nvidia.com/gpu (deployed with mixed)" in warning


@pytest.mark.parametrize("label", [None, "single", "bogus"], ids=["no-label", "unchanged", "unknown-value"])
def test_says_nothing_when_the_mig_strategy_cannot_be_compared_or_is_unchanged(label):
    report = run(gpu_stack(MIG_POOL), [SYSTEM_POOL, deployed_with_strategy(MIG_POOL, label)])

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
