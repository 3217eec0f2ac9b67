"""`gpushare usage`: what each pool, slice, tenant and namespace held and used over a window, what idled and what
that cost, and per pool the stack edit the figures call for, with its capacity and cost delta.

Every figure is one PromQL query aggregated by the server, every pool in one query, so a report needs one query to
probe plus `len(QUERIES)` whatever the fleet's size, and never pulls raw series. Where the stack's rule group has
recorded the whole window (its `gpushare:showback_rules:evaluated` series), the figures fold its recorded series
(`sum_over_time(gpushare:...[7d])`: a range selector, fast); otherwise they fold the rules' own instant expressions
over a `[window:5m]` subquery of the raw series, which covers a window that began before the rules were loaded,
at the cost of evaluating the joins at every step.
Time-sliced and MPS use is attributed by allocation (`gpushare.showback.rules`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from gpushare.kubernetes.prometheus_api import PrometheusReader, Sample
from gpushare.model.metrics import duration_seconds
from gpushare.model.stack import StackConfig
from gpushare.sharing.pool_facts import PoolFactsByName
from gpushare.showback.chargeback import PoolChargeback, cents, pool_guarantees, split_pool_cost
from gpushare.showback.cost import HOURS_PER_MONTH, money, signed_money
from gpushare.showback.rules import (
    EVALUATED,
    FB_USED,
    GROUP_INTERVAL,
    RECORDED,
    ShowbackPool,
    allocatable_slices,
    allocated_slices,
    framebuffer_used,
    namespace_used_devices,
    pending_pods,
    tenant_namespaces,
    used_devices,
)

STEP = "5m"
"""The subquery's resolution: dcgm-exporter's and kube-state-metrics' series hold a value at every 5-minute step."""
SATURATED = 0.95
BUSY = 0.5
"""A shared pool under this busy share can take more pods per GPU (double the replicas) before it needs a node."""
MEMORY_SATURATED = 0.9
"""A MIG instance whose framebuffer peaked above this share of its slice's memory is near out-of-memory."""
MIG_FIT = 0.8
"""A smaller MIG slice fits the held instances' work when their framebuffer peak and compute demand stay under this
share of its memory and compute slices: headroom for a busier week."""

QUERIES: dict[str, tuple[str, Callable[[ShowbackPool], str], str]] = {
    "allocatable": ("sum_over_time", allocatable_slices, "allocatable"),
    "allocatablePeak": ("max_over_time", allocatable_slices, "allocatable"),
    "allocatedPeak": ("max_over_time", allocated_slices, "allocated"),
    "namespaceAllocated": ("sum_over_time", lambda p: allocated_slices(p, "pool, namespace"), "namespaceAllocated"),
    "used": ("sum_over_time", used_devices, "used"),
    "namespaceUsed": ("sum_over_time", namespace_used_devices, "namespaceUsed"),
    "pendingPeak": ("max_over_time", pending_pods, "pending"),
    "framebufferPeak": ("max_over_time", framebuffer_used, "framebuffer"),
}
"""Each figure: how the window folds it, the pool's instant expression, and the series the rules record it as."""
RECORDED_COVERAGE = 0.99
"""The share of the window's evaluations the rule group must have recorded for the report to read its series."""


def window_range(window: str) -> str:
    """The window as a range one millisecond short: Prometheus 2.x's ranges are closed at both ends (3.0's are
    open on the left), so `[7d]` over 5-minute samples holds 2,017 of them in 2.x; `[604799999ms]` holds the week's
    2,016 in both."""
    return f"{duration_seconds(window) * 1000 - 1}ms"


def window_query(fold: str, expression: Callable[[ShowbackPool], str], pools: tuple[ShowbackPool, ...],
                 window: str) -> str:
    """One query for every pool, from the raw series: the pools' results carry their `pool` label, so `or` keeps
    each."""
    return " or ".join(f"{fold}(({expression(pool)})[{window_range(window)}:{STEP}])" for pool in pools)


