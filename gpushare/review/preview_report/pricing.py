"""What the previewed change costs: the region and VM sizes to price, each pool side's monthly cost, the cluster's
system pool and tier fee, the stack's total before and after, and the Spot caps the sheet's price is above."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from gpushare.azure.prices import PriceSheet
from gpushare.showback.cost import monthly, runs_under_cap, slice_hourly, spot_cap_problem
from gpushare.review.gpu_changes import AGENT_POOL_TYPE, PoolSide, PoolTransition, SideCost, StackCostChange, capacity
from gpushare.review.preview_report.digest import Preview

MANAGED_CLUSTER_TYPE = "azure-native:containerservice:ManagedCluster"


def preview_region(preview: Preview) -> str | None:
    """The cluster's `location` (its ManagedCluster step), else the stack's `azure-native:location`."""
    cluster = next((s for s in preview.steps if s.type == MANAGED_CLUSTER_TYPE), None)
    inputs = (cluster.inputs("new") or cluster.inputs("old") or {}) if cluster else {}
    for location in (inputs.get("location"), preview.config.get("azure-native:location")):
        if isinstance(location, str) and location and location != "[secret]":
            return location
    return None


def preview_vm_sizes(preview: Preview) -> list[str]:
    sizes = []
    for step in preview.steps:
        for side in ("old", "new"):
            inputs = step.inputs(side) or {}
            if step.type == AGENT_POOL_TYPE:
                sizes.append(inputs.get("vmSize"))
            elif step.type == MANAGED_CLUSTER_TYPE:
                sizes += [p.get("vmSize") for p in inputs.get("agentPoolProfiles") or () if isinstance(p, Mapping)]
    return [s for s in dict.fromkeys(sizes) if isinstance(s, str)]


def _side_cost(side: PoolSide | None, sheet: PriceSheet) -> SideCost | None:
    if side is None:
        return None
    nodes = capacity(side)
    meter = sheet.vm_meter(str(side.inputs.get("vmSize", "")), spot=side.inputs.get("scaleSetPriority") == "Spot")
    if meter is None or nodes.min_nodes is None or nodes.max_nodes is None:
        return SideCost(None, None, None)
    return SideCost(monthly(meter.hourly, nodes.min_nodes), monthly(meter.hourly, nodes.max_nodes),
                    slice_hourly(meter.hourly, nodes.per_node))


EXISTING_CLUSTER_PARTS = "the cluster's system pools and tier fee (no ManagedCluster in the preview: an existing cluster's)"


def _cluster_monthly(preview: Preview, side: str, sheet: PriceSheet) -> tuple[float | None, list[str]]:
    """The system pool and the Standard tier's fee on one side, and what of them has no price; None (and
    `EXISTING_CLUSTER_PARTS`) when the cluster is not in the preview: an existing one, whose parts are not priced
    from gpushare's defaults."""
    cluster = next((s for s in preview.steps if s.type == MANAGED_CLUSTER_TYPE), None)
    inputs = cluster.inputs(side) if cluster else None
    if inputs is None:
        return (0.0, []) if cluster else (None, [EXISTING_CLUSTER_PARTS])
    total, unknown = 0.0, []
    for profile in inputs.get("agentPoolProfiles") or ():
        meter = sheet.vm_meter(str(profile.get("vmSize", ""))) if isinstance(profile, Mapping) else None
        if meter is None:
            unknown.append(f"{profile.get('vmSize') if isinstance(profile, Mapping) else '?'} (system pool)")
            continue
        total += monthly(meter.hourly, float(profile.get("count") or 0))
    sku = inputs.get("sku") if isinstance(inputs.get("sku"), Mapping) else {}
    if sku.get("tier") == "Standard":
        fee = sheet.cluster_fee_meter()
        if fee is None:
            unknown.append("the Standard tier's cluster fee")
        else:
            total += monthly(fee.hourly, 1)
    return (None if unknown else total), unknown


def priced(preview: Preview, transitions: list[PoolTransition],
           sheet: PriceSheet) -> tuple[list[PoolTransition], StackCostChange]:
    """The transitions with each side's cost, and the stack's total before -> after."""
    with_cost = [dataclasses.replace(t, cost_before=_side_cost(t.before, sheet), cost_after=_side_cost(t.after, sheet))
                 for t in transitions]
    totals, complete, unknown = {}, True, []
    for side, attr in (("old", "cost_before"), ("new", "cost_after")):
        fixed, missing = _cluster_monthly(preview, side, sheet)
        unknown += missing
        sides = [(t, getattr(t, attr)) for t in with_cost if getattr(t, attr) is not None]
        unknown += [f"{(t.before if attr == 'cost_before' else t.after).inputs.get('vmSize')} (pool {t.name})"
                    for t, c in sides if c.monthly_max is None]
        complete &= fixed is not None and all(c.monthly_max is not None for _, c in sides)
        totals[side] = tuple((fixed or 0.0) + sum(getattr(c, bound) or 0.0 for _, c in sides)
                             for bound in ("monthly_min", "monthly_max"))
    change = StackCostChange(sheet.currency, sheet.read_at[:10], *totals["old"], *totals["new"], complete,
                             tuple(dict.fromkeys(unknown)))
    return with_cost, change


def spot_cap_lines(transitions: list[PoolTransition], sheet: PriceSheet) -> list[str]:
    """The PR report's Spot-cap warning for each pool the change leaves with a `spotMaxPrice` not above the sheet's Spot
    price (compared in USD only: the cap's currency)."""
    lines = []
    for t in transitions:
        inputs = t.after.inputs if t.after else {}
        cap = inputs.get("spotMaxPrice")
        if inputs.get("scaleSetPriority") != "Spot" or not isinstance(cap, int | float) or cap <= 0:
            continue
        meter = sheet.vm_meter(str(inputs.get("vmSize", "")), spot=True)
        if meter is not None and runs_under_cap(cap, meter.hourly, sheet.currency) is False:
            problem = spot_cap_problem(t.name, str(inputs["vmSize"]), cap, meter.hourly, sheet.read_at[:10],
                                       capacity(t.after).resource or "GPUs")
            lines.append(f"_{problem}_")
    return lines + [""] if lines else []
