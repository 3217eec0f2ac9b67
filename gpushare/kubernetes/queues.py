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
  A Cohort holds, as its own quota, what its tenants' guarantees leave of each shared pool, and lends it to them.
- Borrowing never crosses the tenant boundary: a ClusterQueue lists only its tenant's pools, so it can borrow only
  on pools it shares; on a dedicated pool it lends nothing (`lendingLimit: 0`) and borrows nothing. Pools no
  tenant lists are not in any queue: the tenant policies keep tenants' pods off them (they serve the other
  namespaces, `tenants.shared_pool_policy`), so lending them would let Kueue place pods the policy refuses.
- A LocalQueue `<tenant>` in the tenant's namespace: Jobs and pods labelled `kueue.x-k8s.io/queue-name: <tenant>`
  queue (with `quota.pools` the tenant policy lets the tenant's GPU work run no other way).
- On DRA pools, the resource a ClusterQueue's quota names is the pool's DeviceClass quota name
  (`<class>.deviceclass.resource.k8s.io/devices`, as ResourceQuota counts it), and Kueue's Configuration maps each
  gpushare DeviceClass onto it (`resources.deviceClassMappings`, `device_class_mappings`): Kueue counts the devices
  a queued pod's ResourceClaimTemplates request per class under that name.
- A WorkloadPriorityClass `gpushare-<tenant>` per tenant (`queue.priority`), for its workloads to name
  (`kueue.x-k8s.io/priority-class`); preemption (`queue.preemption`) compares these priorities.

A tenant's guarantee on each pool (its `quota.pools`, else `queue.nominal` placed on its pools), the cohorts' own
quota and which pools the queues reach are worked out in `gpushare.sharing.queue_guarantees`, which the stack file's
validation shares.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from gpushare.errors import ConfigProblem
from gpushare.kubernetes.kueue_admission import (
    KUEUE_NAMESPACE,
    PRIORITY_CLASS_LABEL,
    local_queue_names,
    priority_class_name,
)
from gpushare.kubernetes.tenants import MANAGED_BY, NAME_LABEL, NODE_SHARE_FOR_PODS
from gpushare.model.keys import QUEUES_KEY, TENANTS_KEY
from gpushare.model.stack import StackConfig, Tenant, TenantQueue
from gpushare.sharing import dra
from gpushare.sharing.capacity import device_unit
from gpushare.sharing.dra_quota import device_class_quota_key
from gpushare.sharing.pool_facts import PoolFacts, PoolFactsByName, given_or_derived
from gpushare.sharing.queue_flavor import flavor_node_labels, flavor_tolerations
from gpushare.sharing.queue_guarantees import (
    CohortQuota,
    FlavorQuota,
    all_flavor_quotas,
    cohort_of,
    cohort_quotas,
    cohorts,
    flavor_quotas,
    lent_on,
    listing,
    reach,
    unreachable_pools,
)
from gpushare.stackfile.queue_config import VERIFIED_KUEUE_VERSIONS

KUEUE_API = "kueue.x-k8s.io/v1beta2"
CPU_MEMORY_FLAVOR = "gpushare-cpu-memory"
"""The flavor of the cpu/memory resource group: no node labels, so it places nothing (the GPU flavor does)."""
UNKNOWN_NODE_MEMORY_GIB = 0
"""A size the stack describes has no known memory offline: it adds none to the memory guarantee."""


def pool_flavor(facts: PoolFacts) -> dict[str, Any]:
    return {"apiVersion": KUEUE_API, "kind": "ResourceFlavor",
            "metadata": {"name": facts.pool.name, "labels": dict(MANAGED_BY)},
            "spec": {"nodeLabels": flavor_node_labels(facts), "tolerations": flavor_tolerations(facts)}}


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


def cohort_object(name: str, own: list[CohortQuota]) -> dict[str, Any]:
    """The cohort, holding as its own quota what its tenants' guarantees leave of each shared pool (`own`:
    `queue_guarantees.cohort_quotas`): lent to every member listing the pool, so no shared pool is stranded."""
    groups: list[dict[str, Any]] = []
    for quota in own:
        if quota.cohort != name:
            continue
        group = next((g for g in groups if g["coveredResources"] == [quota.resource]), None)
        if group is None:
            group = {"coveredResources": [quota.resource], "flavors": []}
            groups.append(group)
        group["flavors"].append({"name": quota.pool, "resources": [_resource(quota.resource, quota.units)]})
    return {"apiVersion": KUEUE_API, "kind": "Cohort", "metadata": {"name": name, "labels": dict(MANAGED_BY)},
            "spec": {"resourceGroups": groups} if groups else {}}


def queue_manifests(stack: StackConfig, facts: PoolFactsByName | None = None) -> list[dict[str, Any]]:
    """Every Kueue object, flavors and cohorts before the queues that name them; none when queues are off."""
    if not stack.queues.enabled or not stack.tenants:
        return []
    facts = given_or_derived(stack, facts)
    flavors = [pool_flavor(pool) for pool in facts.values()]
    flavors.append({"apiVersion": KUEUE_API, "kind": "ResourceFlavor",
                    "metadata": {"name": CPU_MEMORY_FLAVOR, "labels": dict(MANAGED_BY)}, "spec": {}})
    own = cohort_quotas(stack, facts=facts)
    return [*flavors, *(cohort_object(name, own) for name, _ in cohorts(stack)),
            *(priority_class(t) for t in stack.tenants), *(cluster_queue(stack, t, facts) for t in stack.tenants),
            *(local_queue(t) for t in stack.tenants)]


def queue_warnings(stack: StackConfig, facts: PoolFactsByName | None = None) -> list[str]:
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
    facts = given_or_derived(stack, facts)
    all_quotas = all_flavor_quotas(stack, facts)
    for tenant in stack.tenants:
        limits = [*tenant.queue.borrowing_limit, *tenant.queue.lending_limit]
        if limits and cohort_of(stack, tenant) is None:
            warnings.append(f"tenant {tenant.name}: shares no pool with another tenant, so it has no cohort: its "
                            f"queue.borrowingLimit and queue.lendingLimit take no effect")
        for quota in all_quotas[tenant.name]:
            if quota.borrowing_limit:
                lendable = lent_on(stack, all_quotas, tenant.name, quota.pool, facts)
                if quota.borrowing_limit > lendable:
                    warnings.append(f"tenant {tenant.name}: queue.borrowingLimit {quota.borrowing_limit} "
                                    f"{quota.resource} on pool {quota.pool} is more than the other tenants there "
                                    f"lend ({lendable})")
        in_cohort = cohort_of(stack, tenant) is not None
        for resource, units in tenant.quota:
            quotas = [q for q in all_quotas[tenant.name] if q.resource == resource]
            guaranteed = sum(q.nominal for q in quotas)
            most = sum(reach(q, in_cohort) for q in quotas)
            if guaranteed > units:
                warnings.append(f"tenant {tenant.name}: its quota of {resource} ({units}) refuses pods within its "
                                f"queue's guarantee ({_guarantees(quotas)}): raise the quota to "
                                f"{guaranteed} or more, or drop it")
            elif most > units and not stack.queues.borrowing_by_design:
                warnings.append(f"tenant {tenant.name}: its quota of {resource} ({units}) refuses its pods beyond "
                                f"{units} units, borrowed or not, where its queue reaches {most}: raise the quota "
                                f"or drop it to let it borrow, or set {QUEUES_KEY}.borrowingByDesign: true if the "
                                f"quota is the cap you mean")
    own = {c.pool: c.units for c in cohort_quotas(stack, all_quotas, facts)}  # a shared pool is in one cohort
    for pool_facts in facts.values():
        warnings += _pool_warnings(stack, pool_facts, all_quotas, own.get(pool_facts.pool.name, 0))
    return warnings


def _guarantees(quotas: list[FlavorQuota]) -> str:
    """`a100mig 2 + t4spot 2 = 4`: a tenant's guarantees on its pools and their sum."""
    parts = [f"{q.pool} {q.nominal}" for q in quotas]
    return f"{' + '.join(parts)} = {sum(q.nominal for q in quotas)}" if len(parts) > 1 else parts[0]


def _pool_warnings(stack: StackConfig, facts: PoolFacts, all_quotas: dict[str, list[FlavorQuota]],
                   own: int) -> list[str]:
    """Over-promising and borrowing on one pool, each stated once with its arithmetic: the guarantees against what
    the pool holds at its max, and what its tenants may borrow beyond them (silenced by
    `gpushare:queues.borrowingByDesign`). `own`: what the pool's cohort holds of it itself."""
    pool, resource = facts.pool.name, facts.capacity.resource
    on_pool = [(tenant, q) for tenant, quotas in all_quotas.items() for q in quotas if q.pool == pool]
    if not on_pool:
        return []
    capacity = facts.capacity.total(facts.pool.max_nodes)
    held = (f"{capacity} ({facts.capacity.per_node} per node x {facts.pool.max_nodes} node(s); a unit is "
            f"{device_unit(facts.pool, facts.capacity)})")
    guaranteed = sum(q.nominal for _, q in on_pool)
    shown = " + ".join(f"{tenant} {q.nominal}" for tenant, q in on_pool)
    warnings = []
    if guaranteed > capacity:
        warnings.append(f"pool {pool}: the queues guarantee {shown} = {guaranteed} {resource} but it holds at most "
                        f"{held}: a tenant may wait for its guarantee; lower the guarantees (quota.pools, "
                        f"queue.nominal) to {capacity} in all or raise the pool's max")
    in_cohort = {t.name: cohort_of(stack, t) is not None for t in stack.tenants}
    borrowers = [(tenant, q, reach(q, in_cohort[tenant]) - q.nominal) for tenant, q in on_pool
                 if reach(q, in_cohort[tenant]) > q.nominal]
    if borrowers and not stack.queues.borrowing_by_design:
        cohort = f"; the cohort holds {own} no tenant is guaranteed" if own else ""
        each = ", ".join(f"{tenant} {q.nominal} guaranteed + up to {more} borrowed" for tenant, q, more in borrowers)
        warnings.append(f"pool {pool}: tenants borrow beyond their guarantees ({each}; of {held}{cohort}): "
                        f"borrowed work is preempted when a lender needs its guarantee back; set "
                        f"{QUEUES_KEY}.borrowingByDesign: true if that is the design, or queue.borrowingLimit: 0 "
                        f"where a tenant should not borrow")
    return warnings


def queue_layout_problems(stack: StackConfig, facts: PoolFactsByName) -> list[ConfigProblem]:
    """A pool tenants list on which no queue can admit anything: Kueue would hold every workload there forever. The
    plan refuses such a layout (`gpushare.plan.stack_plan.build_plan`): it takes each pool's capacity."""
    if not stack.queues.enabled:
        return []
    problems = []
    for pool, tenants in unreachable_pools(stack, facts):
        path = f"gpushare:pools[{[p.name for p in stack.pools].index(pool)}]"
        owners = ", ".join(tenants)
        problems.append(ConfigProblem(path, (
            f"pool {pool} is reachable through no queue: its tenants ({owners}) are guaranteed none of it and none "
            f"may borrow it (a pool only one tenant lists is never lent, a borrowingLimit of 0 borrows nothing), so "
            f"Kueue admits nothing there; give a tenant a guarantee on it (quota.pools.{pool}: N, or queue.nominal), "
            f"let one borrow it (drop queue.borrowingLimit: 0), or remove {pool} from the tenants' pools")))
    mappings = device_class_mappings(stack)
    if len(mappings) > MAX_DEVICE_CLASS_MAPPINGS:
        classes = ", ".join(name for m in mappings for name in m["deviceClassNames"])
        problems.append(ConfigProblem(QUEUES_KEY, (
            f"the DRA pools have {len(mappings)} kinds of device (DeviceClasses {classes}); Kueue counts at most "
            f"{MAX_DEVICE_CLASS_MAPPINGS} (its Configuration's resources.deviceClassMappings) and would not start: "
            "put fewer GPU models or MIG profiles on DRA pools, or turn queues off")))
    return problems


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
    cohort's quota is its own nominal plus each member's, at most its `lendingLimit`, `accumulateFromChild`); the
    third is the nodes, which Kueue does not see. Pools with nothing to borrow are left out."""
    if cohort_of(stack, tenant) is None:
        return []
    facts = given_or_derived(stack, facts)
    all_quotas = all_flavor_quotas(stack, facts)
    found = []
    for quota in all_quotas[tenant.name]:
        if quota.dedicated:
            continue
        bounds = [lent_on(stack, all_quotas, tenant.name, quota.pool, facts),
                  max(0, quota.capacity - quota.nominal)]
        if quota.borrowing_limit is not None:
            bounds.append(quota.borrowing_limit)
        if (units := min(bounds)) > 0:
            found.append(Borrowable(quota.pool, quota.resource, units))
    return found


def queue_plan(stack: StackConfig, facts: PoolFactsByName | None = None,
               manifests: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """`plan --json`'s `queues`; `manifests`: the queue objects as the plan derived them."""
    facts = given_or_derived(stack, facts)
    queues = stack.queues
    return {
        "enabled": queues.enabled, "kueueVersion": queues.kueue_version, "fairSharing": queues.fair_sharing,
        "borrowingByDesign": queues.borrowing_by_design,
        "cohorts": [{"name": name, "tenants": [t.name for t in members],
                     "sharedPools": [p.name for p in stack.pools if listing(stack, p.name) > 1
                                     and any(p.name in t.pools for t in members)],
                     "ownQuota": [{"pool": c.pool, "resource": c.resource, "units": c.units}
                                  for c in cohort_quotas(stack, facts=facts) if c.cohort == name]}
                    for name, members in cohorts(stack)] if queues.enabled else [],
        "tenants": [{
            "tenant": tenant.name, "clusterQueue": tenant.name, "localQueue": tenant.name,
            "cohort": cohort_of(stack, tenant), "priorityClass": priority_class_name(tenant),
            "priority": tenant.queue.priority, "gpuPodsQueued": bool(tenant.pool_quota),
            "flavors": [{"pool": q.pool, "resource": q.resource, "capacity": q.capacity, "nominal": q.nominal,
                         "borrowingLimit": q.borrowing_limit, "lendingLimit": q.lending_limit,
                         "dedicated": q.dedicated} for q in flavor_quotas(stack, tenant, facts)],
        } for tenant in stack.tenants] if queues.enabled else [],
        "release": _release_plan(stack) if queues.enabled else None,
        "objects": queue_manifests(stack, facts) if manifests is None else manifests,
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
    they run on the untainted system pool. The chart's Configuration is one text
    (`managerConfig.controllerManagerConfigYaml`), so it is the chart's own default with the integrations the stack
    uses, Kueue's webhooks kept to the tenants' namespaces, and `fairSharing` when asked."""
    values = {"managerConfig": {"controllerManagerConfigYaml": manager_config_yaml(stack)}}
    return KueueRelease(chart=KUEUE_CHART, version=stack.queues.kueue_version.removeprefix("v"),
                        namespace=KUEUE_NAMESPACE, name=KUEUE_RELEASE, values=values)


KUEUE_INTEGRATIONS = ("batch/job", "pod")
"""The integrations the stack uses, and only those (the chart enables twelve): `batch/job` for queued Jobs and
CronJobs, `pod` for a bare pod (and a Deployment's or StatefulSet's pods) labelled with a LocalQueue, which Kueue's
pod webhook gates (`kueue.x-k8s.io/admission`) until its Workload is admitted (v0.19.2
`pkg/controller/jobs/pod/pod_webhook.go` Default). gpushare installs no JobSet, Ray, Kubeflow or LeaderWorkerSet
operator, so their integrations stay off; the chart's `deployment` and `statefulset` integrations manage those
workloads as pod groups and are not needed for their pods to queue one by one."""


def manager_config_yaml(stack: StackConfig) -> str:
    """The chart's default Configuration (kueue v0.19.2 `charts/kueue/values.yaml`, `managerConfig`), as JSON
    (which YAML reads), with `KUEUE_INTEGRATIONS`, `managedJobsNamespaceSelector` the tenants' namespaces (the chart's
    webhook configurations take their namespaceSelector from it, `templates/webhook/manifests.yaml`; with the `pod`
    integration the pod webhook's failurePolicy is Fail, so elsewhere pod creation does not depend on Kueue), and
    `fairSharing` when asked. Kueue reads the selector strictly for its pod integration (pods elsewhere are never
    managed, whatever their labels) and, for Jobs, only with `manageJobsWithoutQueueName`
    (`apis/config/v1beta2/configuration_types.go` ManagedJobsNamespaceSelector)."""
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"}, "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {"groupKindConcurrency": {
            "Job.batch": 5, "Pod": 5, "Workload.kueue.x-k8s.io": 10, "LocalQueue.kueue.x-k8s.io": 5,
            "ClusterQueue.kueue.x-k8s.io": 5, "ResourceFlavor.kueue.x-k8s.io": 1}},
        "clientConnection": {"qps": 300, "burst": 500},
        # Every namespace has the label, so DoesNotExist matches none (a stack with queues and no tenants).
        "managedJobsNamespaceSelector": {"matchExpressions": [
            {"key": NAME_LABEL, "operator": "In", "values": [tenant.name for tenant in stack.tenants]}
            if stack.tenants else {"key": NAME_LABEL, "operator": "DoesNotExist"}]},
        "integrations": {"frameworks": list(KUEUE_INTEGRATIONS)},
    }
    if stack.queues.fair_sharing:
        config["fairSharing"] = FAIR_SHARING_CONFIG
    mappings = device_class_mappings(stack)
    if mappings:
        config["resources"] = {"deviceClassMappings": mappings}
        config["featureGates"] = {KUEUE_DRA_GATE: True}
    return json.dumps(config, indent=2)


KUEUE_DRA_GATE = "KueueDRAIntegration"
"""Kueue's gate for counting DRA claims (v0.19.2 `pkg/features/kube_features.go` L188, beta and on by default since
v0.18, L745-747): set explicitly, so a chart whose defaults turn it off still counts them. Without it the mappings
are ignored (`cmd/kueue/main.go` L329-345 builds the mapper only under the gate)."""
MAX_DEVICE_CLASS_MAPPINGS = 16
"""Kueue refuses a Configuration with more mappings (`pkg/config/validation.go` `validateDeviceClassMappings`)."""


def device_class_mappings(stack: StackConfig) -> list[dict[str, Any]]:
    """Kueue's `resources.deviceClassMappings` (v0.19.2 `apis/config/v1beta2/configuration_types.go`
    `DeviceClassMapping`): each gpushare DeviceClass of the DRA pools under its quota name, the resource the
    ClusterQueues' quotas on those pools name (`capacity.base_resource`). Kueue counts `exactly.count` devices per
    class of each ResourceClaimTemplate a queued pod names (`pkg/dra/claims.go`
    `GetResourceRequestsForResourceClaimTemplates`, `countDevicesPerClass`); a class it has no mapping for makes the
    workload inadmissible ("DeviceClass ... is not mapped in DRA configuration"), and a pod naming a ResourceClaim
    (not a template) is not counted. Empty without DRA pools."""
    classes = dict.fromkeys(dra.device_kind(pool).class_name for pool in dra.dra_pools(stack))
    return [{"name": device_class_quota_key(name), "deviceClassNames": [name]} for name in classes]
