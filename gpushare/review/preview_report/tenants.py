"""The tenants' section of the report, from the tenants' Namespace, ResourceQuota and policy steps
(`review.tenant_changes` renders it)."""

from __future__ import annotations

from collections.abc import Mapping

from gpushare.kubernetes.admission.policies import SHARED_POLICY_NAME
from gpushare.model.stack import TENANT_LABEL
from gpushare.review.preview_report.digest import Preview
from gpushare.review.preview_report.transitions import operator_transition, pool_transitions
from gpushare.review.tenant_changes import (
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
