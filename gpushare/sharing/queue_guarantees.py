"""What each tenant's Kueue queue guarantees on each of its pools, what a cohort holds of its own, and which pools
the queues can reach: the arithmetic the queue objects (`gpushare.kubernetes.queues`), the plan and the stack file's
validation (`gpushare.stackfile.queue_config.queue_problems`) share.

A tenant's guarantee on a pool (its ClusterQueue's `nominalQuota` on the pool's flavor):
- with `quota.pools`, that promise on each pool it names; on a pool it lists but does not name, 0 where the pool is
  shared (it borrows there) and the whole pool where it is the tenant's own (dedicated);
- else per resource (`queue.nominal`, default its quota, else what its pools hold with shared pools split evenly),
  placed on its dedicated pools first, then on its shared pools up to an even split, then up to their capacity.
What the guarantees leave of a shared pool is the cohort's own quota (a Cohort's `resourceGroups`, Kueue v0.19.2
`apis/kueue/v1beta2/cohort_types.go` CohortSpec: "additional resources on top of those defined by ClusterQueues
within the Cohort ... a shared pool for the ClusterQueues within it"): a pool no tenant is guaranteed is lent by
the cohort to every tenant listing it, so no default strands a pool.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpushare.model.stack import StackConfig, Tenant
from gpushare.sharing.pool_facts import PoolFactsByName, given_or_derived


@dataclass(frozen=True)
class FlavorQuota:
    """One pool in a tenant's ClusterQueue."""

    pool: str
    resource: str
    capacity: int
    """What the pool advertises at its max."""
    nominal: int
    borrowing_limit: int | None
    """None: no limit (Kueue's default) or no cohort."""
    lending_limit: int | None
    """None: all of `nominal` (Kueue's default) or no cohort."""
    dedicated: bool


@dataclass(frozen=True)
class CohortQuota:
    """What a cohort holds of a shared pool itself: the pool's capacity at its max less its tenants' guarantees."""

    cohort: str
    pool: str
    resource: str
    units: int


def cohorts(stack: StackConfig) -> list[tuple[str, tuple[Tenant, ...]]]:
    """(cohort name, its tenants in stack order) for each connected group of two or more tenants sharing pools."""
    groups: list[list[Tenant]] = []
    for tenant in stack.tenants:
        joined = [g for g in groups if any(set(tenant.pools) & set(other.pools) for other in g)]
        merged = [t for g in joined for t in g] + [tenant]
        groups = [g for g in groups if g not in joined] + [merged]
    order = {tenant.name: i for i, tenant in enumerate(stack.tenants)}
    found = []
    for group in groups:
        members = tuple(sorted(group, key=lambda t: order[t.name]))
        if len(members) > 1:
            found.append((f"gpushare-{members[0].name}", members))
    return sorted(found, key=lambda c: order[c[1][0].name])


def cohort_of(stack: StackConfig, tenant: Tenant) -> str | None:
    return next((name for name, members in cohorts(stack) if tenant in members), None)


def listing(stack: StackConfig, pool: str) -> int:
    """How many tenants list the pool."""
    return sum(1 for tenant in stack.tenants if pool in tenant.pools)


def _targets(stack: StackConfig, tenant: Tenant, facts: PoolFactsByName) -> dict[str, int]:
    """resource -> the units the tenant is guaranteed: `queue.nominal`'s, else its quota, else its pools' share
    (per resource: a resource `nominal` does not name keeps its default)."""
    share: dict[str, int] = {}
    for name in tenant.pools:
        capacity = facts[name].capacity
        total = capacity.total(facts[name].pool.max_nodes)
        share[capacity.resource] = share.get(capacity.resource, 0) + total // listing(stack, name)
    quota = dict(tenant.quota)
    defaults = {resource: min(units, quota.get(resource, units)) for resource, units in share.items()}
    return {**defaults, **dict(tenant.queue.nominal or ())}


