"""What a change does to tenants, for `compare` (two plans) and `report` (a cloud preview): tenants added or removed,
pools gained or lost, quota before -> after per resource, the promise per pool before -> after (its Kueue
guarantee, in the pool's own units), the namespaces that lose a pool, on a fleet's dispatch manager the namespaces
that enter or leave the fleet's dispatch, and, in one line, the taint and toleration changes that follow from them.
`compare` also lists the warnings that appear or disappear.

Both reduce their input to `TenantSide`s per side and the pools other namespaces may use (`plan --json` `tenants`,
their `promises`, `sharedPools` and `fleetDispatch`; in a preview, the tenants' Namespace, ResourceQuota,
ValidatingAdmissionPolicy, whose `gpushare.io/pools` annotation names the pools it admits, and ClusterQueue, whose
`nominalQuota` per flavor is the promise per pool, and the shared policy's binding, which leaves the dispatched
namespaces out). Neither input says what a tenant uses now: a lowered promise is said, never judged against use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpushare.kubernetes.admission.policies import POOLS_ANNOTATION, SHARED_POLICY_NAME
from gpushare.review.gpu_changes import OperatorTransition, PoolTransition, field_changes
from gpushare.review.markdown import code
from gpushare.review.tenant_churn import is_tenant_taint_change, is_toleration_change

OTHER_NAMESPACES = "namespaces outside tenants"


@dataclass(frozen=True)
class Promise:
    """A tenant's guarantee on one pool (its ClusterQueue's `nominalQuota` on the pool's flavor)."""

    units: int
    unit: str
    """What one unit is, as `plan` says it (`sharing.capacity.device_unit`: "MIG 3g.40gb slice of A100 80GB"), or
    the resource name where the pool's kind is not known."""


@dataclass(frozen=True)
class TenantSide:
    """One tenant before or after the change."""

    name: str
    pools: tuple[str, ...] | None
    """None when the input does not say (a policy deployed before it carried its pools annotation)."""
    quota: Mapping[str, int | str]
    """Resource -> units (`requests.` prefix dropped)."""
    promises: Mapping[str, Promise] | None = None
    """Pool -> its promise (empty: no queue, so no promise per pool); None when the input does not say (a plan that
    predates `promises`, a preview without the tenant's ClusterQueue)."""


@dataclass(frozen=True)
class TenantsView:
    """Every tenant of one side, and the pools GPU pods outside tenant namespaces may use (None: unknown)."""

    tenants: Mapping[str, TenantSide]
    shared_pools: tuple[str, ...] | None
    dispatched: Mapping[str, tuple[str, ...] | None] | None = None
    """On a fleet's dispatch manager, the namespaces the fleet's dispatch policies judge there -> the workers their
    Jobs go to (None: not said); empty on any other stack; None when the input does not say."""


def _units(value: object) -> int | str:
    try:
        return int(str(value))
    except ValueError:
        return str(value)


def _promises_from_plan(value: object) -> dict[str, Promise] | None:
    """A tenant's `promises` (`kubernetes.tenant_objects.tenant_promises`) -> pool -> promise; None when absent."""
    if not isinstance(value, list):
        return None
    return {str(p["pool"]): Promise(p["units"], str(p.get("unit") or code(str(p.get("resource"))))) for p in value
            if isinstance(p, Mapping) and isinstance(p.get("units"), int) and p.get("pool") is not None}


def dispatched_from_plan(value: object) -> dict[str, tuple[str, ...] | None]:
    """`plan --json` `fleetDispatch` (present only on a fleet's dispatch manager) -> namespace -> its workers."""
    namespaces = value.get("namespaces") if isinstance(value, Mapping) else None
    return {str(ns["name"]): tuple(map(str, ns["workers"])) if isinstance(ns.get("workers"), list) else None
            for ns in namespaces or () if isinstance(ns, Mapping) and ns.get("name") is not None}


