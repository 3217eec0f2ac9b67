"""Kueue (its Helm release, on the system pool) and the tenants' queues compiled from the stack.

The objects are the plan's (`gpushare.kubernetes.queues.queue_manifests`) verbatim, so what `plan` shows is what registers here.
The chart installs Kueue's CRDs, so every queue object waits for the release; a LocalQueue also waits for its
tenant (its namespace).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpushare.kubernetes.queues import KueueRelease
from gpushare.kubernetes.tenants import MANAGED_BY


@dataclass(frozen=True)
class KueueQueuesArgs:
    release: KueueRelease
    """Required. Kueue's Helm release (`gpushare.plan.stack_plan.QueuesPlan.release`)."""
    manifests: Sequence[Mapping[str, Any]]
    """Required. The queue objects, flavors and cohorts before the queues that name them
    (`gpushare.plan.stack_plan.QueuesPlan.manifests`)."""
    provider: pulumi.ProviderResource
    """Required. The Kubernetes provider of the stack's cluster."""
    tenants: Mapping[str, pulumi.Resource]
    """Required. Tenant name -> its component (`GpuTenant`): its LocalQueue waits for it, namespace included."""
    depends_on: Sequence[pulumi.Resource] = ()
    """Optional. Resources every object waits for (e.g. the deployer's cluster role assignment). Default: none."""


class KueueQueues(pulumi.ComponentResource):
    """Kueue's release, and ResourceFlavors, Cohorts, WorkloadPriorityClasses, ClusterQueues and LocalQueues."""

    namespace: pulumi.Output[str]
    """Kueue's namespace."""
    release_name: pulumi.Output[str]
    cluster_queues: pulumi.Output[list[str]]
    """The ClusterQueues' names (one per tenant)."""

    def __init__(self, name: str, args: KueueQueuesArgs, opts: pulumi.ResourceOptions | None = None):
        release_plan, manifests = args.release, args.manifests
        super().__init__("gpushare:queues:KueueQueues", name, None, opts)
        after = list(args.depends_on)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace", metadata=k8s.meta.v1.ObjectMetaArgs(name=release_plan.namespace, labels=MANAGED_BY),
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=after))
        self.release = k8s.helm.v3.Release(
            f"{name}-release", name=release_plan.name, chart=release_plan.chart, version=release_plan.version,
            namespace=namespace.metadata.name, values=release_plan.values,
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, namespace]))
        for manifest in manifests:
            meta = manifest["metadata"]
            waits = [*after, self.release]
            if manifest["kind"] == "LocalQueue":
                waits.append(args.tenants[meta["namespace"]])
            # The manifest as the provider's own CustomResource sends it (`kubernetes:<apiVersion>:<kind>`), whole:
            # a WorkloadPriorityClass has no spec, its `value` sits at the top level.
            pulumi.CustomResource(f"kubernetes:{manifest['apiVersion']}:{manifest['kind']}",
                                  f"{name}-{manifest['kind'].lower()}-{meta['name']}", dict(manifest),
                                  pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=waits))
        self.namespace = namespace.metadata.name
        self.release_name = self.release.name
        self.cluster_queues = pulumi.Output.from_input(
            [m["metadata"]["name"] for m in manifests if m["kind"] == "ClusterQueue"])
        self.register_outputs({"namespace": self.namespace, "release_name": self.release_name,
                               "cluster_queues": self.cluster_queues})
