"""Changes AKS makes in place that still disturb running pods: reported, never refused.
- `osSKU` (notes): AKS migrates a pool between Ubuntu and AzureLinux in place (`az aks nodepool update --os-sku`) by
  reimaging every node of the pool, one after another; the pool, its name and its settings stay. The one-OS-per-
  cluster rule (`gpushare.stackfile.config`) makes every GPU pool move together.
- sharing (notes): time-slicing/MPS replicas change in place but restart the device plugin; read from the
  `gpushare.io/sharing` node label (`SHARING_LABEL`) when the deployed pool carries it.
- `allocation` (refused unless `recreate: true`, `guard_runs.evaluate`): AKS relabels the nodes in place, but that
  moves the pool's running workloads from the device plugin to DRA or back; read from the deployed pool's labels
  (`deployed_allocation`).
- `operator.migStrategy` (a warning): it renames the resource every MIG pool advertises (`nvidia.com/gpu` <->
  `nvidia.com/mig-<slice>`), so pod specs asking for the old name stop scheduling there; read from the
  `gpushare.io/mig-strategy` node label (`MIG_STRATEGY_LABEL`) of deployed MIG pools.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpushare.azure.deployed import DeployedPool
from gpushare.model.stack import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    DEVICE_PLUGIN_DEPLOY_LABEL,
    MIG_STRATEGY_LABEL,
    SHARING_LABEL,
    Allocation,
    GpuPool,
    MigStrategy,
    StackConfig,
    sharing_label,
)
from gpushare.sharing.capacity import pool_capacity


def os_sku_note(pool: GpuPool, live: DeployedPool) -> str | None:
    deployed = live.os_sku or "Ubuntu"  # AKS's Linux default when Azure reports none
    if deployed.lower() == pool.os_sku.value.lower():
        return None
    return (
        f"pool {pool.name}: osSKU {deployed} -> {pool.os_sku.value}. AKS migrates the OS in place (as `az aks "
        "nodepool update --os-sku` does): it reimages every node of the pool, one after another, so each node is "
        "drained and its pods restart; the pool and its name stay. Every GPU pool changes OS together (the GPU "
        "Operator supports one OS per cluster)."
    )


def mig_strategy_warning(stack: StackConfig, by_name: Mapping[str, DeployedPool]) -> str | None:
    """The MIG pools whose advertised resource changes because `operator.migStrategy` changed since they were
    deployed (their `MIG_STRATEGY_LABEL`). A pool without the label, or with a value gpushare does not know,
    cannot be compared: nothing is said about it."""
    wanted = stack.operator.mig_strategy
    renames = []
    for pool in stack.pools:
        live = by_name.get(pool.name)
        label = live.node_labels.get(MIG_STRATEGY_LABEL) if live else None
        if pool.mig is None or label is None or label == wanted.value:
            continue
        try:
            deployed = MigStrategy(label)
        except ValueError:
            continue
        old, new = pool_capacity(pool, deployed).resource, pool_capacity(pool, wanted).resource
        renames.append(f"{pool.name} {old} -> {new} (deployed with {deployed.value})")
    if not renames:
        return None
    return (
        f"stack {stack.stack}, cluster {stack.cluster.name}: gpushare:operator.migStrategy is {wanted.value}, which "
        f"renames the resource these MIG pools advertise: {'; '.join(renames)}. The device plugin switches in place "
        "and running pods keep their devices, but every pod created or restarted with the old resource name stays "
        "Pending: change the workloads' resource requests to the new names together with this change."
    )


def sharing_note(pool: GpuPool, live: DeployedPool) -> str | None:
    deployed = live.node_labels.get(SHARING_LABEL)
    wanted = sharing_label(pool.sharing)
    if deployed is None or deployed == wanted:
        return None  # a pool deployed before the label carries none: its sharing cannot be compared
    return (
        f"pool {pool.name}: sharing {deployed} -> {wanted}. AKS applies this in place, no node is replaced, but the "
        "NVIDIA device plugin on the pool's nodes restarts with the new configuration and the number of GPU slots "
        "pods can request changes."
    )


def deployed_allocation(live: DeployedPool) -> Allocation | None:
    """How a deployed pool is served, from its node labels: DRA where the operator's device plugin is kept off
    (`DEVICE_PLUGIN_DEPLOY_LABEL: "false"`), the device plugin where its nodes name a device-plugin config; None
    for a pool with neither (not gpushare's, or read without its labels)."""
    if live.node_labels.get(DEVICE_PLUGIN_DEPLOY_LABEL) == "false":
        return Allocation.DRA
    return Allocation.DEVICE_PLUGIN if DEVICE_PLUGIN_CONFIG_LABEL in live.node_labels else None


def allocation_change(pool: GpuPool, live: DeployedPool) -> tuple[Allocation, Allocation] | None:
    """(deployed, wanted) when the stack changes how a deployed pool is served; None otherwise or when unknown."""
    deployed = deployed_allocation(live)
    return None if deployed is None or deployed is pool.allocation else (deployed, pool.allocation)