def recorded_query(fold: str, record: str, pools: tuple[ShowbackPool, ...], window: str, namespaced: bool) -> str:
    """The same figure from the rule group's recorded series: a range selector, no subquery."""
    names = "|".join(re.escape(pool.name) for pool in pools)
    by = "pool, namespace" if namespaced else "pool"
    outer = "sum" if fold == "sum_over_time" else "max"
    return f'{outer} by ({by}) ({fold}({record}{{pool=~"{names}"}}[{window_range(window)}]))'


def rules_cover(reader: PrometheusReader, stack: str, window: str, at: float) -> bool:
    """Whether the stack's rule group recorded (nearly) every evaluation of the window."""
    found = reader.query(f'count_over_time({EVALUATED}{{stack="{stack}"}}[{window_range(window)}])', at)
    expected = duration_seconds(window) / duration_seconds(GROUP_INTERVAL)
    return bool(found) and max(s.value for s in found) >= RECORDED_COVERAGE * expected


BY_LABELS = ("pool",)
"""Every figure's query aggregates by pool (and some by namespace too): an answer's series must carry it."""


def read_usage(reader: PrometheusReader, stack: str, pools: tuple[ShowbackPool, ...], window: str,
               at: float, raw: bool = False) -> tuple[str, dict[str, list[Sample]]]:
    """("recorded" or "raw", each figure's samples): the rule group's series where it has recorded the whole window
    (fast: range selectors), else, or with `raw`, subqueries of the same expressions over the raw series."""
    if not raw and rules_cover(reader, stack, window, at):
        return "recorded", {name: reader.query(recorded_query(fold, RECORDED[record], pools, window,
                                                                name.startswith("namespace")), at, BY_LABELS)
                            for name, (fold, _, record) in QUERIES.items()}
    return "raw", {name: reader.query(window_query(fold, expression, pools, window), at, BY_LABELS)
                   for name, (fold, expression, _) in QUERIES.items()}



def _by_pool(samples: list[Sample]) -> dict[str, float]:
    return {s.labels["pool"]: s.value for s in samples}


def _by_namespace(samples: list[Sample]) -> dict[tuple[str, str], float]:
    return {(s.labels["pool"], s.labels.get("namespace", "")): s.value for s in samples}


def _round(value: float | None, places: int = 2) -> float | None:
    return None if value is None else round(value, places)


@dataclass(frozen=True)
class PoolPlan:
    """What the stack says of a pool's size: the edit a recommendation makes."""

    count: int | None
    min_nodes: int
    max_nodes: int


def _recommendation(pool: ShowbackPool, plan: PoolPlan, figures: Mapping[str, float], idle_below: int,
                    hours: float) -> dict[str, Any]:
    """The stack edit the window's figures call for, with the capacity (slices at the most nodes) and the monthly
    cost delta at list price (at the most nodes: what the pool can cost)."""
    per_node, price = pool.per_node, pool.node_hourly
    busy = figures["utilisation"]
    peak, peak_capacity = figures["allocatedPeak"], figures["allocatablePeak"]
    key = "count" if plan.count is not None else "autoscale.max"
    nodes = plan.max_nodes
    saturated = peak_capacity > 0 and peak >= SATURATED * peak_capacity and figures["pendingPeak"] > 0

    def edit(change: str, why: str, new_nodes: int, new_per_node: int) -> dict[str, Any]:
        delta = None if price is None else (new_nodes - nodes) * price * HOURS_PER_MONTH
        return {"edit": change, "why": why, "capacity": {"before": nodes * per_node, "after": new_nodes * new_per_node},
                "monthlyDelta": _round(delta), "newPool": False}

    if pool.mig and not pool.shared:
        advice = _mig_recommendation(pool, plan, figures, edit)
        if advice is not None:
            return advice
    if saturated and pool.shared and busy < BUSY:
        return edit(f"sharing.replicas {pool.replicas} -> {2 * pool.replicas}",
                    f"all slices held with GPU pods pending, yet the GPUs were {busy:.0%} busy: twice the pods per "
                    f"GPU fit in the same nodes", nodes, 2 * per_node)
    if saturated:
        return edit(f"{key} {nodes} -> {nodes + 1}",
                    f"all slices held with GPU pods pending, {busy:.0%} busy: one more node", nodes + 1, per_node)
    if pool.shared and busy * 100 < idle_below and figures["allocatedShare"] >= 0.5:
        needed = max(plan.min_nodes, math.ceil(peak / (2 * per_node)), 1 if peak else 0)
        return edit(f"sharing.replicas {pool.replicas} -> {2 * pool.replicas}"
                    + (f", {key} {nodes} -> {needed}" if needed < nodes else ""),
                    f"pods held {figures['allocatedShare']:.0%} of the slices but the GPUs were {busy:.0%} busy: "
                    f"pack twice the pods per GPU", needed, 2 * per_node)
    needed = max(plan.min_nodes, math.ceil(peak / per_node), 1 if peak else 0)
    if needed < nodes:
        idle = 1 - figures["allocatedShare"]
        return edit(f"{key} {nodes} -> {needed}",
                    f"{idle:.0%} of slices idle over {hours:g} h; at most {peak:g} of {nodes * per_node} held at "
                    f"once, which {needed} node(s) hold", needed, per_node)
    fewest = (f"; {nodes} node(s) are the fewest that hold the peak of {peak:g} slices"
              if figures["allocatedShare"] < 0.5 else "")
    return {"edit": None, "why": f"{figures['allocatedShare']:.0%} of slices held, {busy:.0%} busy{fewest}: no change",
            "capacity": {"before": nodes * per_node, "after": nodes * per_node}, "monthlyDelta": 0.0,
            "newPool": False}


