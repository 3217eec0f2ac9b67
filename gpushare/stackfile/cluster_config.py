"""`gpushare:cluster`: the AKS cluster, its system pool, access, tier, upgrades and API server."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from gpushare.stackfile import catalog
from gpushare.stackfile.checks import GUID_RE, MAX_POOL_NODES, Checker, kind_of, optional, show
from gpushare.stackfile.keys import CLUSTER_KEY, POOLS_KEY
from gpushare.stackfile.model import (
    Access,
    ApiServer,
    Cluster,
    ClusterUpgrades,
    MaintenanceWindow,
    Network,
    NodeOsChannel,
    SystemPool,
    Tier,
    UpgradeChannel,
    WeekDay,
)
from gpushare.stackfile.network_config import parse_network

CLUSTER_KEYS = ("name", "resourceGroup", "kubernetesVersion", "systemPool", "access", "tier", "upgrades", "apiServer",
                "existing", "resourceGroupExists", "network")
ACCESS_KEYS = ("adminGroups", "grantDeployer")
CLUSTER_UPGRADES_KEYS = ("channel", "nodeOs", "window")
WINDOW_KEYS = ("day", "start", "hours")
API_SERVER_KEYS = ("authorizedIpRanges", "private", "privateDnsZone")
SYSTEM_POOL_KEYS = ("vmSize", "count")
CLUSTER_NAME_RE = re.compile(r"^[a-zA-Z0-9]$|^[a-zA-Z0-9][-_a-zA-Z0-9]{0,61}[a-zA-Z0-9]$")
RESOURCE_GROUP_RE = re.compile(r"^[-\w.()]{0,89}[-\w()]$")
KUBERNETES_VERSION_RE = re.compile(r"^\d+\.\d+(\.\d+)?$")
VM_SIZE_RE = re.compile(r"^Standard_[A-Za-z0-9_]+$")
WINDOW_START_RE = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")
MIN_WINDOW_HOURS, MAX_WINDOW_HOURS = 4, 24
"""AKS's bounds for `maintenanceWindow.durationHours`."""
MAX_AUTHORIZED_IP_RANGES = 200
"""AKS's limit for `apiServerAccessProfile.authorizedIPRanges` without API server VNet integration."""
PRIVATE_DNS_ZONE_RE = re.compile(
    r"^(system|none|/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[-\w.()]+/providers/Microsoft\.Network/"
    r"privateDnsZones/([-\w]+\.)?privatelink\.[a-z0-9]+\.azmk8s\.io)$", re.IGNORECASE)
"""AKS's `privateDNSZone`: `system`, `none`, or a zone named `privatelink.<region>.azmk8s.io` or
`<subzone>.privatelink.<region>.azmk8s.io` (AKS docs private-clusters.md)."""

NOT_ON_EXISTING: dict[str, str] = {
    "tier": "the cluster's tier belongs to its owners; gpushare reads it, and `preflight` reports it against the "
            "baseline with the `az aks update` that changes it",
    "upgrades": "the cluster's upgrade channels and maintenance windows belong to its owners; gpushare reads them, "
                "and `preflight` reports them against the baseline",
    "systemPool": "the cluster already has its system pool; gpushare adds GPU pools only",
    "kubernetesVersion": "the cluster runs the version its owners chose; gpushare never upgrades it",
    "apiServer": "API server access (authorized ranges, private) is the cluster's own setting",
    "network": "AKS fixed the cluster's network when it was created; put a GPU pool in another subnet of the "
               "cluster's VNet with the pool's `subnetId`",
}
"""Keys that only make sense for a cluster gpushare creates, with why `existing: true` refuses each."""


