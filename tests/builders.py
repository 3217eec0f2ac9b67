"""Validated stack objects for tests, built straight from `gpushare.model.stack` (no stack-file parsing)."""

from __future__ import annotations

import dataclasses

from gpushare.model.catalog import MigProfile, find_vm_size
from gpushare.model.stack import (
    DEFAULT_CHART_VERSION,
    Autoscale,
    Cluster,
    DriverOwner,
    GpuPool,
    MigStrategy,
    Operator,
    OsSku,
    Sharing,
    SharingStrategy,
    StackConfig,
    SystemPool,
)
from tests.stack_files import T4  # noqa: F401  (the builders take it as the default size)



def pool(
    name: str,
    vm_size: str,
    *,
    mig: MigProfile | None = None,
    sharing: Sharing | None = None,
    count: int | None = 1,
    autoscale: Autoscale | None = None,
    os_sku: OsSku = OsSku.UBUNTU,
) -> GpuPool:
    size = find_vm_size(vm_size)
    assert size is not None, vm_size
    return GpuPool(name=name, vm_size=size, mig=mig, sharing=sharing, count=count, autoscale=autoscale, os_sku=os_sku)


def time_slicing(replicas: int, **kwargs) -> Sharing:
    return Sharing(SharingStrategy.TIME_SLICING, replicas, **kwargs)


def mps(replicas: int, **kwargs) -> Sharing:
    return Sharing(SharingStrategy.MPS, replicas, **kwargs)


def stack(
    *pools: GpuPool,
    driver: DriverOwner = DriverOwner.AKS,
    mig_strategy: MigStrategy = MigStrategy.SINGLE,
    chart_version: str = DEFAULT_CHART_VERSION,
) -> StackConfig:
    return StackConfig(
        source="stacks/Pulumi.dev.yaml",
        stack="dev",
        location="westeurope",
        cluster=Cluster(name="gpushare-dev", resource_group="rg-gpushare-dev", kubernetes_version=None,
                        system_pool=SystemPool()),
        operator=Operator(chart_version=chart_version, driver=driver, mig_strategy=mig_strategy),
        pools=tuple(pools),
    )


def with_pool(config: StackConfig, index: int, **changes) -> StackConfig:
    """`config` with fields of one pool replaced."""
    pools = list(config.pools)
    pools[index] = dataclasses.replace(pools[index], **changes)
    return dataclasses.replace(config, pools=tuple(pools))


# The five pool shapes the issue asks to cover, each in the stack it needs (mixed time-slicing needs `mixed`).
MIG_SINGLE = stack(pool("a100mig", "Standard_ND96asr_v4", mig=MigProfile.MIG1G))
MIG_MIXED_TIME_SLICING = stack(
    pool("h100ts", "Standard_NC40ads_H100_v5", mig=MigProfile.MIG2G, sharing=time_slicing(3)),
    mig_strategy=MigStrategy.MIXED,
)
T4_TIME_SLICING = stack(pool("t4ts", "Standard_NC4as_T4_v3", sharing=time_slicing(4, rename_by_default=False)))
T4_MPS = stack(pool("t4mps", "Standard_NC64as_T4_v3", sharing=mps(8, fail_requests_greater_than_one=False)))
WHOLE_GPU = stack(pool("a100", "Standard_NC24ads_A100_v4", count=None, autoscale=Autoscale(0, 3)))

CASES = {
    "mig-single": MIG_SINGLE,
    "mig-mixed-time-slicing": MIG_MIXED_TIME_SLICING,
    "t4-time-slicing": T4_TIME_SLICING,
    "t4-mps": T4_MPS,
    "whole-gpu": WHOLE_GPU,
}
