"""Preflight for what the catalog does not know (issue 19): a size the stack describes checked against the GPU count
Azure reports, Spot pools against the regional low-priority bucket, an ephemeral OS disk against the size's cache
and temp disk; the real azure-mgmt-compute client against the local ARM stub."""

from __future__ import annotations

import dataclasses

import pytest

from gpushare.azure.deployed import read_live
from gpushare.azure.preflight.preflight_report import Verdict
from gpushare.azure.preflight.preflight_runs import evaluate
from gpushare.azure.region_offers import read_region
from gpushare.model import catalog
from gpushare.model.stack import GpuPool, OsDisk, OsDiskType, Spot, SpotEviction
from tests.azure.guard_builders import T4_POOL, gpu_stack
from tests.azure.preflight_region import REGION, T4, T4_FAMILY, serve_region, usages, vm_sizes
from tests.azure_stub import ArmStub, StaticTokenCredential, arm_usage, arm_vm_sku

SUB = "3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3"
RG, CLUSTER = "rg-gpushare-dev", "gpushare-dev"
L4 = "Standard_NC16ads_L4_v9"
L4_FAMILY = "StandardNCadsL4v9Family"


@pytest.fixture
def arm():
    with ArmStub() as stub:
        yield stub


def run(arm: ArmStub, config, **region):
    settings = {"credential": StaticTokenCredential(), "retry_total": 2, "retry_backoff_factor": 0.01,
                **arm.client_kwargs()}
    serve_region(arm, SUB, RG, CLUSTER, **region)
    deployed = read_live(SUB, RG, CLUSTER, **settings)
    return evaluate(config, read_region(SUB, REGION, **settings), deployed, SUB)


def rows(report, check: str) -> dict:
    return {c.subject: (c.verdict, c.detail, c.fix) for c in report.checks if c.check == check}


def described_pool(gpus: int) -> GpuPool:
    l4 = catalog.find_gpu_product("L4")
    size = catalog.stack_described_size(L4, catalog.stack_gpu_model(l4, 24), gpus, 16)
    return GpuPool(name="l4", vm_size=size)


def l4_region(reported_gpus: int) -> dict:
    return {"skus": vm_sizes(arm_vm_sku(L4, L4_FAMILY, 16, REGION, gpus=reported_gpus)),
            "quota": [*usages(), arm_usage(L4_FAMILY, "Standard NCadsL4v9 Family vCPUs", 0, 32)]}


def test_a_described_size_whose_gpu_count_differs_from_azures_fails_with_the_fix(arm):
    report = run(arm, gpu_stack(described_pool(gpus=2)), **l4_region(reported_gpus=1))

    verdict, detail, fix = rows(report, "gpus")[f"pool l4 ({L4})"]
    assert verdict is Verdict.FAIL
    assert detail.startswith(f"Azure reports 1 GPU(s) per {L4} node, the pool's `gpu:` block says 2")
    assert fix == "set `gpu.count: 1` in the pool"
    # Its vCPUs and family come from the SKU list, so its quota is counted.
    assert rows(report, "quota")[L4_FAMILY][1].startswith("needs 16 vCPUs at most (l4 1 x 16)")


def test_a_described_size_that_matches_passes_and_one_not_offered_fails(arm):
    assert rows(run(arm, gpu_stack(described_pool(gpus=1)), **l4_region(reported_gpus=1)), "gpus")[
        f"pool l4 ({L4})"][0] is Verdict.PASS

    report = run(arm, gpu_stack(described_pool(gpus=1)))  # the region lists no L4 size
    assert rows(report, "vm-size")[f"pool l4 ({L4})"][:2] == (Verdict.FAIL, f"{L4} is not offered in {REGION}")
    assert "gpus" not in {c.check for c in report.checks}


def test_spot_pools_need_low_priority_quota_not_their_familys(arm):
    spot = dataclasses.replace(T4_POOL, name="t4spot", spot=Spot())  # autoscale 0-3 x 4 vCPUs
    config = gpu_stack(spot)
    quota = [*usages(**{T4_FAMILY: (64, 64)}),  # the family is full: Spot does not use it
             arm_usage("lowPriorityCores", "Total Regional Low-priority vCPUs", 4, 12)]

    report = run(arm, config, quota=quota)

    by_subject = rows(report, "quota")
    assert T4_FAMILY not in by_subject
    verdict, detail, fix = by_subject["lowPriorityCores"]
    assert verdict is Verdict.FAIL
    assert detail.startswith("needs 12 vCPUs at most (t4spot 3 x 4); 8 free (limit 12, in use 4): short by 4")
    assert "--resource-type lowPriority" in fix and "value=16" in fix
    assert by_subject["cores"][1].startswith("needs 12 vCPUs at most (system pool 2 + 1 surge x 4)")


