"""`gpushare:cluster.network` and a pool's `subnetId`: the subnet and address ranges of a cluster gpushare creates.

AKS's rules, checked here when the values are known offline (the subnet's own range is only known to Azure:
`preflight` reads it):
- `subnetId` is a subnet's ARM ID; every pool of a cluster is in one VNet (AKS: "All subnets assigned to node pools
  must belong to the same virtual network");
- `serviceCidr` must not overlap the pod range (Azure CNI Overlay's `podCidr`) nor the subnet, and `dnsServiceIp`
  lies inside `serviceCidr` and is not its first address (kube-apiserver's service takes that one; AKS docs
  "configure-azure-cni-overlay": "Don't use the first IP address in your address range");
- `outboundType`: `userDefinedRouting` routes egress through the subnet's route table (a hub firewall), so it needs
  `subnetId`; `managedNATGateway` builds AKS's own VNet and NAT gateway, so it cannot take one (a NAT gateway on a
  subnet of your own is `userAssignedNATGateway`, which gpushare does not offer).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from typing import Any

from gpushare.model.keys import CLUSTER_KEY, POOLS_KEY
from gpushare.model.stack import GpuPool, Network, OutboundType
from gpushare.stackfile.checks import Checker, name_indexes, show
from gpushare.stackfile.declarations import STRING, Field, Section

SUBNET_ID_RE = re.compile(
    r"^/subscriptions/(?P<subscription>[0-9a-fA-F-]{36})/resourceGroups/(?P<group>[-\w.()]+)"
    r"/providers/Microsoft\.Network/virtualNetworks/(?P<vnet>[-\w.]+)/subnets/(?P<subnet>[-\w.]+)$",
    re.IGNORECASE,
)
_SUBNET_EXAMPLE = ("/subscriptions/3f2504e0-4f89-41d3-9a0c-0305e82c3301/resourceGroups/net-rg/providers/"
                   "Microsoft.Network/virtualNetworks/spoke/subnets/aks")
NETWORK = Section((
    Field("subnetId", STRING, "An existing subnet's ARM ID for the system pool and, by default, every GPU pool; "
                              "the cluster identity gets Network Contributor on it.", pattern=SUBNET_ID_RE,
          examples=(_SUBNET_EXAMPLE,)),
    Field("serviceCidr", STRING, "The Kubernetes service range (private, not overlapping the pod range or the "
                                 "subnet); with dnsServiceIp.", default_text="10.0.0.0/16",
          pattern=re.compile(r"^[0-9.]+/[0-9]{1,2}$"), examples=("10.100.0.0/16",)),
    Field("dnsServiceIp", STRING, "The cluster DNS service's address, inside serviceCidr and not its first.",
          default_text="10.0.0.10", pattern=re.compile(r"^[0-9.]+$"), examples=("10.100.0.10",)),
    Field("outboundType", STRING, "How nodes reach the internet: loadBalancer, userDefinedRouting (a hub "
                                  "firewall; needs subnetId) or managedNATGateway (not with subnetId); fixed at "
                                  "creation.", enum=OutboundType),
), model=Network)
SUBNET_ID_SHAPE = ("/subscriptions/<subscription id>/resourceGroups/<group>/providers/Microsoft.Network/"
                   "virtualNetworks/<vnet>/subnets/<subnet> (`az network vnet subnet show -g <group> "
                   "--vnet-name <vnet> -n <subnet> --query id -o tsv` prints it)")
POD_CIDR_FOR_CHECKS = "10.244.0.0/16"
"""`cluster_baseline.POD_CIDR` (the stack file layer does not import the Azure side; a test keeps them equal)."""
DEFAULT_SERVICE_CIDR = "10.0.0.0/16"
"""`cluster_baseline.SERVICE_CIDR`, likewise."""


AKS_RESERVED_RANGES = tuple(ipaddress.ip_network(cidr) for cidr in (
    "169.254.0.0/16", "192.0.2.0/24", "172.30.0.0/16", "172.31.0.0/16"))
"""Ranges AKS refuses for the service, pod and cluster VNet ranges of every cluster (aks-docs
concepts-network-cni-overview.md): 172.16.0.0/12, for one, contains two of them."""


def vnet_id(subnet_id: str) -> str:
    """The ARM ID of a subnet's VNet, as written: what a message tells the user to use."""
    return subnet_id.rsplit("/subnets/", 1)[0]


