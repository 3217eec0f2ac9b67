"""What a change does to tenants, for `compare` (two plans) and `report` (a cloud preview): tenants added or removed,
pools gained or lost, quota before -> after per resource, the namespaces that lose a pool, and, in one line, the
taint and toleration changes that follow from them. `compare` also lists the warnings that appear or disappear.

Both reduce their input to `TenantSide`s per side and the pools other namespaces may use (`plan --json` `tenants`
and `sharedPools`; in a preview, the tenants' Namespace, ResourceQuota and ValidatingAdmissionPolicy, whose
`gpushare.io/pools` annotation names the pools it admits).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpushare.kubernetes.admission.policies import POOLS_ANNOTATION
from gpushare.review.gpu_changes import OperatorTransition, PoolTransition, field_changes
from gpushare.review.markdown import code
from gpushare.review.tenant_churn import is_tenant_taint_change, is_toleration_change

OTHER_NAMESPACES = "namespaces outside tenants"


@dataclass(frozen=True)
class TenantSide:
    """One tenant before or after the change."""

    name: str
    pools: tuple[str, ...] | None
    """None when the input does not say (a policy deployed before it carried its pools annotation)."""
    quota: Mapping[str, int | str]
    """Resource -> units (`requests.` prefix dropped)."""


@dataclass(frozen=True)
class TenantsView:
    """Every tenant of one side, and the pools GPU pods outside tenant namespaces may use (None: unknown)."""

    tenants: Mapping[str, TenantSide]
    shared_pools: tuple[str, ...] | None


def _units(value: object) -> int | str:
    try:
        return int(str(value))
    except ValueError:
        return str(value)


def view_from_plan(tenants: Sequence[Mapping], shared_pools: Sequence[str] | None) -> TenantsView:
    """From `plan --json`'s `tenants` and `sharedPools`."""
    sides = {}
    for tenant in tenants:
        name = str(tenant.get("name"))
        pools = tenant.get("pools")
        quota = tenant.get("quota") if isinstance(tenant.get("quota"), Mapping) else {}
        sides[name] = TenantSide(name, tuple(map(str, pools)) if isinstance(pools, list) else None,
                                 {str(k): _units(v) for k, v in quota.items()})
    return TenantsView(sides, tuple(map(str, shared_pools)) if shared_pools is not None else None)


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


def tenant_lines(before: TenantsView, after: TenantsView) -> list[str]:
    """One bullet per tenant that changed, then the namespaces that lose a pool."""
    lines = []
    losses = []
    for name in dict.fromkeys([*after.tenants, *before.tenants]):
        old, new = before.tenants.get(name), after.tenants.get(name)
        if old is None and new is not None:
            quota = ", ".join(f"{code(r)} {u}" for r, u in new.quota.items()) or "none"
            lines.append(f"- **{name}**: added; pools {_pools(new.pools)}; quota {quota}")
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
            if details:
                lines.append(f"- **{name}**: " + "; ".join(details))
    if before.shared_pools is not None and after.shared_pools is not None:
        lost = [p for p in before.shared_pools if p not in after.shared_pools]
        if lost:
            losses.append(f"{OTHER_NAMESPACES} lose {', '.join(map(code, lost))}"
                          + ("" if after.shared_pools else " (no GPU pool left: their GPU pods are refused)"))
    if losses:
        lines.append("- **Namespaces losing access to a pool** (running pods stay, new ones are refused): " +
                     "; ".join(losses))
    return lines


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
