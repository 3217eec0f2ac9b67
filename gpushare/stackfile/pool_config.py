"""`gpushare:pools`: the GPU node pools, their VM sizes, MIG profiles, sharing, scaling, zones and upgrades."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from gpushare.model import catalog
from gpushare.model.keys import OPERATOR_KEY, POOLS_KEY
from gpushare.model.stack import (
    AUTOSCALED_RENAME_BY_DEFAULT,
    SPOT_UPGRADE,
    SYSTEM_POOL_NAME,
    Allocation,
    Autoscale,
    DriverOwner,
    GpuPool,
    MigStrategy,
    Operator,
    OsDiskType,
    OsSku,
    Sharing,
    SharingStrategy,
    SpotEviction,
    Upgrade,
)
from gpushare.stackfile.checks import (
    MAX_POOL_NODES,
    Checker,
    SectionValues,
    checked_later,
    kind_of,
    record_name_or_find_earlier,
    show,
)
from gpushare.stackfile.declarations import ARRAY, BOOLEAN, INTEGER, OBJECT, STRING, Field, Section
from gpushare.stackfile.dra_pools import dra_pool_rule
from gpushare.stackfile.network_config import SUBNET_ID_RE, parse_subnet_id
from gpushare.stackfile.pool_settings import (
    GPU,
    MAX_MAX_PODS,
    MIN_MAX_PODS,
    OS_DISK,
    SPOT,
    check_gpu_against_catalog,
    parse_gpu,
    parse_labels,
    parse_os_disk,
    parse_spot,
    parse_tags,
    parse_taints,
)

UPGRADE_VALUE_RE = re.compile(r"^(\d+)(%?)$")
POOL_NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,11}$")
ZONES = ("1", "2", "3")
ANY_CASE_STANDARD_SIZE = "^" + "".join(f"[{ch.upper()}{ch}]" for ch in "standard") + "_[A-Za-z0-9_]+$"
"""An Azure size name in any case (the validator compares sizes case-insensitively), for the schema."""
UPGRADE_VALUE_FORMS = (
    {"type": "integer", "minimum": 0, "maximum": MAX_POOL_NODES},
    {"type": "string", "pattern": rf"^0*([0-9]{{1,{len(str(MAX_POOL_NODES)) - 1}}}|{MAX_POOL_NODES})$"},
)
"""A node count, as a YAML number or a quoted one; a percentage is the field's own `pattern`."""
_UPGRADE = Upgrade()

