"""What the region offers against what the stack asks, from one `RegionOffers` read:

- `vm-size`: each pool's size and the system pool's is offered in the region and not restricted for the
  subscription (`restrictions[type=Location]`, with its reason code);
- `zones`: each pool's zones are among the zones the size is offered in there, less `restrictions[type=Zone]`;
- `gpus`: a pool whose size the stack describes (`gpu:`) has the GPU count Azure reports (`GPUs`); any pool whose
  count differs from what Azure reports fails;
- `os-disk`: an ephemeral OS disk fits the size's cache (`CachedDiskBytes`) or temp disk (`MaxResourceVolumeMB`);
  a Spot pool evicted with Deallocate gets no ephemeral OS disk from AKS's default (`aks_os_disk_type`);
- `kubernetes-version`: the stack's `kubernetesVersion` is offered in the region and not preview-only.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpushare.azure.deployed import DeployedPool
from gpushare.azure.preflight.nodes import Node, vcpus_of
from gpushare.azure.preflight.preflight_report import Check, Verdict
from gpushare.azure.region_offers import RegionOffers, VmSizeOffer
from gpushare.model.catalog import current_gpu_sizes
from gpushare.model.stack import SYSTEM_POOL_NAME, GpuPool, OsDiskType, SpotEviction, StackConfig, SupportPlan, Tier

OFFICIAL_PLAN = "KubernetesOfficial"


def _sizes_offered_here(offers: RegionOffers) -> str:
    """The catalog's current GPU sizes this subscription can deploy in the region: what to pick instead."""
    names = [s.name for s in current_gpu_sizes()
             if (offer := offers.vm_size(s.name)) is not None and offer.location_restriction is None]
    return ", ".join(names) or "none of gpushare's catalog"


def size_check(pool: Node, offers: RegionOffers) -> Check:
    region = offers.location
    offer = offers.vm_size(pool.vm_size)
    subject = f"{pool.label} ({pool.vm_size})"
    if offer is None:
        instead = (f"set gpushare:cluster.systemPool.vmSize to a size offered there (`az vm list-skus --location "
                   f"{region} --resource-type virtualMachines -o table`)" if pool.name == SYSTEM_POOL_NAME else
                   f"GPU sizes available to this subscription in {region}: {_sizes_offered_here(offers)}")
        return Check("vm-size", subject, Verdict.FAIL,
                     f"{pool.vm_size} is not offered in {region}",
                     f"use another region or size (`az vm list-skus --size {pool.vm_size} --all -o table` lists "
                     f"the regions); {instead}")
    restriction = offer.location_restriction
    if restriction is not None:
        return Check("vm-size", subject, Verdict.FAIL,
                     f"{pool.vm_size} is offered in {region} but not to this subscription "
                     f"(restriction {restriction.reason_code or 'without a reason code'})",
                     _restriction_fix(restriction.reason_code, pool.vm_size, region))
    facts = [f"family {offer.family}" if offer.family else "no quota family", f"{vcpus_of(offer, pool)} vCPUs"]
    facts.append(f"zones {', '.join(_offered_zones(offer))}" if _offered_zones(offer) else "no zones")
    return Check("vm-size", subject, Verdict.PASS, f"{pool.vm_size} offered in {region} ({'; '.join(facts)})")


