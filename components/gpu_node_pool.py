"""One GPU node pool: a separate, protected AKS `AgentPool` labelled and tainted for the GPU Operator."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
from pulumi_azure_native import containerservice

from gpushare.model.stack import DriverOwner
from gpushare.sharing.node_count import count_to_send
from gpushare.sharing.pool_facts import PoolFacts

CREATE_ONLY_REPLACED_BY_GPUSHARE = (
    "gpuProfile", "availabilityZones", "osDiskType", "osDiskSizeGB", "maxPods", "scaleSetPriority",
    "scaleSetEvictionPolicy",
)
"""Create-only agent pool inputs (wire names) missing from azure-native's own replace list (the OS disk, max pods
and Spot: "May not be changed after creation", azure-native's `osDiskType` doc; aks-docs create-node-pools.md for
max pods; aks-docs spot-node-pool.md: "You can't change ScaleSetPriority or SpotMaxPrice after creation"). Not
`osSKU`: AKS migrates a pool between Ubuntu and AzureLinux in place by reimaging its nodes (`az aks nodepool update
--os-sku`), so an OS change is an update (the guard notes it), never a delete-and-recreate."""
SPOT_PRICE_REPLACED_BY_GPUSHARE = "spotMaxPrice"
"""Create-only too (the same aks-docs line); added for a Spot pool only, the one pool that sends it, so other pools
plan exactly as before (a pool turning Spot is replaced for its scaleSetPriority)."""
SUBNET_REPLACED_BY_GPUSHARE = "vnetSubnetID"
"""Also create-only (AKS cannot move a pool to another subnet) and not in azure-native's replace list; added for a pool
that names its subnet, so the pools of a stack without `subnetId` plan exactly as before."""
POD_SUBNET_REPLACED_BY_GPUSHARE = "podSubnetID"
"""Create-only as well (a pool's pod subnet is fixed with its node subnet); added only for a pool that sends one."""


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
        pool = args.facts.pool
        scaling: dict = (
            {"enable_auto_scaling": True, "min_count": pool.autoscale.min, "max_count": pool.autoscale.max}
            if pool.autoscale else {}
        )
        # An autoscaled pool's count: AKS wants one inside [min, max] on every PUT, and expects the current one
        # (Azure/AKS#1627). `ignore_changes=["count"]` would make the engine send the count stored in state (the
        # creation-time `min`) on every later update, which AKS refuses once it is outside the new bounds (min
        # raised above it, max lowered below it, a fixed pool turned autoscaled) and which otherwise asks AKS to
        # scale the pool back to it. So when the live count is known it is sent, clamped, and not ignored: a
        # preview shows `count` changing when the autoscaler moved since the last run, and the update re-sends what
        # is running (if the autoscaler moves between the read and the PUT, it corrects the difference itself).
        # Only when it is unknown (a new pool, or Azure unreadable under `gpushare:guard: warn`) is `count` ignored:
        # creation still sends `min`, and an existing pool keeps its stored value rather than being scaled to `min`.
        count_unknown = pool.autoscale is not None and args.live_count is None
        # Only what the stack sets is sent: an unset OS disk, max pods or priority stays AKS's default, so
        # existing pools see no input change (these are replace-on-change, below).
        spot: dict = (
            {"scale_set_priority": containerservice.ScaleSetPriority.SPOT,
             "scale_set_eviction_policy": pool.spot.eviction.value, "spot_max_price": pool.spot.max_price}
            if pool.spot else {}
        )
        disk: dict = {key: value for key, value in (
            ("os_disk_size_gb", pool.os_disk.size_gb),
            ("os_disk_type", pool.os_disk.type.value if pool.os_disk.type else None),
            ("max_pods", pool.max_pods),
        ) if value is not None}
        self.agent_pool = containerservice.AgentPool(
            f"{name}-agentpool",
            agent_pool_name=pool.name,
            resource_name_=args.cluster_name,
            resource_group_name=args.resource_group_name,
            mode=containerservice.AgentPoolMode.USER,
            type=containerservice.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS,
            os_type=containerservice.OSType.LINUX,
            os_sku=pool.os_sku.value,
            vm_size=pool.vm_size.name,
            gpu_instance_profile=pool.mig.value if pool.mig else None,
            gpu_profile=(
                containerservice.GPUProfileArgs(driver=containerservice.GPUDriver.NONE)
                if args.driver is DriverOwner.OPERATOR else None
            ),
            availability_zones=list(pool.zones) or None,
            # AgentPool.vnetSubnetID (REST 2025-09-01); AKS fixes it at creation (SUBNET_REPLACED_BY_GPUSHARE).
            vnet_subnet_id=args.subnet_id,
            pod_subnet_id=args.pod_subnet_id,
            node_labels=dict(args.facts.node_labels),
            # AKS updates nodeTaints in place (aks-docs use-node-taints.md), so a pool becoming dedicated is no replace.
            node_taints=list(args.facts.node_taints),
            # AKS updates an agent pool's tags in place; the cluster autoscaler reads them from the scale set.
            tags=dict(args.tags) if args.tags else None,
            count=count_to_send(pool, args.live_count),
            # AKS's default surges an extra node per pool on every node-image or Kubernetes upgrade: a GPU VM the
            # quota may not have. gpushare's default replaces one node at a time in place (gpushare/upgrades.py).
            # A Spot pool gets none: AKS refuses both settings there (SPOT_UPGRADE).
            upgrade_settings=containerservice.AgentPoolUpgradeSettingsArgs(
                max_surge=upgrade.max_surge, max_unavailable=upgrade.max_unavailable,
            ) if (upgrade := pool.upgrade_settings) else None,
            **scaling,
            **spot,
            **disk,
            opts=pulumi.ResourceOptions(
                parent=self,
                # A replaced pool is deleted before it is recreated, with every pod on it; `recreate: true` is the
                # user's explicit consent to that for one run (the guard reports it).
                protect=not pool.recreate,
                depends_on=[waited for waited in (args.after, args.device_config, args.subnet_access) if waited]
                or None,
                ignore_changes=[*(["count"] if count_unknown else []), *args.settled] or None,
                # AKS fixes these at creation too, but azure-native only force-replaces vmSize and
                # gpuInstanceProfile: without this a change reaches AKS as an update it rejects at apply time.
                # With it, protection stops the replace in preview, and `recreate: true` really recreates.
                replace_on_changes=[*CREATE_ONLY_REPLACED_BY_GPUSHARE,
                                    *([SPOT_PRICE_REPLACED_BY_GPUSHARE] if pool.spot else []),
                                    *([SUBNET_REPLACED_BY_GPUSHARE] if args.subnet_id is not None else []),
                                    *([POD_SUBNET_REPLACED_BY_GPUSHARE] if args.pod_subnet_id is not None else [])],
                # The replacement has the same agent pool name, so the old pool must go first.
                delete_before_replace=True,
            ),
        )
        self.name = self.agent_pool.name
        self.resource_id = self.agent_pool.id
        self.register_outputs({"name": self.name, "resource_id": self.resource_id})