SHARING = Section((
    Field("strategy", STRING, "time-slicing (no memory isolation) or mps (each client capped at its share of the "
                              "GPU's memory and compute; on MIG pools only with allocation dra, not under "
                              "migStrategy mixed).",
          required=True, enum=SharingStrategy),
    Field("replicas", INTEGER, "How many pods share each GPU (each MIG instance on a MIG pool); MPS at most 48 per "
                               "GPU (16 before compute capability 7.5), the device plugin's limit. On a DRA pool "
                               "with mps: the share of compute and memory each MPS client of a claim's device gets "
                               "(1/replicas).",
          required=True, minimum=2, why=" (the device plugin rejects 1; drop `sharing` for whole GPUs)",
          missing="how many pods share each GPU (2 or more)"),
    Field("renameByDefault", BOOLEAN, "Advertise the shared devices as <resource>.shared (nvidia.com/gpu.shared), "
                                      "so a pod asks for a shared slice by name. The cluster autoscaler counts a "
                                      "GPU node without nvidia.com/gpu unready (kubernetes/autoscaler#8095): true "
                                      "is refused where that could stop it for the whole cluster, and warned about "
                                      "elsewhere when it runs.",
          default_text="false when any pool autoscales, else true"),
    Field("failRequestsGreaterThanOne", BOOLEAN, "Refuse pods asking for more than one shared device (which would "
                                                 "not give them more of the GPU)."),
), model=Sharing)
AUTOSCALE = Section((
    Field("min", INTEGER, "The fewest nodes the autoscaler keeps, 0 included (gpushare's scale-set tags tell "
                          "it what a new node advertises); at most max.",
          required=True, minimum=0, maximum=MAX_POOL_NODES, missing="the fewest nodes the autoscaler keeps"),
    Field("max", INTEGER, "The most nodes the autoscaler adds.", required=True, minimum=1, maximum=MAX_POOL_NODES,
          why=" (an autoscaled pool that may never have a node is a pool with `count: 0`)",
          missing="the most nodes the autoscaler keeps"),
), model=Autoscale)
UPGRADE = Section((
    Field("maxSurge", STRING, "Extra nodes AKS adds during an upgrade: a node count (1) or a percentage of the "
                              "pool's nodes (\"33%\"); not 0 together with maxUnavailable.",
          pattern=re.compile(r"^0*([0-9]{1,2}|100)%$"), also=UPGRADE_VALUE_FORMS),
    Field("maxUnavailable", STRING, "Nodes AKS may take down at once during an upgrade: a node count (1) or a "
                                    "percentage of the pool's nodes (\"33%\").",
          pattern=re.compile(r"^0*([0-9]{1,2}|100)%$"), also=UPGRADE_VALUE_FORMS),
), model=Upgrade)
POOL = Section((
    Field("name", STRING, "The AKS node pool name, unique, not system.", required=True, pattern=POOL_NAME_RE,
          examples=("a100mig",), missing="the AKS node pool name (lowercase letters and digits, at most 12)",
          rule="must be 1-12 lowercase letters or digits, starting with a letter (AKS agent pool name rule)"),
    Field("vmSize", STRING, "A GPU VM size: from gpushare's catalog (docs/catalog.md), or any NVIDIA size AKS "
                            "offers with a `gpu:` block describing it; retired, fractional (vGPU) and AMD sizes are "
                            "refused with the reason.",
          required=True, enum=tuple(size.name for size in catalog.current_gpu_sizes()),
          missing="a GPU VM size such as Standard_NC4as_T4_v3",
          also=({"type": "string", "pattern": ANY_CASE_STANDARD_SIZE,
                 "not": {"enum": [size.name for size in catalog.VM_SIZES if size.retired_on]}},)),
    Field("mig", STRING, "The AKS MIG profile every GPU of the pool is partitioned into, on MIG-capable sizes; "
                         "fixed at creation.",
          enum=catalog.MigProfile),
    Field("sharing", OBJECT, "Share each GPU (or MIG instance) between pods.", default_text="whole devices",
          section=SHARING, empty_is_default=False),
    Field("count", INTEGER, "The fixed node count; not with autoscale.", minimum=0, maximum=MAX_POOL_NODES),
    Field("autoscale", OBJECT, "Let the cluster autoscaler size the pool between min and max; not with count.",
          section=AUTOSCALE, empty_is_default=False),
    Field("zones", ARRAY, "Availability zones, in any order; fixed at creation.", unique=True,
          items=Field("zone", STRING, "An availability zone.", enum=ZONES,
                      also=({"type": "integer", "minimum": 1, "maximum": len(ZONES)},))),
    Field("osSku", STRING, "The node OS, the same for every GPU pool; AzureLinux needs operator driver aks.",
          enum=OsSku),
    Field("recreate", BOOLEAN, "Accept deleting and recreating this pool for one run (lifts its protection)."),
    Field("upgrade", OBJECT, "AKS upgradeSettings for node-image and Kubernetes upgrades; not on a Spot pool, which "
                             "AKS upgrades without surge nodes.",
          default_text=f"maxSurge {_UPGRADE.max_surge}, maxUnavailable {_UPGRADE.max_unavailable}",
          section=UPGRADE),
    Field("gpu", OBJECT, "The GPUs of a size the catalog lacks (a catalog size's block must agree with it).",
          default_text="the catalog's", section=GPU, empty_is_default=False, attr=""),
    Field("labels", OBJECT, "Node labels of your own, beside gpushare's (gpushare.io/*, the device-plugin label "
                            "and kubernetes.azure.com/* are refused).",
          examples=({"team": "vision"},),
          values=Field("label", STRING, "A label value: at most 63 letters, digits, -, _ or .",
                       examples=("vision",))),
    Field("taints", ARRAY, "Node taints of your own (key=value:Effect); the operator, NFD and the tenants' pod "
                           "snippets tolerate them.", unique=True, attr="user_taints",
          items=Field("taint", STRING, "A node taint such as dedicated=batch:NoSchedule.",
                      examples=("dedicated=batch:NoSchedule",),
                      pattern=re.compile(r"^[^=:\s]+(=[^:\s]*)?:(NoSchedule|PreferNoSchedule|NoExecute)$"))),
    Field("osDisk", OBJECT, "The nodes' OS disk; fixed at creation.", default_text="AKS's default",
          section=OS_DISK, empty_is_default=False),
    Field("maxPods", INTEGER, "Most pods per node; fixed at creation.", default_text="AKS's default",
          minimum=MIN_MAX_PODS, maximum=MAX_MAX_PODS, why=" (AKS's bounds with Azure CNI)"),
    Field("tags", OBJECT, "Azure tags of your own on the pool (merged with gpushare's cluster-autoscaler tags; "
                          "those names are refused).",
          examples=({"costCenter": "1234"},),
          values=Field("tag", STRING, "A tag value (at most 256 characters).", examples=("1234",))),
    Field("subnetId", STRING, "The subnet of this pool's nodes (an ARM ID, in the cluster's VNet); fixed at "
                              "creation.", default_text="the cluster's", pattern=SUBNET_ID_RE,
          examples=("/subscriptions/3f2504e0-4f89-41d3-9a0c-0305e82c3301/resourceGroups/net-rg/providers/"
                    "Microsoft.Network/virtualNetworks/spoke/subnets/gpu",)),
    Field("spot", OBJECT, "Make the pool a Spot pool (evictable at any time with 30 seconds' notice; not for "
                          "serving); fixed at creation.", default_text="regular priority", section=SPOT,
          empty_is_default=False),
    Field("allocation", STRING, "How pods get the pool's GPUs: devicePlugin (extended resources such as "
                                "nvidia.com/gpu) or dra (ResourceClaims through NVIDIA's DRA driver, which gpushare "
                                "deploys; alpha sharing: docs/dra-pools.md).",
          enum=Allocation),
), model=GpuPool)
MAX_GPU_POOLS = 99
"""AKS allows 100 node pools per cluster (learn.microsoft.com/azure/aks/quotas-skus-regions, "Maximum node pools per
cluster"), and a cluster keeps at least one system pool. Past it `pulumi up` fails at the 100th pool; it also keeps
the pools' chain (each waits for the one before) short: the Pulumi SDK walks that chain recursively for every
dependency it declares (pulumi 3.272.0, `sdk/python/lib/pulumi/runtime/resource_cycle_breaker.py`
`_with_transitive_deps`): 300 pools planned, 1,000 ended in a RecursionError there after 90 s."""
POOLS_FIELD = Field(POOLS_KEY, ARRAY, "The GPU node pools, created one after another in file order.", required=True,
                    min_items=1, max_items=MAX_GPU_POOLS, items=Field("pool", OBJECT, "A GPU node pool.",
                                                                      section=POOL))
