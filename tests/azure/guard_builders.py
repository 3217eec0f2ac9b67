"""Stacks and deployed pools for the guard's tests: a stack, and the pools Azure would report for it."""

from __future__ import annotations

import dataclasses

from gpushare.azure.deployed import DeployedPool
from gpushare.azure.guard.guard_report import GuardReport
from gpushare.azure.guard.guard_runs import evaluate
from gpushare.model.catalog import MigProfile
from gpushare.model.stack import Autoscale, DriverOwner, GpuPool, StackConfig
from gpushare.sharing.node_labels import pool_node_labels
from tests.builders import pool, stack, time_slicing

MIG_POOL = dataclasses.replace(pool("a100mig", "Standard_ND96asr_v4", mig=MigProfile.MIG1G, count=2), zones=("1", "2"))
T4_POOL = pool("t4ts", "Standard_NC4as_T4_v3", sharing=time_slicing(4), count=None, autoscale=Autoscale(0, 3))

SYSTEM_POOL = DeployedPool(
    name="system", vm_size="Standard_D4ds_v5", availability_zones=("1", "2", "3"), os_sku="Ubuntu", count=2,
    mode="System",
)
"""The cluster's system pool: no gpushare label, never in `StackConfig.pools`."""


def gpu_stack(*pools: GpuPool, driver: DriverOwner = DriverOwner.AKS) -> StackConfig:
    """The dev stack (`stacks/Pulumi.dev.yaml`, cluster `gpushare-dev`) with `pools`; both GPU pools by default."""
    return stack(*(pools or (MIG_POOL, T4_POOL)), driver=driver)


def deployed_like(gpu_pool: GpuPool, driver: DriverOwner = DriverOwner.AKS, **changes) -> DeployedPool:
    """What Azure reports for `gpu_pool` deployed as the stack wants it (labels included), then `changes`."""
    deployed = DeployedPool(
        name=gpu_pool.name,
        vm_size=gpu_pool.vm_size.name,
        gpu_instance_profile=gpu_pool.mig.value if gpu_pool.mig else None,
        gpu_driver="None" if driver is DriverOwner.OPERATOR else None,
        availability_zones=gpu_pool.zones,
        os_sku=gpu_pool.os_sku.value,
        node_labels=pool_node_labels(stack(gpu_pool, driver=driver), gpu_pool),
        node_taints=gpu_pool.taints,
        count=gpu_pool.count if gpu_pool.count is not None else gpu_pool.min_nodes,
        min_count=gpu_pool.autoscale.min if gpu_pool.autoscale else None,
        max_count=gpu_pool.autoscale.max if gpu_pool.autoscale else None,
        enable_auto_scaling=gpu_pool.autoscale is not None,
        mode="User",
        scale_set_priority="Spot" if gpu_pool.spot else None,
        scale_set_eviction_policy=gpu_pool.spot.eviction.value if gpu_pool.spot else None,
        # As AKS reports it: a float.
        spot_max_price=float(gpu_pool.spot.max_price) if gpu_pool.spot else None,
    )
    return dataclasses.replace(deployed, **changes)


def deployed_cluster(config: StackConfig, driver: DriverOwner = DriverOwner.AKS) -> list[DeployedPool]:
    """The system pool plus every pool of `config`, deployed exactly as the stack wants it."""
    return [SYSTEM_POOL, *(deployed_like(p, driver) for p in config.pools)]


SOURCE = "deployed.json"


def run(config: StackConfig, deployed: list[DeployedPool] | None) -> GuardReport:
    """The guard's evaluation of `config` against `deployed`, read from a file named SOURCE."""
    return evaluate(config, deployed, SOURCE)