def parse_cluster(c: Checker, value: Any) -> Cluster | None:
    path = CLUSTER_KEY
    if value is None:
        c.add(path, "required: the AKS cluster, at least `name:` (e.g. `gpushare:cluster: {name: contoso-prod}`)")
        return None
    raw = c.mapping(value, path, CLUSTER_KEYS)
    if raw is None:
        return None
    existing = optional(raw, "existing", lambda v: c.boolean(v, f"{path}.existing"), False)
    if existing:
        _refuse_on_existing(c, raw, path)
        raw = {key: item for key, item in raw.items() if key not in NOT_ON_EXISTING}
    name = None
    if "name" not in raw:
        c.add(f"{path}.name", "required: the AKS cluster name (letters, digits, '-' and '_', at most 63 characters)")
    else:
        name = c.string(raw["name"], f"{path}.name", CLUSTER_NAME_RE,
                        "must be 1-63 letters, digits, '-' or '_', starting and ending with a letter or digit")
    resource_group = optional(
        raw, "resourceGroup",
        lambda v: c.string(v, f"{path}.resourceGroup", RESOURCE_GROUP_RE,
                           "must be 1-90 letters, digits, '_', '-', '.', '(' or ')', not ending in '.'"),
        f"{name}-rg" if name else None,
    )
    version = raw.get("kubernetesVersion")
    if isinstance(version, float):
        c.add(f"{path}.kubernetesVersion", f"YAML reads an unquoted version as a number (here {version}); "
                                           f"quote it as written, e.g. kubernetesVersion: \"1.33\"")
        version = None
    elif version is not None:
        version = c.string(version, f"{path}.kubernetesVersion", KUBERNETES_VERSION_RE,
                           "must be a Kubernetes version such as \"1.33\" or \"1.33.2\"")
    system_pool = SystemPool()
    if raw.get("systemPool") is not None:
        system_pool = _parse_system_pool(c, raw["systemPool"], f"{path}.systemPool") or system_pool
    access = optional(raw, "access", lambda v: _parse_access(c, v, f"{path}.access"), Access())
    tier = optional(raw, "tier", lambda v: c.choice(v, f"{path}.tier", Tier), Tier.STANDARD)
    upgrades = optional(raw, "upgrades", lambda v: _parse_upgrades(c, v, f"{path}.upgrades"),
                         ClusterUpgrades())
    api_server = optional(raw, "apiServer", lambda v: _parse_api_server(c, v, f"{path}.apiServer"), ApiServer())
    network = optional(raw, "network", lambda v: parse_network(c, v, f"{path}.network"), Network())
    group_exists = optional(raw, "resourceGroupExists",
                            lambda v: c.boolean(v, f"{path}.resourceGroupExists"), False)
    _check_version_against_channel(c, path, version, upgrades.channel)
    if name is None or resource_group is None:
        return None
    return Cluster(name=name, resource_group=resource_group, kubernetes_version=version, system_pool=system_pool,
                   access=access, tier=tier, upgrades=upgrades, api_server=api_server, existing=existing,
                   resource_group_exists=group_exists or existing, network=network)


def _refuse_on_existing(c: Checker, raw: dict[str, Any], path: str) -> None:
    for key, why in NOT_ON_EXISTING.items():
        if key in raw:
            c.add(f"{path}.{key}", f"not with existing: true: {why}; remove it")
    access = raw.get("access")
    if isinstance(access, dict) and access.get("adminGroups"):
        c.add(f"{path}.access.adminGroups", "not with existing: true: who administers a cluster gpushare did not "
                                            "create is its owners' choice, and gpushare would add role assignments "
                                            "on it; grant them out of band and remove adminGroups")
    if "resourceGroup" not in raw:
        c.add(f"{path}.resourceGroup", "required with existing: true: the resource group the cluster is in "
                                       "(`az aks list --query \"[?name=='<name>'].resourceGroup\" -o tsv`)")


