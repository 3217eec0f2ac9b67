"""`gpushare:queues` (Kueue on or off, its version, fair sharing) and each tenant's `queue:` (its guarantee, borrowing
and lending limits, priority and preemption). What the keys become in Kueue: `gpushare.kubernetes.queues`."""

from __future__ import annotations

import re
from typing import Any

from gpushare.errors import ConfigProblem
from gpushare.model.keys import QUEUES_KEY
from gpushare.model.stack import (
    DEFAULT_KUEUE_VERSION,
    Queues,
    ReclaimWithinCohort,
    StackConfig,
    TenantQueue,
    WithinClusterQueue,
    pool_node_taints,
)
from gpushare.sharing.queue_flavor import MAX_FLAVOR_TOLERATIONS
from gpushare.stackfile.checks import Checker, did_you_mean, kind_of, show
from gpushare.stackfile.declarations import BOOLEAN, INTEGER, OBJECT, STRING, Field, Section

KUEUE_VERSION_RE = re.compile(r"^v\d+\.\d+\.\d+$")
VERIFIED_KUEUE_VERSIONS = (DEFAULT_KUEUE_VERSION,)
"""Kueue releases whose CRDs and webhooks gpushare's queue objects are tested against."""
MAX_PRIORITY = 1_000_000_000
"""A WorkloadPriorityClass `value` is an int32; gpushare keeps to the range Kubernetes leaves user PriorityClasses
(up to one billion, `k8s.io/api/scheduling/v1` HighestUserDefinablePriority), so the two read alike."""

QUEUES = Section((
    Field("enabled", BOOLEAN, "Install Kueue (Helm, on the system pool) and give each tenant a ClusterQueue and a "
                              "LocalQueue compiled from its pools and `queue:`."),
    Field("kueueVersion", STRING, "The Kueue release (v<major>.<minor>.<patch>); one gpushare has not verified is "
                                  "a warning naming the verified ones.",
          pattern=KUEUE_VERSION_RE, examples=VERIFIED_KUEUE_VERSIONS,
          rule=f"must be a Kueue release such as {DEFAULT_KUEUE_VERSION} (v<major>.<minor>.<patch>, with the v)"),
    Field("fairSharing", BOOLEAN, "Kueue's fair sharing: borrowing and reclaim follow each queue's share of what "
                                  "it uses instead of first come, first served."),
    Field("borrowingByDesign", BOOLEAN, "The tenants borrow beyond their guarantees on purpose: plan shows what each "
                                        "may borrow per pool (plan --json queues) without warning about it.",
          attr="borrowing_by_design"),
), model=Queues)
QUEUES_FIELD = Field(QUEUES_KEY, OBJECT, "Kueue queues compiled from the tenants: idle GPUs lent within a cohort "
                                         "of tenants sharing pools and reclaimed by preemption.",
                     default_text="off", section=QUEUES)
QUEUES_KEYS = QUEUES.keys

UNITS = Field("units", INTEGER, "Units of the resource.", minimum=0)
PREEMPTION = Section((
    Field("reclaimWithinCohort", STRING, "Which workloads running on the tenant's lent quota are preempted when it "
                                         "needs that quota back: Never, LowerPriority or Any.",
          enum=ReclaimWithinCohort),
    Field("withinClusterQueue", STRING, "Whether a workload preempts the tenant's own lower-priority ones: Never, "
                                        "LowerPriority or LowerOrNewerEqualPriority.",
          enum=WithinClusterQueue),
), model=TenantQueue)
"""Its keys are the TenantQueue's own preemption settings (`parse_tenant_queue` reads them into it)."""
TENANT_QUEUE = Section((
    Field("nominal", OBJECT, "Advertised resource -> units guaranteed to the tenant (Kueue's nominalQuota), placed "
                             "on its dedicated pools first, then on its shared ones; at most what its pools hold at "
                             "their max.",
          default_text="per resource, its quota, else its pools' capacity (shared pools split evenly)",
          values=UNITS),
    Field("borrowingLimit", OBJECT, "Advertised resource -> the most units it may borrow on each pool it shares, "
                                    "from the other tenants listing it.",
          default_text="no limit", values=UNITS),
    Field("lendingLimit", OBJECT, "Advertised resource -> the most of its guaranteed units on each pool it shares "
                                  "that others may borrow; its dedicated pools are never lent.",
          default_text="all of them", values=UNITS),
    Field("priority", INTEGER, "The value of its WorkloadPriorityClass gpushare-<tenant> (higher preempts lower).",
          minimum=0, maximum=MAX_PRIORITY),
    Field("preemption", OBJECT, "When Kueue preempts to give the tenant its guarantee.",
          default_text="the defaults of its keys", section=PREEMPTION, attr=""),
), model=TenantQueue)
QUEUE_FIELD = Field("queue", OBJECT, "Its Kueue queue, read when gpushare:queues.enabled is true.",
                    default_text="its quota as its guarantee", section=TENANT_QUEUE)