def _mig_recommendation(pool: ShowbackPool, plan: PoolPlan, figures: Mapping[str, float],
                        edit: Callable[[str, str, int, int], dict[str, Any]]) -> dict[str, Any] | None:
    """Another MIG profile for the pool, where the window's figures call for one; None: keep the profile.

    - Fewer, larger slices when an instance's framebuffer peaked above `MEMORY_SATURATED` of its slice (pods near
      out-of-memory): the next profile with more memory.
    - More, smaller slices when the held instances' framebuffer peak and compute demand (their average graphics-
      engine activity x the slice's compute slices) fit under `MIG_FIT` of a smaller slice's: of those, the one with
      the most instances per node.
    The profiles are the pool's GPU's, laid out as AKS lays them (7/3/2/1/1 instances per GPU, `catalog.
    MigProfile`; the GPU Operator's mig-parted `all-<slice>` layouts, gpu-operator-default-mig-parted-config.yaml,
    give the same counts). AKS cannot change a pool's gpuInstanceProfile in place (the guard stops the edit,
    `azure.agent_pool_request.CREATE_ONLY_INPUTS`), so the edit is always a new pool beside this one."""
    framebuffer = figures.get("framebufferPeak")
    current = next((o for o in pool.mig_options if o.profile == pool.mig_profile), None)
    if framebuffer is None or current is None:
        return None  # no DCGM_FI_DEV_FB_USED series: no evidence of what the slices' memory holds
    held_hours, used_hours = figures["allocatedHours"], figures["usedHours"]
    busy_held = used_hours / held_hours if held_hours else 0.0
    demand = busy_held * current.compute_slices
    peak = figures["allocatedPeak"]
    if framebuffer >= MEMORY_SATURATED * current.memory_mib:
        larger = sorted((o for o in pool.mig_options if o.memory_mib > current.memory_mib),
                        key=lambda o: o.memory_mib)
        if not larger:
            return None
        target = larger[0]
        why = (f"an instance's framebuffer peaked at {framebuffer:,.0f} MiB of {current.slice}'s "
               f"{current.memory_mib:,} MiB ({FB_USED}): near out-of-memory; {target.slice} has {target.memory_mib:,} MiB, "
               f"{target.per_node} per node")
    else:
        fitting = [o for o in pool.mig_options if o.memory_mib < current.memory_mib and o.per_node > current.per_node
                   and framebuffer <= MIG_FIT * o.memory_mib and demand <= MIG_FIT * o.compute_slices]
        if not fitting or not held_hours:
            return None
        target = max(fitting, key=lambda o: o.per_node)
        why = (f"held instances peaked at {framebuffer:,.0f} MiB of framebuffer ({FB_USED}) and were "
               f"{busy_held:.0%} busy ({demand:.1f} of {current.slice}'s {current.compute_slices} compute slices): "
               f"{target.slice} holds that, {target.per_node} per node instead of {current.per_node}")
    needed = max(plan.min_nodes, math.ceil(peak / target.per_node), 1 if peak else 0)
    key = "count" if plan.count is not None else "autoscale.max"
    sizing = f", {key} {needed}" if needed != plan.max_nodes else ""
    pool_edit = f"new pool: mig {current.profile.value} -> {target.profile.value}{sizing}"
    resource = (f"; pods request {target.resource} instead of {current.resource}"
                if target.resource != current.resource else "")
    advice = edit(pool_edit, f"{why}. gpuInstanceProfile cannot change in place (the guard stops the edit): add a "
                             f"pool with mig: {target.profile.value}, move the workloads{resource}, then retire "
                             f"{pool.name}", needed, target.per_node)
    return {**advice, "newPool": True,
            "profile": {"before": current.profile.value, "after": target.profile.value, "slice": target.slice,
                        "resource": target.resource}}


