"""What gpushare asks AKS for one GPU pool: the `containerservice.AgentPool` inputs and the options that protect the
pool, as plain data (no Pulumi), so they are tested directly; `gpushare.components.gpu_node_pool.GpuNodePool`
passes them to azure-native unchanged.

The inputs use azure-native v3's keyword names (`vm_size`, `node_taints`); enums are their wire strings (`"User"`,
`"Spot"`: azure-native's `str` enums serialize to the same), nested settings are the `...ArgsDict` mappings
azure-native v3 accepts in place of its `...Args` classes. The cluster's name, resource group and subnets are
passed through as given: strings, or the cluster's Pulumi outputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
class AgentPoolRequest:
    """One GPU pool's agent pool, as azure-native's `containerservice.AgentPool` takes it."""

    inputs: dict[str, Any]
    """The AgentPool's keyword arguments."""
    protect: bool
    """False only for a pool whose `recreate: true` accepts its replacement for this run."""
    ignore_changes: tuple[str, ...]
    """Inputs (wire names) the engine keeps as stored: `count` when the live count is unknown, and the settled
    create-only inputs."""
    replace_on_changes: tuple[str, ...]
    """Inputs (wire names) AKS fixes at creation that azure-native would otherwise send as an update."""


def agent_pool_request(facts: PoolFacts, driver: DriverOwner, *, cluster_name: Any, resource_group_name: Any,
                       live_count: int | None = None, settled: tuple[str, ...] = (), subnet_id: Any = None,
                       pod_subnet_id: Any = None, tags: Mapping[str, str] | None = None) -> AgentPoolRequest:
    """The request for `facts.pool` (arguments as in `GpuNodePoolArgs`, which documents each)."""
    pool = facts.pool
    scaling: dict[str, Any] = (
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
    count_unknown = pool.autoscale is not None and live_count is None
    # Only what the stack sets is sent: an unset OS disk, max pods or priority stays AKS's default, so
    # existing pools see no input change (these are replace-on-change, below).
    spot: dict[str, Any] = (
        {"scale_set_priority": "Spot", "scale_set_eviction_policy": pool.spot.eviction.value,
         "spot_max_price": pool.spot.max_price}
        if pool.spot else {}
    )
    disk: dict[str, Any] = {key: value for key, value in (
        ("os_disk_size_gb", pool.os_disk.size_gb),
        ("os_disk_type", pool.os_disk.type.value if pool.os_disk.type else None),
        ("max_pods", pool.max_pods),
    ) if value is not None}
    upgrade = pool.upgrade_settings
    inputs: dict[str, Any] = {
        "agent_pool_name": pool.name,
        "resource_name_": cluster_name,
        "resource_group_name": resource_group_name,
        "mode": "User",
        "type": "VirtualMachineScaleSets",
        "os_type": "Linux",
        "os_sku": pool.os_sku.value,
        "vm_size": pool.vm_size.name,
        "gpu_instance_profile": pool.mig.value if pool.mig else None,
        # The GPU Operator installs the driver, so AKS installs none (azure-native `GPUDriver.NONE`).
        "gpu_profile": {"driver": "None"} if driver is DriverOwner.OPERATOR else None,
        "availability_zones": list(pool.zones) or None,
        # AgentPool.vnetSubnetID (REST 2025-09-01); AKS fixes it at creation (SUBNET_REPLACED_BY_GPUSHARE).
        "vnet_subnet_id": subnet_id,
        "pod_subnet_id": pod_subnet_id,
        "node_labels": dict(facts.node_labels),
        # AKS updates nodeTaints in place (aks-docs use-node-taints.md), so a pool becoming dedicated is no replace.
        "node_taints": list(facts.node_taints),
        # AKS updates an agent pool's tags in place; the cluster autoscaler reads them from the scale set.
        "tags": dict(tags) if tags else None,
        "count": count_to_send(pool, live_count),
        # AKS's default surges an extra node per pool on every node-image or Kubernetes upgrade: a GPU VM the
        # quota may not have. gpushare's default replaces one node at a time in place (gpushare/sharing/upgrades.py).
        # A Spot pool gets none: AKS refuses both settings there (SPOT_UPGRADE).
        "upgrade_settings": {"max_surge": upgrade.max_surge, "max_unavailable": upgrade.max_unavailable}
        if upgrade else None,
        **scaling,
        **spot,
        **disk,
    }
    return AgentPoolRequest(
        inputs=inputs,
        # A replaced pool is deleted before it is recreated, with every pod on it; `recreate: true` is the
        # user's explicit consent to that for one run (the guard reports it).
        protect=not pool.recreate,
        ignore_changes=(*(["count"] if count_unknown else []), *settled),
        # AKS fixes these at creation too, but azure-native only force-replaces vmSize and gpuInstanceProfile:
        # without this a change reaches AKS as an update it rejects at apply time. With it, protection stops the
        # replace in preview, and `recreate: true` really recreates.
        replace_on_changes=(*CREATE_ONLY_REPLACED_BY_GPUSHARE,
                            *([SPOT_PRICE_REPLACED_BY_GPUSHARE] if pool.spot else []),
                            *([SUBNET_REPLACED_BY_GPUSHARE] if subnet_id is not None else []),
                            *([POD_SUBNET_REPLACED_BY_GPUSHARE] if pod_subnet_id is not None else [])),
    )
