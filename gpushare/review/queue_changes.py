"""What a change does to the tenants' Kueue queues, for `compare` (two plans' `queues`): queues turned on or off, and
per tenant and pool whose guarantee shrinks or grows and who may borrow or lend more or less there. A guarantee the
Tenants section already names (its promise per pool, in the pool's own units: `tenant_changes.promises_named`) is not
repeated here; what only the queues say (borrowing and lending) stays."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from gpushare.review.markdown import code


@dataclass(frozen=True)
class FlavorTerms:
    """One pool in one tenant's ClusterQueue."""

    resource: str
    nominal: int
    borrowing: str
    """In words: `none`, `up to N`, `no limit`."""
    lending: str


def _limit(value: object, in_cohort: bool, unlimited: str) -> str:
    if not in_cohort or value == 0:
        return "none"
    return unlimited if value is None else f"up to {value}"


def queue_terms(queues: object) -> dict[tuple[str, str], FlavorTerms] | None:
    """`plan --json` `queues` -> (tenant, pool) -> its terms; None when the plan predates the key; empty when off."""
    if not isinstance(queues, Mapping):
        return None
    terms = {}
    for tenant in queues.get("tenants") or ():
        if not isinstance(tenant, Mapping):
            continue
        in_cohort = tenant.get("cohort") is not None
        for flavor in tenant.get("flavors") or ():
            if isinstance(flavor, Mapping) and isinstance(flavor.get("nominal"), int):
                terms[(str(tenant.get("tenant")), str(flavor.get("pool")))] = FlavorTerms(
                    str(flavor.get("resource")), flavor["nominal"],
                    _limit(flavor.get("borrowingLimit"), in_cohort, "no limit"),
                    _limit(flavor.get("lendingLimit"), in_cohort, "all of it"))
    return terms


def _enabled(queues: object) -> bool:
    return isinstance(queues, Mapping) and queues.get("enabled") is True


def queue_lines(base: object, head: object, named: Collection[tuple[str, str]] = ()) -> list[str]:
    """One bullet per (tenant, pool) whose terms changed; `named`: the (tenant, pool) pairs whose guarantee the
    Tenants section already names, whose guarantee is left out here (a reviewer reads it once, in the pool's units)."""
    before, after = queue_terms(base), queue_terms(head)
    if before is None or after is None:
        return []
    lines = []
    if _enabled(base) != _enabled(head):
        lines.append("- Kueue queues are turned " + ("**on**: Kueue is installed and each tenant gets a queue"
                                                     if _enabled(head) else "**off**: Kueue and every queue go"))
    for key in dict.fromkeys([*before, *after]):
        tenant, pool = key
        old, new = before.get(key), after.get(key)
        where = f"tenant {code(tenant)} on pool {code(pool)}"
        if old is None:
            guaranteed = "" if key in named else f"guaranteed {new.nominal} {code(new.resource)}; "
            lines.append(f"- {where}: {guaranteed}may borrow {new.borrowing}, lends {new.lending}")
        elif new is None:
            if key not in named:
                lines.append(f"- {where}: no longer in its queue (its guarantee of {old.nominal} "
                             f"{code(old.resource)} goes)")
        else:
            changes = []
            if new.nominal != old.nominal and key not in named:
                way = "**shrinks**" if new.nominal < old.nominal else "grows"
                changes.append(f"guarantee {way} {old.nominal} -> {new.nominal} {code(new.resource)}")
            if new.borrowing != old.borrowing:
                changes.append(f"may borrow {old.borrowing} -> {new.borrowing}")
            if new.lending != old.lending:
                changes.append(f"lends {old.lending} -> {new.lending}")
            if changes:
                lines.append(f"- {where}: {'; '.join(changes)}")
    return lines


def queue_section(base: object, head: object, named: Collection[tuple[str, str]] = ()) -> list[str]:
    lines = queue_lines(base, head, named)
    return ["#### Queues", "", *lines, ""] if lines else []


def queue_plan_lines(queues: object) -> list[str]:
    """`plan`'s text for its `queues`: per tenant its cohort and, per pool, what it is guaranteed, may borrow and
    lends; nothing when queues are off."""
    if not _enabled(queues):
        return []
    release = queues.get("release") or {}
    lines = ["", f"Queues (Kueue {queues.get('kueueVersion')}, chart {release.get('chart')} {release.get('version')} "
                 f"in {release.get('namespace')}; fair sharing {'on' if queues.get('fairSharing') else 'off'}; "
                 f"Jobs label kueue.x-k8s.io/queue-name: <tenant>):"]
    terms = queue_terms(queues) or {}
    for tenant in queues.get("tenants") or ():
        name = tenant.get("tenant")
        cohort = f"cohort {tenant['cohort']}" if tenant.get("cohort") else "no cohort (shares no pool)"
        lines.append(f"  {name}: ClusterQueue {tenant.get('clusterQueue')}, {cohort}, priority "
                     f"{tenant.get('priority')}")
        for (owner, pool), t in terms.items():
            if owner == name:
                lines.append(f"    pool {pool}: guaranteed {t.nominal} {t.resource}, may borrow {t.borrowing}, "
                             f"lends {t.lending}")
    for cohort in queues.get("cohorts") or ():
        own = "; ".join(f"pool {q['pool']}: {q['units']} {q['resource']}" for q in cohort.get("ownQuota") or ())
        if own:
            lines.append(f"  cohort {cohort.get('name')} holds what no tenant is guaranteed, lent to its tenants: "
                         f"{own}")
    return lines
