"""`subnet` (a subnet of your own, `network.subnetId` or a pool's `subnetId`; one read per subnet,
`gpushare.azure.subnets`): it exists, and has a free address for every address the stack's pools in it can take,
by the cluster's network plugin (`gpushare.azure.pod_addressing`), its pod subnet included."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from gpushare.azure.deployed import DeployedPool
from gpushare.azure.deployed_cluster import DeployedCluster
from gpushare.azure.pod_addressing import GPUSHARE_CLUSTER, Addressing, Plugin, cluster_addressing
from gpushare.azure.preflight.nodes import Node, growth
from gpushare.azure.preflight.preflight_report import Check, Verdict
from gpushare.azure.subnets import AZURE_RESERVED_PER_SUBNET, Subnet
from gpushare.model.stack import StackConfig, own_subnets, pool_subnet


def subnet_checks(pools: list[Node], subnets: Mapping[str, Subnet | None],
                  live: Mapping[str, DeployedPool] | None, ranges: Mapping[str, str] | None = None,
                  addressing: Addressing = GPUSHARE_CLUSTER) -> list[Check]:
    """Per subnet: it exists, does not overlap the cluster's own `ranges` (service and pod CIDRs, which AKS refuses
    to overlap a node subnet: known only now that the subnet's range is read), and its free addresses cover what
    the nodes its pools can add take there, by the cluster's network plugin (`pod_addressing`): one per node with
    Azure CNI Overlay and kubenet, 1 + maxPods with classic Azure CNI, and with dynamic pod IP allocation one per
    node in the node subnet and maxPods in the pod subnet; an upgrade's surge nodes take theirs too. Free = the
    range's size, less the 5 addresses Azure reserves in every subnet, less the IP configurations already in it (each
    running node holds its own, and its pods' with a flat network; so do other devices in the subnet)."""
    checks = []
    by_subnet: dict[str, list[tuple[Node, int, str]]] = {}
    for pool in pools:
        nodes, how = growth(pool, live)
        name = pool.label.removeprefix("pool ")
        if pool.subnet:
            per_node = addressing.node_subnet_addresses(pool.max_pods)
            by_subnet.setdefault(pool.subnet.lower(), []).append(
                (pool, nodes * per_node, f"{name} {how}" + (f" x {per_node}" if per_node != 1 else "")))
        if addressing.pod_subnet_id and (pods := addressing.pod_subnet_addresses(pool.max_pods)):
            by_subnet.setdefault(addressing.pod_subnet_id.lower(), []).append(
                (pool, nodes * pods, f"{name} {how} x {pods} pods"))
    for key, members in by_subnet.items():
        pod_subnet = addressing.pod_subnet_id is not None and key == addressing.pod_subnet_id.lower()
        subnet_id = addressing.pod_subnet_id if pod_subnet else (members[0][0].subnet or key)
        short = "/".join(subnet_id.split("/")[-3::2])
        subnet = subnets.get(key)
        if subnet is None:
            checks.append(Check("subnet", short, Verdict.FAIL, f"subnet {subnet_id} does not exist (or this identity "
                                                               "cannot see it)",
                                "create it, or fix the subnetId; reading it needs Reader (or Network Contributor) on "
                                "its VNet"))
            continue
        prefix = ipaddress.ip_network(subnet.address_prefix, strict=False)
        overlaps = [f"{name} {cidr}" for name, cidr in (ranges or {}).items()
                    if prefix.overlaps(ipaddress.ip_network(cidr))]
        if overlaps:
            checks.append(Check("subnet", short, Verdict.FAIL,
                                f"{subnet.address_prefix} overlaps the cluster's {' and '.join(overlaps)}",
                                "set gpushare:cluster.network.serviceCidr (with dnsServiceIp) to a private range "
                                "outside your VNet, or use a subnet outside these ranges"))
            continue
        parts = [part for _, _, part in members]
        need = sum(addresses for _, addresses, _ in members)
        free = subnet.free_addresses
        detail = (f"{subnet.address_prefix}: {subnet.size} addresses - {AZURE_RESERVED_PER_SUBNET} Azure reserves - "
                  f"{subnet.used} in use = {free} free; " + _subnet_need(addressing, pod_subnet, need, parts))
        if need > free:
            checks.append(Check("subnet", short, Verdict.FAIL, f"{detail}: short by {need - free}",
                                "use a larger subnet (a pool's subnetId, fixed when the pool is created), or lower "
                                "the pools' count / autoscale max / upgrade.maxSurge"
                                + (" / maxPods" if addressing.flat else "")))
        elif addressing.plugin is Plugin.OTHER:
            checks.append(Check("subnet", short, Verdict.WARN,
                                f"{detail}; the cluster's CNI ({addressing.read}) is not one gpushare knows, so only "
                                "one address per node was counted",
                                "check the subnet against your CNI's own address needs"))
        else:
            checks.append(Check("subnet", short, Verdict.PASS, detail))
    return checks


def _subnet_need(addressing: Addressing, pod_subnet: bool, need: int, parts: list[str]) -> str:
    """What the pools take in one subnet, and the rule it was counted by."""
    counted = f"({'; '.join(parts)})"
    if pod_subnet:
        return (f"the pools' pods can take {need} addresses {counted}, maxPods per node in the pod subnet with "
                f"{addressing.plugin.value} ({addressing.read})")
    if addressing.plugin is Plugin.NODE_SUBNET:
        return (f"the pools can add nodes taking {need} addresses {counted}, 1 + maxPods per node with "
                f"{addressing.plugin.value} ({addressing.read})")
    nodes = f"the pools can add {need} node{'s' if need != 1 else ''} {counted}, one address each with "
    if addressing.plugin is Plugin.OVERLAY:
        return nodes + addressing.plugin.value
    return nodes + f"{addressing.plugin.value} ({addressing.read})"


def stack_subnets(stack: StackConfig, cluster: DeployedCluster | None = None) -> list[str]:
    """Every subnet the stack's pools use, the system pool's first; on an existing cluster (`cluster` as read) the
    subnet of its system pool when a GPU pool names none."""
    ids = own_subnets(stack)
    if stack.cluster.existing and cluster and any(pool_subnet(stack, pool) is None for pool in stack.pools):
        ids.append(cluster.system_subnet_id)
    if stack.cluster.existing and (pods := cluster_addressing(cluster).pod_subnet_id):
        ids.append(pods)
    return list(dict.fromkeys(subnet for subnet in ids if subnet))