POOL_KEYS = POOL.keys


def _parse_vm_size(c: Checker, value: Any, path: str, gpu: Any, gpu_path: str) -> catalog.VmSize | None:
    """The pool's size: from the catalog, or described by the pool's `gpu:` block (`gpu` is None without one)."""
    if not isinstance(value, str):
        c.add(path, f"expected a VM size name such as Standard_NC4as_T4_v3, got {kind_of(value)} {show(value)}")
        return None
    size = catalog.find_vm_size(value)
    if size is None and catalog.non_gpu_family(value):
        names = ", ".join(s.name for s in catalog.current_gpu_sizes())
        c.add(path, f"{show(value)} is not a GPU size: Azure's {catalog.non_gpu_family(value)} family has no GPUs "
                    f"(GPU sizes are N-series: NC, ND); allowed: {names}")
        return None
    if size is None and (why := catalog.refused_size_reason(value)):
        c.add(path, f"{show(value)} cannot be a gpushare GPU pool: it {why}")
        return None
    if size is None and gpu is not None:
        return parse_gpu(c, gpu, gpu_path, value)
    if size is None:
        close = catalog.closest_vm_sizes(value)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        names = ", ".join(s.name for s in catalog.current_gpu_sizes())
        c.add(path, f"{show(value)} is not a GPU size gpushare knows{hint}; allowed: {names}; or, for an NVIDIA size "
                    f"AKS offers that the catalog lacks, describe its GPUs in the pool: "
                    f"gpu: {{model: A10, count: 1, memoryGb: 24}}")
        return None
    if size.retired_on:
        c.add(path, f"{size.name} ({size.series}, {size.gpu.display_name}) was retired on {size.retired_on:%Y-%m-%d} "
                    f"and can no longer be deployed; use {size.replacement}")
        return None
    if gpu is not None:
        check_gpu_against_catalog(c, gpu, gpu_path, size)
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
    values = c.section_values(value, SHARING, path)
    if values is None or values.incomplete:
        return None
    # Left out (or empty): `parse_pools` sets the stack's default once it knows whether any pool autoscales.
    return values.model(rename_written=values["renameByDefault"] is not None)


