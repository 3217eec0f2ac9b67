"""`gpushare:pools`: the GPU node pools, their VM sizes, MIG profiles, sharing, scaling, zones and upgrades."""

from __future__ import annotations

import re
from typing import Any

from gpushare.sharing.autoscaling import scale_from_zero_problem
from gpushare.stackfile import catalog
from gpushare.stackfile.checks import MAX_POOL_NODES, Checker, kind_of, optional, show
from gpushare.stackfile.keys import OPERATOR_KEY, POOLS_KEY
from gpushare.stackfile.model import (
    DEFAULT_POOL_COUNT,
    SYSTEM_POOL_NAME,
    Autoscale,
    DriverOwner,
    GpuPool,
    MigStrategy,
    Operator,
    OsSku,
    Sharing,
    SharingStrategy,
    Upgrade,
)
from gpushare.stackfile.network_config import parse_subnet_id

POOL_KEYS = ("name", "vmSize", "mig", "sharing", "count", "autoscale", "zones", "osSku", "recreate", "upgrade",
             "subnetId")
SHARING_KEYS = ("strategy", "replicas", "renameByDefault", "failRequestsGreaterThanOne")
AUTOSCALE_KEYS = ("min", "max")
UPGRADE_KEYS = ("maxSurge", "maxUnavailable")
UPGRADE_VALUE_RE = re.compile(r"^(\d+)(%?)$")
POOL_NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,11}$")
ZONES = ("1", "2", "3")


def _parse_vm_size(c: Checker, value: Any, path: str) -> catalog.VmSize | None:
    if not isinstance(value, str):
        c.add(path, f"expected a VM size name such as Standard_NC4as_T4_v3, got {kind_of(value)} {show(value)}")
        return None
    size = catalog.find_vm_size(value)
    if size is None and catalog.non_gpu_family(value):
        names = ", ".join(s.name for s in catalog.current_gpu_sizes())
        c.add(path, f"{show(value)} is not a GPU size: Azure's {catalog.non_gpu_family(value)} family has no GPUs "
                    f"(GPU sizes are N-series: NC, ND); allowed: {names}")
        return None
    if size is None:
        close = catalog.closest_vm_sizes(value)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        names = ", ".join(s.name for s in catalog.current_gpu_sizes())
        c.add(path, f"{show(value)} is not a GPU size gpushare knows{hint}; allowed: {names}")
        return None
    if size.retired_on:
        c.add(path, f"{size.name} ({size.series}, {size.gpu.display_name}) was retired on {size.retired_on:%Y-%m-%d} "
                    f"and can no longer be deployed; use {size.replacement}")
        return None
    return size


MIG_SLICE_RE = re.compile(r"^(?:mig[-_ ]?)?(?P<slices>[1-7])g(?:[.-]\d+gb)?$", re.IGNORECASE)
"""What people write for a MIG profile instead of AKS's name: a slice (`1g.12gb`), `mig-1g.10gb`, `1g`."""


def _parse_mig(c: Checker, value: Any, path: str, vm_size: catalog.VmSize | None) -> catalog.MigProfile | None:
    written = MIG_SLICE_RE.match(value) if isinstance(value, str) else None
    profile = next((p for p in catalog.MigProfile if written and p.compute_slices == int(written["slices"])), None)
    if profile is None or value.lower() == profile.value.lower():
        return c.choice(value, path, catalog.MigProfile)  # the profile name itself, in any case, or something else
    builds = (f" (on {vm_size.name} it builds {vm_size.mig_slice(profile)} slices)"
              if vm_size and vm_size.mig_capable else "")
    c.add(path, f"unknown value {show(value)}: `mig` takes the AKS MIG profile name, not a slice name; write "
                f"{profile.value!r}{builds}; allowed: {', '.join(p.value for p in catalog.MigProfile)}")
    return None


def _parse_sharing(c: Checker, value: Any, path: str) -> Sharing | None:
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
    rename = optional(raw, "renameByDefault", lambda v: c.boolean(v, f"{path}.renameByDefault"), True)
    fail = optional(raw, "failRequestsGreaterThanOne",
                     lambda v: c.boolean(v, f"{path}.failRequestsGreaterThanOne"), True)
    if strategy is None or replicas is None:
        return None
    return Sharing(strategy=strategy, replicas=replicas, rename_by_default=rename, fail_requests_greater_than_one=fail)


def _parse_autoscale(c: Checker, value: Any, path: str) -> Autoscale | None:
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


def _parse_upgrade_value(c: Checker, value: Any, path: str) -> str | None:
    """AKS's form: a whole number of nodes or a percentage of the pool's nodes; YAML numbers become strings."""
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    match = UPGRADE_VALUE_RE.match(text) if isinstance(text, str) else None
    limit = 100 if match and match.group(2) else MAX_POOL_NODES
    if match is None or int(match.group(1)) > limit:
        c.add(path, f"expected a number of nodes (0-{MAX_POOL_NODES}) or a percentage of the pool's nodes "
                    f"(0%-100%), as AKS takes them, got {kind_of(value)} {show(value)}; e.g. 1 or \"33%\"")
        return None
    return f"{int(match.group(1))}{match.group(2)}"