def view_from_plan(tenants: Sequence[Mapping], shared_pools: Sequence[str] | None,
                   dispatched: Mapping[str, tuple[str, ...] | None] | None = None) -> TenantsView:
    """From `plan --json`'s `tenants` (with their `promises`), `sharedPools` and `fleetDispatch`
    (`dispatched_from_plan`)."""
    sides = {}
    for tenant in tenants:
        name = str(tenant.get("name"))
        pools = tenant.get("pools")
        quota = tenant.get("quota") if isinstance(tenant.get("quota"), Mapping) else {}
        sides[name] = TenantSide(name, tuple(map(str, pools)) if isinstance(pools, list) else None,
                                 {str(k): _units(v) for k, v in quota.items()},
                                 _promises_from_plan(tenant.get("promises")))
    return TenantsView(sides, tuple(map(str, shared_pools)) if shared_pools is not None else None, dispatched)


def quota_from_manifest(spec: object) -> dict[str, int | str]:
    """A ResourceQuota's `spec.hard`, resource -> units."""
    hard = spec.get("hard") if isinstance(spec, Mapping) else None
    if not isinstance(hard, Mapping):
        return {}
    return {str(key).removeprefix("requests."): _units(value) for key, value in hard.items()}


def pools_from_annotation(metadata: object) -> tuple[str, ...] | None:
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    value = annotations.get(POOLS_ANNOTATION) if isinstance(annotations, Mapping) else None
    return tuple(p for p in value.split(",") if p) if isinstance(value, str) else None


# --- what changed ---------------------------------------------------------------------------------------------


def _pools(pools: tuple[str, ...] | None) -> str:
    return "(unknown)" if pools is None else ", ".join(map(code, pools)) or "none"


def _show_units(units: int | str | None) -> str:
    return "none" if units is None else str(units)


def _quota_changes(before: Mapping[str, int | str], after: Mapping[str, int | str]) -> list[str]:
    return [f"{code(resource)} {_show_units(before.get(resource))} -> {_show_units(after.get(resource))}"
            for resource in dict.fromkeys([*before, *after]) if before.get(resource) != after.get(resource)]


def _promise(promise: Promise) -> str:
    return f"{promise.units} x {promise.unit}"


def _promises(promises: Mapping[str, Promise]) -> str:
    return "; ".join(f"{code(pool)} {_promise(p)}" for pool, p in promises.items())


def _promise_changes(before: Mapping[str, Promise], after: Mapping[str, Promise]) -> tuple[list[str], list[str]]:
    """(what changed per pool, the pools whose promise is lowered or goes)."""
    changes, lowered = [], []
    for pool in dict.fromkeys([*before, *after]):
        old, new = before.get(pool), after.get(pool)
        if old == new:
            continue
        if old is None:
            changes.append(f"{code(pool)} new, {_promise(new)}")
        elif new is None:
            changes.append(f"{code(pool)} {_promise(old)} -> none")
            if old.units:
                lowered.append(pool)
        elif old.unit == new.unit:
            changes.append(f"{code(pool)} {old.units} -> {new.units} x {new.unit}")
            if new.units < old.units:
                lowered.append(pool)
        else:  # the pool's kind changed (its GPU table row says how): the units are not comparable
            changes.append(f"{code(pool)} {_promise(old)} -> {_promise(new)}")
    return changes, lowered


def promises_named(before: TenantsView, after: TenantsView) -> set[tuple[str, str]]:
    """(tenant, pool) pairs whose promise `tenant_lines` names: an added tenant's every promise, and each pool whose
    promise changes on a tenant on both sides (both saying their promises). The Queues section leaves those out."""
    named = set()
    for name, new in after.tenants.items():
        old = before.tenants.get(name)
        if old is None:
            named |= {(name, pool) for pool in new.promises or {}}
        elif old.promises is not None and new.promises is not None:
            named |= {(name, pool) for pool in dict.fromkeys([*old.promises, *new.promises])
                      if old.promises.get(pool) != new.promises.get(pool)}
    return named


