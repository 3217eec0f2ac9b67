"""One GPU node pool: a separate, protected AKS `AgentPool` labelled and tainted for the GPU Operator.

What the agent pool sends and which options protect it is the plan's `AgentPoolRequest` (plain data, tested
directly); this component registers it on the cluster's outputs and orders it after the resources it waits for."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_azure_native import containerservice

from gpushare.azure.agent_pool_request import (
    EXISTING_CLUSTER_POD_SUBNET,
    EXISTING_CLUSTER_SUBNET,
    AgentPoolRequest,
)


@dataclass(frozen=True)
class GpuNodePoolArgs:
    request: AgentPoolRequest
    """Required. The pool's AgentPool inputs and options (`gpushare.plan.stack_plan.PoolPlan.request`, or
    `gpushare.azure.agent_pool_request.agent_pool_request`): its name, size, MIG profile, labels, taints, scaling and
    tags, which options protect it. The cluster and subnets below replace the names it was built with."""
    cluster_name: pulumi.Input[str]
    """Required. The AKS cluster the pool joins (the cluster's output, so the pool waits for it)."""
    resource_group_name: pulumi.Input[str]
    """Required. The cluster's resource group."""
    after: pulumi.Resource | None = None
    """Optional. The agent pool this one waits for: AKS refuses concurrent agent-pool operations on one cluster."""
    device_config: pulumi.Resource | None = None
    """Optional. The device-plugin ConfigMap. The pool's `nvidia.com/device-plugin.config` label names one of its
    keys, and a node whose label names a key the ConfigMap lacks cannot load a config, so a label change waits
    for the ConfigMap update."""
    subnet_id: pulumi.Input[str] | None = None
    """Optional. The subnet of the pool's nodes (`vnetSubnetID`, fixed when AKS creates the pool); None: the
    request's own (a VNet AKS manages when it has none)."""
    pod_subnet_id: pulumi.Input[str | None] | None = None
    """Optional. The pod subnet (`podSubnetID`) of an existing cluster with Azure CNI dynamic pod IP allocation
    (`ExistingCluster.default_pod_subnet_id`); None: pods take addresses as the cluster's plugin gives them."""
    subnet_access: pulumi.Resource | None = None
    """Optional. The role assignment that lets the cluster's identity join nodes to `subnet_id` (`SubnetAccess`):
    the pool is created after it, since AKS checks that right when it creates the pool. Default: none (a subnet
    AKS or the cluster's owners manage)."""


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
        request = args.request
        wiring = {"resource_name_": args.cluster_name, "resource_group_name": args.resource_group_name}
        if args.subnet_id is not None:
            wiring["vnet_subnet_id"] = args.subnet_id
        if args.pod_subnet_id is not None:
            wiring["pod_subnet_id"] = args.pod_subnet_id
        inputs = {**request.inputs, **wiring}
        # Checked before anything registers: Azure would refuse the placeholder only at apply.
        if unwired := [key for key in ("vnet_subnet_id", "pod_subnet_id")
                       if inputs.get(key) in (EXISTING_CLUSTER_SUBNET, EXISTING_CLUSTER_POD_SUBNET)]:
            raise ValueError(f"GpuNodePool {name}: the request names the existing cluster's subnets "
                             f"({', '.join(unwired)}); pass subnet_id=ExistingCluster.default_subnet_id and "
                             "pod_subnet_id=ExistingCluster.default_pod_subnet_id")
        super().__init__("gpushare:pool:GpuNodePool", name, None, opts)
        self.agent_pool = containerservice.AgentPool(
            f"{name}-agentpool",
            **inputs,
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
