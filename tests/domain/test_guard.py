"""The guard's decisions: which stack edits would delete a live GPU pool, and what the user is told."""

from __future__ import annotations

import dataclasses

import pytest

from gpushare.catalog import MigProfile, find_vm_size
from gpushare.errors import GuardViolationError
from gpushare.guard import GuardReport, Violation, evaluate, raise_for_violations
from gpushare.model import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    NO_SHARING,
    POOL_LABEL,
    SHARING_LABEL,
    Autoscale,
    DriverOwner,
    OsSku,
    sharing_label,
)
from gpushare.node_labels import pool_node_labels
from tests.domain.builders import mps, time_slicing
from tests.domain.guard_builders import (
    MIG_POOL,
    SYSTEM_POOL,
    T4_POOL,
    deployed_like,
    gpu_stack,
)

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
    "os-sku": (T4_POOL, DriverOwner.AKS, {"os_sku": "AzureLinux"}, "osSKU", "AzureLinux", "Ubuntu"),
    "os-sku-unset-is-ubuntu": (dataclasses.replace(T4_POOL, os_sku=OsSku.AZURE_LINUX), DriverOwner.AKS,
                               {"os_sku": None}, "osSKU", "Ubuntu", "AzureLinux"),
}


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

    assert [v.field for v in report.violations] == ["vmSize", "gpuProfile.driver", "availabilityZones", "osSKU"]


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


def test_accepts_removing_managed_pool_without_nodes():
    report = run(gpu_stack(MIG_POOL), [SYSTEM_POOL, deployed_like(MIG_POOL), deployed_like(T4_POOL, count=0)])

    assert report.violations == ()
    assert report.notes == ("pool t4ts has no nodes and is no longer in the stack: it will be deleted",)


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
    report = run(config, [SYSTEM_POOL, deployed_like(MIG_POOL, os_sku="AzureLinux")])

    assert report.to_json() == {
        "source": SOURCE,
        "violations": [
            {
                "pool": "a100mig",
                "field": "osSKU",
                "deployed": "AzureLinux",
                "wanted": "Ubuntu",
                "message": report.violations[0].message,
            }
        ],
        "notes": [],
        "warnings": [],
    }