LOWERED = ("whether a tenant holds more there now than its new promise is not known offline (neither the plans nor "
           "the preview carry what runs); `gpushare verify STACK` shows what each queue uses per pool on the cluster")


def _dispatch_lines(before: TenantsView, after: TenantsView) -> list[str]:
    """On a fleet's dispatch manager: the namespaces that enter or leave the fleet's dispatch, or whose workers
    change."""
    if before.dispatched is None or after.dispatched is None:
        return []
    lines = []
    for name in dict.fromkeys([*after.dispatched, *before.dispatched]):
        where = f"- **Fleet dispatch**: namespace {code(name)}"
        if name not in before.dispatched:
            workers = after.dispatched[name]
            goes = f", its Jobs go to {', '.join(map(code, workers))}" if workers else ""
            was = ("it was this stack's own tenant" if name in before.tenants
                   else f"no longer by {code(SHARED_POLICY_NAME)}")
            lines.append(f"{where} now judged by the fleet's dispatch policies and a quota of no pods{goes}; {was}")
        elif name not in after.dispatched:
            now = ("it is this stack's own tenant now (above)" if name in after.tenants
                   else f"judged by {code(SHARED_POLICY_NAME)} again (GPU pods only on the pools no tenant lists)")
            lines.append(f"{where} no longer judged by the fleet's dispatch policies: {now}")
        elif before.dispatched[name] != after.dispatched[name] and None not in (before.dispatched[name],
                                                                                after.dispatched[name]):
            lines.append(f"{where}: its Jobs go to {', '.join(map(code, before.dispatched[name]))} -> "
                         f"{', '.join(map(code, after.dispatched[name]))}")
    return lines


def tenant_lines(before: TenantsView, after: TenantsView) -> list[str]:
    """One bullet per tenant that changed, then the promises lowered, the namespaces that lose a pool and those that
    enter or leave the fleet's dispatch."""
    lines = []
    losses = []
    lowered = []
    for name in dict.fromkeys([*after.tenants, *before.tenants]):
        old, new = before.tenants.get(name), after.tenants.get(name)
        if old is None and new is not None:
            quota = ", ".join(f"{code(r)} {u}" for r, u in new.quota.items()) or "none"
            promised = f"; promise per pool {_promises(new.promises)}" if new.promises else ""
            lines.append(f"- **{name}**: added; pools {_pools(new.pools)}; quota {quota}{promised}")
        elif new is None and old is not None:
            lines.append(f"- **{name}**: removed (its namespace and workloads stay; its quota, defaults and policy "
                         f"go, and its pods are judged like any other namespace's)")
            lost = [p for p in old.pools or () if p not in (after.shared_pools or ())]
            if lost and after.shared_pools is not None:
                losses.append(f"{code(name)} loses {', '.join(map(code, lost))}")
        elif old is not None and new is not None:
            details = []
            if old.pools is not None and new.pools is not None:
                gained = [p for p in new.pools if p not in old.pools]
                lost = [p for p in old.pools if p not in new.pools]
                if gained:
                    details.append(f"gains pool {', '.join(map(code, gained))}")
                if lost:
                    details.append(f"loses pool {', '.join(map(code, lost))}")
                    losses.append(f"{code(name)} loses {', '.join(map(code, lost))}")
            elif old.pools != new.pools:
                details.append(f"pools {_pools(old.pools)} -> {_pools(new.pools)}")
            quota = _quota_changes(old.quota, new.quota)
            if quota:
                details.append("quota " + ", ".join(quota))
            if old.promises is not None and new.promises is not None:
                promised, down = _promise_changes(old.promises, new.promises)
                if promised:
                    details.append("promise per pool " + ", ".join(promised))
                lowered += [f"{code(name)} on {code(pool)}" for pool in down]
            if details:
                lines.append(f"- **{name}**: " + "; ".join(details))
    if before.shared_pools is not None and after.shared_pools is not None:
        lost = [p for p in before.shared_pools if p not in after.shared_pools]
        if lost:
            losses.append(f"{OTHER_NAMESPACES} lose {', '.join(map(code, lost))}"
                          + ("" if after.shared_pools else " (no GPU pool left: their GPU pods are refused)"))
    if lowered:
        lines.append(f"- **Promises lowered** ({', '.join(lowered)}): {LOWERED}")
    if losses:
        lines.append("- **Namespaces losing access to a pool** (running pods stay, new ones are refused): " +
                     "; ".join(losses))
    return lines + _dispatch_lines(before, after)