def vnet_of(subnet_id: str) -> str:
    """`vnet_id`, lowercased for comparing (ARM IDs compare case-insensitively)."""
    return vnet_id(subnet_id).lower()


def vnet_name(subnet_id: str) -> str:
    """The name of a subnet's VNet, as messages show it."""
    return vnet_of(subnet_id).rsplit("/", 1)[-1]


def parse_subnet_id(c: Checker, value: Any, path: str) -> str | None:
    if not isinstance(value, str) or not SUBNET_ID_RE.match(value):
        c.add(path, f"must be a subnet's ARM ID, {SUBNET_ID_SHAPE}; got {show(value)}")
        return None
    return value


def parse_network(c: Checker, value: Any, path: str) -> Network | None:
    network = c.section_values(value, NETWORK, path, rules={"subnetId": parse_subnet_id, "serviceCidr": _network,
                                                            "dnsServiceIp": _address})
    if network is None:
        return None
    subnet, service, dns = network["subnetId"], network["serviceCidr"], network["dnsServiceIp"]
    outbound = network["outboundType"]
    if service is not None and (reserved := [r for r in AKS_RESERVED_RANGES if service.overlaps(r)]):
        c.add(f"{path}.serviceCidr", f"{service} overlaps {', '.join(map(str, reserved))}, which AKS reserves and "
                                     f"refuses for the service range (aks-docs concepts-network-cni-overview.md); "
                                     f"choose a private range outside them and outside your VNet, e.g. "
                                     f"10.0.0.0/16")
        service = None
    if service is not None:
        pods = ipaddress.ip_network(POD_CIDR_FOR_CHECKS)
        if service.overlaps(pods):
            c.add(f"{path}.serviceCidr", f"{service} overlaps the pod range {pods} of Azure CNI Overlay; choose a "
                                         f"private range outside it and outside your VNet, e.g. 10.0.0.0/16")
    if dns is not None and (service is not None or "serviceCidr" not in network.given):
        inside = service or ipaddress.ip_network(DEFAULT_SERVICE_CIDR)
        if dns not in inside:
            c.add(f"{path}.dnsServiceIp", f"{dns} is outside the service range {inside}"
                                          f"{'' if service else ' (the default serviceCidr)'}; AKS needs the DNS "
                                          f"service address inside it, e.g. {inside.network_address + 10}")
        elif dns == inside.network_address or dns == inside.network_address + 1:
            c.add(f"{path}.dnsServiceIp", f"{dns} is the {'network' if dns == inside.network_address else 'first'} "
                                          f"address of {inside}, which Kubernetes reserves; use e.g. "
                                          f"{inside.network_address + 10}")
    elif service is not None:
        c.add(f"{path}.dnsServiceIp", f"required with serviceCidr {service}: the cluster DNS address inside it, e.g. "
                                      f"dnsServiceIp: {service.network_address + 10}")
    if outbound is OutboundType.USER_DEFINED_ROUTING and subnet is None and "subnetId" not in network.raw:
        c.add(f"{path}.outboundType", "userDefinedRouting sends egress through your subnet's route table (e.g. to a "
                                      "hub firewall), so it needs network.subnetId: the subnet with that route table")
    if outbound is OutboundType.MANAGED_NAT_GATEWAY and subnet is not None:
        c.add(f"{path}.outboundType", "managedNATGateway makes AKS build its own VNet and NAT gateway, so it cannot be "
                                      "used with network.subnetId; attach a NAT gateway to your subnet and use "
                                      "userDefinedRouting or loadBalancer, or drop subnetId")
    return network.model(service_cidr=str(service) if service else None, dns_service_ip=str(dns) if dns else None)