def _parse_autoscale(c: Checker, value: Any, path: str) -> Autoscale | None:
    autoscale = c.section(value, AUTOSCALE, path)
    if autoscale is not None and autoscale.min > autoscale.max:
        c.add(path, f"min ({autoscale.min}) is greater than max ({autoscale.max}); set min <= max")
        return None
    return autoscale


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


UPGRADE_ONE_OF = ("AKS takes either maxSurge or maxUnavailable above 0, not both (Azure/AKS#4277: \"set max-surge "
                  "to 0 when you set max-unavailable\"; both together is the preview MaxUnavailable fallback, aks-docs "
                  "upgrade-aks-node-pools-rolling.md, not in the GA API version azure-native sends)")


def _is_zero(setting: str) -> bool:
    return setting.rstrip("%") == "0"


def _parse_upgrade(c: Checker, value: Any, path: str) -> Upgrade | None:
    values = c.section_values(value, UPGRADE, path, rules={"maxSurge": _parse_upgrade_value,
                                                           "maxUnavailable": _parse_upgrade_value})
    if values is None:
        return None
    surge, unavailable = values["maxSurge"], values["maxUnavailable"]
    if "maxUnavailable" not in values.given or "maxUnavailable" in values.failed:
        # A surge given alone upgrades by surging: AKS's API takes one of the two above 0 (UPGRADE_ONE_OF).
        unavailable = UPGRADE["maxUnavailable"].default if _is_zero(surge) else "0"
    if not _is_zero(surge) and not _is_zero(unavailable):
        c.add(path, f"maxSurge {surge} and maxUnavailable {unavailable} are both above 0: {UPGRADE_ONE_OF}; set "
                    f"maxUnavailable: 0 to upgrade by surging extra VMs, or maxSurge: 0 to upgrade nodes in place")
        return None
    if _is_zero(surge) and _is_zero(unavailable):
        c.add(path, f"maxSurge {surge} and maxUnavailable {unavailable} would upgrade no node at a time (AKS "
                    f"refuses it); allowed: at least one above 0. The default maxSurge 0, maxUnavailable 1 replaces "
                    f"one node at a time without an extra VM")
        return None
    return values.model(max_unavailable=unavailable)


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


def _pool_name(c: Checker, value: Any, path: str) -> str | None:
    name = c.check(POOL["name"], value, path)
    if name == SYSTEM_POOL_NAME:
        c.add(path, f"{SYSTEM_POOL_NAME!r} is the cluster's system pool; choose another name")
        return None
    return name


def _mig_fits_the_size(c: Checker, pool: SectionValues, path: str, operator: Operator) -> None:
    vm_size, raw_gpu = pool["vmSize"], pool.raw.get("gpu")
    mig = _parse_mig(c, pool["mig"], f"{path}.mig", vm_size) if pool["mig"] is not None else None
    if mig and vm_size and vm_size.described_by_stack and not vm_size.mig_capable:
        product = catalog.find_gpu_product(str(raw_gpu.get("model")))
        why = (f"{product.name} is MIG-capable, but gpushare has no MIG slice table for a {vm_size.gpu.memory_gb} GB "
               f"{product.name} (slice tables: "
               f"{', '.join(m.display_name for p in catalog.GPU_PRODUCTS for m in p.models if m.mig_capable)}), so it "
               f"cannot tell which slices AKS's MIG profiles build"
               if product and product.mig else
               f"{vm_size.gpu.display_name} is not on NVIDIA's MIG list (A30, A100, H100, H200, B200, GB200...)")
        c.add(f"{path}.mig", f"{why}; remove `mig` (time-slicing shares a whole GPU)")
        mig = None
    elif mig and vm_size and not vm_size.mig_capable:
        mig_sizes = ", ".join(s.name for s in catalog.mig_capable_sizes())
        c.add(f"{path}.mig", f"{vm_size.name} ({vm_size.gpu.display_name}) does not support MIG; remove `mig` "
                             f"or use a MIG-capable size: {mig_sizes}")
        mig = None
    if mig and operator.driver is DriverOwner.OPERATOR:
        # AKS partitions a MIG pool at node creation with its own driver's nvidia-smi, which `gpuProfile.driver=None`
        # skips, and gpushare keeps the operator's MIG manager off: the GPUs would stay unpartitioned.
        c.add(f"{path}.mig", f"MIG pools need AKS's driver to be partitioned at creation, but "
                             f"{OPERATOR_KEY}.driver is operator; use driver: aks, or drop `mig` from this pool")
    pool["mig"] = mig