def usage_document(stack: StackConfig, pools: tuple[ShowbackPool, ...], samples: Mapping[str, list[Sample]],
                   window: str, at: float, queries: int, currency: str | None, idle_below: int,
                   source: str = "raw", facts: PoolFactsByName | None = None) -> dict[str, Any]:
    """The `usage --json` document: hours are device-hours (GPUs or MIG instances) unless named slice-hours."""
    # Both sources hold one value per 5 minutes: the subquery's step, the rule group's interval.
    step_hours = duration_seconds(STEP if source == "raw" else GROUP_INTERVAL) / 3600
    hours = duration_seconds(window) / 3600
    figures = {name: (_by_namespace(found) if name.startswith("namespace") else _by_pool(found))
               for name, found in samples.items()}
    plans = {p.name: PoolPlan(p.count, p.min_nodes, p.max_nodes) for p in stack.pools}
    tenant_of = tenant_namespaces(stack)
    guarantees = pool_guarantees(stack, facts)
    charges: dict[str, Decimal] = {}
    pool_rows, namespace_rows = [], []
    for pool in pools:
        get = lambda name: figures[name].get(pool.name, 0.0)  # noqa: E731 - absent: nothing held, used, pending
        slice_hours = get("allocatable") * step_hours
        # A pool's held slices are its namespaces' (one query fewer than asking for both).
        held_slice_hours = sum(v for (p, _), v in figures["namespaceAllocated"].items() if p == pool.name) * step_hours
        device_hours = slice_hours / pool.replicas
        used = get("used") * step_hours
        idle = max(device_hours - used, 0.0)
        row = {
            "pool": pool.name, "slice": pool.slice, "resource": pool.resource, "sharing": pool.sharing,
            "sliceHours": _round(slice_hours), "allocatedSliceHours": _round(held_slice_hours),
            "allocatedShare": _round(held_slice_hours / slice_hours if slice_hours else 0.0, 4),
            "deviceHours": _round(device_hours), "usedDeviceHours": _round(used),
            "utilisation": _round(used / device_hours if device_hours else 0.0, 4),
            "idleDeviceHours": _round(idle),
            "idleCost": _round(idle * pool.instance_hourly) if pool.instance_hourly is not None else None,
            "peakAllocated": get("allocatedPeak"), "peakAllocatable": get("allocatablePeak"),
            "peakPending": get("pendingPeak"),
            "peakFramebufferMiB": figures["framebufferPeak"].get(pool.name),
        }
        if pool.instance_hourly is not None:
            split = _chargeback(pool, guarantees[pool.name], figures["namespaceAllocated"], slice_hours, hours,
                                step_hours)
            row["cost"] = float(split.cost)
            row["chargeback"] = split.to_json(frozenset(tenant_of))
            for namespace, charge in split.charges.items():
                charges[namespace] = charges.get(namespace, Decimal(0)) + charge.amount
        row["recommendation"] = _recommendation(pool, plans[pool.name], {
            "utilisation": row["utilisation"], "allocatedShare": row["allocatedShare"],
            "allocatedPeak": row["peakAllocated"], "allocatablePeak": row["peakAllocatable"],
            "pendingPeak": row["peakPending"], "framebufferPeak": row["peakFramebufferMiB"],
            "allocatedHours": held_slice_hours / pool.replicas, "usedHours": used}, idle_below, hours)
        pool_rows.append(row)
        for (pool_name, namespace), held in sorted(figures["namespaceAllocated"].items()):
            if pool_name != pool.name:
                continue
            held_devices = held * step_hours / pool.replicas
            ns_used = figures["namespaceUsed"].get((pool.name, namespace), 0.0) * step_hours
            ns_idle = max(held_devices - ns_used, 0.0)
            namespace_rows.append({
                "pool": pool.name, "namespace": namespace, "tenant": tenant_of.get(namespace),
                "allocatedSliceHours": _round(held * step_hours), "allocatedDeviceHours": _round(held_devices),
                "usedDeviceHours": _round(ns_used),
                "utilisation": _round(ns_used / held_devices if held_devices else 0.0, 4),
                "idleDeviceHours": _round(ns_idle),
                "idleCost": _round(ns_idle * pool.instance_hourly) if pool.instance_hourly is not None else None,
                "attribution": "allocation" if pool.shared else "measured",
            })
    tenants = []
    for tenant in stack.tenants:
        rows = [r for r in namespace_rows if r["tenant"] == tenant.name]
        costs = [r["idleCost"] for r in rows]
        tenants.append({
            "tenant": tenant.name, "namespace": tenant.name,
            "allocatedDeviceHours": _round(sum(r["allocatedDeviceHours"] for r in rows)),
            "usedDeviceHours": _round(sum(r["usedDeviceHours"] for r in rows)),
            "idleDeviceHours": _round(sum(r["idleDeviceHours"] for r in rows)),
            "idleCost": _round(sum(costs)) if costs and None not in costs else (0.0 if not rows else None),
            "charge": float(charges.get(tenant.name, Decimal(0))) if currency else None,
        })
    return {"stack": stack.stack, "window": window, "at": at, "currency": currency, "queries": queries,
            "source": source,
            "attribution": "time-sliced and MPS pools: attributed by allocation (each node's GPU activity split "
                           "among its pods by the slices they hold); MIG and whole GPUs: measured per device",
            "pools": pool_rows, "namespaces": namespace_rows, "tenants": tenants}