def check_pool_subnets(c: Checker, network: Network, raw_pools: Any, pools: Sequence[GpuPool],
                       existing: bool) -> None:
    """Every pool's subnet in the cluster's VNet (AKS refuses node pools in another VNet: aks-docs
    node-pool-unique-subnet.md, "All subnets assigned to node pools must belong to the same virtual network"). A
    cluster gpushare creates without `network.subnetId` lives in a VNet AKS makes, where no subnet of yours can be;
    an existing cluster's VNet is read by `preflight`."""
    indexes = name_indexes(raw_pools)
    if network.subnet_id is None:
        if existing:
            # The cluster's VNet is read by preflight; offline, two pools in different VNets cannot both be in it.
            named = [pool for pool in pools if pool.subnet_id]
            for pool in named[1:]:
                if vnet_of(pool.subnet_id) != vnet_of(named[0].subnet_id):
                    c.add(f"{POOLS_KEY}[{indexes.get(pool.name, '?')}].subnetId",
                          f"pool {pool.name}'s subnet is in VNet {vnet_name(pool.subnet_id)}, pool "
                          f"{named[0].name}'s in {vnet_name(named[0].subnet_id)}: AKS puts every node pool of a "
                          f"cluster in one VNet, the cluster's; use subnets of the VNet of its system pool")
            return
        for pool in pools:
            if pool.subnet_id:
                c.add(f"{POOLS_KEY}[{indexes.get(pool.name, '?')}].subnetId",
                      f"pool {pool.name} names a subnet, but the cluster has no {CLUSTER_KEY}.network.subnetId: AKS "
                      f"then builds the cluster's own VNet, and every node pool of a cluster must be in one VNet "
                      f"(AKS refuses the pool: \"does not have subnet defined\"); set network.subnetId to a subnet "
                      f"of {vnet_name(pool.subnet_id)} for the system pool, or drop the pool's subnetId")
        return
    vnet = vnet_of(network.subnet_id)
    for pool in pools:
        if pool.subnet_id and vnet_of(pool.subnet_id) != vnet:
            where = f"{POOLS_KEY}[{indexes.get(pool.name, '?')}].subnetId"
            c.add(where, f"pool {pool.name}'s subnet is in VNet {vnet_name(pool.subnet_id)}, but the cluster's "
                         f"({CLUSTER_KEY}.network.subnetId) is in {vnet_name(network.subnet_id)}: AKS puts every "
                         f"node pool of a cluster in one VNet; use a subnet of {vnet_id(network.subnet_id)}")


def _network(c: Checker, value: Any, path: str) -> ipaddress.IPv4Network | None:
    if value is None:
        return None
    try:
        network = ipaddress.ip_network(value) if isinstance(value, str) and "/" in value else None
    except ValueError:
        network = None
        if isinstance(value, str) and "/" in value:
            try:
                fixed = ipaddress.ip_interface(value).network
                c.add(path, f"{value} has host bits set; write the network, {fixed}")
                return None
            except ValueError:
                pass
    if not isinstance(network, ipaddress.IPv4Network) or not network.is_private:
        c.add(path, f"must be a private IPv4 CIDR such as 10.0.0.0/16 (RFC 1918), got {show(value)}")
        return None
    return network


def _address(c: Checker, value: Any, path: str) -> ipaddress.IPv4Address | None:
    if value is None:
        return None
    try:
        address = ipaddress.ip_address(value) if isinstance(value, str) else None
    except ValueError:
        address = None
    if not isinstance(address, ipaddress.IPv4Address):
        c.add(path, f"must be an IPv4 address such as 10.0.0.10, got {show(value)}")
        return None
    return address
