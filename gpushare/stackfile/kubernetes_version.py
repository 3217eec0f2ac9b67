"""Offline check of a pinned `gpushare:cluster.kubernetesVersion` against the catalog's Kubernetes minors.

AKS creates clusters only on supported minors (N-2 from the newest GA), so a pin older than that fails at
`pulumi up`. Offline, gpushare knows only the minors of its `catalog.KNOWLEDGE_DATE`; `gpushare preflight` asks
AKS which versions the region offers today.
"""

from __future__ import annotations

from gpushare.model.catalog import KNOWLEDGE_DATE, NEWEST_AKS_KUBERNETES_MINOR, oldest_supported_kubernetes_minor
from gpushare.model.stack import StackConfig

VERSION_KEY = "gpushare:cluster.kubernetesVersion"
TENANTS_MIN_KUBERNETES_VERSION = (1, 30)
"""The tenants' admission policies need ValidatingAdmissionPolicy v1 (`admissionregistration.k8s.io/v1`), GA from
Kubernetes 1.30."""


def _minor_text(minor: tuple[int, int]) -> str:
    return f"{minor[0]}.{minor[1]}"


def kubernetes_version_warnings(stack: StackConfig) -> list[str]:
    """A warning when the pinned minor is older than the oldest AKS supported at the catalog's knowledge date."""
    version = stack.cluster.kubernetes_version
    if version is None:
        return []
    major, minor = (int(part) for part in version.split(".")[:2])
    oldest = oldest_supported_kubernetes_minor()
    if (major, minor) >= oldest:
        return []
    return [
        f"{stack.source}: {VERSION_KEY} {version!r} is older than {_minor_text(oldest)}, the oldest minor AKS "
        f"supported in {KNOWLEDGE_DATE:%B %Y} (the newest GA, {_minor_text(NEWEST_AKS_KUBERNETES_MINOR)}, and the two "
        f"before it); AKS creates clusters only on supported minors, so `pulumi up` would fail. Remove "
        f"kubernetesVersion to take AKS's default, or pin {_minor_text(oldest)} or newer; `gpushare preflight` checks "
        f"the versions AKS offers in {stack.location} live"
    ]


def _version_tuple(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def kubernetes_version_problem(version: str | None) -> str | None:
    """Why a cluster on `version` cannot run the tenants' admission policies, or None (AKS's default is newer)."""
    if version is not None and _version_tuple(version) < TENANTS_MIN_KUBERNETES_VERSION:
        minimum = _minor_text(TENANTS_MIN_KUBERNETES_VERSION)
        return (f"tenants need Kubernetes {minimum} or newer (ValidatingAdmissionPolicy v1), got {version!r}; "
                f"set kubernetesVersion to \"{minimum}\" or later")
    return None
