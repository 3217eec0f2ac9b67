"""Kueue queues compiled from the stack (`gpushare:queues`, each tenant's `queue:`), in Kueue v0.19.2's v1beta2 API.

What is made, and why so:
- A ResourceFlavor per GPU pool: `nodeLabels` `gpushare.io/pool: <pool>` (plus AKS's Spot label
  `kubernetes.azure.com/priority: spot` on a Spot pool), and tolerations for every taint the pool's nodes carry (the
  GPU taint, the user's, the tenant's on a dedicated pool, AKS's Spot taint). When Kueue admits a workload on a
  flavor it adds these to the pod template (`pkg/podset` `Merge` via `FromAssignment`), so the pods land on that
  pool only. The CRD allows at most 8 labels and 8 tolerations (`ResourceFlavorSpec`, `maxItems: 8`): a pool with
  more taints is refused.
- A ClusterQueue per tenant, named after it, admitting only its namespace (`namespaceSelector` on the immutable
  `kubernetes.io/metadata.name`). One resource group per GPU resource name its pools advertise (its flavors: the
  pools advertising it, dedicated ones first, so Kueue tries the tenant's own nodes before shared ones), plus one
  for `cpu` and `memory` on a flavor with no labels (`gpushare-cpu-memory`): Kueue admits no workload requesting a
  resource its ClusterQueue does not cover, and Kueue's webhook lets a resource and a flavor appear in one group
  only (`pkg/webhooks/clusterqueue_webhook.go` `validateResourceGroups`: `field.Duplicate` on both), so cpu and
  memory cannot sit beside each GPU resource. Within a flavor the resources follow `coveredResources` in order
  (`validateFlavorQuotas`: "must match the name in coveredResources").
- Cohorts: a ClusterQueue has one `cohortName`, so tenants connected by shared pools (a tenant sharing a pool
  with another that shares another pool with a third) form one cohort, `gpushare-<its first tenant>`. A tenant
  sharing no pool has no cohort: it lends and borrows nothing (the CRD refuses a `borrowingLimit` without one).
- Borrowing never crosses the tenant boundary: a ClusterQueue lists only its tenant's pools, so it can borrow only
  on pools it shares; on a dedicated pool it lends nothing (`lendingLimit: 0`) and borrows nothing. Pools no
  tenant lists are not in any queue: the tenant policies keep tenants' pods off them (they serve the other
  namespaces, `tenants.shared_pool_policy`), so lending them would let Kueue place pods the policy refuses.
- A LocalQueue `<tenant>` in the tenant's namespace: Jobs labelled `kueue.x-k8s.io/queue-name: <tenant>` queue.
- A WorkloadPriorityClass `gpushare-<tenant>` per tenant (`queue.priority`), for its workloads to name
  (`kueue.x-k8s.io/priority-class`); preemption (`queue.preemption`) compares these priorities.

A tenant's guarantee (`queue.nominal`, per resource; default its quota, else what its pools hold with shared pools
split evenly) is placed on its dedicated pools first, then on its shared pools up to an even split, then on its
shared pools up to their capacity at `max`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from gpushare.kubernetes.kueue_admission import (
    KUEUE_NAMESPACE,
    PRIORITY_CLASS_LABEL,
    local_queue_names,
    priority_class_name,
)
from gpushare.kubernetes.tenants import MANAGED_BY, NAME_LABEL, NODE_SHARE_FOR_PODS
from gpushare.model.keys import QUEUES_KEY, TENANTS_KEY
from gpushare.model.stack import StackConfig, Tenant, TenantQueue
from gpushare.sharing.pool_facts import PoolFacts, PoolFactsByName, given_or_derived
from gpushare.sharing.queue_flavor import flavor_node_labels, flavor_tolerations
from gpushare.stackfile.queue_config import VERIFIED_KUEUE_VERSIONS

KUEUE_API = "kueue.x-k8s.io/v1beta2"
CPU_MEMORY_FLAVOR = "gpushare-cpu-memory"
"""The flavor of the cpu/memory resource group: no node labels, so it places nothing (the GPU flavor does)."""
UNKNOWN_NODE_MEMORY_GIB = 0
"""A size the stack describes has no known memory offline: it adds none to the memory guarantee."""


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


def pool_flavor(facts: PoolFacts) -> dict[str, Any]:
    return {"apiVersion": KUEUE_API, "kind": "ResourceFlavor",
            "metadata": {"name": facts.pool.name, "labels": dict(MANAGED_BY)},
            "spec": {"nodeLabels": flavor_node_labels(facts), "tolerations": flavor_tolerations(facts)}}


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


def _listing(stack: StackConfig, pool: str) -> int:
    return sum(1 for tenant in stack.tenants if pool in tenant.pools)


def _targets(stack: StackConfig, tenant: Tenant, facts: PoolFactsByName | None = None) -> dict[str, int]:
    """resource -> the units the tenant is guaranteed: `queue.nominal`'s, else its quota, else its pools' share
    (per resource: a resource `nominal` does not name keeps its default)."""
    facts = given_or_derived(stack, facts)
    share: dict[str, int] = {}
    for name in tenant.pools:
        capacity = facts[name].capacity
        total = capacity.total(facts[name].pool.max_nodes)
        share[capacity.resource] = share.get(capacity.resource, 0) + total // _listing(stack, name)
    quota = dict(tenant.quota)
    defaults = {resource: min(units, quota.get(resource, units)) for resource, units in share.items()}
    return {**defaults, **dict(tenant.queue.nominal or ())}


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
        placed = dict.fromkeys(pools, 0)
        left = target
        # Dedicated pools to their capacity, shared pools to an even split, then shared pools to their capacity.
        for bound in ({n: capacity[n] for n in pools if facts[n].dedicated_tenant == tenant.name},
                      {n: capacity[n] // _listing(stack, n) for n in pools if facts[n].dedicated_tenant is None},
                      {n: capacity[n] for n in pools if facts[n].dedicated_tenant is None}):
            for name, most in bound.items():
                more = max(0, min(most - placed[name], left))
                placed[name] += more
                left -= more
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


def cpu_memory_quota(stack: StackConfig, tenant: Tenant, facts: PoolFactsByName | None = None) -> tuple[int, int]:
    """(vCPUs, GiB) the tenant's pools give pods at their max (`NODE_SHARE_FOR_PODS` of each node): its cpu and
    memory guarantee, never the limit (the GPU resources are)."""
    facts = given_or_derived(stack, facts)
    cpu = memory = Fraction(0)
    for name in tenant.pools:
        pool = facts[name].pool
        cpu += pool.vm_size.vcpus * pool.max_nodes * NODE_SHARE_FOR_PODS
        memory += (pool.vm_size.memory_gib or UNKNOWN_NODE_MEMORY_GIB) * pool.max_nodes * NODE_SHARE_FOR_PODS
    return int(cpu), int(memory)


def _resource(name: str, nominal: Any, borrowing: int | None = None, lending: int | None = None) -> dict[str, Any]:
    quota = {"name": name, "nominalQuota": nominal}
    if borrowing is not None:
        quota["borrowingLimit"] = borrowing
    if lending is not None:
        quota["lendingLimit"] = lending
    return quota


def cluster_queue(stack: StackConfig, tenant: Tenant, facts: PoolFactsByName | None = None) -> dict[str, Any]:
    facts = given_or_derived(stack, facts)
    groups: list[dict[str, Any]] = []
    for quota in flavor_quotas(stack, tenant, facts):
        group = next((g for g in groups if g["coveredResources"] == [quota.resource]), None)
        if group is None:
            group = {"coveredResources": [quota.resource], "flavors": []}
            groups.append(group)
        group["flavors"].append({"name": quota.pool, "resources": [
            _resource(quota.resource, quota.nominal, quota.borrowing_limit, quota.lending_limit)]})
    cpu, memory = cpu_memory_quota(stack, tenant, facts)
    groups.append({"coveredResources": ["cpu", "memory"], "flavors": [{"name": CPU_MEMORY_FLAVOR, "resources": [
        _resource("cpu", str(cpu)), _resource("memory", f"{memory}Gi")]}]})
    queue = tenant.queue
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {NAME_LABEL: tenant.name}},
        "queueingStrategy": "BestEffortFIFO",
        "preemption": {"reclaimWithinCohort": queue.reclaim_within_cohort.value,
                       "withinClusterQueue": queue.within_cluster_queue.value},
        "resourceGroups": groups,
    }
    if cohort := cohort_of(stack, tenant):
        spec = {"cohortName": cohort, **spec}
    return {"apiVersion": KUEUE_API, "kind": "ClusterQueue",
            "metadata": {"name": tenant.name, "labels": dict(MANAGED_BY)}, "spec": spec}


def local_queue(tenant: Tenant) -> dict[str, Any]:
    """The one LocalQueue the tenant policy lets its Jobs name (`kueue_admission.local_queue_names`)."""
    return {"apiVersion": KUEUE_API, "kind": "LocalQueue",
            "metadata": {"name": local_queue_names(tenant)[0], "namespace": tenant.name, "labels": dict(MANAGED_BY)},
            "spec": {"clusterQueue": tenant.name}}


def priority_class(tenant: Tenant) -> dict[str, Any]:
    return {"apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass",
            "metadata": {"name": priority_class_name(tenant), "labels": dict(MANAGED_BY)},
            "value": tenant.queue.priority,
            "description": f"Tenant {tenant.name}'s workloads (label {PRIORITY_CLASS_LABEL}: "
                           f"{priority_class_name(tenant)})"}


def cohort_object(name: str) -> dict[str, Any]:
    return {"apiVersion": KUEUE_API, "kind": "Cohort", "metadata": {"name": name, "labels": dict(MANAGED_BY)},
            "spec": {}}


def queue_manifests(stack: StackConfig, facts: PoolFactsByName | None = None) -> list[dict[str, Any]]:
    """Every Kueue object, flavors and cohorts before the queues that name them; none when queues are off."""
    facts = given_or_derived(stack, facts)
    if not stack.queues.enabled or not stack.tenants:
        return []
    flavors = [pool_flavor(pool) for pool in facts.values()]
    flavors.append({"apiVersion": KUEUE_API, "kind": "ResourceFlavor",
                    "metadata": {"name": CPU_MEMORY_FLAVOR, "labels": dict(MANAGED_BY)}, "spec": {}})
    return [*flavors, *(cohort_object(name) for name, _ in cohorts(stack)),
            *(priority_class(t) for t in stack.tenants), *(cluster_queue(stack, t, facts) for t in stack.tenants),
            *(local_queue(t) for t in stack.tenants)]


def queue_warnings(stack: StackConfig, facts: PoolFactsByName | None = None) -> list[str]:
    facts = given_or_derived(stack, facts)
    if not stack.queues.enabled:
        written = [t.name for t in stack.tenants if t.queue != TenantQueue()]
        return [f"tenants {', '.join(written)}: `queue:` is read only when {QUEUES_KEY}.enabled is true; no queue "
                f"is made"] if written else []
    warnings = []
    if stack.queues.kueue_version not in VERIFIED_KUEUE_VERSIONS:
        warnings.append(f"{QUEUES_KEY}.kueueVersion {stack.queues.kueue_version} is not one gpushare verified its "
                        f"queue objects against ({', '.join(VERIFIED_KUEUE_VERSIONS)})")
    if not stack.tenants:
        warnings.append(f"{QUEUES_KEY}.enabled: Kueue is installed but no tenant has a queue ({TENANTS_KEY} is "
                        f"empty)")
    all_quotas = {tenant.name: flavor_quotas(stack, tenant, facts) for tenant in stack.tenants}
    for tenant in stack.tenants:
        limits = [*tenant.queue.borrowing_limit, *tenant.queue.lending_limit]
        if limits and cohort_of(stack, tenant) is None:
            warnings.append(f"tenant {tenant.name}: shares no pool with another tenant, so it has no cohort: its "
                            f"queue.borrowingLimit and queue.lendingLimit take no effect")
        for quota in all_quotas[tenant.name]:
            if quota.borrowing_limit:
                lendable = _lent_on(all_quotas, tenant.name, quota.pool)
                if quota.borrowing_limit > lendable:
                    warnings.append(f"tenant {tenant.name}: queue.borrowingLimit {quota.borrowing_limit} "
                                    f"{quota.resource} on pool {quota.pool} is more than the other tenants there "
                                    f"lend ({lendable})")
        for resource, units in tenant.quota:
            in_cohort = cohort_of(stack, tenant) is not None
            reach = sum(_reach(q, in_cohort) for q in all_quotas[tenant.name] if q.resource == resource)
            if reach > units:
                warnings.append(f"tenant {tenant.name}: its quota of {resource} ({units}) refuses its pods beyond "
                                f"{units} units, borrowed or not, where its queue reaches {reach}: raise the quota "
                                f"or drop it to let it borrow")
    for pool_facts in facts.values():
        guaranteed = [(name, q.nominal) for name, quotas in all_quotas.items() for q in quotas
                      if q.pool == pool_facts.pool.name]
        capacity = pool_facts.capacity.total(pool_facts.pool.max_nodes)
        if sum(units for _, units in guaranteed) > capacity:
            shown = ", ".join(f"{name} {units}" for name, units in guaranteed)
            warnings.append(f"pool {pool_facts.pool.name}: the queues guarantee {sum(u for _, u in guaranteed)} "
                            f"{pool_facts.capacity.resource} ({shown}) but it holds at most {capacity}: a tenant may "
                            f"wait for its guarantee")
    return warnings


def _reach(quota: FlavorQuota, in_cohort: bool) -> int:
    """The most the tenant can use on the pool: its guarantee plus what it may borrow, at most the pool."""
    if not in_cohort or quota.dedicated:
        return quota.nominal
    if quota.borrowing_limit is None:
        return quota.capacity
    return min(quota.capacity, quota.nominal + quota.borrowing_limit)


def _lendable(quota: FlavorQuota) -> int:
    return quota.nominal if quota.lending_limit is None else quota.lending_limit


def _lent_on(all_quotas: dict[str, list[FlavorQuota]], borrower: str, pool: str) -> int:
    """What the other tenants listing `pool` lend there: each its `lendingLimit`, else all of its nominal quota
    (Kueue's default). Every tenant listing a shared pool is in the borrower's cohort (sharing it joins them)."""
    return sum(_lendable(q) for other, quotas in all_quotas.items() if other != borrower
               for q in quotas if q.pool == pool)


@dataclass(frozen=True)
class Borrowable:
    """What a tenant's queue may borrow on one pool at once, beyond its guarantee there, while the lenders are idle."""

    pool: str
    resource: str
    units: int


def borrowable(stack: StackConfig, tenant: Tenant, facts: PoolFactsByName | None = None) -> list[Borrowable]:
    """Per shared pool in the tenant's ClusterQueue (none without a cohort; a dedicated pool's `borrowingLimit` is
    0), the most it may borrow: its `borrowingLimit` (no limit when absent), what the other tenants lend there, and
    what the pool holds at its max beyond the tenant's own guarantee, whichever is least. The first two are Kueue's
    own bound on an idle cohort (v0.19.2 `pkg/cache/scheduler/resource_node.go` `potentialAvailable`: the part of
    its nominal quota it does not lend, plus the cohort's `SubtreeQuota`, at most nominal + `borrowingLimit`; the
    cohort's quota is each member's nominal, at most its `lendingLimit`, `accumulateFromChild`); the third is the
    nodes, which Kueue does not see. Pools with nothing to borrow are left out."""
    facts = given_or_derived(stack, facts)
    if cohort_of(stack, tenant) is None:
        return []
    all_quotas = {t.name: flavor_quotas(stack, t, facts) for t in stack.tenants}
    found = []
    for quota in all_quotas[tenant.name]:
        if quota.dedicated:
            continue
        bounds = [_lent_on(all_quotas, tenant.name, quota.pool), max(0, quota.capacity - quota.nominal)]
        if quota.borrowing_limit is not None:
            bounds.append(quota.borrowing_limit)
        if (units := min(bounds)) > 0:
            found.append(Borrowable(quota.pool, quota.resource, units))
    return found


def queue_plan(stack: StackConfig, facts: PoolFactsByName | None = None) -> dict[str, Any]:
    """`plan --json`'s `queues`."""
    facts = given_or_derived(stack, facts)
    queues = stack.queues
    return {
        "enabled": queues.enabled, "kueueVersion": queues.kueue_version, "fairSharing": queues.fair_sharing,
        "cohorts": [{"name": name, "tenants": [t.name for t in members],
                     "sharedPools": [p.name for p in stack.pools if _listing(stack, p.name) > 1
                                     and any(p.name in t.pools for t in members)]}
                    for name, members in cohorts(stack)] if queues.enabled else [],
        "tenants": [{
            "tenant": tenant.name, "clusterQueue": tenant.name, "localQueue": tenant.name,
            "cohort": cohort_of(stack, tenant), "priorityClass": priority_class_name(tenant),
            "priority": tenant.queue.priority,
            "flavors": [{"pool": q.pool, "resource": q.resource, "capacity": q.capacity, "nominal": q.nominal,
                         "borrowingLimit": q.borrowing_limit, "lendingLimit": q.lending_limit,
                         "dedicated": q.dedicated} for q in flavor_quotas(stack, tenant, facts)],
        } for tenant in stack.tenants] if queues.enabled else [],
        "release": _release_plan(stack) if queues.enabled else None,
        "objects": queue_manifests(stack, facts),
    }


def _release_plan(stack: StackConfig) -> dict[str, Any]:
    release = kueue_release(stack)
    return {"chart": release.chart, "version": release.version, "namespace": release.namespace,
            "name": release.name, "values": release.values}


KUEUE_RELEASE = "kueue"
"""Also the chart's `fullname`, so the controller's ServiceAccount is `kueue-controller-manager`, the user the tenant
policies let start queued Jobs (`kueue_admission.KUEUE_CONTROLLER_USER`)."""
KUEUE_CHART = "oci://registry.k8s.io/kueue/charts/kueue"
"""Kueue's chart as its project publishes it (kueue `charts/kueue/README.md`: `helm install kueue
oci://registry.k8s.io/kueue/charts/kueue --version=0.19.2 --namespace=kueue-system`)."""
FAIR_SHARING_CONFIG = {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]}
"""Kueue v1beta2's Configuration turns fair sharing on by the section's presence
(`pkg/scheduler/preemption/fairsharing/strategy.go` `Enabled`: `pfs != nil`); these strategies are its defaults."""


