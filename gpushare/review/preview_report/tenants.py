"""The tenants' section of the report, from the tenants' Namespace, ResourceQuota, policy and ClusterQueue steps and
the shared policy's binding (`review.tenant_changes` renders it): a ClusterQueue's `nominalQuota` per flavor is the
tenant's promise per pool, in the units of the pool's side in the preview (as `plan` says them); on a fleet's
dispatch manager, the names the shared binding leaves out beyond the exempt namespaces and the stack's own tenants
are the namespaces the fleet's dispatch policies judge (`admission.policies.shared_pool_policy`)."""

from __future__ import annotations

from collections.abc import Mapping

from gpushare.kubernetes.admission.policies import SHARED_POLICY_NAME
from gpushare.kubernetes.multikueue import FLEET_FLAVOR
from gpushare.kubernetes.queues import CPU_MEMORY_FLAVOR, KUEUE_API
from gpushare.model.stack import TENANT_LABEL
from gpushare.review.gpu_changes import PoolTransition, side_unit
from gpushare.review.markdown import code
from gpushare.review.preview_report.digest import Preview, Step
from gpushare.review.preview_report.transitions import operator_transition, pool_transitions
from gpushare.stackfile.namespaces import EXEMPT_NAMESPACES
from gpushare.review.tenant_changes import (
    Promise,
    TenantSide,
    TenantsView,
    churn_counts,
    pools_from_annotation,
    quota_from_manifest,
    tenants_section,
)


NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"
QUOTA_TYPE = "kubernetes:core/v1:ResourceQuota"
POLICY_TYPE = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
BINDING_TYPE = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
CLUSTER_QUEUE_TYPE = f"kubernetes:{KUEUE_API}:ClusterQueue"
"""As `components.kueue_queues` registers each queue object: `kubernetes:<apiVersion>:<kind>`."""
_NOT_BEFORE = ("create", "create-replacement")
_NOT_AFTER = ("delete", "delete-replaced")


def _tenant_of(inputs: Mapping) -> str | None:
    metadata = inputs.get("metadata") if isinstance(inputs.get("metadata"), Mapping) else {}
    labels = metadata.get("labels") if isinstance(metadata.get("labels"), Mapping) else {}
    tenant = labels.get(TENANT_LABEL)
    return tenant if isinstance(tenant, str) else None


def _promises(inputs: Mapping, units: Mapping[str, str]) -> dict[str, Promise]:
    """A ClusterQueue's GPU flavors (one per pool, `queues.cluster_queue`) -> pool -> its `nominalQuota`, in the
    pool's units where its side is in the preview, else in its resource's name."""
    groups = _get(inputs, "spec", "resourceGroups")
    found = {}
    for group in groups if isinstance(groups, list) else ():
        flavors = _get(group, "flavors")
        for flavor in flavors if isinstance(flavors, list) else ():
            resources = flavor.get("resources") if isinstance(flavor, Mapping) else None
            # Not a pool: the CPU and memory flavor, and a fleet manager's one flavor (a ceiling over its workers).
            if not isinstance(resources, list) or not resources or not isinstance(resources[0], Mapping) \
                    or flavor.get("name") in (CPU_MEMORY_FLAVOR, FLEET_FLAVOR):
                continue
            nominal, pool = resources[0].get("nominalQuota"), str(flavor.get("name"))
            if isinstance(nominal, int) and not isinstance(nominal, bool):
                found[pool] = Promise(nominal, units.get(pool) or code(str(resources[0].get("name"))))
    return found


def _units(transitions: list[PoolTransition], side: str) -> dict[str, str]:
    """Pool -> what one unit of it is on that side."""
    sides = ((t.name, t.before if side == "old" else t.after) for t in transitions)
    return {name: unit for name, pool in sides if (unit := side_unit(pool)) is not None}


def _get(value: object, *path: str) -> object:
    """`value[path[0]][path[1]]...`, None where a level is missing or not a mapping."""
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _excluded(step: Step, side: str) -> set[str] | None:
    """The names the shared binding leaves out (`NotIn`), None when it is not that shape."""
    expressions = _get(step.inputs(side), "spec", "matchResources", "namespaceSelector", "matchExpressions")
    names = [e.get("values") for e in expressions if isinstance(e, Mapping) and e.get("operator") == "NotIn"] \
        if isinstance(expressions, list) else []
    return set(map(str, names[0])) if len(names) == 1 and isinstance(names[0], list) else None


def _is_shared_binding(step: Step) -> bool:
    return step.type == BINDING_TYPE and any(
        _get(step.inputs(side), "metadata", "name") == SHARED_POLICY_NAME for side in ("old", "new"))


def tenant_report_lines(preview: Preview) -> list[str]:
    """The tenants' section from the tenants' Namespace, ResourceQuota, policy and ClusterQueue steps and the shared
    binding. Without `--show-sames` an unchanged object is absent: a tenant whose Namespace has no step exists on
    both sides, its promises unknown unless its ClusterQueue has a step; an unchanged binding says nothing of
    dispatch (a change of who is dispatched changes it)."""
    transitions = pool_transitions(preview)
    binding = next((step for step in preview.steps if _is_shared_binding(step)), None)
    views = []
    for side, skipped in (("old", _NOT_BEFORE), ("new", _NOT_AFTER)):
        present: dict[str, bool] = {}
        pools: dict[str, tuple[str, ...] | None] = {}
        quotas: dict[str, dict[str, int | str]] = {}
        promises: dict[str, dict[str, Promise]] = {}
        queued: set[str] = set()  # tenants whose ClusterQueue has a step: not on this side, no queue there
        units = _units(transitions, side)
        shared: tuple[str, ...] | None = None
        for step in preview.steps:
            if step.type == CLUSTER_QUEUE_TYPE:
                inputs = step.inputs(side)
                name = str(_get(step.inputs("new") or step.inputs("old"), "metadata", "name"))
                queued.add(name)
                present.setdefault(name, True)  # a promise's change touches its ClusterQueue alone
                if inputs is not None and step.op not in skipped:
                    promises[name] = _promises(inputs, units)
                continue
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
        tenants = {name: TenantSide(name, pools.get(name), quotas.get(name, {}),
                                    promises.get(name, {}) if name in queued else None)
                   for name, there in present.items() if there}
        views.append(TenantsView(tenants, shared, _dispatched(binding, side, skipped, set(tenants))))
    churn = churn_counts(transitions, operator_transition(preview))
    return tenants_section(views[0], views[1], churn)


def _dispatched(binding: Step | None, side: str, skipped: tuple[str, ...],
                tenants: set[str]) -> dict[str, tuple[str, ...] | None] | None:
    """The namespaces the shared binding leaves out that are neither exempt nor one of the side's tenants: on a
    fleet's dispatch manager, those the fleet's dispatch policies judge (their workers are the fleet stack's to
    say). None without the binding's step (unchanged, so no change of dispatch); none on a side it is absent from."""
    if binding is None:
        return None
    if binding.inputs(side) is None or binding.op in skipped:
        return {}
    excluded = _excluded(binding, side)
    if excluded is None:
        return None
    return dict.fromkeys(sorted(excluded - set(EXEMPT_NAMESPACES) - tenants))
