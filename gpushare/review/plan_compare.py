"""`compare`: the GPU table and flags of `report`, from two `plan --json` documents (base and head), with no cloud.

A pull request from a fork gets no OIDC token and so no cloud preview; this is what it gets, and what every PR gets
seconds after a push. The operation of each pool is derived the way pulumi-azure-native plans it: a change to a
create-only input is a replace (delete first: `deleteBeforeReplace`), anything else an in-place update, inputs in
the resource's `ignoreChanges` do not count. An empty plan file stands for a stack that does not exist on that side.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from gpushare.errors import GpushareError
from gpushare.review.changed_stacks import deleted_stack_steps
from gpushare.review.chargeback_changes import chargeback_section
from gpushare.review.gpu_changes import (
    AGENT_POOL_TYPE,
    CONFIG_MAP_TYPE,
    RELEASE_TYPE,
    OperatorTransition,
    PoolSide,
    PoolTransition,
    SideCost,
    StackCostChange,
    cost_summary,
    field_changes,
    gpu_section,
    operator_section,
)
from gpushare.review.markdown import code
from gpushare.review.queue_changes import queue_section
from gpushare.review.tenant_changes import (
    TenantsView,
    churn_counts,
    dispatched_from_plan,
    platform_from_plan,
    platform_section,
    promises_named,
    tenants_section,
    view_from_plan,
    warnings_section,
)
from gpushare.sharing.operator_values import CONFIG_MAP_NAME, is_operator_chart

AZURE_NATIVE_REPLACE_KEYS = frozenset({"agentPoolName", "resourceName", "resourceGroupName", "vmSize",
                                       "gpuInstanceProfile"})
"""AgentPool inputs pulumi-azure-native itself replaces on (reference pulumi.md, "facts", 3); the resource's own
`replaceOnChanges` (gpushare adds: `gpuProfile`, `availabilityZones`, `osDiskType`, `osDiskSizeGB`, `maxPods`, `scaleSetPriority`, `scaleSetEvictionPolicy`)
come from the plan, with `spotMaxPrice` on a Spot pool and `vnetSubnetID` on a pool that names its subnet. `osSKU` is
not among them (`gpushare.azure.agent_pool_request.CREATE_ONLY_REPLACED_BY_GPUSHARE`): AKS changes it in place by
reimaging."""


class MalformedPlanError(GpushareError):
    exit_code = 2


@dataclass(frozen=True)
class Plan:
    stack: str | None
    pools: tuple[Mapping, ...]
    resources: tuple[Mapping, ...]
    configs: tuple[Mapping, ...]
    mig_strategy: str | None
    tenants: tuple[Mapping, ...] = ()
    shared_pools: tuple[str, ...] | None = None
    """`sharedPools`: what GPU pods outside tenant namespaces may use; None in a plan that predates it."""
    warnings: tuple[str, ...] = ()
    cost: Mapping | None = None
    """The plan's `cost` object (`plan --prices`), or None."""
    platform: Mapping[str, tuple[str, ...] | None] | None = None
    """`platformNamespaces`: namespace -> the pools its workloads may reach (None: every pool); None in a plan that
    predates it."""
    queues: Mapping | None = None
    """`queues` (Kueue, `gpushare.kubernetes.queues.queue_plan`); None in a plan that predates it."""
    fleet_dispatch: Mapping | None = None
    """`fleetDispatch`: on a fleet's dispatch manager, the namespaces its fleet dispatches from it; None elsewhere
    (the key is written only there)."""

    def pool_cost(self, pool: str) -> SideCost | None:
        if self.cost is None:
            return None
        found = next((p for p in self.cost.get("pools") or () if p.get("name") == pool), None)
        if found is None:
            return None
        return SideCost(found.get("monthlyMin"), found.get("monthlyMax"), found.get("deviceHourly"))

    def agent_pool(self, pool: str) -> Mapping | None:
        return next((r for r in self.resources if r.get("type") == AGENT_POOL_TYPE
                     and (r.get("inputs") or {}).get("agentPoolName") == pool), None)

    def config_for(self, pool: str) -> str | None:
        return next((c.get("config") for c in self.configs if c.get("pool") == pool), None)

    def resource(self, type_: str, match) -> Mapping | None:
        return next((r for r in self.resources if r.get("type") == type_ and match(r.get("inputs") or {})), None)


EMPTY = Plan(None, (), (), (), None)


