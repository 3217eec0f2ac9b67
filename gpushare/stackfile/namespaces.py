"""Which namespaces a tenant may own and which the pool policies never judge: read by the stack file's validation
and by the tenant objects (`gpushare.kubernetes.tenant_objects`)."""

from __future__ import annotations

import re

from gpushare.sharing.operator_values import NAMESPACE as OPERATOR_NAMESPACE

NAMESPACE_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
"""A DNS-1123 label, as Kubernetes requires of namespace names."""
EXEMPT_NAMESPACES = ("kube-system", OPERATOR_NAMESPACE)
"""Never judged by the pool policies: cluster add-ons and the GPU Operator schedule their own pods."""


def namespace_problem(name: str) -> str | None:
    """Why `name` cannot be a tenant's namespace, or None."""
    if not NAMESPACE_RE.match(name):
        return (f"must be a Kubernetes namespace name (DNS-1123 label: 1-63 lowercase letters, digits or '-', "
                f"starting and ending with a letter or digit), got {name!r}")
    if name == "default" or name.startswith("kube-") or name == OPERATOR_NAMESPACE:
        return (f"{name!r} is reserved (default, kube-*, and the GPU Operator's namespace {OPERATOR_NAMESPACE}); "
                f"choose the team's name")
    return None
