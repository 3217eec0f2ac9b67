"""Stack file schema and validation: raw config in, a `StackConfig` out, or one `ConfigError` listing every problem.

The same `parse_config` serves the Pulumi program (config as the engine passes it: strings, objects JSON-encoded)
and the offline `plan` (the YAML stack file), so a stack that plans cleanly also validates under `pulumi up`.
Messages read `<key path>: <what is wrong>, got <value>; allowed: <values>` plus the fix.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Callable, TypeVar

import yaml

from gpushare.errors import ConfigError, ConfigProblem
from gpushare.kubernetes.tenants import kubernetes_version_problem, namespace_problem
from gpushare.sharing.autoscaling import scale_from_zero_problem
from gpushare.sharing.capacity import pool_capacity
from gpushare.sharing.operator_values import VERIFIED_CHART_VERSIONS
from gpushare.stackfile import catalog, regions
from gpushare.stackfile.model import (
    DEFAULT_POOL_COUNT,
    SYSTEM_POOL_NAME,
    Access,
    ApiServer,
    Autoscale,
    AzureEnvironment,
    AzureSettings,
    Cluster,
    ClusterUpgrades,
    DriverOwner,
    GpuPool,
    GuardMode,
    MaintenanceWindow,
    MigStrategy,
    NodeOsChannel,
    Operator,
    OsSku,
    PreflightMode,
    Sharing,
    SharingStrategy,
    StackConfig,
    SystemPool,
    Tenant,
    Tier,
    Upgrade,
    UpgradeChannel,
    WeekDay,
)

NS = "gpushare"
LOCATION_KEY = "azure-native:location"
CLUSTER_KEY = f"{NS}:cluster"
OPERATOR_KEY = f"{NS}:operator"
POOLS_KEY = f"{NS}:pools"
GUARD_KEY = f"{NS}:guard"
TENANTS_KEY = f"{NS}:tenants"
PREFLIGHT_KEY = f"{NS}:preflight"
PROJECT_KEYS = (CLUSTER_KEY, OPERATOR_KEY, POOLS_KEY, GUARD_KEY, PREFLIGHT_KEY, TENANTS_KEY)
# azure-native's own settings that gpushare's Azure reads (guard, preflight) follow too.
SUBSCRIPTION_KEY = "azure-native:subscriptionId"
ENVIRONMENT_KEY = "azure-native:environment"

# Keys a Pulumi stack file may hold besides `config` (written by the CLI).
STACK_FILE_KEYS = ("config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment")
CLUSTER_KEYS = ("name", "resourceGroup", "kubernetesVersion", "systemPool", "access", "tier", "upgrades", "apiServer")
ACCESS_KEYS = ("adminGroups", "grantDeployer")
CLUSTER_UPGRADES_KEYS = ("channel", "nodeOs", "window")
WINDOW_KEYS = ("day", "start", "hours")
API_SERVER_KEYS = ("authorizedIpRanges",)
SYSTEM_POOL_KEYS = ("vmSize", "count")
OPERATOR_KEYS = ("chartVersion", "driver", "migStrategy")
POOL_KEYS = ("name", "vmSize", "mig", "sharing", "count", "autoscale", "zones", "osSku", "recreate", "upgrade")
SHARING_KEYS = ("strategy", "replicas", "renameByDefault", "failRequestsGreaterThanOne")
AUTOSCALE_KEYS = ("min", "max")
UPGRADE_KEYS = ("maxSurge", "maxUnavailable")
UPGRADE_VALUE_RE = re.compile(r"^(\d+)(%?)$")
TENANT_KEYS = ("name", "pools", "quota", "groups", "guaranteed")

CLUSTER_NAME_RE = re.compile(r"^[a-zA-Z0-9]$|^[a-zA-Z0-9][-_a-zA-Z0-9]{0,61}[a-zA-Z0-9]$")
RESOURCE_GROUP_RE = re.compile(r"^[-\w.()]{0,89}[-\w()]$")
POOL_NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,11}$")
KUBERNETES_VERSION_RE = re.compile(r"^\d+\.\d+(\.\d+)?$")
CHART_VERSION_RE = re.compile(r"^v\d+\.\d+\.\d+$")
LOCATION_RE = re.compile(r"^[a-z][a-z0-9]*$")
SUBSCRIPTION_ID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
VM_SIZE_RE = re.compile(r"^Standard_[A-Za-z0-9_]+$")
GUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
ZONES = ("1", "2", "3")
GUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
WINDOW_START_RE = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")
MIN_WINDOW_HOURS, MAX_WINDOW_HOURS = 4, 24
"""AKS's bounds for `maintenanceWindow.durationHours`."""
MAX_AUTHORIZED_IP_RANGES = 200
"""AKS's limit for `apiServerAccessProfile.authorizedIPRanges` without API server VNet integration."""
MAX_POOL_NODES = 1000
"""AKS's per-pool node limit."""

E = TypeVar("E", bound=Enum)


def _show(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else repr(value)


def _kind(value: Any) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "a mapping", type(None): "empty"}.get(type(value), type(value).__name__)