def _mps_can_run(c: Checker, pool: SectionValues, path: str, operator: Operator) -> None:
    sharing, vm_size = pool["sharing"], pool["vmSize"]
    if not sharing or sharing.strategy is not SharingStrategy.MPS:
        return
    if pool["allocation"] is Allocation.DRA:
        # The DRA driver runs MPS on a static MIG device (`gpushare.stackfile.dra_pools`), and the device plugin,
        # whose MIG strategy and MPS rules these are, stays off a DRA pool's nodes.
        _mps_clients_fit(c, pool, path, "gpushare keeps the device plugin's per-GPU limit on DRA pools: each client "
                                        "gets 1/replicas of the device")
        return
    if "mig" in pool.given:
        c.add(f"{path}.sharing.strategy", "mps cannot run on MIG devices served by the device plugin (it refuses "
                                          "them); use time-slicing on a MIG pool, or mps on a pool without `mig`, or "
                                          "allocation: dra (NVIDIA's DRA driver runs MPS inside a MIG device; alpha)")
    if operator.mig_strategy is MigStrategy.MIXED:
        c.add(f"{path}.sharing.strategy",
              f"mps cannot be used while {OPERATOR_KEY}.migStrategy is mixed (the device plugin refuses to start "
              f"with MPS under mixed); use time-slicing, or migStrategy: single")
    _mps_clients_fit(c, pool, path, "the device plugin's limit per GPU: its MPS control daemon refuses more")


def _mps_clients_fit(c: Checker, pool: SectionValues, path: str, why: str) -> None:
    sharing, vm_size = pool["sharing"], pool["vmSize"]
    if vm_size and sharing.replicas > vm_size.gpu.mps_max_clients:
        c.add(f"{path}.sharing.replicas",
              f"must be from 2 to {vm_size.gpu.mps_max_clients} for mps on {vm_size.gpu.display_name} "
              f"({why}), got {sharing.replicas}")


def _count_or_autoscale(c: Checker, pool: SectionValues, path: str, operator: Operator) -> None:
    if "count" in pool.given and "autoscale" in pool.given:
        c.add(path, "set either `count` (fixed size) or `autoscale: {min, max}`, not both")
    if pool["autoscale"]:
        pool["count"] = None


def _os_has_a_driver(c: Checker, pool: SectionValues, path: str, operator: Operator) -> None:
    if pool["osSku"] is OsSku.AZURE_LINUX and operator.driver is DriverOwner.OPERATOR:
        # NVIDIA publishes GPU Operator driver containers for Ubuntu, RHEL/RHCOS and Rocky Linux only (GPU Operator
        # platform support); NVIDIA/gpu-driver-container's azurelinux image is marked experimental, "not recommended
        # for any workloads other than testing". With `gpuProfile.driver=None` the node would get no driver at all.
        c.add(f"{path}.osSku", f"AzureLinux GPU nodes cannot get their driver from the GPU Operator "
                               f"({OPERATOR_KEY}.driver is operator): NVIDIA ships its driver containers for Ubuntu, "
                               f"RHEL and Rocky Linux only; use osSku: Ubuntu, or driver: aks (AKS installs the driver "
                               f"on AzureLinux)")


