"""The node labels of a GPU pool: they depend on the whole stack (the cluster's MIG strategy is part of every
device-plugin config), so they are a function of stack and pool rather than a property of the pool."""

from __future__ import annotations

from gpushare.model.stack import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    DEVICE_PLUGIN_DEPLOY_LABEL,
    MIG_STRATEGY_LABEL,
    POOL_LABEL,
    SHARING_LABEL,
    SPOT_NODE_LABEL,
    SPOT_PRIORITY_LABEL,
    Allocation,
    GpuPool,
    MigStrategy,
    StackConfig,
    sharing_label,
)
from gpushare.sharing.device_plugin import pool_plugin_configs


def pool_node_labels(stack: StackConfig, pool: GpuPool) -> dict[str, str]:
    """The labels of `pool`, one of `stack`'s pools (`gpushare.sharing.pool_facts` holds them for every pool)."""
    config = pool_plugin_configs(stack).get(pool.name)
    return node_labels(pool, stack.operator.mig_strategy, config.key if config else None)


def node_labels(pool: GpuPool, mig_strategy: MigStrategy, config_key: str | None) -> dict[str, str]:
    """What AKS puts on every node of `pool` (and updates in place on existing nodes when it changes):
    - on a device-plugin pool, `nvidia.com/device-plugin.config`: the pool's content-addressed config key
      (`device_plugin.config_key`); on a DRA pool (no config key), `nvidia.com/gpu.deploy.device-plugin: "false"`
      instead (`allocation_labels`);
    - `gpushare.io/pool`: gpushare's ownership mark, which the guard reads before a pool may go;
    - `gpushare.io/sharing`: the sharing deployed, so the guard can report a sharing change;
    - `gpushare.io/mig-strategy` on device-plugin MIG pools: the strategy they were deployed under, so the guard can report a
      strategy change (it renames the resource every MIG pool advertises);
    - on a Spot pool, AKS's own `kubernetes.azure.com/scalesetpriority: spot`, as AKS sets it: AKS lists it among the
      pool's nodeLabels, a label update replaces that whole set, and an update without it removed it from the
      nodes (Azure/AKS#3152; terraform-provider-azurerm's docs ask a Spot pool to send it, CAPZ keeps it,
      kubernetes-sigs/cluster-api-provider-azure#2604);
    - then the pool's own `labels`.
    """
    labels = {
        **({DEVICE_PLUGIN_CONFIG_LABEL: config_key} if config_key else allocation_labels(pool)),
        POOL_LABEL: pool.name,
        SHARING_LABEL: sharing_label(pool.sharing),
    }
    if pool.mig and config_key:  # a DRA pool's MIG devices are published by the DRA driver, whatever the strategy
        labels[MIG_STRATEGY_LABEL] = mig_strategy.value
    if pool.spot:
        labels[SPOT_PRIORITY_LABEL] = "spot"
    # The user's own labels last; validation refused any key gpushare sets, so none overrides one of these.
    return {**labels, **dict(pool.labels)}


def allocation_labels(pool: GpuPool) -> dict[str, str]:
    """The label a DRA pool's nodes carry to keep the GPU Operator's device plugin off them
    (`model.stack.DEVICE_PLUGIN_DEPLOY_LABEL`, which cites the operator's source); none on a device-plugin pool."""
    return {DEVICE_PLUGIN_DEPLOY_LABEL: "false"} if pool.allocation is Allocation.DRA else {}


def aks_set_labels(pool: GpuPool) -> dict[str, str]:
    """The labels AKS sets on `pool`'s nodes by itself that gpushare selects by but never sends: on a Spot pool,
    `kubernetes.azure.com/priority: spot` (aks-docs use-labels.md @fb060ab L192), the label AKS names in place of the
    deprecated `scalesetpriority`."""
    return {SPOT_NODE_LABEL: "spot"} if pool.spot else {}