def _check_version_against_channel(c: Checker, path: str, version: str | None, channel: UpgradeChannel) -> None:
    """AKS moves the version along its upgrade channel; a stack pinning what the channel changes would ask AKS to
    downgrade on the next run, which AKS refuses."""
    if version is None:
        return
    if channel is UpgradeChannel.PATCH and version.count(".") == 2:
        minor = version.rsplit(".", 1)[0]
        c.add(f"{path}.kubernetesVersion", f"{version} pins a patch release, but upgrades.channel patch moves "
                                           f"the cluster to newer patches; write \"{minor}\", or set channel: none")
    elif channel in (UpgradeChannel.STABLE, UpgradeChannel.RAPID):
        c.add(f"{path}.kubernetesVersion", f"upgrades.channel {channel.value} moves the cluster to newer minor "
                                           f"versions, so a fixed version ({version}) would ask AKS to downgrade; "
                                           f"remove kubernetesVersion, or use channel patch")


def _parse_access(c: Checker, value: Any, path: str) -> Access | None:
    raw = c.mapping(value, path, ACCESS_KEYS)
    if raw is None:
        return None
    groups: list[str] = []
    admin_groups = raw.get("adminGroups")
    if admin_groups is not None and not isinstance(admin_groups, list):
        c.add(f"{path}.adminGroups", f"expected a list of Entra group object IDs, got {kind_of(admin_groups)} "
                                     f"{show(admin_groups)}")
    for i, group in enumerate(admin_groups if isinstance(admin_groups, list) else []):
        where = f"{path}.adminGroups[{i}]"
        if not isinstance(group, str) or not GUID_RE.match(group):
            c.add(where, f"must be an Entra group's object ID, a GUID such as 0b5e7c1a-2f4d-4e8a-9c3b-6d1f2a7e5b90, "
                         f"got {show(group)}; find it with `az ad group show --group <name> --query id -o tsv`")
        elif group.lower() in groups:
            c.add(where, f"group {group} is listed twice")
        else:
            groups.append(group.lower())
    grant = optional(raw, "grantDeployer", lambda v: c.boolean(v, f"{path}.grantDeployer"), True)
    return Access(admin_groups=tuple(groups), grant_deployer=grant)


def _parse_upgrades(c: Checker, value: Any, path: str) -> ClusterUpgrades | None:
    raw = c.mapping(value, path, CLUSTER_UPGRADES_KEYS)
    if raw is None:
        return None
    default = ClusterUpgrades()
    channel = optional(raw, "channel", lambda v: c.choice(v, f"{path}.channel", UpgradeChannel), default.channel)
    node_os = optional(raw, "nodeOs", lambda v: c.choice(v, f"{path}.nodeOs", NodeOsChannel), default.node_os)
    window = optional(raw, "window", lambda v: _parse_window(c, v, f"{path}.window"), default.window)
    if channel is UpgradeChannel.NODE_IMAGE and node_os is not NodeOsChannel.NODE_IMAGE:
        # AKS: with the node-image upgrade channel, the node OS channel is NodeImage and cannot be set otherwise.
        c.add(f"{path}.nodeOs", f"channel node-image upgrades node images itself, so nodeOs must be NodeImage, got "
                                f"{node_os.value!r}; use channel patch (or stable) with nodeOs {node_os.value}")
    return ClusterUpgrades(channel=channel, node_os=node_os, window=window)


def _parse_window(c: Checker, value: Any, path: str) -> MaintenanceWindow | None:
    raw = c.mapping(value, path, WINDOW_KEYS)
    if raw is None:
        return None
    default = MaintenanceWindow()
    day = optional(raw, "day", lambda v: c.choice(v, f"{path}.day", WeekDay), default.day)
    start = raw.get("start", default.start)
    if isinstance(start, int) and not isinstance(start, bool):
        # YAML 1.1 (PyYAML, hence `plan`) reads an unquoted 22:30 as the base-60 number 1350.
        c.add(f"{path}.start",
              f"YAML reads an unquoted time as a number (here {start}); quote it, e.g. start: \"02:00\"")
        start = default.start
    else:
        start = c.string(start, f"{path}.start", WINDOW_START_RE,
                         "must be a UTC time \"HH:MM\" from \"00:00\" to \"23:59\"") or default.start
    hours = optional(raw, "hours", lambda v: c.integer(v, f"{path}.hours", MIN_WINDOW_HOURS, MAX_WINDOW_HOURS,
                                                         " (AKS maintenance windows last 4 to 24 hours)"),
                      default.hours)
    return MaintenanceWindow(day=day, start=start, hours=hours)