def parse_plan(text: str, source: str) -> Plan:
    if not text.strip():
        return EMPTY
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedPlanError(f"{source}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                                 f"expected the output of `python -m gpushare plan STACK --json`") from None
    except RecursionError:  # the decoder recurses per level; no plan is nested that deep
        raise MalformedPlanError(f"{source}: nested too deeply to be a plan (over {sys.getrecursionlimit()} levels); "
                                 f"expected the output of `python -m gpushare plan STACK --json`") from None
    problems = []
    if not isinstance(doc, dict):
        problems.append(f"the top level must be an object, got {type(doc).__name__}")
    else:
        for key in ("pools", "resources", "devicePluginConfigs"):
            if not isinstance(doc.get(key), list) or not all(isinstance(item, dict) for item in doc[key]):
                problems.append(f"`{key}` is missing or not a list of objects")
    if problems:
        error = MalformedPlanError(f"{source}: not a `plan --json` document:\n" + "\n".join(f"  - {p}" for p in problems))
        error.hint = "write it with `python -m gpushare plan STACK --json > FILE`; an empty file means no stack"
        raise error
    operator = doc.get("operator") if isinstance(doc.get("operator"), Mapping) else {}
    cost = doc.get("cost") if isinstance(doc.get("cost"), Mapping) else None
    return Plan(doc.get("stack"), tuple(doc["pools"]), tuple(doc["resources"]), tuple(doc["devicePluginConfigs"]),
                operator.get("migStrategy"), *_tenant_keys(doc), cost,
                platform_from_plan(doc.get("platformNamespaces")),
                doc.get("queues") if isinstance(doc.get("queues"), Mapping) else None,
                doc.get("fleetDispatch") if isinstance(doc.get("fleetDispatch"), Mapping) else None)


def _tenant_keys(doc: Mapping) -> tuple[tuple[Mapping, ...], tuple[str, ...] | None, tuple[str, ...]]:
    """`tenants`, `sharedPools` and `warnings`, each ignored when it is not the shape `plan --json` writes."""
    tenants = doc.get("tenants") if isinstance(doc.get("tenants"), list) else []
    shared = doc.get("sharedPools")
    warnings = doc.get("warnings") if isinstance(doc.get("warnings"), list) else []
    return (tuple(t for t in tenants if isinstance(t, Mapping)),
            tuple(map(str, shared)) if isinstance(shared, list) else None, tuple(map(str, warnings)))


def _side(plan: Plan, name: str) -> PoolSide:
    resource = plan.agent_pool(name) or {}
    row = next((p for p in plan.pools if p.get("name") == name), {})
    planned = ((str(row["resource"]), int(row["perNode"]))
               if isinstance(row.get("resource"), str) and isinstance(row.get("perNode"), int) else None)
    return PoolSide(name, resource.get("inputs") or {}, plan.config_for(name), plan.mig_strategy, planned)


def _pool_op(base: Plan, head: Plan, name: str) -> str:
    old, new = base.agent_pool(name) or {}, head.agent_pool(name) or {}
    ignored = set(new.get("ignoreChanges") or ())
    changed = {path.split(".")[0].split("[")[0] for path, _, _ in field_changes(old.get("inputs"), new.get("inputs"))}
    changed -= ignored
    if changed & (AZURE_NATIVE_REPLACE_KEYS | set(new.get("replaceOnChanges") or ())):
        return "replace"
    return "update" if changed else "same"


def pool_transitions(base: Plan, head: Plan) -> list[PoolTransition]:
    base_names = [p["name"] for p in base.pools]
    head_names = [p["name"] for p in head.pools]
    head_protected = {p["name"]: bool(p.get("protected")) for p in head.pools}
    protected = {p["name"]: bool(p.get("protected")) and head_protected.get(p["name"], True) for p in base.pools}
    transitions = []
    for name in dict.fromkeys([*head_names, *base_names]):
        costs = {"cost_before": base.pool_cost(name), "cost_after": head.pool_cost(name)}
        if name not in base_names:
            transitions.append(PoolTransition(name, "create", None, _side(head, name), **costs))
        elif name not in head_names:
            transitions.append(PoolTransition(name, "delete", _side(base, name), None, protected[name], **costs))
        else:
            transitions.append(PoolTransition(name, _pool_op(base, head, name), _side(base, name), _side(head, name),
                                              protected[name], **costs))
    return transitions


def operator_transition(base: Plan, head: Plan) -> OperatorTransition | None:
    def release(plan: Plan) -> Mapping | None:
        found = plan.resource(RELEASE_TYPE, lambda i: is_operator_chart(i.get("chart")))
        return found.get("inputs") if found else None

    def data(plan: Plan) -> Mapping:
        found = plan.resource(CONFIG_MAP_TYPE, lambda i: (i.get("metadata") or {}).get("name") == CONFIG_MAP_NAME)
        return (found.get("inputs") or {}).get("data") or {} if found else {}

    old, new = release(base), release(head)
    if old is None and new is None:
        return None
    op = "create" if old is None else "delete" if new is None else "same" if old == new else "update"
    return OperatorTransition(op, old, new, tuple(data(base)), tuple(data(head)),
                              config_changed=data(base) != data(head) and bool(data(base)) and bool(data(head)))


def stack_cost_change(base: Plan, head: Plan) -> StackCostChange | None:
    """From the plans' own `cost` objects (no read of its own); None unless both sides that exist were priced,
    in one currency."""
    sides = [plan.cost for plan in (base, head) if plan is not EMPTY]
    if not sides or any(cost is None for cost in sides) or len({cost.get("currency") for cost in sides}) != 1:
        return None

    def totals(plan: Plan) -> tuple[float, float, bool]:
        if plan is EMPTY:
            return 0.0, 0.0, True
        total = plan.cost.get("total") or {}
        return float(total.get("monthlyMin") or 0.0), float(total.get("monthlyMax") or 0.0), bool(total.get("complete"))

    (before_min, before_max, before_ok), (after_min, after_max, after_ok) = totals(base), totals(head)
    newest = max(str(cost.get("priceDate", "")) for cost in sides)
    unknown = tuple(dict.fromkeys(str(part) for cost in sides for part in cost.get("unknown") or ()))
    return StackCostChange(str(sides[0].get("currency")), newest, before_min, before_max, after_min, after_max,
                           before_ok and after_ok, unknown)


def cost_line(base: Plan, head: Plan, change: StackCostChange | None) -> str:
    if change is not None:
        return f"**Cost: {cost_summary(change)}.**"
    priced = [plan.cost for plan in (base, head) if plan is not EMPTY and plan.cost is not None]
    if priced and len({cost.get("currency") for cost in priced}) > 1:
        return "_Cost: not compared: the two plans were priced in different currencies._"
    return ("_Cost: not shown; make both plans with `gpushare plan STACK --json --prices` (or `--prices FILE`, a saved "
            "answer of `gpushare prices STACK`)._")


def _tenant_views(base: Plan, head: Plan) -> tuple[TenantsView, TenantsView]:
    # A side without the stack (EMPTY) has no tenants and no pools: no namespace loses a pool it never had.
    before = view_from_plan(base.tenants, base.shared_pools if base is not EMPTY else None,
                            dispatched_from_plan(base.fleet_dispatch))
    after = view_from_plan(head.tenants, head.shared_pools if head is not EMPTY else None,
                           dispatched_from_plan(head.fleet_dispatch))
    return before, after


def tenant_compare_lines(base: Plan, head: Plan) -> list[str]:
    """The tenants' section and the warnings that appear or disappear between the two plans."""
    before, after = _tenant_views(base, head)
    churn = churn_counts(pool_transitions(base, head), operator_transition(base, head))
    return (tenants_section(before, after, churn) + platform_section(base.platform, head.platform) +
            warnings_section(base.warnings, head.warnings))


def queue_compare_lines(base: Plan, head: Plan) -> list[str]:
    """The queues' section, without the guarantees the tenants' section names as promises per pool."""
    return queue_section(base.queues, head.queues, promises_named(*_tenant_views(base, head)))


def render_compare(base: Plan, head: Plan) -> str:
    stack = head.stack or base.stack
    change = stack_cost_change(base, head)
    lines = [f"### gpushare compare for stack {code(stack) if stack else '(unknown)'}", "", cost_line(base, head, change),
             ""]
    if base is EMPTY:
        lines += ["The stack is new in this change: everything below is created.", ""]
    if head is EMPTY:
        lines += [f"The stack file is removed in this change: {deleted_stack_steps(stack or 'STACK', 'BASE_SHA')}",
                  ""]
    lines += gpu_section(pool_transitions(base, head), change.currency if change else None)
    if change is not None:
        lines += chargeback_section(base.cost, head.cost, change.currency)
    lines += operator_section(operator_transition(base, head))
    lines += tenant_compare_lines(base, head)
    lines += queue_compare_lines(base, head)
    lines.append("_Offline: from `python -m gpushare plan --json` of the base and the head commit, without Azure. "
                 "What is deployed may differ; the cloud preview (`report`) reads it._")
    return "\n".join(lines) + "\n"
