"""What gpushare asks AKS for one GPU pool: the `containerservice.AgentPool` inputs and the options that protect the
pool, as plain data (no Pulumi), so they are tested directly; `gpushare.components.gpu_node_pool.GpuNodePool`
passes them to azure-native unchanged.

The inputs use azure-native v3's keyword names (`vm_size`, `node_taints`); enums are their wire strings (`"User"`,
`"Spot"`: azure-native's `str` enums serialize to the same), nested settings are the `...ArgsDict` mappings
azure-native v3 accepts in place of its `...Args` classes. The cluster's name, resource group and subnets are
passed through as given: strings, or the cluster's Pulumi outputs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpushare.azure.deployed import DeployedPool
from gpushare.model.stack import SPOT_MARKET_PRICE, SYSTEM_POOL_NAME, Cluster, DriverOwner
from gpushare.sharing.node_count import count_to_send
from gpushare.sharing.pool_facts import PoolFacts

Shown = tuple[object, str]
"""A setting as (comparison key, text shown to people); normalised so that equal deployments compare equal: VM
sizes and enum-like values ignore case, zones are a set. A key of None: the deployed pools do not report it."""

NONE_SUBNET = "none (a VNet AKS manages)"
"""How a pool or cluster without a subnet of its own is shown."""
NOT_REPORTED: Shown = (None, "not reported")
"""A deployed setting Azure (or the saved file) does not report."""


def shown_text(value: str) -> Shown:
    return value.lower(), value


def _mig(profile: str | None) -> Shown:
    return (profile.lower(), profile) if profile else ("", "none (whole GPUs)")


def _zones(zones: Iterable[str] | None) -> Shown:
    ordered = tuple(sorted(set(zones or ())))
    return ordered, json.dumps(list(ordered))


def _number(value: int | None) -> Shown:
    return NOT_REPORTED if value is None else (value, str(value))


def _price(usd: float | None) -> Shown:
    if usd is None:
        return NOT_REPORTED
    return float(usd), "-1 (up to the on-demand price)" if usd == SPOT_MARKET_PRICE else f"{usd:g} USD per node-hour"


def _subnet(subnet_id: str | None) -> Shown:
    return (subnet_id.lower(), subnet_id) if subnet_id else ("", NONE_SUBNET)


def _reported_text(value: str | None) -> Shown:
    return shown_text(value) if value else NOT_REPORTED


def _spot_only(read: Callable[[DeployedPool], Shown]) -> Callable[[DeployedPool], Shown | None]:
    """A Spot pool's setting; None (not compared) on a Regular pool, whose `scaleSetPriority` carries the change."""
    return lambda live: read(live) if (live.scale_set_priority or "").lower() == "spot" else None


@dataclass(frozen=True)
class CreateOnlyInput:
    """One agent pool input AKS fixes when it creates the pool: a change to it replaces the pool (delete first)."""

    key: str
    """The input's wire name, as `replaceOnChanges`, `ignoreChanges` and Pulumi's diff name it."""
    keyword: str
    """Its keyword in `AgentPoolRequest.inputs` (azure-native v3)."""
    field: str
    """What the guard compares and shows (`gpuProfile.driver` for the `gpuProfile` object)."""
    why: str
    """Why AKS cannot apply a change in place (the guard's message)."""
    sent: Callable[[Any], Shown]
    """The value the request sends (under `keyword`), normalised for comparison and shown."""
    deployed: Callable[[DeployedPool], Shown | None]
    """The same setting as the deployed pool reports it, normalised alike; None: not compared."""
    replaced_by_provider: bool = False
    """azure-native replaces on it itself (its own force-new list); gpushare adds every other to `replaceOnChanges`."""
    when_sent: bool = False
    """Listed in `replaceOnChanges` only when the request sends it, so pools without it plan exactly as before."""
    left_to_aks: bool = False
    """Sent only when the stack sets it (AKS's default otherwise); unset, it is in `ignoreChanges` (but under
    `recreate: true`)."""
    absent_compared: bool = False
    """Its absence from the request is itself a setting (no MIG, AKS's driver, no zones, Regular): the guard compares
    it when not sent too. Every other is compared only when sent (`gpushare.azure.guard.create_only`)."""
    settled: bool = False
    """A stack may start sending it for a pool that already has that value (a disk or max pods written down, a subnet
    named, an older gpushare that sent no subnet): equal to the deployed value, it is ignored (`settled`)."""
    system_pool_why: str | None = None
    """Why, as the cluster guard says it for the system pool (naming the stack key); None: `why`."""


