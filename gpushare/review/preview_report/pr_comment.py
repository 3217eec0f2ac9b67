"""The Markdown itself, most important first: errors from `diagnostics`, the GPU table, the GPU Operator release,
the tenants, the fleet (for a fleet member), counts per operation (with the cost change), warnings, then every
changed resource in a collapsed <details> that is the only part cut to fit the size limit."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

from gpushare.azure.prices import PriceSheet
from gpushare.review.chargeback_changes import chargeback_section
from gpushare.review.gpu_changes import PoolTransition, cost_summary, gpu_section, operator_section
from gpushare.review.markdown import DEFAULT_MAX_CHARS, code, fence, fit
from gpushare.review.preview_report.chargeback import preview_chargeback
from gpushare.review.preview_report.digest import Preview, urn_stack, urn_type
from gpushare.review.preview_report.pricing import priced, spot_cap_lines
from gpushare.review.preview_report.tenants import tenant_report_lines
from gpushare.review.preview_report.transitions import operator_transition, pool_transitions

OP_ORDER = ("create", "update", "replace", "delete", "same")
_DETAIL_RANK = ("delete", "replace", "delete-replaced", "create-replacement", "update", "create", "import")
MAX_ERRORS_SHOWN = 10
MAX_MESSAGE_CHARS = 2_000
MAX_WARNINGS_SHOWN = 20
MAX_WARNING_CHARS = 400
_MARKUP = re.compile(r"<\{%[^%]*%\}>|\x1b\[[0-9;]*m")
"""Pulumi's colour tags (`<{%reset%}>`) and ANSI escapes, which may survive into diagnostics."""


def _clean(message: object) -> str:
    return _MARKUP.sub("", str(message)).strip()


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 30].rstrip() + "\n... (cut; see the workflow log)"


def operation_counts(preview: Preview) -> Counter:
    if preview.change_summary is not None:
        return Counter({op: n for op, n in preview.change_summary.items() if n})
    return Counter(step.op for step in preview.steps)


def counts_line(counts: Counter) -> str:
    words = {"create": "to create", "update": "to update", "replace": "to replace", "delete": "to delete",
             "same": "unchanged"}
    ordered = [op for op in OP_ORDER if counts.get(op)] + sorted(op for op in counts if op not in OP_ORDER)
    return " · ".join(f"{counts[op]} {words.get(op, op)}" for op in ordered) or "no resources"


def _error_lines(diagnostics: list[Mapping]) -> list[str]:
    errors = [d for d in diagnostics if d.get("severity") == "error"]
    if not errors:
        return []
    lines = ["> [!CAUTION]", f"> **The preview failed with {len(errors)} error{'s' if len(errors) != 1 else ''}**: "
             f"`pulumi up` would stop here.", ""]
    for diagnostic in errors[:MAX_ERRORS_SHOWN]:
        urn = str(diagnostic.get("urn") or "")
        where = urn_type(urn)
        # Errors of the program itself (the guard, preflight, validation) sit on the stack: no resource to name.
        lines.append(f"**Error** at {code(urn.split('::', 3)[-1])} ({code(where)}):"
                     if where and where != "pulumi:pulumi:Stack" else "**Error**:")
        lines += [*fence(_short(_clean(diagnostic.get("message", "")), MAX_MESSAGE_CHARS)), ""]
    if len(errors) > MAX_ERRORS_SHOWN:
        lines += [f"_{len(errors) - MAX_ERRORS_SHOWN} more errors in the workflow log._", ""]
    return lines


def _warning_lines(diagnostics: list[Mapping]) -> list[str]:
    warnings = [d for d in diagnostics if d.get("severity") == "warning"]
    if not warnings:
        return []
    lines = [f"#### Warnings ({len(warnings)})", ""]
    for diagnostic in warnings[:MAX_WARNINGS_SHOWN]:
        text = _short(_clean(diagnostic.get("message", "")), MAX_WARNING_CHARS).replace("\n", " ")
        lines.append(f"- {text}")
    if len(warnings) > MAX_WARNINGS_SHOWN:
        lines.append(f"- _{len(warnings) - MAX_WARNINGS_SHOWN} more in the workflow log_")
    return [*lines, ""]