class _Checker:
    """Collects problems instead of stopping at the first, so one run shows them all."""

    def __init__(self) -> None:
        self.problems: list[ConfigProblem] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append(ConfigProblem(path, message))

    def mapping(self, value: Any, path: str, allowed: tuple[str, ...],
                children: dict[str, tuple[str, ...]] | None = None) -> dict[str, Any] | None:
        """`children` names the nested mappings (`autoscale`: its keys): one of their keys found at this level was
        indented one step too little, and is reported as such rather than as a misspelling."""
        if not isinstance(value, dict):
            self.add(path, f"expected a mapping with keys {', '.join(allowed)}, got {_kind(value)} {_show(value)}")
            return None
        for key in value:
            if key in allowed:
                continue
            parent = next((name for name, keys in (children or {}).items() if key in keys), None)
            if parent:
                example = ", ".join(f"{child}: ..." for child in children[parent][:2])
                self.add(f"{path}.{key}", f"`{key}` is a key of `{parent}`, not of {path}: check the indentation, "
                                          f"{key} must be indented under `{parent}:` (or write "
                                          f"{parent}: {{{example}}})")
            else:
                self.add(f"{path}.{key}", f"unknown key{_did_you_mean(str(key), allowed)}; allowed: {', '.join(allowed)}")
        return value

    def string(self, value: Any, path: str, pattern: re.Pattern[str], rule: str) -> str | None:
        if not isinstance(value, str):
            self.add(path, f"expected a string ({rule}), got {_kind(value)} {_show(value)}")
            return None
        if not pattern.match(value):
            self.add(path, f"{rule}, got {_show(value)}")
            return None
        return value

    def integer(self, value: Any, path: str, minimum: int, maximum: int | None = None, why: str = "") -> int | None:
        bounds = f"from {minimum} to {maximum}" if maximum is not None else f"{minimum} or more"
        if isinstance(value, bool) or not isinstance(value, int):
            fix = "; write it without quotes" if isinstance(value, str) and value.strip().isdigit() else ""
            self.add(path, f"expected a whole number {bounds}, got {_kind(value)} {_show(value)}{fix}")
            return None
        if value < minimum or (maximum is not None and value > maximum):
            self.add(path, f"must be {bounds}{why}, got {value}")
            return None
        return value

    def boolean(self, value: Any, path: str) -> bool | None:
        if not isinstance(value, bool):
            self.add(path, f"expected true or false, got {_kind(value)} {_show(value)}")
            return None
        return value

    def choice(self, value: Any, path: str, enum: type[E]) -> E | None:
        allowed = [member.value for member in enum]
        if isinstance(value, str):
            for member in enum:
                if member.value == value:
                    return member
            for member in enum:
                if member.value.lower() == value.lower():
                    self.add(path, f"unknown value {_show(value)} (values are case-sensitive); write {member.value!r}")
                    return None
        self.add(path, f"unknown value {_show(value)}{_did_you_mean(str(value), allowed)}; allowed: {', '.join(allowed)}")
        return None


def _did_you_mean(word: str, candidates: tuple[str, ...] | list[str]) -> str:
    lowered = {c.lower(): c for c in candidates}
    match = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return f" (did you mean {lowered[match[0]]!r}?)" if match else ""


def _closest_namespaced_key(bare: str) -> str:
    """`location` -> azure-native:location, `pool` -> gpushare:pools: match on the part after the namespace."""
    keys = (*PROJECT_KEYS, LOCATION_KEY)
    by_name = {key.split(":", 1)[1].lower(): key for key in keys}
    match = difflib.get_close_matches(bare.lower(), list(by_name), n=1, cutoff=0.6)
    return f"; did you mean {by_name[match[0]]}?" if match else f"; gpushare's keys are {', '.join(keys)}"


def _optional(raw: dict[str, Any], key: str, parse: Callable[[Any], Any], default: Any) -> Any:
    """Parse `raw[key]` when present; a parse that failed (None) falls back to the default for later checks."""
    if key not in raw or raw[key] is None:
        return default
    parsed = parse(raw[key])
    return default if parsed is None else parsed


def _parse_location(c: _Checker, raw: dict[str, Any]) -> str:
    value = raw.get(LOCATION_KEY)
    if value is None:
        c.add(LOCATION_KEY, "required: the Azure region for the cluster, e.g. `azure-native:location: westeurope`")
        return ""
    if isinstance(value, str) and not LOCATION_RE.match(value):
        fix = re.sub(r"[^a-z0-9]", "", value.lower())
        c.add(LOCATION_KEY, f"use the region's programmatic name, got {_show(value)}; write {fix!r} "
                            f"(`az account list-locations -o table` lists them)")
        return ""
    location = c.string(value, LOCATION_KEY, LOCATION_RE, "an Azure region name such as westeurope")
    if location and not regions.is_known_region(location):
        close = regions.closest_regions(location)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        c.add(LOCATION_KEY, f"unknown Azure region {location!r}{hint}; use a name from `az account list-locations "
                            f"--query \"[].name\" -o tsv` (gpushare knows the public, US Government and China "
                            f"regions as of {regions.REGIONS_AS_OF}; a newer region goes into gpushare/regions.py)")
        return ""
    return location or ""


def _parse_azure(c: _Checker, raw: dict[str, Any]) -> AzureSettings:
    subscription = _optional(
        raw, SUBSCRIPTION_KEY,
        lambda v: c.string(v, SUBSCRIPTION_KEY, SUBSCRIPTION_ID_RE,
                           "must be a subscription id (a GUID such as 00000000-0000-0000-0000-000000000000; "
                           "`az account show --query id -o tsv` prints yours)"),
        None,
    )
    environment = _optional(raw, ENVIRONMENT_KEY, lambda v: c.choice(v, ENVIRONMENT_KEY, AzureEnvironment),
                            AzureEnvironment.PUBLIC)
    return AzureSettings(subscription_id=subscription, environment=environment)


