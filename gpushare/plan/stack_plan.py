"""`StackPlan`: everything gpushare derives from one validated stack, derived in one place (`build_plan`) and read by
the components (each takes its part), `plan`'s report and the CLI. Nothing below re-derives what it holds."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpushare.azure.agent_pool_request import (
    EXISTING_CLUSTER_POD_SUBNET,
    EXISTING_CLUSTER_SUBNET,
    AgentPoolRequest,
    agent_pool_request,
)
from gpushare.azure.deployed import deployed_config_keys
from gpushare.azure.guard.guard_report import GuardReport
from gpushare.kubernetes.admission.policies import exempt_debug_policy, shared_pool_policy
from gpushare.errors import ConfigError
from gpushare.kubernetes.queues import KueueRelease, kueue_release, queue_layout_problems, queue_manifests
from gpushare.kubernetes.tenant_objects import TenantObjects, tenant_objects_by_role
from gpushare.model.stack import StackConfig, pool_subnet
from gpushare.plan.warnings import plan_warnings
from gpushare.sharing.autoscaling import stack_pool_tags
from gpushare.sharing.dra import DraPlan, dra_plan
from gpushare.sharing.operator_values import OperatorPlan, operator_plan
from gpushare.sharing.pool_facts import PoolFacts, PoolFactsByName, derive_pool_facts
from gpushare.showback.deployed_cost import deployed_cost
from gpushare.showback.deployed_objects import ShowbackObjects, showback_objects

Manifest = dict[str, Any]


@dataclass(frozen=True)
class PoolPlan:
    """One GPU pool: its facts, the AgentPool request gpushare sends (named by the stack's cluster and subnet; the
    program wires it to the cluster's outputs) and the Azure tags on it."""

    facts: PoolFacts
    request: AgentPoolRequest
    tags: Mapping[str, str]


@dataclass(frozen=True)
class QueuesPlan:
    """Kueue's release and the queue objects, flavors and cohorts first."""

    release: KueueRelease
    manifests: tuple[Manifest, ...]


@dataclass(frozen=True)
class StackPlan:
    stack: StackConfig
    pools: Mapping[str, PoolPlan]
    """By pool name, in stack order."""
    operator: OperatorPlan
    deployed_config_keys: Mapping[str, str]
    """pool -> the device-plugin config key its deployed nodes name (empty without the guard's read)."""
    tenants: Mapping[str, TenantObjects]
    """By tenant name, in stack order."""
    shared_policies: tuple[tuple[Manifest, Manifest], ...]
    """(policy, binding) for the namespaces no tenant owns, then the exempt namespaces' debug policy; none without
    tenants."""
    queues: QueuesPlan | None
    """None unless `gpushare:queues.enabled` and the stack has tenants."""
    showback_cost: Mapping[str, Any] | None
    """The cost the deployed showback rules carry (`gpushare:metrics.prices`); None without it."""
    showback: ShowbackObjects | None
    """The showback rules, scrape and dashboard; None without `gpushare:metrics`."""
    dra: DraPlan | None
    """The DRA driver's release, DeviceClasses and tenants' ResourceClaimTemplates; None without DRA pools."""
    warnings: tuple[str, ...]
    """Every warning about the stack, once, in a stable order."""

    @property
    def pool_facts(self) -> PoolFactsByName:
        return {name: pool.facts for name, pool in self.pools.items()}


def build_plan(stack: StackConfig, guard: GuardReport | None = None) -> StackPlan:
    """The plan of a validated stack; with the guard's report (its read of the deployed pools), each pool's live
    count and settled create-only inputs, and the warnings the deployed pools give. Raises ConfigError for what only
    the derived facts show (Azure's tag limits on a pool, a device-plugin config that fails its own validation, a
    pool the tenants list that no queue can reach)."""
    facts = derive_pool_facts(stack)
    if problems := queue_layout_problems(stack, facts):
        raise ConfigError(stack.source, problems)
    tags = stack_pool_tags(stack, facts)
    deployed = guard.deployed if guard else None
    pools = _pools(stack, facts, tags, guard)
    tenants = {tenant.name: tenant_objects_by_role(stack, tenant, facts) for tenant in stack.tenants}
    queued = stack.queues.enabled and stack.tenants
    cost = deployed_cost(stack, facts) if stack.metrics else None
    return StackPlan(
        stack=stack, pools=pools, operator=operator_plan(stack, facts),
        deployed_config_keys=deployed_config_keys(deployed or ()),
        tenants=tenants,
        shared_policies=_pairs(shared_pool_policy(stack), exempt_debug_policy(stack)),
        queues=QueuesPlan(kueue_release(stack), tuple(queue_manifests(stack, facts))) if queued else None,
        showback_cost=cost, showback=showback_objects(stack, cost, facts), dra=dra_plan(stack),
        warnings=tuple(plan_warnings(stack, facts, tags, guard)),
    )


def with_guard(plan: StackPlan, guard: GuardReport) -> StackPlan:
    """`plan` (built before Azure was read) with what the guard's read of the deployed pools changes: each pool's
    live count and settled inputs, the config keys deployed nodes name, and the warnings; the facts stand."""
    facts = plan.pool_facts
    tags = {name: pool.tags for name, pool in plan.pools.items()}
    return dataclasses.replace(
        plan, pools=_pools(plan.stack, facts, tags, guard),
        deployed_config_keys=deployed_config_keys(guard.deployed or ()),
        warnings=tuple(plan_warnings(plan.stack, facts, tags, guard)))


def _pools(stack: StackConfig, facts: PoolFactsByName, tags: Mapping[str, Mapping[str, str]],
           guard: GuardReport | None) -> dict[str, PoolPlan]:
    return {name: PoolPlan(pool_facts, _request(stack, pool_facts, guard, tags[name]), tags[name])
            for name, pool_facts in facts.items()}


def _request(stack: StackConfig, facts: PoolFacts, guard: GuardReport | None,
             tags: Mapping[str, str]) -> AgentPoolRequest:
    pool = facts.pool
    existing = stack.cluster.existing
    return agent_pool_request(
        facts, stack.operator.driver, cluster_name=stack.cluster.name,
        resource_group_name=stack.cluster.resource_group,
        subnet_id=pool_subnet(stack, pool) or (EXISTING_CLUSTER_SUBNET if existing else None),
        pod_subnet_id=EXISTING_CLUSTER_POD_SUBNET if existing else None,
        live_count=guard.live_count(pool.name) if guard else None,
        settled=guard.settled(stack, pool, {pool.name: facts}) if guard else (), tags=tags)


def _pairs(*policies: Iterable[Manifest]) -> tuple[tuple[Manifest, Manifest], ...]:
    """Each `[policy, binding]` list as a pair; empty lists (no tenants) left out."""
    return tuple((policy[0], policy[1]) for policy in (list(p) for p in policies) if policy)