def gpu_check(pool: GpuPool, offers: RegionOffers) -> Check | None:
    """The GPU count Azure reports for the size against the stack's: a row for every size the stack describes, and
    for a catalog size only when Azure disagrees with the catalog."""
    size = pool.vm_size
    offer = offers.vm_size(size.name)
    subject = f"pool {pool.name} ({size.name})"
    if offer is None or offer.location_restriction is not None:
        return None  # the vm-size row already fails
    source = "the pool's `gpu:` block" if size.described_by_stack else "gpushare's catalog"
    if offer.gpus is None:
        return (Check("gpus", subject, Verdict.WARN,
                      f"Azure reports no GPUs capability for {size.name}: the {size.gpus} GPU(s) of {source} "
                      "could not be checked") if size.described_by_stack else None)
    if offer.gpus == size.gpus:
        return (Check("gpus", subject, Verdict.PASS, f"{size.name} has {offer.gpus} GPU(s), as {source} says")
                if size.described_by_stack else None)
    if offer.gpus == 0:
        fix = f"{size.name} has no GPUs: choose an NVIDIA GPU size (NC, ND, NV)"
    else:
        fix = (f"set `gpu.count: {offer.gpus}` in the pool" if size.described_by_stack else
               f"report it: gpushare's catalog says {size.gpus}; until it is fixed, the plan's capacity is wrong")
    return Check("gpus", subject, Verdict.FAIL,
                 f"Azure reports {offer.gpus} GPU(s) per {size.name} node, {source} says {size.gpus}: the plan's "
                 "capacity and every device-plugin count would be wrong", fix)


def os_disk_check(pool: GpuPool, offers: RegionOffers) -> Check | None:
    """An ephemeral OS disk lives on the VM's cache or its temp disk; AKS refuses one bigger than both."""
    disk = pool.os_disk
    offer = offers.vm_size(pool.vm_size.name)
    if disk.type is not OsDiskType.EPHEMERAL or disk.size_gb is None or offer is None:
        return None
    subject = f"pool {pool.name} ({pool.vm_size.name})"
    cache_gib = (offer.cached_disk_bytes or 0) // 2**30
    temp_gib = (offer.resource_volume_mb or 0) // 1024
    room = max(cache_gib, temp_gib)
    detail = f"ephemeral OS disk of {disk.size_gb} GB; cache {cache_gib} GiB, temp disk {temp_gib} GiB"
    if disk.size_gb <= room:
        return Check("os-disk", subject, Verdict.PASS, f"{detail}: fits")
    return Check("os-disk", subject, Verdict.FAIL, f"{detail}: does not fit either",
                 f"set `osDisk.sizeGb` to at most {room}" if room >= 30 else
                 "use `osDisk.type: Managed` (this size has no room for an ephemeral OS disk)")


AKS_EPHEMERAL_MIN_TEMP_GIB = 128
"""aks-docs concepts-storage.md, "Default OS disk sizing": a size that supports ephemeral OS disks gets one, sized to
its temp disk, "so long as the temp is at least 128 GiB", when the pool sets no OS disk size."""


def aks_os_disk_type(pool: GpuPool, offer: VmSizeOffer | None) -> tuple[OsDiskType | None, str]:
    """The OS disk AKS gives the pool's nodes, and why. The stack's `osDisk.type` when set; otherwise "When you don't
    explicitly request Azure managed disks for the OS, AKS defaults to ephemeral OS if possible for a given node pool
    configuration" (aks-docs concepts-storage.md, "Ephemeral OS disk"): with `osDisk.sizeGb`, when that fits the
    size's cache (`CachedDiskBytes`) or temp disk (`MaxResourceVolumeMB`), the capabilities Azure's SKU list
    reports; without, when the temp disk is at least `AKS_EPHEMERAL_MIN_TEMP_GIB`. None when Azure reports neither."""
    disk = pool.os_disk
    if disk.type is not None:
        return disk.type, f"osDisk.type {disk.type.value}"
    if offer is None or (offer.cached_disk_bytes is None and offer.resource_volume_mb is None):
        return None, f"Azure reports no cache or temp disk size for {pool.vm_size.name}"
    cache_gib, temp_gib = (offer.cached_disk_bytes or 0) // 2**30, (offer.resource_volume_mb or 0) // 1024
    disks = f"cache {cache_gib} GiB, temp disk {temp_gib} GiB"
    if disk.size_gb is not None:
        fits = disk.size_gb <= max(cache_gib, temp_gib)
        return ((OsDiskType.EPHEMERAL, f"osDisk.sizeGb {disk.size_gb} fits the {disks}, so AKS picks ephemeral")
                if fits else (OsDiskType.MANAGED, f"osDisk.sizeGb {disk.size_gb} fits neither the {disks}"))
    if temp_gib >= AKS_EPHEMERAL_MIN_TEMP_GIB:
        return OsDiskType.EPHEMERAL, (f"no osDisk set and the {disks}: AKS picks an ephemeral OS disk of the temp "
                                      f"disk's size (at least {AKS_EPHEMERAL_MIN_TEMP_GIB} GiB)")
    return OsDiskType.MANAGED, f"no osDisk set and the {disks}, below {AKS_EPHEMERAL_MIN_TEMP_GIB} GiB of temp disk"