_NOT_A_CHANGE = ("same", "read", "refresh")
"""A `read` step is the engine reading a resource it does not manage (a StackReference, a `get`): the real engine
prints one for the GPU Operator's read of its own previous outputs; `changeSummary` does not count it either."""
RETAINED = " (retained: it leaves the stack, the object stays in the cluster)"


def detail_items(preview: Preview) -> list[str]:
    """One line per changed resource, the most destructive first (the end is what gets cut)."""
    changed = [s for s in preview.steps if s.op not in _NOT_A_CHANGE]
    changed.sort(key=lambda s: _DETAIL_RANK.index(s.op) if s.op in _DETAIL_RANK else len(_DETAIL_RANK))
    items = []
    for step in changed:
        what = f": {', '.join(code(r) for r in step.reasons)}" if step.reasons else ""
        # The engine's `delete` of a resource with retainOnDelete (a tenant's namespace) only forgets it: its
        # oldState says so (`retainOnDelete: true`, omitted when false: pulumi v3.274.1 apitype.ResourceV3, which
        # pkg/backend/display/json.go writes as a step's oldState; seen in tests/engine's real preview).
        retained = RETAINED if step.op == "delete" and (step.old or {}).get("retainOnDelete") is True else ""
        items.append(f"- **{step.op}** {code(step.type)} {code(step.name)}{what}{retained}")
    return items


def _chargeback_lines(preview: Preview, transitions: list[PoolTransition], currency: str) -> list[str]:
    before, after, left_out = preview_chargeback(preview, transitions)
    lines = chargeback_section(before, after, currency)
    if left_out:
        lines += [f"_Chargeback: not split for {', '.join(map(code, left_out))}: several tenants list it and the "
                  f"preview has no ClusterQueue with their guarantees (queues off, or a preview without "
                  f"`--show-sames`); `compare` splits it from the plans._", ""]
    return lines


def render_report(preview: Preview, stack: str | None, max_chars: int = DEFAULT_MAX_CHARS,
                  prices: PriceSheet | None = None, prices_problem: str | None = None,
                  fleet: Sequence[str] = ()) -> str:
    """`prices`: add the cost column and lead the summary line with the monthly change; `prices_problem`: why
    prices were asked for but are missing (said in one line); `fleet`: the fleet section (`fleet.fleet_section`)
    for a stack that is a fleet member, after the tenants."""
    stack = stack or next((urn_stack(s.urn) for s in preview.steps if urn_stack(s.urn)), None)
    counts = operation_counts(preview)
    diagnostics = list(preview.diagnostics)
    transitions = pool_transitions(preview)
    change = None
    if prices is not None:
        transitions, change = priced(preview, transitions, prices)
    head = [f"### gpushare preview of stack {code(stack) if stack else '(unknown)'}", ""]
    head += _error_lines(diagnostics)
    head += gpu_section(transitions, change.currency if change else None)
    if change is not None:
        head += _chargeback_lines(preview, transitions, change.currency)
    head += operator_section(operator_transition(preview))
    head += tenant_report_lines(preview)
    head += fleet
    summary = counts_line(counts)
    if change is not None:
        summary = f"**{cost_summary(change)}** · {summary}"
    head += ["#### Changes", "", summary, ""]
    if prices_problem:
        head += [f"_Cost: not shown: {prices_problem}_", ""]
    if prices is not None:
        head += spot_cap_lines(transitions, prices)
    head += _warning_lines(diagnostics)
    items = detail_items(preview)
    title = f"{len(items)} changed resource{'s' if len(items) != 1 else ''}"
    return fit(head, title, items, max_chars)