def _parse_upgrade(c: Checker, value: Any, path: str) -> Upgrade | None:
    raw = c.mapping(value, path, UPGRADE_KEYS)
    if raw is None:
        return None
    default = Upgrade()
    surge = optional(raw, "maxSurge", lambda v: _parse_upgrade_value(c, v, f"{path}.maxSurge"), default.max_surge)
    unavailable = optional(raw, "maxUnavailable", lambda v: _parse_upgrade_value(c, v, f"{path}.maxUnavailable"),
                            default.max_unavailable)
    if surge.rstrip("%") == "0" and unavailable.rstrip("%") == "0":
        c.add(path, f"maxSurge {surge} and maxUnavailable {unavailable} would upgrade no node at a time (AKS "
                    f"refuses it); allowed: at least one above 0. The default maxSurge 0, maxUnavailable 1 replaces "
                    f"one node at a time without an extra VM")
        return None
    return Upgrade(max_surge=surge, max_unavailable=unavailable)


def _parse_zones(c: Checker, value: Any, path: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        c.add(path, f"expected a list of availability zones such as [\"1\", \"2\"], got {kind_of(value)} {show(value)}")
        return ()
    zones = []
    for i, zone in enumerate(value):
        # YAML reads `[1, 2]` as numbers; the intent is clear, so take them as the zone names.
        name = str(zone) if isinstance(zone, int) and not isinstance(zone, bool) else zone
        if name not in ZONES:
            c.add(f"{path}[{i}]", f"unknown availability zone {show(zone)}; allowed: {', '.join(ZONES)}")
        elif name in zones:
            c.add(f"{path}[{i}]", f"zone {name} is listed twice")
        else:
            zones.append(name)
    # Sorted: Pulumi compares lists in order, so ["2", "1"] against a pool deployed with ["1", "2"] would plan a
    # replace (availabilityZones is create-only) for the same zones.
    return tuple(sorted(zones))


def _parse_pool(c: Checker, value: Any, path: str, operator: Operator) -> GpuPool | None:
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

    mig = optional(raw, "mig", lambda v: _parse_mig(c, v, f"{path}.mig", vm_size), None)
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
    sharing = optional(raw, "sharing", lambda v: _parse_sharing(c, v, f"{path}.sharing"), None)
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

    count = optional(raw, "count", lambda v: c.integer(v, f"{path}.count", 0, MAX_POOL_NODES), None)
    autoscale = optional(raw, "autoscale", lambda v: _parse_autoscale(c, v, f"{path}.autoscale"), None)
    if "count" in raw and "autoscale" in raw:
        c.add(path, "set either `count` (fixed size) or `autoscale: {min, max}`, not both")
    zones = optional(raw, "zones", lambda v: _parse_zones(c, v, f"{path}.zones"), ())
    os_sku = optional(raw, "osSku", lambda v: c.choice(v, f"{path}.osSku", OsSku), OsSku.UBUNTU)
    if os_sku is OsSku.AZURE_LINUX and operator.driver is DriverOwner.OPERATOR:
        # NVIDIA publishes GPU Operator driver containers for Ubuntu, RHEL/RHCOS and Rocky Linux only (GPU Operator
        # platform support); NVIDIA/gpu-driver-container's azurelinux image is marked experimental, "not recommended
        # for any workloads other than testing". With `gpuProfile.driver=None` the node would get no driver at all.
        c.add(f"{path}.osSku", f"AzureLinux GPU nodes cannot get their driver from the GPU Operator "
                               f"({OPERATOR_KEY}.driver is operator): NVIDIA ships its driver containers for Ubuntu, "
                               f"RHEL and Rocky Linux only; use osSku: Ubuntu, or driver: aks (AKS installs the driver "
                               f"on AzureLinux)")
    recreate = optional(raw, "recreate", lambda v: c.boolean(v, f"{path}.recreate"), False)
    upgrade = optional(raw, "upgrade", lambda v: _parse_upgrade(c, v, f"{path}.upgrade"), Upgrade())
    subnet = optional(raw, "subnetId", lambda v: parse_subnet_id(c, v, f"{path}.subnetId"), None)
    if vm_size is None:
        return None
    pool = GpuPool(
        name=name or "", vm_size=vm_size, mig=mig, sharing=sharing,
        count=None if autoscale else (DEFAULT_POOL_COUNT if count is None else count),
        autoscale=autoscale, zones=zones, os_sku=os_sku, recreate=recreate, upgrade=upgrade,
        subnet_id=subnet,
    )
    if problem := scale_from_zero_problem(pool, operator.mig_strategy):
        c.add(f"{path}.autoscale.min", problem)
    return pool if name is not None else None


def parse_pools(c: Checker, value: Any, operator: Operator) -> tuple[GpuPool, ...]:
    example = "e.g.\n      gpushare:pools:\n        - {name: t4, vmSize: Standard_NC4as_T4_v3}"
    if value is None:
        c.add(POOLS_KEY, f"required: at least one GPU pool, {example}")
        return ()
    if not isinstance(value, list) or not value:
        c.add(POOLS_KEY, f"expected a list of at least one GPU pool, got {kind_of(value)} {show(value)}; {example}")
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