def spot_eviction_check(pool: GpuPool, offers: RegionOffers) -> Check | None:
    """A Spot pool evicted with Deallocate keeps its nodes' OS disks, which an ephemeral OS disk cannot do (Azure's
    ephemeral OS disk FAQ: "users need to Delete instead of deallocating them"). The stack asking for Ephemeral is
    refused offline (`pool_config`); this checks the disk AKS picks when the stack names no type."""
    if pool.spot is None or pool.spot.eviction is not SpotEviction.DEALLOCATE or pool.os_disk.type is not None:
        return None
    subject = f"pool {pool.name} ({pool.vm_size.name})"
    offer = offers.vm_size(pool.vm_size.name)
    if offer is not None and offer.location_restriction is not None:
        return None  # the vm-size row already fails
    chosen, why = aks_os_disk_type(pool, offer)
    fix = "set the pool's osDisk.type: Managed (kept on deallocation), or spot.eviction: Delete"
    if chosen is OsDiskType.EPHEMERAL:
        return Check("os-disk", subject, Verdict.FAIL,
                     f"spot.eviction Deallocate, but {why}, and an ephemeral OS disk cannot be stop-deallocated: "
                     "AKS refuses the pool", fix)
    if chosen is None:
        return Check("os-disk", subject, Verdict.WARN,
                     f"spot.eviction Deallocate: {why}, so whether AKS picks an ephemeral OS disk (which cannot be "
                     "deallocated) is unknown", fix)
    return Check("os-disk", subject, Verdict.PASS, f"spot.eviction Deallocate with a managed OS disk: {why}")


def _restriction_fix(reason: str | None, size: str, region: str) -> str:
    if reason == "QuotaId":
        return (f"this subscription's offer type cannot deploy {size}: use a subscription of another offer "
                "(e.g. pay-as-you-go or EA), or another size")
    return (f"ask Azure support to enable {size} in {region} for this subscription (a 'Service and subscription "
            "limits (quotas)' request), or use another region or size")


def _offered_zones(offer: VmSizeOffer) -> list[str]:
    restricted = offer.restricted_zones
    return [zone for zone in offer.zones if zone not in restricted]


def zone_check(pool: Node, offers: RegionOffers) -> list[Check]:
    offer = offers.vm_size(pool.vm_size)
    if offer is None or offer.location_restriction is not None:
        return []  # the vm-size row already fails
    subject = f"{pool.label} ({pool.vm_size})"
    offered = _offered_zones(offer)
    missing = [zone for zone in pool.zones if zone not in offered]
    wanted = ", ".join(pool.zones)
    if not missing:
        return [Check("zones", subject, Verdict.PASS, f"zones {wanted} offered in {offers.location}")]
    reasons = offer.restricted_zones
    why = "; ".join(
        f"zone {zone}: restricted for this subscription ({reasons[zone] or 'no reason code'})" if zone in reasons
        else f"zone {zone}: not offered" for zone in missing)
    offered_text = ", ".join(offered) or "none"
    fix = (f"set `zones` to zones from {offered_text}" if offered else "remove `zones` from the pool") + \
        " (zones are fixed when a pool is created), or use another size or region"
    return [Check("zones", subject, Verdict.FAIL,
                  f"{pool.vm_size} in {offers.location}: {why}; offered zones: {offered_text}", fix)]


