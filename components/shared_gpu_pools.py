"""The admission policy for every namespace that is no tenant's: GPU pods there may use only the pools no tenant
lists (`gpushare.kubernetes.admission.policies.shared_pool_policy`); and the one that judges debug containers in the
exempt namespaces (`exempt_debug_policy`). Registered only when the stack has tenants."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from gpushare.components.manifest_resource import register_manifest
from gpushare.components.tenant import GpuTenant


@dataclass(frozen=True)
class SharedGpuPoolsArgs:
    policies: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]
    """Required. (ValidatingAdmissionPolicy, binding) manifests: the shared pools' policy first, then the exempt
    namespaces' debug policy (`gpushare.plan.stack_plan.StackPlan.shared_policies`)."""
    provider: pulumi.ProviderResource
    """Required. The Kubernetes provider of the stack's cluster."""
    depends_on: Sequence[pulumi.Resource] = ()
    """Optional. Resources both objects wait for (e.g. the deployer's cluster role assignment). Default: none."""
    tenants: Sequence[GpuTenant] = ()
    """Optional. The stack's tenants: the shared binding, which stops judging their namespaces, is written only
    after each one's own binding exists, so a new tenant's namespace is never judged by no policy. Default: none
    (then the order is left to chance: the real engine runs independent steps in parallel)."""


class SharedGpuPools(pulumi.ComponentResource):
    """ValidatingAdmissionPolicy and binding for GPU pods outside tenant namespaces."""

    policy_name: pulumi.Output[str]
    """The ValidatingAdmissionPolicy's name."""

    def __init__(self, name: str, args: SharedGpuPoolsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:tenant:SharedGpuPools", name, None, opts)
        after = list(args.depends_on)
        policies = []
        tenant_bindings = [tenant.policy_binding for tenant in args.tenants]
        for index, (policy_manifest, binding_manifest) in enumerate(args.policies):
            # The first is judged for the namespaces the tenants' bindings leave: it waits for them.
            prefix, waits = (name, tenant_bindings) if index == 0 else (f"{name}-debug", [])
            policy = register_manifest(f"{prefix}-policy", policy_manifest,
                                       pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=after))
            register_manifest(f"{prefix}-binding", binding_manifest, pulumi.ResourceOptions(
                parent=self, provider=args.provider, depends_on=[*after, policy, *waits]))
            policies.append(policy)
        self.policy_name = policies[0].metadata.name
        self.register_outputs({"policy_name": self.policy_name})
