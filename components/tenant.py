"""One tenant: its namespace, GPU quota, container defaults, `edit` RoleBindings and pool admission policy.

The objects are the plan's (`gpushare.kubernetes.tenant_objects.tenant_objects_by_role`) verbatim, each registered by its role,
so what `plan` shows and `verify` looks for is what registers here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from gpushare.components.manifest_resource import register_manifest
from gpushare.kubernetes.tenant_objects import TenantObjects


@dataclass(frozen=True)
class GpuTenantArgs:
    objects: TenantObjects
    """Required. The tenant's objects by role (`gpushare.plan.stack_plan.StackPlan.tenants`, or
    `gpushare.kubernetes.tenant_objects.tenant_objects_by_role`)."""
    provider: pulumi.ProviderResource
    """Required. The Kubernetes provider of the stack's cluster."""
    depends_on: Sequence[pulumi.Resource] = ()
    """Optional. Resources every object waits for (e.g. the deployer's cluster role assignment). Default: none."""


class GpuTenant(pulumi.ComponentResource):
    """A team's namespace bound to its GPU pools."""

    namespace: pulumi.Output[str]
    """The tenant's namespace."""
    policy_name: pulumi.Output[str]
    """The ValidatingAdmissionPolicy binding the namespace's GPU pods to the tenant's pools."""
    policy_binding: pulumi.CustomResource
    """Its ValidatingAdmissionPolicyBinding: SharedGpuPools stops judging the namespace only after it exists."""

    def __init__(self, name: str, args: GpuTenantArgs, opts: pulumi.ResourceOptions | None = None):
        objects = args.objects
        super().__init__("gpushare:tenant:GpuTenant", name, None, opts)
        after = list(args.depends_on)
        # Retained: dropping a tenant from the stack removes its quota, defaults and policy, never the team's
        # workloads and volumes (deleting a namespace deletes everything in it).
        namespace = register_manifest(f"{name}-namespace", objects.namespace,
                                      pulumi.ResourceOptions.merge(self._opts(args, after),
                                                                   pulumi.ResourceOptions(retain_on_delete=True)))

        def in_namespace(role: str, manifest: dict[str, Any]) -> pulumi.CustomResource:
            """An object that lives in the namespace, so it waits for it."""
            return register_manifest(f"{name}-{role}", manifest, self._opts(args, [*after, namespace]))

        contents = [
            *([in_namespace("quota", objects.quota)] if objects.quota else []),
            in_namespace("limits", objects.limit_range),
            *(in_namespace(f"edit-{group}", binding) for group, binding in objects.edit_bindings.items()),
        ]
        policy = register_manifest(f"{name}-policy", objects.policy, self._opts(args, after))
        # Bound last: the policy judges pod templates by the LimitRange's defaults, so they exist first.
        self.policy_binding = register_manifest(f"{name}-policy-binding", objects.policy_binding,
                                                self._opts(args, [*after, namespace, *contents, policy]))
        self.namespace = namespace.metadata.name
        self.policy_name = policy.metadata.name
        self.register_outputs({"namespace": self.namespace, "policy_name": self.policy_name})

    def _opts(self, args: GpuTenantArgs, depends_on: list[pulumi.Resource]) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=depends_on)
