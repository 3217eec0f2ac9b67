"""`report`: the Markdown a reviewer reads for one stack's `pulumi preview --json`, most important first.

Order: errors from `diagnostics` (a guard or preflight stop, a protect error), the GPU table with its loud flags,
the GPU Operator release, the tenants (`review.tenant_changes`), counts per operation, warnings, then every changed resource in a collapsed <details>
that is the only part cut to fit the size limit.

Input shape (`display.PreviewDigest`, pulumi pkg/backend/display/json.go): `{steps: [{op, urn, oldState, newState,
diffReasons, replaceReasons, detailedDiff}], diagnostics: [{urn, prefix, message, severity}], changeSummary: {op:
n}}`, where every key but `op` and `urn` of a step may be missing. `same` steps are hidden unless the preview ran
with `--show-sames` (the workflow passes it, so unchanged pools still show their capacity); a replace is one
`replace` step, or `create-replacement`/`delete-replaced` with `--show-replacement-steps`.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpushare.azure.prices import PriceSheet
from gpushare.errors import GpushareError
from gpushare.kubernetes.admission.policies import SHARED_POLICY_NAME
from gpushare.model.stack import TENANT_LABEL
from gpushare.review.cost import monthly, runs_under_cap, spot_cap_problem
from gpushare.review.gpu_changes import (
    AGENT_POOL_TYPE,
    CONFIG_MAP_TYPE,
    RELEASE_TYPE,
    OperatorTransition,
    PoolSide,
    PoolTransition,
    SideCost,
    StackCostChange,
    capacity,
    cost_summary,
    gpu_section,
    is_gpu_pool,
    operator_section,
)
from gpushare.review.markdown import DEFAULT_MAX_CHARS, code, fence, fit
from gpushare.review.tenant_changes import (
    TenantSide,
    TenantsView,
    churn_counts,
    pools_from_annotation,
    quota_from_manifest,
    tenants_section,
)
from gpushare.sharing.operator_values import CONFIG_MAP_NAME, is_operator_chart

OP_ORDER = ("create", "update", "replace", "delete", "same")
_POOL_OPS = {
    "create-replacement": "replace", "delete-replaced": "replace", "import-replacement": "replace",
    "read-replacement": "replace", "read": "same", "refresh": "same",
}
_POOL_OP_RANK = ("replace", "delete", "create", "update", "import", "discard", "same")
_DETAIL_RANK = ("delete", "replace", "delete-replaced", "create-replacement", "update", "create", "import")
MAX_ERRORS_SHOWN = 10
MAX_MESSAGE_CHARS = 2_000
MAX_WARNINGS_SHOWN = 20
MAX_WARNING_CHARS = 400
MANAGED_CLUSTER_TYPE = "azure-native:containerservice:ManagedCluster"
_MARKUP = re.compile(r"<\{%[^%]*%\}>|\x1b\[[0-9;]*m")
"""Pulumi's colour tags (`<{%reset%}>`) and ANSI escapes, which may survive into diagnostics."""


class MalformedPreviewError(GpushareError):
    """The input is not what `pulumi preview --json` prints."""

    exit_code = 2


@dataclass(frozen=True)
class Step:
    op: str
    urn: str
    old: Mapping | None
    new: Mapping | None
    reasons: tuple[str, ...]

    @property
    def type(self) -> str:
        state = self.new or self.old or {}
        return str(state.get("type") or urn_type(self.urn))

    @property
    def name(self) -> str:
        return self.urn.split("::", 3)[-1]

    def inputs(self, side: str) -> Mapping | None:
        state = self.old if side == "old" else self.new
        if state is None:
            return None
        inputs = state.get("inputs")
        return inputs if isinstance(inputs, Mapping) else {}


@dataclass(frozen=True)
class Preview:
    steps: tuple[Step, ...]
    diagnostics: tuple[Mapping, ...]
    change_summary: Mapping[str, int] | None
    config: Mapping[str, object] = field(default_factory=dict)
    """The stack's config as the preview printed it (secrets as `[secret]`); may be missing."""


def urn_type(urn: str) -> str:
    """`urn:pulumi:stack::project::parent$type::name` -> `type`."""
    parts = urn.split("::")
    return parts[2].rsplit("$", 1)[-1] if len(parts) >= 4 else ""


def urn_stack(urn: str) -> str | None:
    """`urn:pulumi:stack::project::...` -> `stack`."""
    if not urn.startswith("urn:pulumi:"):
        return None
    return urn.split("::", 1)[0].removeprefix("urn:pulumi:") or None


# --- parsing ----------------------------------------------------------------------------------------------