def _parse_api_server(c: Checker, value: Any, path: str) -> ApiServer | None:
    raw = c.mapping(value, path, API_SERVER_KEYS)
    if raw is None:
        return None
    private = optional(raw, "private", lambda v: c.boolean(v, f"{path}.private"), False)
    zone = raw.get("privateDnsZone")
    if zone is not None:
        zone = c.string(zone, f"{path}.privateDnsZone", PRIVATE_DNS_ZONE_RE,
                        "must be system, none, or a private DNS zone's ARM ID named privatelink.<region>.azmk8s.io "
                        "or <subzone>.privatelink.<region>.azmk8s.io")
        if zone is not None and not private:
            c.add(f"{path}.privateDnsZone", "only for a private cluster: set private: true, or remove privateDnsZone")
    ranges = raw.get("authorizedIpRanges")
    where = f"{path}.authorizedIpRanges"
    if private and ranges:
        c.add(where, "not with private: true: AKS refuses authorized IP ranges on a private cluster, whose API "
                     "server has no public address to restrict; remove one of them")
        return ApiServer(private=True, private_dns_zone=zone)
    if ranges is None:
        return ApiServer(private=private, private_dns_zone=zone)
    if not isinstance(ranges, list):
        c.add(where, f"expected a list of CIDRs such as [\"203.0.113.0/24\"], got {kind_of(ranges)} {show(ranges)}")
        return None
    if len(ranges) > MAX_AUTHORIZED_IP_RANGES:
        c.add(where, f"AKS allows at most {MAX_AUTHORIZED_IP_RANGES} authorized IP ranges, got {len(ranges)}; "
                     f"merge adjacent ranges into wider CIDRs")
    cidrs: list[str] = []
    for i, item in enumerate(ranges):
        cidr = _cidr(c, item, f"{where}[{i}]")
        if cidr and cidr in cidrs:
            c.add(f"{where}[{i}]", f"{cidr} is listed twice")
        elif cidr:
            cidrs.append(cidr)
    return ApiServer(authorized_ip_ranges=tuple(cidrs), private=private, private_dns_zone=zone)


def _cidr(c: Checker, value: Any, path: str) -> str | None:
    if not isinstance(value, str) or "/" not in value:
        fix = f"; for one address write {value}/32" if isinstance(value, str) and _is_address(value) else ""
        c.add(path, f"must be a CIDR such as 203.0.113.0/24, got {show(value)}{fix}")
        return None
    try:
        interface = ipaddress.ip_interface(value)
    except ValueError:
        c.add(path, f"must be a CIDR such as 203.0.113.0/24, got {show(value)}")
        return None
    if interface.ip != interface.network.network_address:
        c.add(path, f"{value} has host bits set; write the network, {interface.network}")
        return None
    return value


def _is_address(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _parse_system_pool(c: Checker, value: Any, path: str) -> SystemPool | None:
    raw = c.mapping(value, path, SYSTEM_POOL_KEYS)
    if raw is None:
        return None
    default = SystemPool()
    vm_size = optional(raw, "vmSize", lambda v: c.string(v, f"{path}.vmSize", VM_SIZE_RE,
                                                           "must be an Azure VM size such as Standard_D4ds_v5"),
                        default.vm_size)
    if catalog.find_vm_size(vm_size):
        c.add(f"{path}.vmSize", f"{vm_size} is a GPU size; the system pool runs cluster add-ons only, so use a "
                                f"general-purpose size such as {default.vm_size} and put GPUs in {POOLS_KEY}")
    count = optional(raw, "count", lambda v: c.integer(v, f"{path}.count", 1, MAX_POOL_NODES,
                                                         " (a system pool needs at least one node)"), default.count)
    return SystemPool(vm_size=vm_size, count=count)