def _parse_cluster(c: _Checker, value: Any) -> Cluster | None:
    path = CLUSTER_KEY
    if value is None:
        c.add(path, "required: the AKS cluster, at least `name:` (e.g. `gpushare:cluster: {name: contoso-prod}`)")
        return None
    raw = c.mapping(value, path, CLUSTER_KEYS)
    if raw is None:
        return None
    name = None
    if "name" not in raw:
        c.add(f"{path}.name", "required: the AKS cluster name (letters, digits, '-' and '_', at most 63 characters)")
    else:
        name = c.string(raw["name"], f"{path}.name", CLUSTER_NAME_RE,
                        "must be 1-63 letters, digits, '-' or '_', starting and ending with a letter or digit")
    resource_group = _optional(
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
    access = _optional(raw, "access", lambda v: _parse_access(c, v, f"{path}.access"), Access())
    tier = _optional(raw, "tier", lambda v: c.choice(v, f"{path}.tier", Tier), Tier.STANDARD)
    upgrades = _optional(raw, "upgrades", lambda v: _parse_upgrades(c, v, f"{path}.upgrades"),
                         ClusterUpgrades())
    api_server = _optional(raw, "apiServer", lambda v: _parse_api_server(c, v, f"{path}.apiServer"), ApiServer())
    _check_version_against_channel(c, path, version, upgrades.channel)
    if name is None or resource_group is None:
        return None
    return Cluster(name=name, resource_group=resource_group, kubernetes_version=version, system_pool=system_pool,
                   access=access, tier=tier, upgrades=upgrades, api_server=api_server)


def _check_version_against_channel(c: _Checker, path: str, version: str | None, channel: UpgradeChannel) -> None:
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


def _parse_access(c: _Checker, value: Any, path: str) -> Access | None:
    raw = c.mapping(value, path, ACCESS_KEYS)
    if raw is None:
        return None
    groups: list[str] = []
    admin_groups = raw.get("adminGroups")
    if admin_groups is not None and not isinstance(admin_groups, list):
        c.add(f"{path}.adminGroups", f"expected a list of Entra group object IDs, got {_kind(admin_groups)} "
                                     f"{_show(admin_groups)}")
    for i, group in enumerate(admin_groups if isinstance(admin_groups, list) else []):
        where = f"{path}.adminGroups[{i}]"
        if not isinstance(group, str) or not GUID_RE.match(group):
            c.add(where, f"must be an Entra group's object ID, a GUID such as 0b5e7c1a-2f4d-4e8a-9c3b-6d1f2a7e5b90, "
                         f"got {_show(group)}; find it with `az ad group show --group <name> --query id -o tsv`")
        elif group.lower() in groups:
            c.add(where, f"group {group} is listed twice")
        else:
            groups.append(group.lower())
    grant = _optional(raw, "grantDeployer", lambda v: c.boolean(v, f"{path}.grantDeployer"), True)
    return Access(admin_groups=tuple(groups), grant_deployer=grant)


def _parse_upgrades(c: _Checker, value: Any, path: str) -> ClusterUpgrades | None:
    raw = c.mapping(value, path, CLUSTER_UPGRADES_KEYS)
    if raw is None:
        return None
    default = ClusterUpgrades()
    channel = _optional(raw, "channel", lambda v: c.choice(v, f"{path}.channel", UpgradeChannel), default.channel)
    node_os = _optional(raw, "nodeOs", lambda v: c.choice(v, f"{path}.nodeOs", NodeOsChannel), default.node_os)
    window = _optional(raw, "window", lambda v: _parse_window(c, v, f"{path}.window"), default.window)
    if channel is UpgradeChannel.NODE_IMAGE and node_os is not NodeOsChannel.NODE_IMAGE:
        # AKS: with the node-image upgrade channel, the node OS channel is NodeImage and cannot be set otherwise.
        c.add(f"{path}.nodeOs", f"channel node-image upgrades node images itself, so nodeOs must be NodeImage, got "
                                f"{node_os.value!r}; use channel patch (or stable) with nodeOs {node_os.value}")
    return ClusterUpgrades(channel=channel, node_os=node_os, window=window)


def _parse_window(c: _Checker, value: Any, path: str) -> MaintenanceWindow | None:
    raw = c.mapping(value, path, WINDOW_KEYS)
    if raw is None:
        return None
    default = MaintenanceWindow()
    day = _optional(raw, "day", lambda v: c.choice(v, f"{path}.day", WeekDay), default.day)
    start = raw.get("start", default.start)
    if isinstance(start, int) and not isinstance(start, bool):
        # YAML 1.1 (PyYAML, hence `plan`) reads an unquoted 22:30 as the base-60 number 1350.
        c.add(f"{path}.start",
              f"YAML reads an unquoted time as a number (here {start}); quote it, e.g. start: \"02:00\"")
        start = default.start
    else:
        start = c.string(start, f"{path}.start", WINDOW_START_RE,
                         "must be a UTC time \"HH:MM\" from \"00:00\" to \"23:59\"") or default.start
    hours = _optional(raw, "hours", lambda v: c.integer(v, f"{path}.hours", MIN_WINDOW_HOURS, MAX_WINDOW_HOURS,
                                                         " (AKS maintenance windows last 4 to 24 hours)"),
                      default.hours)
    return MaintenanceWindow(day=day, start=start, hours=hours)


def _parse_api_server(c: _Checker, value: Any, path: str) -> ApiServer | None:
    raw = c.mapping(value, path, API_SERVER_KEYS)
    if raw is None:
        return None
    ranges = raw.get("authorizedIpRanges")
    where = f"{path}.authorizedIpRanges"
    if ranges is None:
        return ApiServer()
    if not isinstance(ranges, list):
        c.add(where, f"expected a list of CIDRs such as [\"203.0.113.0/24\"], got {_kind(ranges)} {_show(ranges)}")
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
    return ApiServer(authorized_ip_ranges=tuple(cidrs))


def _cidr(c: _Checker, value: Any, path: str) -> str | None:
    if not isinstance(value, str) or "/" not in value:
        fix = f"; for one address write {value}/32" if isinstance(value, str) and _is_address(value) else ""
        c.add(path, f"must be a CIDR such as 203.0.113.0/24, got {_show(value)}{fix}")
        return None
    try:
        interface = ipaddress.ip_interface(value)
    except ValueError:
        c.add(path, f"must be a CIDR such as 203.0.113.0/24, got {_show(value)}")
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


def _parse_system_pool(c: _Checker, value: Any, path: str) -> SystemPool | None:
    raw = c.mapping(value, path, SYSTEM_POOL_KEYS)
    if raw is None:
        return None
    default = SystemPool()
    vm_size = _optional(raw, "vmSize", lambda v: c.string(v, f"{path}.vmSize", VM_SIZE_RE,
                                                           "must be an Azure VM size such as Standard_D4ds_v5"),
                        default.vm_size)
    if catalog.find_vm_size(vm_size):
        c.add(f"{path}.vmSize", f"{vm_size} is a GPU size; the system pool runs cluster add-ons only, so use a "
                                f"general-purpose size such as {default.vm_size} and put GPUs in {POOLS_KEY}")
    count = _optional(raw, "count", lambda v: c.integer(v, f"{path}.count", 1, MAX_POOL_NODES,
                                                         " (a system pool needs at least one node)"), default.count)
    return SystemPool(vm_size=vm_size, count=count)


def _parse_operator(c: _Checker, value: Any) -> Operator:
    path = OPERATOR_KEY
    default = Operator()
    if value is None:
        return default
    raw = c.mapping(value, path, OPERATOR_KEYS)
    if raw is None:
        return default
    chart_version = _optional(
        raw, "chartVersion",
        lambda v: c.string(v if not isinstance(v, (int, float)) else str(v), f"{path}.chartVersion", CHART_VERSION_RE,
                           f"must be a released GPU Operator chart version such as {default.chart_version} "
                           f"(v<year>.<month>.<patch>, with the leading v)"),
        default.chart_version,
    )
    if chart_version not in VERIFIED_CHART_VERSIONS:
        c.add(f"{path}.chartVersion",
              f"gpushare has not verified the chart values it sets against GPU Operator chart {chart_version} "
              f"(Helm ignores a value path a chart does not have, silently); allowed: "
              f"{', '.join(VERIFIED_CHART_VERSIONS)}")
    return Operator(
        chart_version=chart_version,
        driver=_optional(raw, "driver", lambda v: c.choice(v, f"{path}.driver", DriverOwner), default.driver),
        mig_strategy=_optional(raw, "migStrategy", lambda v: c.choice(v, f"{path}.migStrategy", MigStrategy),
                               default.mig_strategy),
    )


def _parse_vm_size(c: _Checker, value: Any, path: str) -> catalog.VmSize | None:
    if not isinstance(value, str):
        c.add(path, f"expected a VM size name such as Standard_NC4as_T4_v3, got {_kind(value)} {_show(value)}")
        return None
    size = catalog.find_vm_size(value)
    if size is None and catalog.non_gpu_family(value):
        names = ", ".join(s.name for s in catalog.current_gpu_sizes())
        c.add(path, f"{_show(value)} is not a GPU size: Azure's {catalog.non_gpu_family(value)} family has no GPUs "
                    f"(GPU sizes are N-series: NC, ND); allowed: {names}")
        return None
    if size is None:
        close = catalog.closest_vm_sizes(value)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        names = ", ".join(s.name for s in catalog.current_gpu_sizes())
        c.add(path, f"{_show(value)} is not a GPU size gpushare knows{hint}; allowed: {names}")
        return None
    if size.retired_on:
        c.add(path, f"{size.name} ({size.series}, {size.gpu.display_name}) was retired on {size.retired_on:%Y-%m-%d} "
                    f"and can no longer be deployed; use {size.replacement}")
        return None
    return size


MIG_SLICE_RE = re.compile(r"^(?:mig[-_ ]?)?(?P<slices>[1-7])g(?:[.-]\d+gb)?$", re.IGNORECASE)
"""What people write for a MIG profile instead of AKS's name: a slice (`1g.12gb`), `mig-1g.10gb`, `1g`."""


def _parse_mig(c: _Checker, value: Any, path: str, vm_size: catalog.VmSize | None) -> catalog.MigProfile | None:
    written = MIG_SLICE_RE.match(value) if isinstance(value, str) else None
    profile = next((p for p in catalog.MigProfile if written and p.compute_slices == int(written["slices"])), None)
    if profile is None or value.lower() == profile.value.lower():
        return c.choice(value, path, catalog.MigProfile)  # the profile name itself, in any case, or something else
    builds = (f" (on {vm_size.name} it builds {vm_size.mig_slice(profile)} slices)"
              if vm_size and vm_size.mig_capable else "")
    c.add(path, f"unknown value {_show(value)}: `mig` takes the AKS MIG profile name, not a slice name; write "
                f"{profile.value!r}{builds}; allowed: {', '.join(p.value for p in catalog.MigProfile)}")
    return None


def _parse_sharing(c: _Checker, value: Any, path: str) -> Sharing | None:
    raw = c.mapping(value, path, SHARING_KEYS)
    if raw is None:
        return None
    strategy = replicas = None
    if "strategy" not in raw:
        c.add(f"{path}.strategy", f"required: one of {', '.join(s.value for s in SharingStrategy)}")
    else:
        strategy = c.choice(raw["strategy"], f"{path}.strategy", SharingStrategy)
    if "replicas" not in raw:
        c.add(f"{path}.replicas", "required: how many pods share each GPU (2 or more)")
    else:
        replicas = c.integer(raw["replicas"], f"{path}.replicas", 2, None,
                             " (the device plugin rejects 1; drop `sharing` for whole GPUs)")
    rename = _optional(raw, "renameByDefault", lambda v: c.boolean(v, f"{path}.renameByDefault"), True)
    fail = _optional(raw, "failRequestsGreaterThanOne",
                     lambda v: c.boolean(v, f"{path}.failRequestsGreaterThanOne"), True)
    if strategy is None or replicas is None:
        return None
    return Sharing(strategy=strategy, replicas=replicas, rename_by_default=rename, fail_requests_greater_than_one=fail)


def _parse_autoscale(c: _Checker, value: Any, path: str) -> Autoscale | None:
    raw = c.mapping(value, path, AUTOSCALE_KEYS)
    if raw is None:
        return None
    bounds = {}
    for key, minimum in (("min", 0), ("max", 1)):
        if key not in raw:
            c.add(f"{path}.{key}", f"required: the {'fewest' if key == 'min' else 'most'} nodes the autoscaler keeps")
        else:
            why = " (an autoscaled pool that may never have a node is a pool with `count: 0`)" if key == "max" else ""
            bounds[key] = c.integer(raw[key], f"{path}.{key}", minimum, MAX_POOL_NODES, why)
    low, high = bounds.get("min"), bounds.get("max")
    if low is None or high is None:
        return None
    if low > high:
        c.add(path, f"min ({low}) is greater than max ({high}); set min <= max")
        return None
    return Autoscale(min=low, max=high)


def _parse_upgrade_value(c: _Checker, value: Any, path: str) -> str | None:
    """AKS's form: a whole number of nodes or a percentage of the pool's nodes; YAML numbers become strings."""
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    match = UPGRADE_VALUE_RE.match(text) if isinstance(text, str) else None
    limit = 100 if match and match.group(2) else MAX_POOL_NODES
    if match is None or int(match.group(1)) > limit:
        c.add(path, f"expected a number of nodes (0-{MAX_POOL_NODES}) or a percentage of the pool's nodes "
                    f"(0%-100%), as AKS takes them, got {_kind(value)} {_show(value)}; e.g. 1 or \"33%\"")
        return None
    return f"{int(match.group(1))}{match.group(2)}"


def _parse_upgrade(c: _Checker, value: Any, path: str) -> Upgrade | None:
    raw = c.mapping(value, path, UPGRADE_KEYS)
    if raw is None:
        return None
    default = Upgrade()
    surge = _optional(raw, "maxSurge", lambda v: _parse_upgrade_value(c, v, f"{path}.maxSurge"), default.max_surge)
    unavailable = _optional(raw, "maxUnavailable", lambda v: _parse_upgrade_value(c, v, f"{path}.maxUnavailable"),
                            default.max_unavailable)
    if surge.rstrip("%") == "0" and unavailable.rstrip("%") == "0":
        c.add(path, f"maxSurge {surge} and maxUnavailable {unavailable} would upgrade no node at a time (AKS "
                    f"refuses it); allowed: at least one above 0. The default maxSurge 0, maxUnavailable 1 replaces "
                    f"one node at a time without an extra VM")
        return None
    return Upgrade(max_surge=surge, max_unavailable=unavailable)


def _parse_zones(c: _Checker, value: Any, path: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        c.add(path, f"expected a list of availability zones such as [\"1\", \"2\"], got {_kind(value)} {_show(value)}")
        return ()
    zones = []
    for i, zone in enumerate(value):
        # YAML reads `[1, 2]` as numbers; the intent is clear, so take them as the zone names.
        name = str(zone) if isinstance(zone, int) and not isinstance(zone, bool) else zone
        if name not in ZONES:
            c.add(f"{path}[{i}]", f"unknown availability zone {_show(zone)}; allowed: {', '.join(ZONES)}")
        elif name in zones:
            c.add(f"{path}[{i}]", f"zone {name} is listed twice")
        else:
            zones.append(name)
    # Sorted: Pulumi compares lists in order, so ["2", "1"] against a pool deployed with ["1", "2"] would plan a
    # replace (availabilityZones is create-only) for the same zones.
    return tuple(sorted(zones))


def _parse_pool(c: _Checker, value: Any, path: str, operator: Operator) -> GpuPool | None:
    raw = c.mapping(value, path, POOL_KEYS, children={"autoscale": AUTOSCALE_KEYS, "sharing": SHARING_KEYS})
    if raw is None:
        return None
    for nested, keys in (("autoscale", AUTOSCALE_KEYS), ("sharing", SHARING_KEYS)):
        if nested in raw and raw[nested] is None:
            # `sharing:` with its keys not indented under it: YAML reads it as null and the keys as the pool's.
            c.add(f"{path}.{nested}", f"is empty (YAML reads `{nested}:` with nothing indented under it as null); "
                                      f"indent {', '.join(keys[:2])} under it, or remove `{nested}:`")
    name = vm_size = None
    if "name" not in raw:
        c.add(f"{path}.name", "required: the AKS node pool name (lowercase letters and digits, at most 12)")
    else:
        name = c.string(raw["name"], f"{path}.name", POOL_NAME_RE,
                        "must be 1-12 lowercase letters or digits, starting with a letter (AKS agent pool name rule)")
        if name == SYSTEM_POOL_NAME:
            c.add(f"{path}.name", f"{SYSTEM_POOL_NAME!r} is the cluster's system pool; choose another name")
            name = None
    if "vmSize" not in raw:
        c.add(f"{path}.vmSize", "required: a GPU VM size such as Standard_NC4as_T4_v3")
    else:
        vm_size = _parse_vm_size(c, raw["vmSize"], f"{path}.vmSize")

    mig = _optional(raw, "mig", lambda v: _parse_mig(c, v, f"{path}.mig", vm_size), None)
    if mig and vm_size and not vm_size.mig_capable:
        mig_sizes = ", ".join(s.name for s in catalog.mig_capable_sizes())
        c.add(f"{path}.mig", f"{vm_size.name} ({vm_size.gpu.display_name}) does not support MIG; remove `mig` "
                             f"or use a MIG-capable size: {mig_sizes}")
        mig = None

    if mig and operator.driver is DriverOwner.OPERATOR:
        # AKS partitions a MIG pool at node creation with its own driver's nvidia-smi, which `gpuProfile.driver=None`
        # skips, and gpushare keeps the operator's MIG manager off: the GPUs would stay unpartitioned.
        c.add(f"{path}.mig", f"MIG pools need AKS's driver to be partitioned at creation, but "
                             f"{OPERATOR_KEY}.driver is operator; use driver: aks, or drop `mig` from this pool")
    sharing = _optional(raw, "sharing", lambda v: _parse_sharing(c, v, f"{path}.sharing"), None)
    if sharing and sharing.strategy is SharingStrategy.MPS:
        if raw.get("mig") is not None:
            c.add(f"{path}.sharing.strategy", "mps cannot run on MIG devices (the device plugin refuses it); "
                                              "use time-slicing on a MIG pool, or mps on a pool without `mig`")
        if operator.mig_strategy is MigStrategy.MIXED:
            c.add(f"{path}.sharing.strategy",
                  f"mps cannot be used while {OPERATOR_KEY}.migStrategy is mixed (the device plugin refuses to start "
                  f"with MPS under mixed); use time-slicing, or migStrategy: single")
        if vm_size and sharing.replicas > vm_size.gpu.mps_max_clients:
            c.add(f"{path}.sharing.replicas",
                  f"must be from 2 to {vm_size.gpu.mps_max_clients} for mps on {vm_size.gpu.display_name} "
                  f"(the MPS daemon's client limit per GPU), got {sharing.replicas}")

    count = _optional(raw, "count", lambda v: c.integer(v, f"{path}.count", 0, MAX_POOL_NODES), None)
    autoscale = _optional(raw, "autoscale", lambda v: _parse_autoscale(c, v, f"{path}.autoscale"), None)
    if "count" in raw and "autoscale" in raw:
        c.add(path, "set either `count` (fixed size) or `autoscale: {min, max}`, not both")
    zones = _optional(raw, "zones", lambda v: _parse_zones(c, v, f"{path}.zones"), ())
    os_sku = _optional(raw, "osSku", lambda v: c.choice(v, f"{path}.osSku", OsSku), OsSku.UBUNTU)
    if os_sku is OsSku.AZURE_LINUX and operator.driver is DriverOwner.OPERATOR:
        # NVIDIA publishes GPU Operator driver containers for Ubuntu, RHEL/RHCOS and Rocky Linux only (GPU Operator
        # platform support); NVIDIA/gpu-driver-container's azurelinux image is marked experimental, "not recommended
        # for any workloads other than testing". With `gpuProfile.driver=None` the node would get no driver at all.
        c.add(f"{path}.osSku", f"AzureLinux GPU nodes cannot get their driver from the GPU Operator "
                               f"({OPERATOR_KEY}.driver is operator): NVIDIA ships its driver containers for Ubuntu, "
                               f"RHEL and Rocky Linux only; use osSku: Ubuntu, or driver: aks (AKS installs the driver "
                               f"on AzureLinux)")
    recreate = _optional(raw, "recreate", lambda v: c.boolean(v, f"{path}.recreate"), False)
    upgrade = _optional(raw, "upgrade", lambda v: _parse_upgrade(c, v, f"{path}.upgrade"), Upgrade())
    if vm_size is None:
        return None
    pool = GpuPool(
        name=name or "", vm_size=vm_size, mig=mig, sharing=sharing,
        count=None if autoscale else (DEFAULT_POOL_COUNT if count is None else count),
        autoscale=autoscale, zones=zones, os_sku=os_sku, recreate=recreate, upgrade=upgrade,
    )
    if problem := scale_from_zero_problem(pool, operator.mig_strategy):
        c.add(f"{path}.autoscale.min", problem)
    return pool if name is not None else None


def _parse_pools(c: _Checker, value: Any, operator: Operator) -> tuple[GpuPool, ...]:
    example = "e.g.\n      gpushare:pools:\n        - {name: t4, vmSize: Standard_NC4as_T4_v3}"
    if value is None:
        c.add(POOLS_KEY, f"required: at least one GPU pool, {example}")
        return ()
    if not isinstance(value, list) or not value:
        c.add(POOLS_KEY, f"expected a list of at least one GPU pool, got {_kind(value)} {_show(value)}; {example}")
        return ()
    pools = []
    seen: dict[str, int] = {}
    first: tuple[int, GpuPool] | None = None
    for i, item in enumerate(value):
        pool = _parse_pool(c, item, f"{POOLS_KEY}[{i}]", operator)
        # Checked on the raw name, so a repeated name shows up even when the pool has other problems.
        name = item.get("name") if isinstance(item, dict) else None
        if isinstance(name, str) and name in seen:
            c.add(f"{POOLS_KEY}[{i}].name", f"pool name {name!r} is already used by {POOLS_KEY}[{seen[name]}]; "
                                           f"pool names must be unique")
            continue
        if isinstance(name, str):
            seen[name] = i
        if pool is None:
            continue
        if first is None:
            first = (i, pool)
        elif pool.os_sku is not first[1].os_sku:
            # Microsoft: the GPU Operator "is not compatible with multiple OS versions on the same AKS cluster".
            c.add(f"{POOLS_KEY}[{i}].osSku",
                  f"the NVIDIA GPU Operator does not support GPU nodes on different OSes in one cluster, got "
                  f"{pool.os_sku.value} while {POOLS_KEY}[{first[0]}] ({first[1].name}) uses "
                  f"{first[1].os_sku.value}; use one osSku for every GPU pool")
        pools.append(pool)
    return tuple(pools)


def _parse_tenant_quota(c: _Checker, value: Any, path: str,
                        advertised: dict[str, list[str]]) -> tuple[tuple[str, int], ...]:
    """`advertised`: resource -> the tenant's pools advertising it (empty when a pool reference failed)."""
    if not isinstance(value, dict):
        c.add(path, f"expected a mapping of advertised resource to units, e.g. {{nvidia.com/gpu: 4}}, "
                    f"got {_kind(value)} {_show(value)}")
        return ()
    offered = ", ".join(f"{resource} ({', '.join(pools)})" for resource, pools in sorted(advertised.items()))
    quota = []
    for key, units in value.items():
        key_path = f"{path}.{key}"
        resource = str(key)
        if resource.startswith(("requests.", "limits.")):
            c.add(key_path, f"write the resource name only, got {resource!r}; write "
                            f"{resource.split('.', 1)[1]!r} (gpushare adds the quota's requests. prefix)")
            continue
        if advertised and resource not in advertised:
            c.add(key_path, f"none of this tenant's pools advertises {resource}"
                            f"{_did_you_mean(resource, list(advertised))}; they advertise: {offered}")
            continue
        if c.integer(units, key_path, 1, None, " (a quota of 0 would forbid the tenant's GPU pods; drop the key "
                                                "for no limit)") is not None:
            quota.append((resource, units))
    return tuple(quota)


def _parse_tenant(c: _Checker, value: Any, path: str, pool_names: list[str],
                  pools: tuple[GpuPool, ...], operator: Operator) -> Tenant | None:
    raw = c.mapping(value, path, TENANT_KEYS)
    if raw is None:
        return None
    name = None
    if "name" not in raw:
        c.add(f"{path}.name", "required: the team's namespace (a DNS-1123 label such as `vision`)")
    elif not isinstance(raw["name"], str):
        c.add(f"{path}.name", f"expected a namespace name, got {_kind(raw['name'])} {_show(raw['name'])}")
    else:
        problem = namespace_problem(raw["name"])
        if problem:
            c.add(f"{path}.name", problem)
        else:
            name = raw["name"]
    tenant_pools: list[str] = []
    references_ok = True
    value_pools = raw.get("pools")
    if value_pools is None:
        c.add(f"{path}.pools", f"required: the GPU pools its pods may use, from: {', '.join(pool_names)}")
        references_ok = False
    elif not isinstance(value_pools, list) or not value_pools:
        c.add(f"{path}.pools", f"expected a list of at least one pool name, got {_kind(value_pools)} "
                               f"{_show(value_pools)}; pools: {', '.join(pool_names)}")
        references_ok = False
    else:
        for i, pool in enumerate(value_pools):
            if pool not in pool_names:
                c.add(f"{path}.pools[{i}]", f"unknown pool {_show(pool)}{_did_you_mean(str(pool), pool_names)}; "
                                            f"pools in {POOLS_KEY}: {', '.join(pool_names)}")
                references_ok = False
            elif pool in tenant_pools:
                c.add(f"{path}.pools[{i}]", f"pool {pool!r} is listed twice")
            else:
                tenant_pools.append(pool)
    by_name = {pool.name: pool for pool in pools}
    advertised: dict[str, list[str]] = {}
    if references_ok and all(p in by_name for p in tenant_pools):
        for pool_name in tenant_pools:
            resource = pool_capacity(by_name[pool_name], operator.mig_strategy).resource
            advertised.setdefault(resource, []).append(pool_name)
    quota = _optional(raw, "quota", lambda v: _parse_tenant_quota(c, v, f"{path}.quota", advertised), ())
    groups = _optional(raw, "groups", lambda v: _parse_groups(c, v, f"{path}.groups"), ())
    guaranteed = _optional(raw, "guaranteed", lambda v: c.boolean(v, f"{path}.guaranteed"), True)
    if name is None or not tenant_pools or not references_ok:
        return None
    return Tenant(name=name, pools=tuple(tenant_pools), quota=quota, groups=groups, guaranteed=guaranteed)


def _parse_groups(c: _Checker, value: Any, path: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        c.add(path, f"expected a list of Entra ID group object IDs, got {_kind(value)} {_show(value)}")
        return ()
    groups = []
    for i, group in enumerate(value):
        if not isinstance(group, str) or not GUID_RE.match(group):
            c.add(f"{path}[{i}]", f"expected an Entra ID group object ID (a GUID such as "
                                  f"00000000-0000-0000-0000-000000000000), got {_show(group)}; "
                                  f"`az ad group show --group NAME --query id -o tsv` prints it")
        elif group.lower() in groups:
            c.add(f"{path}[{i}]", f"group {group} is listed twice")
        else:
            groups.append(group.lower())
    return tuple(groups)


def _parse_tenants(c: _Checker, value: Any, raw_pools: Any, pools: tuple[GpuPool, ...], operator: Operator,
                   cluster: Cluster | None) -> tuple[Tenant, ...]:
    example = "e.g.\n      gpushare:tenants:\n        - {name: vision, pools: [t4]}"
    if not isinstance(value, list):
        c.add(TENANTS_KEY, f"expected a list of tenants, got {_kind(value)} {_show(value)}; {example}")
        return ()
    # Pool names as written, so a pool with its own problems is not reported again as unknown here.
    pool_names = [p["name"] for p in raw_pools if isinstance(p, dict) and isinstance(p.get("name"), str)] \
        if isinstance(raw_pools, list) else []
    tenants = []
    seen: dict[str, int] = {}
    for i, item in enumerate(value):
        path = f"{TENANTS_KEY}[{i}]"
        tenant = _parse_tenant(c, item, path, pool_names, pools, operator)
        name = item.get("name") if isinstance(item, dict) else None
        if isinstance(name, str) and name in seen:
            c.add(f"{path}.name", f"tenant {name!r} is already defined by {TENANTS_KEY}[{seen[name]}]; "
                                  f"each namespace belongs to one tenant")
            continue
        if isinstance(name, str):
            seen[name] = i
        if tenant is not None:
            tenants.append(tenant)
    if value and cluster is not None:
        problem = kubernetes_version_problem(cluster.kubernetes_version)
        if problem:
            c.add(f"{CLUSTER_KEY}.kubernetesVersion", problem)
    return tuple(tenants)


def _parse_guard_mode(c: _Checker, value: Any) -> GuardMode | None:
    if isinstance(value, bool):
        # YAML 1.1 reads unquoted off/no/false as false and on/yes/true as true.
        c.add(GUARD_KEY, f"YAML reads an unquoted {'on, yes or true' if value else 'off, no or false'} as the "
                         f"boolean {str(value).lower()}, got {str(value).lower()}; the guard cannot be switched off: "
                         f"write `{GUARD_KEY}: strict` or `{GUARD_KEY}: warn` (quote a value that YAML would read "
                         f"as a boolean)")
        return None
    return c.choice(value, GUARD_KEY, GuardMode)


def _check_region_cloud(c: _Checker, location: str, environment: AzureEnvironment, explicit: bool) -> None:
    """A region exists in one cloud only: the provider, the guard and preflight all talk to the cloud that
    `azure-native:environment` names, where any other cloud's region is unknown."""
    if not location:
        return
    cloud = next((name for name, names in regions.SOVEREIGN_REGIONS.items() if location in names),
                 AzureEnvironment.PUBLIC.value)
    if cloud == environment.value:
        return
    setting = f"{ENVIRONMENT_KEY} is {environment.value}" if explicit else f"{ENVIRONMENT_KEY} is not set (public)"
    c.add(LOCATION_KEY, f"{location} is a region of the {cloud} cloud, but {setting}; set `{ENVIRONMENT_KEY}: "
                        f"{cloud}`, or use a region of the {environment.value} cloud")


def _parse_preflight_mode(c: _Checker, value: Any) -> PreflightMode | None:
    # YAML 1.1 (PyYAML, so `plan` and `preflight`) reads an unquoted `off` as false; the Pulumi CLI's YAML 1.2 keeps
    # the string. Both mean off; an unquoted on/yes/true names no mode.
    if value is False:
        return PreflightMode.OFF
    if value is True:
        c.add(PREFLIGHT_KEY, "YAML reads an unquoted on, yes or true as the boolean true, which names no mode; "
                             f"write `{PREFLIGHT_KEY}: strict` or `{PREFLIGHT_KEY}: warn`")
        return None
    return c.choice(value, PREFLIGHT_KEY, PreflightMode)


def parse_config(raw: dict[str, Any], *, source: str, stack: str,
                 file_problems: tuple[ConfigProblem, ...] = ()) -> StackConfig:
    """Validate decoded config (`{"gpushare:pools": [...], ...}`) and build the stack, or raise `ConfigError`.

    `file_problems` are those already found in the stack file around `config:`, reported together with these.
    """
    c = _Checker()
    c.problems.extend(file_problems)
    secret_keys = set()
    for key, value in raw.items():
        if ":" not in key:
            c.add(key, f"config keys need a namespace{_closest_namespaced_key(key)}")
        elif key.startswith(f"{NS}:") and key not in PROJECT_KEYS:
            c.add(key, f"unknown key{_did_you_mean(key, PROJECT_KEYS)}; allowed: {', '.join(PROJECT_KEYS)}")
        elif key.startswith(f"{NS}:") and isinstance(value, dict) and set(value) == {"secure"}:
            c.add(key, "must not be a secret: gpushare settings are shown in plans and previews")
            secret_keys.add(key)
    reported = len(c.problems)
    location = _parse_location(c, raw)
    cluster = _parse_cluster(c, raw.get(CLUSTER_KEY))
    operator = _parse_operator(c, raw.get(OPERATOR_KEY))
    pools = _parse_pools(c, raw.get(POOLS_KEY), operator)
    guard = _optional(raw, GUARD_KEY, lambda v: _parse_guard_mode(c, v), GuardMode.STRICT)
    tenants = _optional(raw, TENANTS_KEY,
                        lambda v: _parse_tenants(c, v, raw.get(POOLS_KEY), pools, operator, cluster), ())
    preflight = _optional(raw, PREFLIGHT_KEY, lambda v: _parse_preflight_mode(c, v), PreflightMode.STRICT)
    azure = _parse_azure(c, raw)
    _check_region_cloud(c, location, azure.environment, ENVIRONMENT_KEY in raw)
    # A secret section is reported once above; what parsing its ciphertext found would point at the wrong fix.
    c.problems[reported:] = [p for p in c.problems[reported:]
                             if not any(p.path == key or p.path.startswith(f"{key}.") for key in secret_keys)]
    if c.problems:
        raise ConfigError(source, c.problems)
    assert cluster is not None  # any path that leaves it None recorded a problem
    return StackConfig(source=source, stack=stack, location=location, cluster=cluster, operator=operator,
                       pools=pools, guard=guard, preflight=preflight, azure=azure, tenants=tenants)


def decode_engine_config(values: dict[str, str]) -> dict[str, Any]:
    """Config as the Pulumi engine hands it to the program (objects JSON-encoded strings) -> Python values."""
    decoded: dict[str, Any] = {}
    for key, value in values.items():
        try:
            decoded[key] = json.loads(value) if key.startswith(f"{NS}:") else value
        except (TypeError, json.JSONDecodeError):
            decoded[key] = value
    return decoded


def encode_engine_config(raw: dict[str, Any]) -> dict[str, str]:
    """The inverse: what the Pulumi CLI passes the program for a stack file's `config:` mapping."""
    return {key: value if isinstance(value, str) else json.dumps(value) for key, value in raw.items()}


def stack_name_for(path: Path) -> str:
    """`stacks/Pulumi.prod.yaml` -> `prod`; any other file name -> its stem."""
    name = path.name
    for suffix in (".yaml", ".yml"):
        if name.startswith("Pulumi.") and name.endswith(suffix):
            return name[len("Pulumi."):-len(suffix)]
    return path.stem


@dataclass(frozen=True)
class StackFile:
    """A stack file's `config:` mapping, with the problems found in the file around it."""

    path: Path
    config: dict[str, Any]
    problems: tuple[ConfigProblem, ...] = ()


class _StrictLoader(yaml.SafeLoader):
    """Refuses a key given twice in one mapping: plain YAML keeps the last one, silently."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                mark = key_node.start_mark
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}; keep one (YAML silently keeps the last)", mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_stack_file(path: Path) -> StackFile:
    """Read a stack file. Raises `ConfigError` naming the file when there is no `config:` mapping to validate."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(source, [ConfigProblem("(file)", "no such stack file")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, [ConfigProblem("(file)", f"cannot be read: {exc}")]) from None
    try:
        document = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(file)"
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(source, [ConfigProblem(where, f"not valid YAML: {problem}")]) from None
    document = document if isinstance(document, dict) else {}
    problems = [ConfigProblem(str(key), f"unknown top-level key{_did_you_mean(str(key), STACK_FILE_KEYS)}; "
                                        f"gpushare settings go under `config:`")
                for key in document if key not in STACK_FILE_KEYS]
    if not isinstance(document.get("config"), dict):
        problems.append(ConfigProblem(
            "config", "a stack file is a YAML mapping with a `config:` mapping, e.g.\n"
                      "      config:\n        azure-native:location: westeurope\n"
                      "        gpushare:cluster: {name: my-cluster}\n        gpushare:pools: [...]"))
        raise ConfigError(source, problems)
    return StackFile(path=path, config={str(k): v for k, v in document["config"].items()}, problems=tuple(problems))


def parse_stack_file(stack_file: StackFile) -> StackConfig:
    return parse_config(stack_file.config, source=str(stack_file.path), stack=stack_name_for(stack_file.path),
                        file_problems=stack_file.problems)


def load_stack_file(path: Path) -> StackConfig:
    return parse_stack_file(read_stack_file(path))
