"""`fleet compare`: what a change does to a fleet, from two `fleet plan --json` documents (base, head): capacity and
cost per region before -> after, and which members it touches, in which update stage, and what changes in each."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gpushare.errors import GpushareError
from gpushare.review.fleet_report import FLEET_PLAN_KIND, FLEET_PLAN_VERSION
from gpushare.showback.cost import money_span

EMPTY: dict[str, Any] = {"regions": [], "members": [], "updates": {"stages": []}}
"""An empty file: no fleet on that side (a new fleet, or one removed)."""


class MalformedFleetPlanError(GpushareError):
    exit_code = 2


def parse_fleet_plan(text: str, source: str) -> dict[str, Any]:
    if not text.strip():
        return EMPTY
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError):  # the decoder recurses per level; no plan is nested that deep
        doc = None
    if not isinstance(doc, dict) or doc.get("kind") != FLEET_PLAN_KIND or doc.get("version") != FLEET_PLAN_VERSION \
            or not isinstance(doc.get("members"), list) or not isinstance(doc.get("regions"), list) \
            or not all(isinstance(m, dict) for m in [*doc["members"], *doc["regions"]]):
        error = MalformedFleetPlanError(f"{source}: not a `fleet plan --json` document (kind {FLEET_PLAN_KIND!r}, "
                                        f"version {FLEET_PLAN_VERSION})")
        error.hint = "write it with `gpushare fleet plan FLEET_FILE --json > FILE`; an empty file means no fleet"
        raise error
    return doc


def _capacity(entries: list[Mapping[str, Any]]) -> dict[tuple[str, str], tuple[int, int]]:
    return {(c["device"], c["resource"]): (c["minTotal"], c["maxTotal"]) for c in entries}


def _range(span: tuple[int, int] | None) -> str:
    if span is None:
        return "-"
    return str(span[0]) if span[0] == span[1] else f"{span[0]}-{span[1]}"


def _cost(cost: Mapping[str, Any] | None) -> str:
    return "-" if cost is None else money_span(cost["monthlyMin"], cost["monthlyMax"], cost["currency"])


def region_rows(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[list[str]]:
    """Per region and kind of device whose capacity or region cost changes: before -> after."""
    before = {r["region"]: r for r in base["regions"]}
    after = {r["region"]: r for r in head["regions"]}
    rows = []
    for region in dict.fromkeys([*before, *after]):
        old, new = before.get(region, {}), after.get(region, {})
        old_capacity, new_capacity = _capacity(old.get("capacity", [])), _capacity(new.get("capacity", []))
        cost = (_cost(old.get("cost")), _cost(new.get("cost")))
        changed = [key for key in dict.fromkeys([*old_capacity, *new_capacity])
                   if old_capacity.get(key) != new_capacity.get(key)]
        for device, resource in changed:
            rows.append([region, f"{device} ({resource})", f"{_range(old_capacity.get((device, resource)))} -> "
                                                           f"{_range(new_capacity.get((device, resource)))}", ""])
        if cost[0] != cost[1]:
            if rows and rows[-1][0] == region:
                rows[-1][3] = f"{cost[0]} -> {cost[1]}"
            else:
                rows.append([region, "", "", f"{cost[0]} -> {cost[1]}"])
    return rows


MEMBER_FACETS = ("region", "cluster", "pools", "tenants", "cost", "group", "stage", "canary", "dispatch")
"""What is compared of a member: a change in any of them touches it."""


def member_changes(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[tuple[str, str, str, list[str]]]:
    """(stack, what happens to it, its update stage (head's, else base's), what changes), per member touched."""
    before = {m["stack"]: m for m in base["members"]}
    after = {m["stack"]: m for m in head["members"]}
    changes = []
    for stack in dict.fromkeys([*before, *after]):
        old, new = before.get(stack), after.get(stack)
        stage = (new or old)["stage"]
        if old is None:
            changes.append((stack, "joins", stage, []))
        elif new is None:
            changes.append((stack, "leaves", stage, []))
        elif facets := [facet for facet in MEMBER_FACETS if old.get(facet) != new.get(facet)]:
            changes.append((stack, "changes", stage, facets))
    return changes


def fleet_name(base: Mapping[str, Any], head: Mapping[str, Any]) -> str:
    return (head.get("fleet") or base.get("fleet") or {}).get("name", "fleet")


def render_fleet_compare(base: Mapping[str, Any], head: Mapping[str, Any]) -> str:
    """GitHub Markdown: the regions' capacity and cost, then the members touched and their update stage."""
    return "\n".join([f"### Fleet {fleet_name(base, head)}", "", *fleet_delta_lines(base, head)]) + "\n"


def fleet_delta_lines(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[str]:
    """The delta's Markdown lines without a heading (`fleet compare` and `report`'s fleet section)."""
    lines: list[str] = []
    rows = region_rows(base, head)
    if rows:
        lines += ["| region | device | capacity | cost a month |", "| --- | --- | --- | --- |"]
        lines += [f"| {' | '.join(row)} |" for row in rows]
    else:
        lines.append("No change to any region's GPU capacity or cost.")
    changes = member_changes(base, head)
    lines.append("")
    if changes:
        lines += ["| member | change | update stage | what |", "| --- | --- | --- | --- |"]
        lines += [f"| {stack} | {what} | {stage} | {', '.join(facets) or '-'} |"
                  for stack, what, stage, facets in changes]
    else:
        lines.append("No member changes.")
    order = [stage["name"] for stage in head["updates"]["stages"]]
    if order != [stage["name"] for stage in base["updates"]["stages"]] and order:
        lines += ["", f"Update order now: {' -> '.join(order)}."]
    return lines