def test_spot_without_a_low_priority_entry_fails(arm):
    spot = dataclasses.replace(T4_POOL, name="t4spot", spot=Spot())
    verdict, detail, _ = rows(run(arm, gpu_stack(spot)), "quota")["lowPriorityCores"]
    assert verdict is Verdict.FAIL and "Azure reports no Spot vCPU quota (lowPriorityCores)" in detail


@pytest.mark.parametrize("size_gb, verdict", [(128, Verdict.PASS), (200, Verdict.FAIL)])
def test_an_ephemeral_os_disk_must_fit_the_sizes_temp_disk(arm, size_gb, verdict):
    pool = dataclasses.replace(T4_POOL, os_disk=OsDisk(size_gb, OsDiskType.EPHEMERAL))

    got, detail, fix = rows(run(arm, gpu_stack(pool)), "os-disk")[f"pool t4ts ({T4_POOL.vm_size.name})"]

    assert got is verdict  # the stub's SKU: MaxResourceVolumeMB 180224 (176 GiB), no cache
    assert detail.startswith(f"ephemeral OS disk of {size_gb} GB; cache 0 GiB, temp disk 176 GiB")
    if verdict is Verdict.FAIL:
        assert fix == "set `osDisk.sizeGb` to at most 176"


def deallocating(os_disk: OsDisk = OsDisk()) -> GpuPool:
    return dataclasses.replace(T4_POOL, name="t4spot", spot=Spot(eviction=SpotEviction.DEALLOCATE), os_disk=os_disk)


def t4_with_temp_disk(temp_mb: int | None) -> dict:
    sku = arm_vm_sku(T4_POOL.vm_size.name, T4_FAMILY, 4, REGION, gpus=1)
    sku["capabilities"] = [c for c in sku["capabilities"] if c["name"] != "MaxResourceVolumeMB"]
    if temp_mb is not None:
        sku["capabilities"].append({"name": "MaxResourceVolumeMB", "value": str(temp_mb)})
    return {"skus": vm_sizes(sku)}


def test_deallocate_on_a_size_whose_temp_disk_aks_puts_the_os_disk_on_fails(arm):
    """No osDisk: AKS gives a size with at least 128 GiB of temp disk an ephemeral OS disk (aks-docs
    concepts-storage.md), and an ephemeral OS disk cannot be deallocated."""
    verdict, detail, fix = rows(run(arm, gpu_stack(deallocating())), "os-disk")[f"pool t4spot ({T4})"]

    assert verdict is Verdict.FAIL  # the stub's T4: 176 GiB of temp disk
    assert detail == ("spot.eviction Deallocate, but no osDisk set and the cache 0 GiB, temp disk 176 GiB: AKS picks "
                      "an ephemeral OS disk of the temp disk's size (at least 128 GiB), and an ephemeral OS disk "
                      "cannot be stop-deallocated: AKS refuses the pool")
    assert fix == "set the pool's osDisk.type: Managed (kept on deallocation), or spot.eviction: Delete"


@pytest.mark.parametrize("os_disk, temp_mb, verdict", [
    (OsDisk(type=OsDiskType.MANAGED), 180224, Verdict.PASS),  # asked for: AKS keeps it
    (OsDisk(), 100 * 1024, Verdict.PASS),  # below 128 GiB of temp disk: managed
    (OsDisk(size_gb=200), 180224, Verdict.PASS),  # 200 GB fits neither disk: managed
    (OsDisk(size_gb=64), 100 * 1024, Verdict.FAIL),  # 64 GB fits the 100 GiB temp disk: ephemeral
    (OsDisk(), None, Verdict.WARN),  # Azure reports no disk sizes
])
def test_deallocate_follows_the_os_disk_aks_picks(arm, os_disk, temp_mb, verdict):
    report = run(arm, gpu_stack(deallocating(os_disk)), **t4_with_temp_disk(temp_mb))
    by_subject = rows(report, "os-disk")
    if os_disk.type is OsDiskType.MANAGED:
        assert f"pool t4spot ({T4})" not in by_subject  # the stack says Managed: nothing for AKS to pick
        return
    assert by_subject[f"pool t4spot ({T4})"][0] is verdict


def test_delete_eviction_needs_no_os_disk_check(arm):
    spot = dataclasses.replace(T4_POOL, name="t4spot", spot=Spot())
    assert f"pool t4spot ({T4})" not in rows(run(arm, gpu_stack(spot)), "os-disk")
