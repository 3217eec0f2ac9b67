"""The settings AKS fixes when it creates a node pool (`CREATE_ONLY`), by the ARM property path Pulumi's diff shows,
and how the stack's compare with the deployed pool's:
- `vmSize`, `gpuInstanceProfile`: in pulumi-azure-native's force-new list, so a change is a delete-and-recreate;
- `gpuProfile.driver`: AKS fixes it at creation; Pulumi may not mark it force-new, and then AKS rejects the update;
- `availabilityZones`: AKS docs: "You can't change the number of availability zones after you create a node pool".
- `osDiskType`, `osDiskSizeGB`, `maxPods`: fixed at creation ("May not be changed after creation", the API's
  `osDiskType`; aks-docs create-node-pools.md for max pods); compared only when the stack sets them.
- `scaleSetPriority`, `scaleSetEvictionPolicy`, `spotMaxPrice`: a pool is Spot or Regular from its creation, and
  "You can't change ScaleSetPriority or SpotMaxPrice after creation" (aks-docs spot-node-pool.md; Azure/AKS#4374
  asks for it); the eviction policy and the price are compared for Spot pools only.
- `vnetSubnetID`: the subnet AKS joined the pool's nodes to (REST 2025-09-01 `AgentPool.vnetSubnetID`); AKS cannot
  move a pool to another subnet. Compared only when the stack names the pool's subnet (its `subnetId` or the
  cluster's `network.subnetId`): a pool that names none takes whatever subnet AKS gives it.
Everything else the stack sets on a pool (node count, autoscale bounds, labels, taints) AKS changes in place.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from gpushare.azure.deployed import DeployedPool
from gpushare.model.stack import SPOT_MARKET_PRICE, DriverOwner, GpuPool, StackConfig, pool_subnet


CREATE_ONLY: dict[str, str] = {
    "vmSize": "AKS cannot change the VM size of an existing node pool",
    "gpuInstanceProfile": "AKS cannot change the MIG profile (gpuInstanceProfile) of an existing node pool",
    "gpuProfile.driver": "AKS fixes the GPU driver setting (gpuProfile.driver) when it creates a node pool",
    "availabilityZones": "AKS cannot change the availability zones of an existing node pool",
    "osDiskType": "AKS fixes the OS disk type (osDiskType) when it creates a node pool",
    "osDiskSizeGB": "AKS fixes the OS disk size (osDiskSizeGB) when it creates a node pool",
    "maxPods": "AKS fixes the maximum pods per node (maxPods) when it creates a node pool",
    "scaleSetPriority": "AKS cannot turn an existing node pool into a Spot pool or back (scaleSetPriority)",
    "scaleSetEvictionPolicy": "AKS fixes a Spot pool's eviction policy (scaleSetEvictionPolicy) when it creates it",
    "spotMaxPrice": "AKS fixes a Spot pool's maximum price (spotMaxPrice) when it creates it",
    "vnetSubnetID": "AKS cannot move an existing node pool to another subnet (vnetSubnetID)",
}
"""Each create-only setting, by ARM property path, with why AKS cannot apply a change to it in place."""


# Each setting as (comparison key, text shown to people). Normalised so that equal deployments compare equal:
# VM sizes and enum-like values ignore case, an unset driver is AKS's default Install, and zones are a set (null
# and [] both mean no zones).


def _text(value: str) -> tuple[str, str]:
    return value.lower(), value


def _mig(profile: str | None) -> tuple[str, str]:
    return (profile.lower(), profile) if profile else ("", "none (whole GPUs)")


def _zones(zones: Iterable[str]) -> tuple[tuple[str, ...], str]:
    ordered = tuple(sorted(set(zones)))
    return ordered, json.dumps(list(ordered))


def _number(value: int | None) -> tuple[object, str]:
    return value, "AKS's default" if value is None else str(value)


def _price(usd: float) -> tuple[float, str]:
    return usd, "-1 (up to the on-demand price)" if usd == SPOT_MARKET_PRICE else f"{usd:g} USD per node-hour"


NONE_SUBNET = "none (a VNet AKS manages)"
"""How a pool or cluster without a subnet of its own is shown."""
NOT_REPORTED = (None, "not reported")
"""A deployed setting Azure does not report: never compared (the cluster guard too)."""


def _subnet(subnet_id: str | None) -> tuple[str, str]:
    return (subnet_id.lower(), subnet_id) if subnet_id else ("", NONE_SUBNET)


def _wanted_settings(stack: StackConfig, pool: GpuPool) -> dict[str, tuple[object, str]]:
    """What the stack wants; a setting the stack leaves to AKS is absent (nothing to compare)."""
    wanted = {
        "vmSize": _text(pool.vm_size.name),
        "gpuInstanceProfile": _mig(pool.mig.value if pool.mig else None),
        "gpuProfile.driver": _text("None" if stack.operator.driver is DriverOwner.OPERATOR else "Install"),
        "availabilityZones": _zones(pool.zones),
        "scaleSetPriority": _text("Spot" if pool.spot else "Regular"),
    }
    if pool.os_disk.type is not None:
        wanted["osDiskType"] = _text(pool.os_disk.type.value)
    if pool.os_disk.size_gb is not None:
        wanted["osDiskSizeGB"] = _number(pool.os_disk.size_gb)
    if pool.max_pods is not None:
        wanted["maxPods"] = _number(pool.max_pods)
    if pool.spot:
        wanted["scaleSetEvictionPolicy"] = _text(pool.spot.eviction.value)
        wanted["spotMaxPrice"] = _price(pool.spot.max_price)
    if pool_subnet(stack, pool):
        wanted["vnetSubnetID"] = _subnet(pool_subnet(stack, pool))
    return wanted


def _deployed_settings(live: DeployedPool) -> dict[str, tuple[object, str]]:
    return {
        "vmSize": _text(live.vm_size),
        "gpuInstanceProfile": _mig(live.gpu_instance_profile),
        "gpuProfile.driver": _text(live.gpu_driver or "Install"),
        "availabilityZones": _zones(live.availability_zones),
        "osDiskType": _text(live.os_disk_type) if live.os_disk_type else (None, "AKS's default"),
        "osDiskSizeGB": _number(live.os_disk_size_gb),
        "maxPods": _number(live.max_pods),
        "scaleSetPriority": _text(live.scale_set_priority or "Regular"),
        "scaleSetEvictionPolicy": _text(live.scale_set_eviction_policy or "Delete"),
        "spotMaxPrice": _price(live.spot_max_price) if live.spot_max_price is not None else NOT_REPORTED,
        "vnetSubnetID": _subnet(live.vnet_subnet_id),
    }


OPTIONAL_CREATE_ONLY = ("osDiskType", "osDiskSizeGB", "maxPods", "vnetSubnetID")
"""Create-only settings gpushare sends only when the stack sets them (AKS's own default otherwise)."""


def settled_settings(stack: StackConfig, pool: GpuPool, live: DeployedPool) -> tuple[str, ...]:
    """The optional create-only settings the stack sets to what the deployed pool already has. The engine compares
    a resource's new inputs with those in its state, not with Azure: a pool created without `maxPods` (AKS's
    default, 250) that the stack now sets to 250 has a new input on a `replaceOnChanges` key, so Pulumi plans a
    replace (delete first) of a pool whose setting does not change. These go in the pool's `ignoreChanges`: the
    stored value stands, and Azure already has the one the stack wants (a different one is the guard's refusal)."""
    wanted, deployed = _wanted_settings(stack, pool), _deployed_settings(live)
    return tuple(field for field in OPTIONAL_CREATE_ONLY
                 if field in wanted and deployed.get(field, (None,))[0] is not None
                 and deployed[field][0] == wanted[field][0])


def create_only_changes(stack: StackConfig, pool: GpuPool, live: DeployedPool) -> list[tuple[str, str, str]]:
    """(field, deployed, wanted) for every create-only setting that differs, in `CREATE_ONLY` order. A setting
    the stack leaves unset (an OS disk, max pods, a pool's subnet), or Azure does not report, is not compared."""
    wanted, deployed = _wanted_settings(stack, pool), _deployed_settings(live)
    return [
        (field, deployed[field][1], wanted[field][1])
        for field in CREATE_ONLY
        if field in wanted and deployed[field][0] is not None and deployed[field][0] != wanted[field][0]
    ]