def version_check(stack: StackConfig, offers: RegionOffers, live: Mapping[str, DeployedPool] | None) -> Check:
    wanted = stack.cluster.kubernetes_version
    offered = ", ".join(_describe_version(v) for v in offers.kubernetes_versions)
    if wanted is None:
        default = next((v.version for v in offers.kubernetes_versions if v.is_default), None)
        return Check("kubernetes-version", "(AKS default)", Verdict.PASS,
                     f"not set: AKS picks its default{f' ({default})' if default else ''}; offered: {offered}")
    minor = ".".join(wanted.split(".")[:2])
    offer = next((v for v in offers.kubernetes_versions if v.version == minor), None)
    if offer is None or (wanted != minor and wanted not in offer.patch_versions):
        running = _running_version(live, wanted)
        if running:
            return Check("kubernetes-version", wanted, Verdict.WARN,
                         f"{wanted} is no longer offered in {offers.location}, but the cluster already runs it "
                         f"({running}); offered: {offered}",
                         "upgrade soon: set kubernetesVersion to an offered version (one minor at a time)")
        if offer is not None:
            return Check("kubernetes-version", wanted, Verdict.FAIL,
                         f"patch {wanted} is not offered in {offers.location} (patches of {minor}: "
                         f"{', '.join(offer.patch_versions) or 'none'})",
                         f"set kubernetesVersion to \"{minor}\" (AKS then runs its newest patch) or one of the patches")
        return Check("kubernetes-version", wanted, Verdict.FAIL,
                     f"{wanted} is not offered in {offers.location}; offered: {offered}",
                     "set gpushare:cluster.kubernetesVersion to an offered version, or remove it for AKS's default")
    if offer.is_preview:
        return Check("kubernetes-version", wanted, Verdict.FAIL,
                     f"{minor} is preview-only in {offers.location}; offered: {offered}",
                     "use a generally available version")
    if offer.support_plans and OFFICIAL_PLAN not in offer.support_plans:
        cluster = stack.cluster
        if cluster.tier is Tier.PREMIUM and cluster.support_plan is SupportPlan.LONG_TERM_SUPPORT:
            return Check("kubernetes-version", wanted, Verdict.PASS,
                         f"{wanted} offered in {offers.location} with long-term support, which the stack's Premium "
                         f"tier and AKSLongTermSupport plan take")
        # AKS refuses the version on any other tier or plan, so `pulumi up` would fail (aks-docs
        # long-term-support.md: LTS needs the Premium tier and the LTS support plan).
        return Check("kubernetes-version", wanted, Verdict.FAIL,
                     f"{minor} is offered in {offers.location} only with AKS long-term support "
                     f"({', '.join(offer.support_plans)}), which needs the cluster's Premium tier and its "
                     f"AKSLongTermSupport plan; the stack has tier {cluster.tier.value}, plan "
                     f"{cluster.support_plan.value}",
                     "pin a version AKS supports without long-term support, or set gpushare:cluster.tier: Premium "
                     "and supportPlan: AKSLongTermSupport")
    return Check("kubernetes-version", wanted, Verdict.PASS, f"{wanted} offered in {offers.location}")


def _describe_version(offer) -> str:
    marks = [m for m, on in (("default", offer.is_default), ("preview", offer.is_preview),
                             ("LTS only", bool(offer.support_plans) and OFFICIAL_PLAN not in offer.support_plans))
             if on]
    return f"{offer.version} ({', '.join(marks)})" if marks else offer.version


def _running_version(live: Mapping[str, DeployedPool] | None, wanted: str) -> str | None:
    if not live:
        return None
    for pool in live.values():
        version = pool.orchestrator_version
        if version and (version == wanted or version.startswith(f"{wanted}.")):
            return f"pool {pool.name} on {version}"
    return None