@dataclass(frozen=True)
class KueueRelease:
    chart: str
    version: str
    """The chart version: Kueue's tag without its `v` (`charts/kueue/Chart.yaml` `version: 0.19.2`)."""
    namespace: str
    name: str
    values: dict[str, Any]


def kueue_release(stack: StackConfig) -> KueueRelease:
    """Kueue's Helm release. Its controller and webhooks tolerate no GPU taint, so like the GPU Operator's controller
    they run on the untainted system pool. With fair sharing the chart's whole Configuration is replaced
    (`managerConfig.controllerManagerConfigYaml` is one text), so it is the chart's own default plus `fairSharing`."""
    values: dict[str, Any] = {}
    if stack.queues.fair_sharing:
        values["managerConfig"] = {"controllerManagerConfigYaml": manager_config_yaml(fair_sharing=True)}
    return KueueRelease(chart=KUEUE_CHART, version=stack.queues.kueue_version.removeprefix("v"),
                        namespace=KUEUE_NAMESPACE, name=KUEUE_RELEASE, values=values)


def manager_config_yaml(fair_sharing: bool) -> str:
    """The chart's default Configuration (kueue v0.19.2 `charts/kueue/values.yaml`, `managerConfig`), as JSON
    (which YAML reads), with `fairSharing` when asked."""
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"}, "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {"groupKindConcurrency": {
            "Job.batch": 5, "Pod": 5, "Workload.kueue.x-k8s.io": 10, "LocalQueue.kueue.x-k8s.io": 5,
            "ClusterQueue.kueue.x-k8s.io": 5, "ResourceFlavor.kueue.x-k8s.io": 1}},
        "clientConnection": {"qps": 300, "burst": 500},
        "integrations": {"frameworks": [
            "batch/job", "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/rayservice", "ray.io/raycluster",
            "jobset.x-k8s.io/jobset", "workload.codeflare.dev/appwrapper", "trainer.kubeflow.org/trainjob", "pod",
            "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset"]},
    }
    if fair_sharing:
        config["fairSharing"] = FAIR_SHARING_CONFIG
    return json.dumps(config, indent=2)