def parse_queues(c: Checker, value: Any) -> Queues:
    # A version gpushare has not verified is a warning (`gpushare.kubernetes.queues.queue_warnings`), not a refusal.
    queues = c.section_values(value, QUEUES, QUEUES_KEY)
    return queues.model() if queues is not None else Queues()


def _parse_units(c: Checker, value: Any, path: str, capacity: dict[str, int],
                 minimum: int) -> tuple[tuple[str, int], ...] | None:
    """resource -> units, each a resource of the tenant's pools (`capacity`: resource -> units at max; empty when
    the tenant's pools could not be read, then names are not judged)."""
    if not isinstance(value, dict):
        c.add(path, f"expected a mapping of advertised resource to units, e.g. {{nvidia.com/gpu: 4}}, "
                    f"got {kind_of(value)} {show(value)}")
        return None
    parsed = []
    for key, units in value.items():
        key_path = f"{path}.{key}"
        resource = str(key)
        if capacity and resource not in capacity:
            offered = ", ".join(sorted(capacity))
            c.add(key_path, f"none of this tenant's pools advertises {resource}"
                            f"{did_you_mean(resource, list(capacity))}; they advertise: {offered}")
            continue
        if c.integer(units, key_path, minimum) is not None:
            parsed.append((resource, units))
    return tuple(parsed)


def parse_tenant_queue(c: Checker, value: Any, path: str, capacity: dict[str, int]) -> TenantQueue:
    """`capacity`: each resource the tenant's pools advertise -> the units they hold at their max."""
    def units(c: Checker, value: Any, where: str) -> tuple[tuple[str, int], ...] | None:
        return _parse_units(c, value, where, capacity, 0)

    queue = c.section_values(value, TENANT_QUEUE, path, rules={
        "nominal": units, "borrowingLimit": units, "lendingLimit": units,
        "preemption": lambda c, v, p: c.section_values(v, PREEMPTION, p),
    })
    if queue is None:
        return TenantQueue()
    for resource, amount in queue["nominal"] or ():
        if resource in capacity and amount > capacity[resource]:
            c.add(f"{path}.nominal.{resource}",
                  f"{amount} is more than this tenant's pools hold at their max ({capacity[resource]} {resource}): "
                  f"Kueue would guarantee what no node can run; lower it or raise the pools' max")
    preemption = queue["preemption"] or {}
    return queue.model(**{f.model_attr: preemption.get(f.name) or f.default for f in PREEMPTION.fields})


def queue_problems(stack: StackConfig) -> list[ConfigProblem]:
    """What the API server or Kueue would refuse (a flavor tolerates every taint of its pool's nodes, at most
    `MAX_FLAVOR_TOLERATIONS`; its nodeLabels, the pool label and the Spot label, stay within `MAX_FLAVOR_LABELS`),
    and per-pool promises nothing would enforce. Pools no queue can reach are the plan's to refuse
    (`gpushare.plan.stack_plan.build_plan`): that takes each pool's capacity."""
    problems = []
    for i, tenant in enumerate(stack.tenants):
        if not tenant.pool_quota:
            continue
        path = f"gpushare:tenants[{i}]"
        if not stack.queues.enabled:
            problems.append(ConfigProblem(f"{path}.quota.pools", (
                f"a promise per pool is kept by Kueue's queues, which are off: set {QUEUES_KEY}.enabled: true, or "
                f"state the tenant's quota per resource (quota: {{nvidia.com/gpu: N}}) instead")))
        elif tenant.queue.nominal:
            problems.append(ConfigProblem(f"{path}.queue.nominal", (
                f"{dict(tenant.queue.nominal)} beside quota.pools {dict(tenant.pool_quota)}: the per-pool quota is "
                f"the tenant's guarantee on each pool; remove queue.nominal, or remove quota.pools")))
    if not stack.queues.enabled:
        return problems
    for index, pool in enumerate(stack.pools):
        taints = pool_node_taints(stack, pool)
        if len(taints) > MAX_FLAVOR_TOLERATIONS:
            problems.append(ConfigProblem(f"gpushare:pools[{index}].taints", (
                f"its nodes carry {len(taints)} taints ({', '.join(taints)}) but a Kueue ResourceFlavor holds at "
                f"most {MAX_FLAVOR_TOLERATIONS} tolerations; drop some taints or set {QUEUES_KEY}.enabled: false")))
    return problems
