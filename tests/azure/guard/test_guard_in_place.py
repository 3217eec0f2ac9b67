"""Changes AKS makes in place that still disturb running pods (OS SKU, sharing, migStrategy): noted or warned,
never refused."""

from __future__ import annotations

import dataclasses

import pytest

from gpushare.azure.guard.guard_report import GuardReport
from gpushare.model.catalog import MigProfile, find_vm_size
from gpushare.model.stack import (
    MIG_STRATEGY_LABEL,
    NO_SHARING,
    POOL_LABEL,
    SHARING_LABEL,
    MigStrategy,
    OsSku,
    sharing_label,
)
from gpushare.sharing.node_labels import pool_node_labels
from tests.azure.guard_builders import MIG_POOL, SOURCE, SYSTEM_POOL, T4_POOL, deployed_like, gpu_stack, run
from tests.builders import mps, time_slicing

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
