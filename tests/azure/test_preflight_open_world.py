"""Preflight for what the catalog does not know (issue 19): a size the stack describes checked against the GPU count
Azure reports, Spot pools against the regional low-priority bucket, an ephemeral OS disk against the size's cache
and temp disk; the real azure-mgmt-compute client against the local ARM stub."""

from __future__ import annotations

import dataclasses

import pytest

from gpushare.azure.deployed import read_live
from gpushare.azure.preflight import Verdict, evaluate
from gpushare.azure.region_offers import read_region
from gpushare.stackfile import catalog
from gpushare.stackfile.model import GpuPool, OsDisk, OsDiskType, Spot
from tests.azure.guard_builders import T4_POOL, gpu_stack
from tests.azure.preflight_region import REGION, T4_FAMILY, serve_region, usages, vm_sizes
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