def _chargeback(pool: ShowbackPool, guarantees: Mapping[str, int], held: Mapping[tuple[str, str], float],
                slice_hours: float, hours: float, step_hours: float) -> PoolChargeback:
    """The pool's cost over the window (its slice-hours at the slice-hour price) split by `chargeback.
    split_pool_cost`: each tenant its guarantee for the window's hours, what each namespace held beyond its own
    charged to it and credited to the tenants whose guarantee it used, the rest idle."""
    assert pool.instance_hourly is not None
    cost = cents(round(slice_hours / pool.replicas * pool.instance_hourly, 2))
    guaranteed = {tenant: Fraction(units) * Fraction(hours) for tenant, units in guarantees.items()}
    holding = {namespace: Fraction(value) * Fraction(step_hours) for (p, namespace), value in sorted(held.items())
               if p == pool.name}
    return split_pool_cost(cost, Fraction(slice_hours), guaranteed, holding)


# --- text and Markdown -------------------------------------------------------------------------------------------

def _cost(value: float | None, currency: str | None) -> str:
    return "-" if value is None or currency is None else money(value, currency)


def _recommendation_text(row: Mapping[str, Any], currency: str | None) -> str:
    rec = row["recommendation"]
    if rec["edit"] is None:
        return rec["why"]
    delta = rec["monthlyDelta"]
    cost = ((": same cost" if delta == 0 else f": {signed_money(delta, currency)}/month")
            if delta is not None and currency else "")
    return (f"{rec['edit']} ({rec['why']}; capacity {rec['capacity']['before']} -> {rec['capacity']['after']} "
            f"{row['resource']}){cost}")


