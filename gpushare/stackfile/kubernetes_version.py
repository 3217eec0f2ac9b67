"""A pinned `gpushare:cluster.kubernetesVersion` against AKS's Kubernetes calendar and the GPU Operator's validation.

AKS creates and upgrades clusters only on minors it supports: on every tier the standard ones, and under long-term
support (Premium tier, `AKSLongTermSupport` plan) some older ones. A pin outside what the stack's tier and plan get
fails at `pulumi up`, so it is a configuration error. Offline, gpushare knows the calendar of
`catalog.AKS_CALENDAR_DATE` (a minor it calls unsupported stays so); `gpushare preflight` asks AKS which versions the
region offers today.
"""

from __future__ import annotations

from gpushare.model.catalog import (
    AKS_CALENDAR_DATE,
    AKS_LTS_ONLY_MINORS,
    AKS_STANDARD_MINORS,
    NEWEST_AKS_KUBERNETES_MINOR,
)
from gpushare.model.stack import OPERATOR_VALIDATED_KUBERNETES, StackConfig, SupportPlan, Tier

VERSION_KEY = "gpushare:cluster.kubernetesVersion"
TENANTS_MIN_KUBERNETES_VERSION = (1, 30)
"""The tenants' admission policies need ValidatingAdmissionPolicy v1 (`admissionregistration.k8s.io/v1`), GA from
Kubernetes 1.30."""
LTS_FIX = "set tier: Premium and supportPlan: AKSLongTermSupport (long-term support, billed with the Premium tier)"


def _minor_text(minor: tuple[int, int]) -> str:
    return f"{minor[0]}.{minor[1]}"


def _version_tuple(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def support_plan_problem(tier: Tier, plan: SupportPlan) -> str | None:
    """Why AKS refuses the stack's support plan on its tier, or None."""
    if plan is SupportPlan.LONG_TERM_SUPPORT and tier is not Tier.PREMIUM:
        return (f"AKSLongTermSupport needs tier Premium (aks-docs long-term-support.md: \"Enabling LTS requires "
                f"moving your cluster to the Premium tier\"), got tier {tier.value}; set tier: Premium, or remove "
                f"supportPlan")
    return None


def version_support_problem(version: str, tier: Tier, plan: SupportPlan) -> str | None:
    """Why AKS would refuse to create or keep a cluster on `version` with this tier and plan, or None."""
    minor = _version_tuple(version)
    if minor in AKS_STANDARD_MINORS or minor > NEWEST_AKS_KUBERNETES_MINOR:
        return None  # a minor newer than the calendar: `preflight` checks that AKS offers it
    oldest, newest = _minor_text(AKS_STANDARD_MINORS[0]), _minor_text(NEWEST_AKS_KUBERNETES_MINOR)
    when = f"AKS's calendar of {AKS_CALENDAR_DATE:%B %Y}"
    if minor in AKS_LTS_ONLY_MINORS:
        if tier is Tier.PREMIUM and plan is SupportPlan.LONG_TERM_SUPPORT:
            return None
        return (f"{version!r}: AKS supports Kubernetes {_minor_text(minor)} only under long-term support now (its "
                f"standard support has ended, {when}), which needs the Premium tier and the AKSLongTermSupport plan, "
                f"so `pulumi up` would fail on tier {tier.value} with plan {plan.value}; pin {oldest} to {newest}, or "
                f"remove kubernetesVersion to take AKS's default, or {LTS_FIX}")
    lts = f"{_minor_text(AKS_LTS_ONLY_MINORS[0])}-{_minor_text(AKS_LTS_ONLY_MINORS[-1])}"
    return (f"{version!r} is older than every minor AKS supports ({oldest}-{newest}, and {lts} under long-term "
            f"support, {when}), so `pulumi up` would fail; pin {oldest} to {newest}, or remove kubernetesVersion to "
            f"take AKS's default")


def kubernetes_version_warnings(stack: StackConfig) -> list[str]:
    """A warning when the pinned minor is newer than NVIDIA validated the stack's GPU Operator release on."""
    version = stack.cluster.kubernetes_version
    chart = stack.operator.chart_version
    validated = next((minor for line, minor in OPERATOR_VALIDATED_KUBERNETES.items()
                      if chart.startswith(f"{line}.")), None)
    if version is None or validated is None or _version_tuple(version) <= validated:
        return []
    return [
        f"{stack.source}: {VERSION_KEY} {version!r} is newer than Kubernetes {_minor_text(validated)}, the newest "
        f"NVIDIA validated GPU Operator {chart} on (NVIDIA's GPU Operator platform support); AKS runs it, but the "
        f"operator's behaviour there is untested by NVIDIA: pin {_minor_text(validated)} until NVIDIA validates a "
        f"newer minor, or accept the risk"
    ]


def kubernetes_version_problem(version: str | None) -> str | None:
    """Why a cluster on `version` cannot run the tenants' admission policies, or None (AKS's default is newer)."""
    if version is not None and _version_tuple(version) < TENANTS_MIN_KUBERNETES_VERSION:
        minimum = _minor_text(TENANTS_MIN_KUBERNETES_VERSION)
        return (f"tenants need Kubernetes {minimum} or newer (ValidatingAdmissionPolicy v1), got {version!r}; "
                f"set kubernetesVersion to \"{minimum}\" or later")
    return None
