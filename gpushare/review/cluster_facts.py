"""What a plan knows of an existing cluster (`existing: true`): the cluster's own settings are its owners', so the
plan shows only what it read (`plan --deployed FILE`: the pools `az aks nodepool list` saved) and marks the rest
unknown, never gpushare's defaults for a cluster it would create.

- Its system pools, their Kubernetes version and subnet: from the deployed pools in mode System, else unknown.
- Its tier, upgrade channels and window, API server access: not in a node-pool list, so unknown offline (`preflight`
  reads them live).
- A GPU pool without `subnetId` joins the subnet of the cluster's system pool (`gpushare.components.deployment`
  names it explicitly): the plan shows the subnet read, or `SYSTEM_POOL_SUBNET` when it is not known.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpushare.azure.deployed import DeployedPool
from gpushare.model.stack import GpuPool, StackConfig, pool_subnet
from gpushare.stackfile.network_config import vnet_id, vnet_name, vnet_of

SYSTEM_POOL_SUBNET = "the system pool's subnet"
"""What the plan shows for a subnet it has not read: the ARM ID is the cluster's, known only to a read."""


def _system(deployed: Sequence[DeployedPool]) -> list[DeployedPool]:
    return [pool for pool in deployed if pool.mode == "System"]


def system_subnet(deployed: Sequence[DeployedPool] | None) -> str | None:
    """The subnet of the cluster's first System pool as read (`vnetSubnetID`), the one the program sends a pool
    without `subnetId` to (`ExistingCluster.default_subnet_id`); None when not read, or in a VNet AKS manages."""
    return next((pool.vnet_subnet_id for pool in _system(deployed or ()) if pool.vnet_subnet_id), None)


def shown_subnet(stack: StackConfig, pool: GpuPool,
                 deployed: Sequence[DeployedPool] | None) -> tuple[str | None, str | None]:
    """(the subnet `plan --json` shows for the pool, where it comes from: `stack`, `deployed` or `unknown`); (None,
    None) for a pool of a cluster gpushare creates in a VNet AKS manages."""
    named = pool_subnet(stack, pool)
    if named:
        return named, "stack"
    if not stack.cluster.existing:
        return None, None
    if deployed is None:
        return SYSTEM_POOL_SUBNET, "unknown"
    return system_subnet(deployed) or SYSTEM_POOL_SUBNET, "deployed"


def agent_pool_profiles(deployed: Sequence[DeployedPool] | None) -> list[dict[str, Any]]:
    """`agentPoolProfiles` as the cluster read (`getManagedCluster`) answers it in an offline plan: the deployed
    pools, or one System pool whose subnet is `SYSTEM_POOL_SUBNET` when they were not read, so no invented ID
    reaches the plan's resources."""
    if deployed is None:
        return [{"name": "system", "mode": "System", "vnetSubnetID": SYSTEM_POOL_SUBNET}]
    return [{"name": pool.name, "mode": pool.mode, "vmSize": pool.vm_size, "count": pool.count,
             **({"vnetSubnetID": pool.vnet_subnet_id} if pool.vnet_subnet_id else {})} for pool in deployed]


def existing_cluster_facts(stack: StackConfig, deployed: Sequence[DeployedPool] | None) -> dict[str, Any]:
    """The `cluster` keys of `plan --json` for an existing cluster: what was read, null where not, and `sources`
    saying which (`deployed` or `unknown`); the same keys as for a cluster gpushare creates."""
    read = "unknown" if deployed is None else "deployed"
    system = _system(deployed or ())
    sizes = list(dict.fromkeys(pool.vm_size for pool in system))
    counts = [pool.count for pool in system]
    versions = list(dict.fromkeys(pool.orchestrator_version for pool in system if pool.orchestrator_version))
    return {
        "kubernetesVersion": versions[0] if len(versions) == 1 else None,
        "systemPool": {"vmSize": ", ".join(sizes) or None,
                       "count": sum(c for c in counts if c is not None) if counts and None not in counts else None},
        "systemPools": None if deployed is None else [
            {"name": p.name, "vmSize": p.vm_size, "count": p.count, "subnetId": p.vnet_subnet_id} for p in system],
        "tier": None,
        "upgrades": {"channel": None, "nodeOs": None, "window": {"day": None, "start": None, "hours": None}},
        "apiServer": {"authorizedIpRanges": None},
        "sources": {"systemPool": read, "kubernetesVersion": read if versions else "unknown", "tier": "unknown",
                    "upgrades": "unknown", "apiServer": "unknown"},
    }


def created_cluster_sources() -> dict[str, str]:
    """`cluster.sources` for a cluster gpushare creates: every setting is the stack's."""
    return {key: "stack" for key in ("systemPool", "kubernetesVersion", "tier", "upgrades", "apiServer")}


def vnet_warnings(stack: StackConfig, deployed: Sequence[DeployedPool] | None) -> list[str]:
    """A pool whose `subnetId` is in another VNet than the existing cluster's system pool as deployed: AKS refuses
    it (aks-docs node-pool-unique-subnet.md: "All subnets assigned to node pools must belong to the same virtual
    network"). Offline only the deployed file tells the cluster's VNet; `preflight` reads it live."""
    cluster_subnet = system_subnet(deployed) if stack.cluster.existing else None
    if cluster_subnet is None:
        return []
    return [f"pool {pool.name}'s subnet is in VNet {vnet_name(pool.subnet_id)}, but the cluster's system pool (as "
            f"deployed) is in {vnet_name(cluster_subnet)}: AKS puts every node pool of a cluster in one VNet and "
            f"refuses the pool; use a subnet of {vnet_id(cluster_subnet)}"
            for pool in stack.pools if pool.subnet_id and vnet_of(pool.subnet_id) != vnet_of(cluster_subnet)]