def usage_tables(document: Mapping[str, Any]) -> list[tuple[list[str], list[list[str]]]]:
    currency = document["currency"]
    pools = [[r["pool"], r["slice"], f"{r['allocatedShare']:.0%}", f"{r['utilisation']:.0%}",
              f"{r['idleDeviceHours']:,.0f}", _cost(r["idleCost"], currency)] for r in document["pools"]]
    namespaces = [[r["namespace"], r["tenant"] or "-", r["pool"], f"{r['allocatedDeviceHours']:,.1f}",
                   f"{r['utilisation']:.0%}", f"{r['idleDeviceHours']:,.1f}", _cost(r["idleCost"], currency),
                   r["attribution"]] for r in document["namespaces"]]
    tenants = [[r["tenant"], f"{r['allocatedDeviceHours']:,.1f}", f"{r['usedDeviceHours']:,.1f}",
                f"{r['idleDeviceHours']:,.1f}", _cost(r["idleCost"], currency)] for r in document["tenants"]]
    tables = [
        (["pool", "slice", "held", "busy", "idle device-h", "idle cost"], pools),
        (["namespace", "tenant", "pool", "held device-h", "busy", "idle device-h", "idle cost", "attribution"],
         namespaces),
        (["tenant", "held device-h", "used device-h", "idle device-h", "idle cost"], tenants),
    ]
    chargeback = [row for pool in document["pools"] if "chargeback" in pool
                  for row in _chargeback_rows(pool, currency)]
    if chargeback:
        tables.append((["pool", "charged to", "guaranteed slice-h", "held slice-h", "borrowed", "lent", "charge"],
                       chargeback))
    return tables


def _chargeback_rows(pool: Mapping[str, Any], currency: str | None) -> list[list[str]]:
    """A pool's chargeback: each tenant and other namespace, the idle line, and the pool's cost they sum to."""
    split = pool["chargeback"]
    rows = [[pool["pool"], name, f"{part['guaranteed']:,.1f}", f"{part['held']:,.1f}", f"{part['borrowed']:,.1f}",
             f"{part['lent']:,.1f}", _cents(part["amount"], currency)]
            for name, part in [*split["tenants"].items(), *split["others"].items()]]
    return rows + [[pool["pool"], "idle", "-", "-", "-", "-", _cents(split["idle"], currency)],
                   [pool["pool"], "= pool cost", "-", "-", "-", "-", _cents(split["total"], currency)]]


def _cents(value: float, currency: str | None) -> str:
    return "-" if currency is None else money(value, currency, 2)


def _title(document: Mapping[str, Any]) -> str:
    source = "recorded series" if document.get("source") == "recorded" else "raw series"
    return (f"GPU usage of stack {document['stack']} over {document['window']} ({document['queries']} "
            f"Prometheus queries, {source})")


def _footnote(document: Mapping[str, Any]) -> str:
    chargeback = ("; chargeback: each tenant its guarantee, plus what it held beyond it, less what others held of its "
                  "unused guarantee; its idle, slices nobody is guaranteed and nobody held (docs/cost.md)"
                  if any("chargeback" in pool for pool in document["pools"]) else "")
    return f"{document['attribution']}; idle = device-hours not busy, at list prices{chargeback}"


def render_text(document: Mapping[str, Any]) -> str:
    lines = [_title(document) + ":"]
    for header, rows in usage_tables(document):
        widths = [max(len(str(c)) for c in column) for column in zip(header, *rows)]
        lines.append("")
        lines += ["  " + "  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [header, *rows]]
    lines += ["", "Recommendations:"]
    lines += [f"  {r['pool']}: {_recommendation_text(r, document['currency'])}" for r in document["pools"]]
    lines += ["", f"({_footnote(document)})"]
    return "\n".join(lines)


def render_markdown(document: Mapping[str, Any]) -> str:
    lines = [f"### {_title(document)}"]
    for header, rows in usage_tables(document):
        lines += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    lines += ["", "**Recommendations**", ""]
    lines += [f"- `{r['pool']}`: {_recommendation_text(r, document['currency'])}" for r in document["pools"]]
    lines += ["", f"_{_footnote(document)}._"]
    return "\n".join(lines)
