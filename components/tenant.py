"""One tenant: its namespace, GPU quota, container defaults, `edit` RoleBindings and pool admission policy.

The objects are `gpushare.kubernetes.tenants.tenant_objects` verbatim, so what `plan` shows and `verify` looks for is what
registers here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpushare.kubernetes.tenants import tenant_objects
from gpushare.stackfile.model import StackConfig, Tenant


def resource_class(api_version: str, kind: str) -> type[pulumi.CustomResource]:
    """pulumi_kubernetes's class for a manifest: module `<group's first label>.<version>`, `core` for the core
    group (`rbac.authorization.k8s.io/v1` is `k8s.rbac.v1`). Looked up per manifest, because pulumi_kubernetes loads
    an API group's module on first use and rbac.v1 alone costs 0.03 s to a stack whose tenants bind no group."""
    group, _, version = api_version.rpartition("/")
    return getattr(getattr(getattr(k8s, group.split(".")[0] or "core"), version), kind)


def register_manifest(name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """The typed Pulumi resource for one manifest; its fields go to the engine under their Kubernetes names."""
    fields = {re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower(): value
              for key, value in manifest.items() if key not in ("apiVersion", "kind")}
    return resource_class(manifest["apiVersion"], manifest["kind"])(name, **fields, opts=opts)


@dataclass(frozen=True)
class GpuTenantArgs:
    stack: StackConfig
    """Required. The validated stack: pools decide the policy's pools, resources and container defaults."""
    tenant: Tenant
    """Required. The tenant, from `stack.tenants`."""
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
        manifests = tenant_objects(args.stack, args.tenant)
        super().__init__("gpushare:tenant:GpuTenant", name, None, opts)
        after = list(args.depends_on)
        # Retained: dropping a tenant from the stack removes its quota, defaults and policy, never the team's
        # workloads and volumes (deleting a namespace deletes everything in it).
        namespace = register_manifest(f"{name}-namespace", manifests[0],
                                      pulumi.ResourceOptions.merge(self._opts(args, after),
                                                                   pulumi.ResourceOptions(retain_on_delete=True)))
        in_namespace: list[pulumi.Resource] = []
        policy = None
        for manifest in manifests[1:]:
            kind = manifest["kind"]
            if kind == "ValidatingAdmissionPolicy":
                policy = register_manifest(f"{name}-policy", manifest, self._opts(args, after))
            elif kind == "ValidatingAdmissionPolicyBinding":
                # Bound last: the policy judges pod templates by the LimitRange's defaults, so they exist first.
                self.policy_binding = register_manifest(f"{name}-policy-binding", manifest,
                                                        self._opts(args, [*after, namespace, *in_namespace, policy]))
            else:
                role = {"ResourceQuota": "quota", "LimitRange": "limits"}.get(kind)
                role = role or f"edit-{manifest['subjects'][0]['name']}"
                in_namespace.append(register_manifest(f"{name}-{role}", manifest,
                                                      self._opts(args, [*after, namespace])))
        self.namespace = namespace.metadata.name
        self.policy_name = policy.metadata.name
        self.register_outputs({"namespace": self.namespace, "policy_name": self.policy_name})

    def _opts(self, args: GpuTenantArgs, depends_on: list[pulumi.Resource | None]) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, provider=args.provider,
                                      depends_on=[d for d in depends_on if d is not None])