def _spot_fits_disk_and_upgrade(c: Checker, pool: SectionValues, path: str, operator: Operator) -> None:
    # From the raw value: also reported when the spot block has another error.
    eviction = pool.raw["spot"].get("eviction") if isinstance(pool.raw.get("spot"), dict) else None
    os_disk = pool["osDisk"]
    if eviction == SpotEviction.DEALLOCATE.value and os_disk and os_disk.type is OsDiskType.EPHEMERAL:
        c.add(f"{path}.spot.eviction", "Deallocate keeps an evicted node's OS disk, and an ephemeral OS disk cannot be "
                                       "stop-deallocated (Azure's ephemeral OS disk FAQ: \"users need to Delete "
                                       "instead of deallocating them\"); use eviction: Delete, or osDisk.type: Managed")
    if "spot" in pool.given and "upgrade" in pool.given:  # also when spot itself has an error
        c.add(f"{path}.upgrade", f"a Spot pool takes no upgrade settings: {SPOT_UPGRADE}; remove `upgrade:` from "
                                 f"this pool")


POOL_RULES = (_mig_fits_the_size, _mps_can_run, dra_pool_rule, _count_or_autoscale, _os_has_a_driver,
              _spot_fits_disk_and_upgrade)
"""The rules that relate a pool's keys to each other and to the operator, in the order they report."""


def _parse_pool(c: Checker, value: Any, path: str, operator: Operator) -> GpuPool | None:
    given = value if isinstance(value, dict) else {}
    pool = c.section_values(value, POOL, path, rules={
        "name": _pool_name,
        "vmSize": lambda c, v, p: _parse_vm_size(c, v, p, given.get("gpu"), f"{path}.gpu"),
        "gpu": checked_later, "mig": checked_later,  # by vmSize's rule and _mig_fits_the_size
        "sharing": _parse_sharing, "autoscale": _parse_autoscale, "zones": _parse_zones, "upgrade": _parse_upgrade,
        "labels": parse_labels, "taints": parse_taints, "osDisk": parse_os_disk, "tags": parse_tags,
        "spot": parse_spot, "subnetId": parse_subnet_id,
    })
    if pool is None:
        return None
    for rule in POOL_RULES:
        rule(c, pool, path, operator)
    if pool["vmSize"] is None or pool["name"] is None:
        return None
    return pool.model(count=pool["count"])  # None when the pool autoscales (`_count_or_autoscale`)


def parse_pools(c: Checker, value: Any, operator: Operator) -> tuple[GpuPool, ...]:
    example = "e.g.\n      gpushare:pools:\n        - {name: t4, vmSize: Standard_NC4as_T4_v3}"
    if value is None:
        c.add(POOLS_KEY, f"required: at least one GPU pool, {example}")
        return ()
    if not isinstance(value, list) or not value:
        c.add(POOLS_KEY, f"expected a list of at least one GPU pool, got {kind_of(value)} {show(value)}; {example}")
        return ()
    if len(value) > MAX_GPU_POOLS:
        c.add(POOLS_KEY, f"{len(value)} GPU pools; AKS allows 100 node pools per cluster, one of them the system "
                         f"pool, so at most {MAX_GPU_POOLS}; split the pools over clusters")
        return ()
    pools = []
    seen: dict[str, int] = {}
    first: tuple[int, GpuPool] | None = None
    for i, item in enumerate(value):
        pool = _parse_pool(c, item, f"{POOLS_KEY}[{i}]", operator)
        if (earlier := record_name_or_find_earlier(seen, item, i)) is not None:
            c.add(f"{POOLS_KEY}[{i}].name", f"pool name {item['name']!r} is already used by {POOLS_KEY}[{earlier}]; "
                                           f"pool names must be unique")
            continue
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
    return _with_rename_defaults(tuple(pools))


def _with_rename_defaults(pools: tuple[GpuPool, ...]) -> tuple[GpuPool, ...]:
    """`renameByDefault` where the stack file leaves it out: false as soon as any pool autoscales, so that every
    pool's nodes advertise `nvidia.com/gpu` and the cluster autoscaler counts them ready
    (`gpushare.sharing.autoscaler_readiness`); else true."""
    if not any(pool.autoscale for pool in pools):
        return pools
    return tuple(
        dataclasses.replace(pool, sharing=dataclasses.replace(pool.sharing,
                                                              rename_by_default=AUTOSCALED_RENAME_BY_DEFAULT))
        if pool.sharing and not pool.sharing.rename_written else pool
        for pool in pools
    )
