"""NVIDIA's DRA driver for a stack's DRA pools: its Helm release (pinned, its kubelet plugin on the DRA pools' nodes
only), gpushare's DeviceClasses, and each tenant's ResourceClaimTemplates.

The objects are the plan's (`gpushare.plan.stack_plan.StackPlan.dra`, from `gpushare.sharing.dra`) verbatim, so what
`plan` shows is what registers here. DeviceClasses and ResourceClaimTemplates are built-in `resource.k8s.io/v1`
kinds (no CRD of the chart's), so they do not wait for the release; a template lives in its tenant's namespace, so
it waits for the tenant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from gpushare.components.gpu_operator import MANAGED_BY, POD_SECURITY_PRIVILEGED
from gpushare.components.manifest_resource import register_manifest
from gpushare.sharing.dra import DraPlan


@dataclass(frozen=True)
class DraDriverArgs:
    plan: DraPlan
    """Required. The driver's release, the DeviceClasses and the tenants' templates (`StackPlan.dra`)."""
    provider: pulumi.ProviderResource
    """Required. The Kubernetes provider of the stack's cluster."""
    tenants: Mapping[str, pulumi.Resource]
    """Required. Tenant name -> its component (`GpuTenant`): its templates wait for it, namespace included."""
    depends_on: Sequence[pulumi.Resource] = ()
    """Optional. Resources every object waits for (the deployer's cluster role assignment). Default: none."""


class DraDriver(pulumi.ComponentResource):
    """The DRA driver's namespace and release, DeviceClasses and ResourceClaimTemplates."""

    namespace: pulumi.Output[str]
    release_name: pulumi.Output[str]
    device_classes: pulumi.Output[list[str]]
    """The DeviceClasses gpushare created (the chart adds its own `gpu.nvidia.com` and `mig.nvidia.com`)."""

    def __init__(self, name: str, args: DraDriverArgs, opts: pulumi.ResourceOptions | None = None):
        plan, release = args.plan, args.plan.release
        super().__init__("gpushare:dra:DraDriver", name, None, opts)
        after = list(args.depends_on)

        def options(*waits: pulumi.Resource) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, *waits])

        # The kubelet plugin runs privileged with host paths (templates/kubeletplugin.yaml), as the operator's
        # DaemonSets do: the namespace allows it wherever Pod Security Admission enforces a stricter level.
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace", metadata=k8s.meta.v1.ObjectMetaArgs(
                name=release.namespace, labels={**MANAGED_BY, **POD_SECURITY_PRIVILEGED}),
            opts=options())
        self.release = k8s.helm.v3.Release(
            f"{name}-release", name=release.name, chart=release.chart, version=release.version,
            namespace=namespace.metadata.name, values=release.values, opts=options(namespace))
        classes = [register_manifest(f"{name}-class-{manifest['metadata']['name']}", manifest, options())
                   for manifest in plan.device_classes]
        for tenant, templates in plan.claim_templates.items():
            for manifest in templates:
                register_manifest(f"{name}-template-{tenant}-{manifest['metadata']['name']}", manifest,
                                  options(args.tenants[tenant], *classes))
        self.namespace = namespace.metadata.name
        self.release_name = self.release.name
        self.device_classes = pulumi.Output.from_input([m["metadata"]["name"] for m in plan.device_classes])
        self.register_outputs({"namespace": self.namespace, "release_name": self.release_name,
                               "device_classes": self.device_classes})