def parse_preview(text: str, source: str) -> Preview:
    """Raises MalformedPreviewError naming `source`, where and what, for anything that is not a preview digest."""
    if not text.strip():
        raise MalformedPreviewError(
            f"{source}: empty; `pulumi preview --json` printed nothing (its error is in the step's log)")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedPreviewError(
            f"{source}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            f"expected the output of `pulumi preview --json`") from None
    except RecursionError:  # the decoder recurses per level; no preview is nested that deep
        raise MalformedPreviewError(
            f"{source}: nested too deeply to be a preview (over {sys.getrecursionlimit()} levels); "
            f"expected the output of `pulumi preview --json`") from None
    problems = _shape_problems(doc)
    if problems:
        error = MalformedPreviewError(
            f"{source}: not a `pulumi preview --json` document:\n" + "\n".join(f"  - {p}" for p in problems[:10]))
        error.hint = "pass the file `pulumi preview --json > FILE` wrote (stdout only; logs go to stderr)"
        raise error
    steps = tuple(
        Step(op=s["op"], urn=s["urn"], old=s.get("oldState"), new=s.get("newState"), reasons=_reasons(s))
        for s in doc.get("steps") or []
    )
    summary = doc.get("changeSummary")
    config = doc.get("config") if isinstance(doc.get("config"), Mapping) else {}
    return Preview(steps, tuple(doc.get("diagnostics") or ()), summary if isinstance(summary, Mapping) else None,
                   config)


def _shape_problems(doc: object) -> list[str]:
    if not isinstance(doc, dict):
        return [f"the top level must be an object, got {type(doc).__name__}"]
    if "steps" not in doc and "diagnostics" not in doc:
        return ["neither `steps` nor `diagnostics` is present"]
    problems = []
    for key in ("steps", "diagnostics"):
        if doc.get(key) is not None and not isinstance(doc[key], list):
            problems.append(f"`{key}` must be a list, got {type(doc[key]).__name__}")
    for index, step in enumerate(doc.get("steps") or [] if isinstance(doc.get("steps"), list) else []):
        if not isinstance(step, dict):
            problems.append(f"steps[{index}] must be an object")
            continue
        for key in ("op", "urn"):
            if not isinstance(step.get(key), str):
                problems.append(f"steps[{index}].{key} is missing or not a string")
        for key in ("oldState", "newState"):
            if step.get(key) is not None and not isinstance(step[key], dict):
                problems.append(f"steps[{index}].{key} must be an object")
    for index, diagnostic in enumerate(doc.get("diagnostics") or [] if isinstance(doc.get("diagnostics"), list) else []):
        if not isinstance(diagnostic, dict) or not isinstance(diagnostic.get("message", ""), str):
            problems.append(f"diagnostics[{index}] must be an object with a string `message`")
    if doc.get("changeSummary") is not None and not (
            isinstance(doc["changeSummary"], dict)
            and all(isinstance(v, int) and not isinstance(v, bool) for v in doc["changeSummary"].values())):
        problems.append("`changeSummary` must map operations to counts")
    return problems


def _reasons(step: Mapping) -> tuple[str, ...]:
    """What changed: `detailedDiff` paths with their kind, else `replaceReasons` on a replace, else `diffReasons`."""
    detailed = step.get("detailedDiff")
    if isinstance(detailed, Mapping) and detailed:
        return tuple(f"{path} ({d.get('kind', 'update')})" if isinstance(d, Mapping) else path
                     for path, d in detailed.items())
    replace = step.get("replaceReasons") or []
    return tuple(str(r) for r in (replace or step.get("diffReasons") or []))


# --- from steps to the shared GPU model -------------------------------------------------------------------


def _find(preview: Preview, type_: str, match) -> Step | None:
    for step in preview.steps:
        if step.type == type_ and any(match(step.inputs(side) or {}) for side in ("old", "new")):
            return step
    return None


def _config_data(step: Step | None, side: str) -> Mapping | None:
    if step is None:
        return None
    data = (step.inputs(side) or {}).get("data") if step.inputs(side) is not None else None
    return data if isinstance(data, Mapping) else None


def _mig_strategy(release: Step | None, side: str) -> str | None:
    values = (release.inputs(side) or {}).get("values") if release and release.inputs(side) is not None else None
    mig = values.get("mig") if isinstance(values, Mapping) else None
    strategy = mig.get("strategy") if isinstance(mig, Mapping) else None
    return strategy if isinstance(strategy, str) else None


def pool_transitions(preview: Preview) -> list[PoolTransition]:
    config_map = _find(preview, CONFIG_MAP_TYPE, lambda i: (i.get("metadata") or {}).get("name") == CONFIG_MAP_NAME)
    release = _find(preview, RELEASE_TYPE, lambda i: is_operator_chart(i.get("chart")))
    by_pool: dict[str, list[Step]] = {}
    for step in preview.steps:
        if step.type != AGENT_POOL_TYPE:
            continue
        inputs = step.inputs("new") or step.inputs("old") or {}
        if not is_gpu_pool(inputs) and not is_gpu_pool(step.inputs("old") or {}):
            continue
        name = str(inputs.get("agentPoolName") or step.name)
        by_pool.setdefault(name, []).append(step)
    transitions = []
    for name, steps in by_pool.items():
        ops = [_POOL_OPS.get(s.op, s.op) for s in steps]
        op = min(ops, key=lambda o: _POOL_OP_RANK.index(o) if o in _POOL_OP_RANK else len(_POOL_OP_RANK))
        old_step = next((s for s in steps if s.old is not None), None)
        new_step = next((s for s in steps if s.new is not None), None)
        transitions.append(PoolTransition(
            name=name, op=op,
            before=_side(name, old_step, "old", config_map, release) if op != "create" else None,
            after=_side(name, new_step, "new", config_map, release) if op != "delete" else None,
            # Pulumi refuses to delete or replace what is protected in state and still protected by the program.
            protected=bool(old_step and old_step.old.get("protect")) and (
                new_step is None or bool(new_step.new.get("protect"))),
        ))
    return transitions


def _side(name: str, step: Step | None, side: str, config_map: Step | None, release: Step | None) -> PoolSide | None:
    if step is None:
        return None
    inputs = step.inputs(side) or {}
    data = _config_data(config_map, side)
    pool = PoolSide(name, inputs, None, _mig_strategy(release, side))
    config = data.get(pool.config_key) if data is not None else None
    return PoolSide(name, inputs, config if isinstance(config, str) else None, pool.mig_strategy)


def operator_transition(preview: Preview) -> OperatorTransition | None:
    config_map = _find(preview, CONFIG_MAP_TYPE, lambda i: (i.get("metadata") or {}).get("name") == CONFIG_MAP_NAME)
    release = _find(preview, RELEASE_TYPE, lambda i: is_operator_chart(i.get("chart")))
    if release is None and config_map is None:
        return None
    old_data, new_data = _config_data(config_map, "old"), _config_data(config_map, "new")
    return OperatorTransition(
        op=release.op if release else "same",
        before=release.inputs("old") if release else None,
        after=release.inputs("new") if release else None,
        config_keys_before=tuple(old_data or ()),
        config_keys_after=tuple(new_data or ()),
        config_changed=old_data is not None and new_data is not None and old_data != new_data,
    )


# --- rendering --------------------------------------------------------------------------------------------


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


NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"
QUOTA_TYPE = "kubernetes:core/v1:ResourceQuota"
POLICY_TYPE = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
_NOT_BEFORE = ("create", "create-replacement")
_NOT_AFTER = ("delete", "delete-replaced")


def _tenant_of(inputs: Mapping) -> str | None:
    metadata = inputs.get("metadata") if isinstance(inputs.get("metadata"), Mapping) else {}
    labels = metadata.get("labels") if isinstance(metadata.get("labels"), Mapping) else {}
    tenant = labels.get(TENANT_LABEL)
    return tenant if isinstance(tenant, str) else None


def tenant_report_lines(preview: Preview) -> list[str]:
    """The tenants' section from the tenants' Namespace, ResourceQuota and policy steps. Without `--show-sames`
    an unchanged object is absent: a tenant whose Namespace has no step exists on both sides."""
    views = []
    for side, skipped in (("old", _NOT_BEFORE), ("new", _NOT_AFTER)):
        present: dict[str, bool] = {}
        pools: dict[str, tuple[str, ...] | None] = {}
        quotas: dict[str, dict[str, int | str]] = {}
        shared: tuple[str, ...] | None = None
        for step in preview.steps:
            if step.type not in (NAMESPACE_TYPE, QUOTA_TYPE, POLICY_TYPE):
                continue
            inputs = step.inputs(side)
            on_side = inputs is not None and step.op not in skipped
            tenant = _tenant_of(step.inputs("new") or step.inputs("old") or {})
            if step.type == POLICY_TYPE and tenant is None and on_side and \
                    (inputs.get("metadata") or {}).get("name") == SHARED_POLICY_NAME:
                shared = pools_from_annotation(inputs.get("metadata"))
            if tenant is None:
                continue
            if step.type == NAMESPACE_TYPE:
                present[tenant] = on_side
            else:
                present.setdefault(tenant, True)
            if on_side and step.type == QUOTA_TYPE:
                quotas[tenant] = quota_from_manifest(inputs.get("spec"))
            if on_side and step.type == POLICY_TYPE:
                pools[tenant] = pools_from_annotation(inputs.get("metadata"))
        views.append(TenantsView({name: TenantSide(name, pools.get(name), quotas.get(name, {}))
                                  for name, there in present.items() if there}, shared))
    churn = churn_counts(pool_transitions(preview), operator_transition(preview))
    return tenants_section(views[0], views[1], churn)


# --- cost -------------------------------------------------------------------------------------------------------


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
                    meter.hourly / nodes.per_node if nodes.per_node else None)


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


def render_report(preview: Preview, stack: str | None, max_chars: int = DEFAULT_MAX_CHARS,
                  prices: PriceSheet | None = None, prices_problem: str | None = None) -> str:
    """`prices`: add the cost column and lead the summary line with the monthly change; `prices_problem`: why
    prices were asked for but are missing (said in one line)."""
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
    head += operator_section(operator_transition(preview))
    head += tenant_report_lines(preview)
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
