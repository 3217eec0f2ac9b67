"""The subnets of your own network a stack's pools join: one ARM GET per subnet, for preflight's `subnet` check.

Read through the azure-mgmt-containerservice client's own pipeline (`deployed.get_json`: the same credential, retries,
timeouts and endpoint as every other read) as a plain ARM GET of the subnet's ID with the Network API version
below; no azure-mgmt-network dependency for one GET. What is counted (Azure docs, virtual-network-ip-addressing
and "Azure CNI Overlay"): a subnet's size is its prefix's addresses; Azure reserves 5 of them in every subnet
(network, gateway, two for DNS, broadcast); each entry of the subnet's `ipConfigurations` holds one (a node's NIC, a
private endpoint, an internal load balancer frontend). With Azure CNI Overlay a node takes one subnet address and its
pods none.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpushare.azure.deployed import get_json, read_cluster_resource
from gpushare.errors import AzureReadError

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

NETWORK_API_VERSION = "2024-05-01"
AZURE_RESERVED_PER_SUBNET = 5
READ_ROLE_HINT = ("reading a subnet needs 'Microsoft.Network/virtualNetworks/subnets/read' (Reader or Network "
                  "Contributor on its VNet): az role assignment create --assignee <identity> --role Reader "
                  "--scope <vnet resource id>")


@dataclass(frozen=True)
class Subnet:
    id: str
    address_prefix: str
    used: int
    """Entries in the subnet's `ipConfigurations`."""

    @property
    def size(self) -> int:
        return ipaddress.ip_network(self.address_prefix, strict=False).num_addresses

    @property
    def free_addresses(self) -> int:
        return max(self.size - AZURE_RESERVED_PER_SUBNET - self.used, 0)


def read_subnets(subscription_id: str, subnet_ids: Iterable[str], *, credential: TokenCredential | None = None,
                 base_url: str | None = None, **client_kwargs: object) -> dict[str, Subnet | None]:
    """Each distinct subnet (by lowercased ID), None when Azure has no such subnet. One GET per subnet."""
    found: dict[str, Subnet | None] = {}
    for subnet_id in subnet_ids:
        key = subnet_id.lower()
        if key in found:
            continue
        what = f"could not read subnet {subnet_id}"
        document = read_cluster_resource(what, subscription_id,
                                         lambda client: get_json(client, subnet_id,
                                                                 {"api-version": NETWORK_API_VERSION}),
                                         READ_ROLE_HINT, credential=credential, base_url=base_url,
                                         client_kwargs=client_kwargs)
        found[key] = _parse(what, subnet_id, document) if document is not None else None
    return found


def _parse(what: str, subnet_id: str, document: object) -> Subnet:
    properties = document.get("properties") if isinstance(document, dict) else None
    if not isinstance(properties, dict):
        raise AzureReadError(f"{what}: Azure answered without the subnet's properties")
    prefix = properties.get("addressPrefix")
    if not prefix and isinstance(properties.get("addressPrefixes"), list) and properties["addressPrefixes"]:
        prefix = properties["addressPrefixes"][0]
    configurations = properties.get("ipConfigurations") or []
    try:
        ipaddress.ip_network(prefix, strict=False)
    except (TypeError, ValueError):
        raise AzureReadError(f"{what}: Azure answered with an address prefix that is not a CIDR: {prefix!r}") from None
    if not isinstance(configurations, list):
        raise AzureReadError(f"{what}: Azure answered with `ipConfigurations` that is not a list")
    return Subnet(subnet_id, prefix, len(configurations))
