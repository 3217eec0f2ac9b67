"""One tenant's Kubernetes objects by role, so a reader (the `GpuTenant` component, a test) takes the quota or the
policy by name instead of working it out from `kind`, list position or `subjects[0]`.

Built by `gpushare.kubernetes.tenants.tenant_objects_by_role`; `manifests()` is the plain list `plan` shows and
`verify` looks for (`tenants.tenant_objects`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Manifest = dict[str, Any]


@dataclass(frozen=True)
class TenantObjects:
    namespace: Manifest
    """The Namespace (Pod Security `baseline`); everything else but the policy lives in it."""
    quota: Manifest | None
    """The ResourceQuota on the GPU resources of the tenant's pools; None without `quota`."""
    limit_range: Manifest
    """The LimitRange whose container defaults make requests equal limits (the policy judges templates by it)."""
    edit_bindings: Mapping[str, Manifest]
    """The `edit` RoleBinding of each of the tenant's Entra ID groups, by group object ID, in the stack's order."""
    policy: Manifest
    """The ValidatingAdmissionPolicy binding the namespace's GPU pods to the tenant's pools."""
    policy_binding: Manifest
    """The ValidatingAdmissionPolicyBinding of `policy` to the namespace."""

    def in_namespace(self) -> list[Manifest]:
        """What lives in the namespace: the quota (if any), the LimitRange, the RoleBindings."""
        return [*([self.quota] if self.quota else []), self.limit_range, *self.edit_bindings.values()]

    def manifests(self) -> list[Manifest]:
        """Namespace first, then what lives in it, then the policy and its binding."""
        return [self.namespace, *self.in_namespace(), self.policy, self.policy_binding]