CREATE_ONLY_INPUTS: tuple[CreateOnlyInput, ...] = (
    CreateOnlyInput("vmSize", "vm_size", "vmSize", "AKS cannot change the VM size of an existing node pool",
                    shown_text, lambda live: shown_text(live.vm_size), replaced_by_provider=True,
                    system_pool_why="AKS fixes the system pool's VM size (gpushare:cluster.systemPool.vmSize) when "
                    "it creates the pool; keep the deployed size in the stack"),
    CreateOnlyInput("gpuInstanceProfile", "gpu_instance_profile", "gpuInstanceProfile",
                    "AKS cannot change the MIG profile (gpuInstanceProfile) of an existing node pool",
                    _mig, lambda live: _mig(live.gpu_instance_profile), replaced_by_provider=True,
                    absent_compared=True),
    # AKS fixes it at creation; azure-native does not mark it force-new, so AKS would reject the update.
    # No gpuProfile: AKS's default, Install.
    CreateOnlyInput("gpuProfile", "gpu_profile", "gpuProfile.driver",
                    "AKS fixes the GPU driver setting (gpuProfile.driver) when it creates a node pool",
                    lambda profile: shown_text(profile["driver"] if profile else "Install"),
                    lambda live: shown_text(live.gpu_driver or "Install"), absent_compared=True),
    # aks-docs availability-zones: "You can't change the number of availability zones after you create a node pool".
    CreateOnlyInput("availabilityZones", "availability_zones", "availabilityZones",
                    "AKS cannot change the availability zones of an existing node pool",
                    _zones, lambda live: _zones(live.availability_zones), absent_compared=True),
    # "May not be changed after creation" (azure-native's `osDiskType` doc); aks-docs create-node-pools.md for max pods.
    CreateOnlyInput("osDiskType", "os_disk_type", "osDiskType",
                    "AKS fixes the OS disk type (osDiskType) when it creates a node pool",
                    shown_text, lambda live: _reported_text(live.os_disk_type), left_to_aks=True, settled=True),
    CreateOnlyInput("osDiskSizeGB", "os_disk_size_gb", "osDiskSizeGB",
                    "AKS fixes the OS disk size (osDiskSizeGB) when it creates a node pool",
                    _number, lambda live: _number(live.os_disk_size_gb), left_to_aks=True, settled=True),
    CreateOnlyInput("maxPods", "max_pods", "maxPods",
                    "AKS fixes the maximum pods per node (maxPods) when it creates a node pool",
                    _number, lambda live: _number(live.max_pods), left_to_aks=True, settled=True),
    # aks-docs spot-node-pool.md: "You can't change ScaleSetPriority or SpotMaxPrice after creation" (Azure/AKS#4374).
    # No priority: AKS's default, Regular.
    CreateOnlyInput("scaleSetPriority", "scale_set_priority", "scaleSetPriority",
                    "AKS cannot turn an existing node pool into a Spot pool or back (scaleSetPriority)",
                    lambda priority: shown_text(priority or "Regular"),
                    lambda live: shown_text(live.scale_set_priority or "Regular"), absent_compared=True),
    CreateOnlyInput("scaleSetEvictionPolicy", "scale_set_eviction_policy", "scaleSetEvictionPolicy",
                    "AKS fixes a Spot pool's eviction policy (scaleSetEvictionPolicy) when it creates it",
                    shown_text, _spot_only(lambda live: _reported_text(live.scale_set_eviction_policy))),
    CreateOnlyInput("spotMaxPrice", "spot_max_price", "spotMaxPrice",
                    "AKS fixes a Spot pool's maximum price (spotMaxPrice) when it creates it",
                    _price, _spot_only(lambda live: _price(live.spot_max_price)), when_sent=True),
    # AgentPool.vnetSubnetID (REST 2025-09-01): AKS cannot move a pool to another subnet.
    CreateOnlyInput("vnetSubnetID", "vnet_subnet_id", "vnetSubnetID",
                    "AKS cannot move an existing node pool to another subnet (vnetSubnetID)",
                    _subnet, lambda live: _subnet(live.vnet_subnet_id), when_sent=True, settled=True,
                    system_pool_why="AKS cannot move the system pool to another subnet "
                    "(gpushare:cluster.network.subnetId); keep the deployed subnet in the stack"),
    # A pool's pod subnet is fixed with its node subnet (AKS API `podSubnetID`).
    CreateOnlyInput("podSubnetID", "pod_subnet_id", "podSubnetID",
                    "AKS cannot move an existing node pool's pods to another pod subnet (podSubnetID)",
                    _subnet, lambda live: _subnet(live.pod_subnet_id), when_sent=True, settled=True),
)
"""Every agent pool input AKS fixes at creation, with how to compare it: the one table `replaceOnChanges`,
`ignoreChanges`, the pool guard (`gpushare.azure.guard.create_only`) and the cluster guard, for the system pool
(`gpushare.azure.guard.cluster`), read. Not `osSKU`: AKS migrates a pool between Ubuntu and AzureLinux in place by
reimaging its nodes (`az aks nodepool update --os-sku`), so an OS change is an update (the guard notes it)."""

