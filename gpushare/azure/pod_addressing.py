"""How many addresses of which subnet a node of a pool takes, by the cluster's network plugin.

AKS's IP address planning (aks-docs concepts-network-ip-address-planning.md, "Subnet sizing" and "IP address
sizing"):
- overlay networks (Azure CNI Overlay): "your subnet needs to be large enough to assign IPs to your nodes. Pods are
  assigned IPs from a separate, private CIDR range and won't require VNet IPs": one address per node;
- kubenet: pods take addresses from the cluster's pod CIDR behind the node (NAT), so one address per node too;
- flat networks, classic Azure CNI (no mode, no pod subnet): every pod takes a VNet address of the node's subnet,
  "(number of nodes + max surge nodes) + ((number of nodes + max surge nodes) * maximum pods per node)": 1 + maxPods
  per node;
- Azure CNI with dynamic pod IP allocation (the pool's `podSubnetID`): "a subnet for your nodes and a separate subnet
  for your pods": one address per node in the node subnet, `maxPods` per node in the pod subnet; in `StaticBlock`
  mode a node takes /28 blocks, "Number of CIDR blocks >= (maxPods / 16)" (AKS API `PodIPAllocationMode`).
A pool's `maxPods` defaults to AKS's for the plugin (same doc, "Maximum pods per node"): 250 with Overlay, 110 with
a pod subnet, 30 with classic Azure CNI, 110 with kubenet.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from gpushare.azure.deployed_cluster import DeployedCluster


class Plugin(str, Enum):
    OVERLAY = "Azure CNI Overlay"
    NODE_SUBNET = "Azure CNI (node subnet)"
    POD_SUBNET = "Azure CNI with dynamic pod IP allocation"
    KUBENET = "kubenet"
    OTHER = "a network plugin gpushare does not know"


DEFAULT_MAX_PODS = {Plugin.OVERLAY: 250, Plugin.POD_SUBNET: 110, Plugin.NODE_SUBNET: 30, Plugin.KUBENET: 110,
                    Plugin.OTHER: 110}
STATIC_BLOCK_SIZE = 16
"""Pod addresses per /28 block in `StaticBlock` mode."""


@dataclass(frozen=True)
class Addressing:
    plugin: Plugin
    pod_subnet_id: str | None = None
    """The pod subnet of a cluster with dynamic pod IP allocation (the system pool's `podSubnetID`), where the GPU
    pools' pods go too."""
    static_block: bool = False
    read: str = ""
    """What the cluster reports (`networkPlugin azure, networkPluginMode overlay`), or why nothing was read."""

    def max_pods(self, pool_max_pods: int | None) -> int:
        return pool_max_pods or DEFAULT_MAX_PODS[self.plugin]

    def node_subnet_addresses(self, pool_max_pods: int | None) -> int:
        """Addresses one node takes in its node subnet."""
        return 1 + self.max_pods(pool_max_pods) if self.plugin is Plugin.NODE_SUBNET else 1

    def pod_subnet_addresses(self, pool_max_pods: int | None) -> int:
        """Addresses one node's pods take in the pod subnet (0 without one)."""
        if self.plugin is not Plugin.POD_SUBNET:
            return 0
        pods = self.max_pods(pool_max_pods)
        return math.ceil(pods / STATIC_BLOCK_SIZE) * STATIC_BLOCK_SIZE if self.static_block else pods

    @property
    def flat(self) -> bool:
        """Pods take VNet addresses: an upgrade's surge node needs its pods' addresses too."""
        return self.plugin in (Plugin.NODE_SUBNET, Plugin.POD_SUBNET)


GPUSHARE_CLUSTER = Addressing(Plugin.OVERLAY, read="a cluster gpushare creates (Azure CNI Overlay)")


def cluster_addressing(cluster: DeployedCluster | None) -> Addressing:
    """An existing cluster's addressing, from its `networkProfile` and system pool as read (None: not read, counted
    as Overlay, and said so)."""
    if cluster is None:
        return Addressing(Plugin.OVERLAY, read="the cluster was not read: counted as Azure CNI Overlay")
    plugin, mode = (cluster.network_plugin or "").lower(), (cluster.network_plugin_mode or "").lower()
    read = f"networkPlugin {cluster.network_plugin or '(none)'}" + (
        f", networkPluginMode {cluster.network_plugin_mode}" if cluster.network_plugin_mode else "")
    if plugin == "azure" and mode == "overlay":
        return Addressing(Plugin.OVERLAY, read=read)
    if plugin == "azure" and cluster.system_pod_subnet_id:
        static = (cluster.system_pod_ip_allocation_mode or "").lower() == "staticblock"
        return Addressing(Plugin.POD_SUBNET, cluster.system_pod_subnet_id, static,
                          f"{read}, podSubnetID {cluster.system_pod_subnet_id.rsplit('/', 1)[-1]}"
                          + (", podIPAllocationMode StaticBlock" if static else ""))
    if plugin == "azure":
        return Addressing(Plugin.NODE_SUBNET, read=read)
    if plugin == "kubenet":
        return Addressing(Plugin.KUBENET, read=read)
    return Addressing(Plugin.OTHER, read=read)