def _placed(stack: StackConfig, tenant: Tenant, pools: list[str], capacity: dict[str, int],
            target: int, facts: PoolFactsByName) -> dict[str, int]:
    """Per pool, the tenant's guarantee: its `quota.pools` promise, else `target` placed on its dedicated pools to
    their capacity, its shared pools to an even split, then its shared pools to their capacity."""
    own = {n for n in pools if facts[n].dedicated_tenant == tenant.name}
    if tenant.pool_quota:
        promised = dict(tenant.pool_quota)
        return {n: promised.get(n, capacity[n] if n in own else 0) for n in pools}
    placed = dict.fromkeys(pools, 0)
    left = target
    for bound in ({n: capacity[n] for n in pools if n in own},
                  {n: capacity[n] // listing(stack, n) for n in pools if n not in own},
                  {n: capacity[n] for n in pools if n not in own}):
        for name, most in bound.items():
            more = max(0, min(most - placed[name], left))
            placed[name] += more
            left -= more
    return placed


def flavor_quotas(stack: StackConfig, tenant: Tenant, facts: PoolFactsByName | None = None) -> list[FlavorQuota]:
    """The tenant's pools as its ClusterQueue lists them: by resource, dedicated pools first."""
    facts = given_or_derived(stack, facts)
    in_cohort = cohort_of(stack, tenant) is not None
    borrowing, lending = dict(tenant.queue.borrowing_limit), dict(tenant.queue.lending_limit)
    quotas = []
    for resource, target in _targets(stack, tenant, facts).items():
        pools = [name for name in tenant.pools if facts[name].capacity.resource == resource]
        pools.sort(key=lambda name: facts[name].dedicated_tenant != tenant.name)
        capacity = {name: facts[name].capacity.total(facts[name].pool.max_nodes) for name in pools}
        placed = _placed(stack, tenant, pools, capacity, target, facts)
        for name in pools:
            dedicated = facts[name].dedicated_tenant == tenant.name
            nominal = placed[name]
            quotas.append(FlavorQuota(
                pool=name, resource=resource, capacity=capacity[name], nominal=nominal, dedicated=dedicated,
                borrowing_limit=(0 if dedicated else borrowing.get(resource)) if in_cohort else None,
                lending_limit=(0 if dedicated else _lend(lending.get(resource), nominal)) if in_cohort else None))
    return quotas


def _lend(limit: int | None, nominal: int) -> int | None:
    """Kueue's webhook refuses a lendingLimit above the flavor's nominalQuota (`validateLendingLimit`)."""
    return None if limit is None else min(limit, nominal)


def all_flavor_quotas(stack: StackConfig, facts: PoolFactsByName | None = None) -> dict[str, list[FlavorQuota]]:
    """Each tenant's `flavor_quotas`, by tenant name."""
    facts = given_or_derived(stack, facts)
    return {tenant.name: flavor_quotas(stack, tenant, facts) for tenant in stack.tenants}


def cohort_quotas(stack: StackConfig, quotas: dict[str, list[FlavorQuota]] | None = None,
                  facts: PoolFactsByName | None = None) -> list[CohortQuota]:
    """Per shared pool whose tenants' guarantees leave part of it (all of it where none is guaranteed there), that
    part as its cohort's own quota, in the stack's pool order. Every tenant listing a shared pool is in one cohort
    (sharing it joins them)."""
    facts = given_or_derived(stack, facts)
    quotas = all_flavor_quotas(stack, facts) if quotas is None else quotas
    found = []
    for name, members in cohorts(stack):
        names = {t.name for t in members}
        for pool_facts in facts.values():
            pool = pool_facts.pool.name
            if listing(stack, pool) < 2 or not any(pool in t.pools for t in members):
                continue
            guaranteed = sum(q.nominal for tenant, qs in quotas.items() if tenant in names for q in qs
                             if q.pool == pool)
            rest = pool_facts.capacity.total(pool_facts.pool.max_nodes) - guaranteed
            if rest > 0:
                found.append(CohortQuota(name, pool, pool_facts.capacity.resource, rest))
    return found


def lendable(quota: FlavorQuota) -> int:
    return quota.nominal if quota.lending_limit is None else quota.lending_limit


def lent_on(stack: StackConfig, all_quotas: dict[str, list[FlavorQuota]], borrower: str, pool: str,
            facts: PoolFactsByName | None = None) -> int:
    """What the borrower's cohort lends it on `pool`: each other tenant listing it its `lendingLimit`, else all of
    its nominal quota (Kueue's default), plus the cohort's own quota there."""
    own = sum(c.units for c in cohort_quotas(stack, all_quotas, facts) if c.pool == pool)
    return own + sum(lendable(q) for other, quotas in all_quotas.items() if other != borrower
                     for q in quotas if q.pool == pool)


def reach(quota: FlavorQuota, in_cohort: bool) -> int:
    """The most the tenant can use on the pool: its guarantee plus what it may borrow, at most the pool."""
    if not in_cohort or quota.dedicated:
        return quota.nominal
    if quota.borrowing_limit is None:
        return quota.capacity
    return min(quota.capacity, quota.nominal + quota.borrowing_limit)


def unreachable_pools(stack: StackConfig, facts: PoolFactsByName | None = None) -> list[tuple[str, list[str]]]:
    """(pool, the tenants listing it) for each listed pool on which no tenant's queue can admit anything: no tenant
    is guaranteed any of it and none may borrow it (a dedicated pool borrows nothing; a borrowingLimit of 0)."""
    quotas = all_flavor_quotas(stack, facts)
    in_cohort = {t.name: cohort_of(stack, t) is not None for t in stack.tenants}
    found = []
    for pool in stack.pools:
        on_pool = [(tenant, q) for tenant, qs in quotas.items() for q in qs if q.pool == pool.name]
        if on_pool and not any(reach(q, in_cohort[tenant]) > 0 for tenant, q in on_pool):
            found.append((pool.name, [tenant for tenant, _ in on_pool]))
    return found