CREATE_ONLY_REPLACED_BY_GPUSHARE = tuple(
    entry.key for entry in CREATE_ONLY_INPUTS if not entry.replaced_by_provider and not entry.when_sent)
"""The create-only inputs every pool lists in `replaceOnChanges` (those azure-native's own replace list lacks);
`spotMaxPrice`, `vnetSubnetID` and `podSubnetID` are added for a pool that sends them."""


def _replace_on_changes(inputs: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(entry.key for entry in CREATE_ONLY_INPUTS if not entry.replaced_by_provider
                 and (not entry.when_sent or inputs.get(entry.keyword) is not None))


def _left_to_aks(inputs: Mapping[str, Any]) -> tuple[str, ...]:
    """The create-only inputs the stack leaves to AKS, ignored: the engine compares a resource's new inputs with
    those in its state, so a setting an earlier run sent (`osDisk: {type: Ephemeral}`) and the stack now leaves out
    would be a changed replaceOnChanges input, a replace (delete first) of a pool AKS would leave as it is. Ignored,
    the stored value stands (pulumi/pulumi `pkg/resource/deploy/step_generator.go` `processIgnoreChanges`: a
    property the new inputs lack takes the old one; on creation there is none, and AKS picks its default)."""
    return tuple(entry.key for entry in CREATE_ONLY_INPUTS if entry.left_to_aks and inputs.get(entry.keyword) is None)


def system_pool_inputs(cluster: Cluster) -> dict[str, Any]:
    """The system pool as the managed cluster's `agentPoolProfiles` entry declares it (azure-native v3 keywords, wire
    strings for its enums): what `gpushare.components.aks_cluster.AksCluster` sends, and what the cluster guard
    compares with the deployed system pool, row by row of `CREATE_ONLY_INPUTS` (a keyword declared here, its value
    None included, is compared: no subnet is a VNet AKS manages)."""
    return {
        "name": SYSTEM_POOL_NAME,
        "mode": "System",
        "vm_size": cluster.system_pool.vm_size,
        "count": cluster.system_pool.count,
        "os_type": "Linux",
        "type": "VirtualMachineScaleSets",
        # AgentPool.vnetSubnetID (REST 2025-09-01): fixed when the pool is created.
        "vnet_subnet_id": cluster.network.subnet_id,
    }


EXISTING_CLUSTER_SUBNET = "<the existing cluster's system pool subnet>"
EXISTING_CLUSTER_POD_SUBNET = "<the existing cluster's system pool pod subnet>"
"""What a plan's request names where a pool without its own subnet joins an existing cluster: the cluster's subnets,
which only its read tells (`ExistingCluster.default_subnet_id`, `default_pod_subnet_id`). Named, the request's
create-only lists are the ones the program sends; `GpuNodePool` refuses to send them unreplaced."""


@dataclass(frozen=True)
class AgentPoolRequest:
    """One GPU pool's agent pool, as azure-native's `containerservice.AgentPool` takes it."""

    inputs: dict[str, Any]
    """The AgentPool's keyword arguments."""
    protect: bool
    """False only for a pool whose `recreate: true` accepts its replacement for this run."""
    ignore_changes: tuple[str, ...]
    """Inputs (wire names) the engine keeps as stored: `count` when the live count is unknown, the settled
    create-only inputs, and those the stack leaves to AKS (`CreateOnlyInput.left_to_aks`)."""
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
    # Only what the stack sets is sent: an unset OS disk, max pods or priority stays AKS's default (the disk and
    # max pods unset are ignored, below, so leaving them out later replaces nothing).
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
        # AgentPool.vnetSubnetID (REST 2025-09-01); AKS fixes it at creation (CREATE_ONLY_INPUTS).
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
        # Under `recreate: true` the pool is to be created again as the stack says: AKS's defaults for what it leaves.
        ignore_changes=(*(["count"] if count_unknown else []), *settled,
                        *(_left_to_aks(inputs) if not pool.recreate else ())),
        # AKS fixes these at creation too, but azure-native only force-replaces vmSize and gpuInstanceProfile:
        # without this a change reaches AKS as an update it rejects at apply time. With it, protection stops the
        # replace in preview, and `recreate: true` really recreates.
        replace_on_changes=_replace_on_changes(inputs),
    )
