"""Everything gpushare derives about one GPU pool of a stack. `gpushare.plan.build_plan` derives it once per run and
hands it to every consumer: `GpuNodePool`, `plan`'s report, tenants (their policies, quotas and pod snippets),
`verify`, the operator's tolerations.

A pool's facts depend on the whole stack (the cluster's MIG strategy is in every device-plugin config; the tenants
decide which pools are dedicated and so tainted), which is why they are a function of the stack, not of the pool.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gpushare.model.stack import GpuPool, StackConfig, dedicated_tenant, pool_node_taints
from gpushare.sharing.capacity import PoolCapacity, pool_capacity
from gpushare.sharing.device_plugin import PluginConfig, pool_plugin_configs
from gpushare.sharing.node_labels import aks_set_labels, node_labels


@dataclass(frozen=True)
class PoolFacts:
    pool: GpuPool
    capacity: PoolCapacity
    """The resource its nodes advertise and how many per node (`gpushare.sharing.capacity`)."""
    device_config: PluginConfig | None
    """Its device-plugin config (the ConfigMap entry), as rendered; `plugin_configs` validates it. None on a DRA
    pool: the device plugin is kept off its nodes (`node_labels.allocation_labels`)."""
    node_labels: Mapping[str, str]
    """The labels gpushare sends, which AKS puts on its nodes (`gpushare.sharing.node_labels`), the config key among
    them."""
    aks_labels: Mapping[str, str]
    """The labels AKS sets on its nodes by itself that gpushare selects by (`node_labels.aks_set_labels`)."""
    node_taints: tuple[str, ...]
    """The AKS node taints gpushare sends: the GPU taint, the user's own, the tenant's on a pool dedicated to one
    tenant, and the Spot taint on a Spot pool."""
    tolerated_taints: tuple[str, ...]
    """Every taint its nodes carry, what the operator's DaemonSets, NFD and the tenants' pods tolerate: the same as
    `node_taints`, since gpushare sends the Spot taint AKS adds too."""
    dedicated_tenant: str | None
    """The only tenant listing the pool, or None (no tenant, or several)."""

    @property
    def carried_labels(self) -> Mapping[str, str]:
        """Every label of its nodes that gpushare knows: the ones it sends and the ones AKS sets that it selects by."""
        return {**self.node_labels, **self.aks_labels}

    @property
    def config_key(self) -> str | None:
        """The ConfigMap key its nodes' `nvidia.com/device-plugin.config` label names; None on a DRA pool."""
        return self.device_config.key if self.device_config else None


PoolFactsByName = Mapping[str, PoolFacts]


def derive_pool_facts(stack: StackConfig) -> PoolFactsByName:
    """Each pool's facts by pool name, in stack order (read-only: every consumer shares the one mapping)."""
    strategy = stack.operator.mig_strategy
    configs = pool_plugin_configs(stack)
    facts = {}
    for pool in stack.pools:
        config = configs.get(pool.name)
        taints = pool_node_taints(stack, pool)
        facts[pool.name] = PoolFacts(
            pool=pool,
            capacity=pool_capacity(pool, strategy),
            device_config=config,
            node_labels=MappingProxyType(node_labels(pool, strategy, config.key if config else None)),
            aks_labels=MappingProxyType(aks_set_labels(pool)),
            node_taints=taints,
            tolerated_taints=taints,
            dedicated_tenant=dedicated_tenant(stack, pool.name),
        )
    return MappingProxyType(facts)


def given_or_derived(stack: StackConfig, facts: PoolFactsByName | None) -> PoolFactsByName:
    """The facts the plan derived, or, for a caller that has only the stack (a test, a one-off read), derived now."""
    return derive_pool_facts(stack) if facts is None else facts
