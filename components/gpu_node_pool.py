"""One GPU node pool: a separate, protected AKS `AgentPool` labelled and tainted for the GPU Operator.

What the agent pool sends and which options protect it is `gpushare.azure.agent_pool_request` (plain data, tested
directly); this component registers it and orders it after the resources it waits for."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
from pulumi_azure_native import containerservice

from gpushare.azure.agent_pool_request import agent_pool_request
from gpushare.model.stack import DriverOwner
from gpushare.sharing.pool_facts import PoolFacts


@dataclass(frozen=True)
class GpuNodePoolArgs:
    facts: PoolFacts
    """Required. The validated pool and what the stack makes of it: its node labels (the device-plugin config key
    among them) and node taints (a pool dedicated to a tenant adds the tenant's);
    `gpushare.sharing.pool_facts.stack_pool_facts(stack)[pool.name]`."""
    driver: DriverOwner
    """Required. Who installs the NVIDIA driver; `operator` creates the pool with `gpuProfile.driver=None`."""
    cluster_name: pulumi.Input[str]
    """Required. The AKS cluster the pool joins."""
    resource_group_name: pulumi.Input[str]
    """Required. The cluster's resource group."""
    after: pulumi.Resource | None = None
    """Optional. The agent pool this one waits for: AKS refuses concurrent agent-pool operations on one cluster."""
    live_count: int | None = None
    """Optional. The pool's node count as deployed (read once per run by the guard); None for a new pool or when
    unknown. Autoscaled pools send it, clamped to the new bounds."""
    device_config: pulumi.Resource | None = None
    """Optional. The device-plugin ConfigMap. The pool's `nvidia.com/device-plugin.config` label names one of its
    keys, and a node whose label names a key the ConfigMap lacks cannot load a config, so a label change waits
    for the ConfigMap update."""
    settled: tuple[str, ...] = ()
    """Optional. Create-only inputs (wire names) the stack sets to exactly what the deployed pool has
    (`GuardReport.settled`): ignored, so setting one for the first time does not replace the pool."""
    subnet_id: pulumi.Input[str] | None = None
    """Optional. The subnet of the pool's nodes (`vnetSubnetID`, fixed when AKS creates the pool); None: a VNet AKS
    manages."""
    pod_subnet_id: pulumi.Input[str | None] | None = None
    """Optional. The pod subnet (`podSubnetID`) of an existing cluster with Azure CNI dynamic pod IP allocation
    (`ExistingCluster.default_pod_subnet_id`); None: pods take addresses as the cluster's plugin gives them."""
    subnet_access: pulumi.Resource | None = None
    """Optional. The role assignment that lets the cluster's identity join nodes to `subnet_id` (`SubnetAccess`):
    the pool is created after it, since AKS checks that right when it creates the pool. Default: none (a subnet
    AKS or the cluster's owners manage)."""
    tags: Mapping[str, str] | None = None
    """Optional. Azure tags of the agent pool, which AKS copies to its scale set: the user's `tags` merged with the
    cluster autoscaler's node-template tags: resources, and on an autoscaled pool its nodes' labels and taints
    (`gpushare.sharing.autoscaling.stack_pool_tags`). Default: none."""


class GpuNodePool(pulumi.ComponentResource):
    """A GPU pool. MIG pools carry `gpuInstanceProfile`; the sharing mode lives in the device-plugin config that
    the `nvidia.com/device-plugin.config` label selects."""

    agent_pool: containerservice.AgentPool
    """The AKS agent pool; the next pool in the stack waits for it."""
    name: pulumi.Output[str]
    """The agent pool's name in AKS."""
    resource_id: pulumi.Output[str]
    """ARM ID of the agent pool."""

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:pool:GpuNodePool", name, None, opts)
        request = agent_pool_request(
            args.facts, args.driver, cluster_name=args.cluster_name, resource_group_name=args.resource_group_name,
            live_count=args.live_count, settled=args.settled, subnet_id=args.subnet_id,
            pod_subnet_id=args.pod_subnet_id, tags=args.tags)
        self.agent_pool = containerservice.AgentPool(
            f"{name}-agentpool",
            **request.inputs,
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=request.protect,
                depends_on=[waited for waited in (args.after, args.device_config, args.subnet_access) if waited]
                or None,
                ignore_changes=list(request.ignore_changes) or None,
                replace_on_changes=list(request.replace_on_changes),
                # The replacement has the same agent pool name, so the old pool must go first.
                delete_before_replace=True,
            ),
        )
        self.name = self.agent_pool.name
        self.resource_id = self.agent_pool.id
        self.register_outputs({"name": self.name, "resource_id": self.resource_id})