def churn_counts(pools: Sequence[PoolTransition], operator: OperatorTransition | None) -> tuple[int, int]:
    """(tenant-taint changes across pools, toleration changes in the GPU Operator's values)."""
    taints = sum(1 for t in pools if t.before and t.after
                 for path, old, new in field_changes(t.before.inputs, t.after.inputs)
                 if is_tenant_taint_change(path, old, new))
    tolerations = 0
    if operator and operator.before and operator.after:
        tolerations = sum(1 for path, _, _ in field_changes(operator.before.get("values"),
                                                              operator.after.get("values"))
                          if is_toleration_change(path))
    return taints, tolerations


def churn_line(taints: int, tolerations: int) -> list[str]:
    if not taints and not tolerations:
        return []
    return [f"- **Taints and tolerations** (follow from the tenants, not listed above): {taints} node-taint "
            f"change(s) on pools that become or stop being dedicated to one tenant, {tolerations} change(s) to the "
            f"GPU Operator's tolerations of them"]


def tenants_section(before: TenantsView, after: TenantsView, churn: tuple[int, int]) -> list[str]:
    lines = tenant_lines(before, after) + churn_line(*churn)
    return ["#### Tenants", "", *lines, ""] if lines else []


def platform_from_plan(value: object) -> dict[str, tuple[str, ...] | None] | None:
    """`plan --json` `platformNamespaces` -> namespace -> its pools (None: every pool); None when absent or not
    that shape."""
    if not isinstance(value, list):
        return None
    platform = {}
    for item in value:
        if isinstance(item, Mapping) and isinstance(item.get("name"), str):
            pools = item.get("pools")
            platform[item["name"]] = tuple(map(str, pools)) if isinstance(pools, list) else None
    return platform


def _reach(pools: tuple[str, ...] | None) -> str:
    return "every pool" if pools is None else "pools " + ", ".join(map(code, pools))


def platform_section(before: Mapping[str, tuple[str, ...] | None] | None,
                     after: Mapping[str, tuple[str, ...] | None] | None) -> list[str]:
    """The platform namespaces added, removed or given other pools: whose workloads may tolerate every taint and
    set device variables where."""
    if before is None or after is None:
        return []
    lines = []
    for name in dict.fromkeys([*before, *after]):
        if name not in before:
            lines.append(f"- {code(name)}: added; its workloads may reach {_reach(after[name])}")
        elif name not in after:
            lines.append(f"- {code(name)}: removed; its pods are judged like any other namespace's (those that "
                         f"tolerate every taint are refused at their next create)")
        elif before[name] != after[name]:
            lines.append(f"- {code(name)}: {_reach(before[name])} -> {_reach(after[name])}")
    return ["#### Platform namespaces (gpushare:platform)", "", *lines, ""] if lines else []


def warnings_section(before: Sequence[str], after: Sequence[str]) -> list[str]:
    """The plan warnings that appear or disappear between base and head."""
    appeared = [w for w in after if w not in before]
    gone = [w for w in before if w not in after]
    if not appeared and not gone:
        return []
    lines = ["#### Warnings that change", ""]
    lines += [f"- new: {w}" for w in appeared] + [f"- gone: {w}" for w in gone]
    return [*lines, ""]
