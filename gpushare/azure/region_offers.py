"""What Azure offers one subscription in one region, read for preflight in three ARM calls, whatever the pool count:

- `resource_skus.list(filter="location eq '<region>'")` (azure-mgmt-compute): every VM size in the region with its
  quota `family`, `capabilities` (`vCPUs`, `GPUs`, `CachedDiskBytes`, `MaxResourceVolumeMB`: the cache and temp disk
  an ephemeral OS disk may live on), `locationInfo[].zones` and `restrictions` (type `Location` or `Zone`,
  `reasonCode` `NotAvailableForSubscription` or `QuotaId`, `restrictionInfo.zones`);
- `usage.list(location)` (azure-mgmt-compute): per quota `name.value` (a family, or `cores` for the regional total)
  `currentValue` and `limit`, in vCPUs;
- `managed_clusters.list_kubernetes_versions(location)` (azure-mgmt-containerservice): `values[]` with `version`
  (`1.33`), `isPreview`, `isDefault`, `capabilities.supportPlan` and `patchVersions` (`{"1.33.2": {...}}`).

Bodies are parsed into plain dataclasses with every field's type checked, so preflight's checks are pure functions.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpushare.azure.arm import DEFAULT_ARM_URL, arm_code, client_settings, describe, read_error, unexpected_body

# The node-pool parser's typed field access: the same rules (null is unset, a wrong type fails loudly) here.
from gpushare.azure.deployed import _Fields, _json_type, _Malformed
from gpushare.azure.remote_read import ReadBoundError, ReadDeadline
from gpushare.errors import AzureReadError

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

VM_RESOURCE_TYPE = "virtualMachines"
REGIONAL_CORES = "cores"
"""The usage entry for all standard vCPUs in the region, whatever their family."""
LOW_PRIORITY_CORES = "lowPriorityCores"
"""The usage entry for Spot (formerly low-priority) vCPUs in the region: one bucket for every family (Azure
docs spot-vms.md, "Quota": Spot VMs use a separate regional vCPU quota)."""

REGION_ROLE_HINT = (
    "preflight reads VM sizes (Microsoft.Compute/skus/read), quota usage (Microsoft.Compute/locations/usages/read) "
    "and AKS versions (Microsoft.ContainerService/locations/kubernetesVersions/read); the built-in Reader role on "
    "the subscription has all of them: az role assignment create --assignee <identity> --role Reader "
    "--scope /subscriptions/<subscription id>"
)


@dataclass(frozen=True)
class SkuRestriction:
    kind: str
    """`Location` (the size is not offered to this subscription in the region) or `Zone`."""
    reason_code: str | None
    """`NotAvailableForSubscription` or `QuotaId`."""
    zones: tuple[str, ...] = ()
    """For `Zone`: the zones where the size is restricted."""


@dataclass(frozen=True)
class VmSizeOffer:
    name: str
    family: str | None
    """The quota family, as the usage list names it (`standardNCASv3_T4Family`)."""
    vcpus: int | None
    zones: tuple[str, ...]
    """The availability zones the size is offered in, in this region (before restrictions)."""
    restrictions: tuple[SkuRestriction, ...] = ()
    gpus: int | None = None
    """The `GPUs` capability; None when the SKU does not report it."""
    cached_disk_bytes: int | None = None
    """`CachedDiskBytes`: the cache an ephemeral OS disk may use."""
    resource_volume_mb: int | None = None
    """`MaxResourceVolumeMB`: the temp disk an ephemeral OS disk may use instead."""

    @property
    def location_restriction(self) -> SkuRestriction | None:
        return next((r for r in self.restrictions if r.kind == "Location"), None)

    @property
    def restricted_zones(self) -> dict[str, str | None]:
        """Zone -> the reason code it is restricted for."""
        return {zone: r.reason_code for r in self.restrictions if r.kind == "Zone" for zone in r.zones}


@dataclass(frozen=True)
class QuotaUsage:
    name: str
    """`name.value`: a family (`standardNCASv3_T4Family`) or `cores`."""
    display_name: str | None
    """`name.localizedValue`: `Standard NCASv3_T4 Family vCPUs`."""
    current: int
    limit: int

    @property
    def free(self) -> int:
        return max(self.limit - self.current, 0)


@dataclass(frozen=True)
class KubernetesVersionOffer:
    version: str
    """A minor version: `1.33`."""
    is_preview: bool
    is_default: bool
    patch_versions: tuple[str, ...]
    support_plans: tuple[str, ...]
    """`KubernetesOfficial`, `AKSLongTermSupport`."""


@dataclass(frozen=True)
class RegionOffers:
    location: str
    vm_sizes: tuple[VmSizeOffer, ...]
    usages: tuple[QuotaUsage, ...]
    kubernetes_versions: tuple[KubernetesVersionOffer, ...]

    def vm_size(self, name: str) -> VmSizeOffer | None:
        return next((s for s in self.vm_sizes if s.name.lower() == name.lower()), None)

    def usage(self, name: str) -> QuotaUsage | None:
        key = quota_key(name)
        return next((u for u in self.usages if quota_key(u.name) == key), None)


def quota_key(name: str) -> str:
    """Family names compare without case and spaces: Azure spells one family several ways (aks-gpu.md, section 3)."""
    return name.replace(" ", "").lower()


def read_region(subscription_id: str, location: str, *, credential: TokenCredential, base_url: str | None = None,
                **client_kwargs: object) -> RegionOffers:
    """The three reads, each one list call (a pager may follow `nextLink` pages). Every failure becomes an
    `AzureReadError` saying which read failed and the fix."""
    # Imported on use: azure-mgmt-compute's models take about 0.5 s and 15 MB to load, which an offline `plan`
    # (the same program, preflight skipped) never needs.
    from azure.mgmt.compute import ComputeManagementClient
    from azure.mgmt.containerservice import ContainerServiceClient

    arm_url = base_url or DEFAULT_ARM_URL
    where = f"in {location} (subscription {subscription_id})"
    # Each client its own transport (closed with it), both on one deadline.
    client_kwargs.setdefault("deadline", ReadDeadline.from_environ(os.environ))
    with ComputeManagementClient(credential, subscription_id, base_url=base_url,
                                 **client_settings(client_kwargs)) as compute:
        skus = _read(f"could not list the VM sizes offered {where}", arm_url, lambda: [
            sku.as_dict() for sku in compute.resource_skus.list(filter=f"location eq '{location}'")])
        usages = _read(f"could not read the vCPU quota {where}", arm_url, lambda: [
            usage.as_dict() for usage in compute.usage.list(location)])
    with ContainerServiceClient(credential, subscription_id, base_url=base_url,
                                **client_settings(client_kwargs)) as aks:
        versions = _read(f"could not list the Kubernetes versions AKS offers {where}", arm_url,
                         lambda: aks.managed_clusters.list_kubernetes_versions(location).as_dict())
    return RegionOffers(
        location=location,
        vm_sizes=_parse(f"could not list the VM sizes offered {where}", _parse_skus, skus, location),
        usages=_parse(f"could not read the vCPU quota {where}", _parse_usages, usages),
        kubernetes_versions=_parse(f"could not list the Kubernetes versions AKS offers {where}", _parse_versions,
                                   versions),
    )


def _read(what: str, arm_url: str, call):
    from azure.core.exceptions import AzureError, ResourceNotFoundError

    try:
        return call()
    except ReadBoundError as err:
        raise AzureReadError(f"{what}: {err}") from None
    except ResourceNotFoundError as err:
        hint = ("check the subscription id, and that the credentials belong to its tenant"
                if arm_code(err) == "SubscriptionNotFound" else
                "check `azure-native:location` (`az account list-locations -o table`)")
        raise AzureReadError(f"{what}: Azure answered not found ({describe(err)}); {hint}") from None
    except AzureError as err:
        raise read_error(what, err, arm_url, REGION_ROLE_HINT) from None
    except (AttributeError, TypeError, ValueError) as err:
        raise unexpected_body(what, err) from None


def _parse(what: str, parse, *args):
    try:
        return parse(*args)
    except _Malformed as err:
        raise AzureReadError(f"{what}: Azure answered with an unexpected body: {err}; retry, and report it if it "
                             "persists") from None


def _parse_skus(documents: list[object], location: str) -> tuple[VmSizeOffer, ...]:
    offers = []
    for index, document in enumerate(documents):
        if not isinstance(document, dict):
            raise _Malformed(f"resource SKU [{index}]: expected an object, got {_json_type(document)}")
        fields = _Fields(f"resource SKU [{index}]", document)
        if fields.get("resourceType", str) != VM_RESOURCE_TYPE:
            continue  # disks, availability sets, ...: the location filter returns every resource type
        name = fields.require("name", str)
        where = f"resource SKU [{index}] {name}"
        fields = _Fields(where, document)
        capabilities = fields.get("capabilities", list) or []
        offers.append(VmSizeOffer(
            name=name,
            family=fields.get("family", str),
            vcpus=_capability(where, capabilities, "vCPUs"),
            gpus=_capability(where, capabilities, "GPUs"),
            cached_disk_bytes=_capability(where, capabilities, "CachedDiskBytes"),
            resource_volume_mb=_capability(where, capabilities, "MaxResourceVolumeMB"),
            zones=_zones(where, fields.get("locationInfo", list) or [], location),
            restrictions=tuple(_restriction(f"{where} restrictions[{i}]", item, location)
                               for i, item in enumerate(fields.get("restrictions", list) or [])
                               if _applies_here(item, location)),
        ))
    return tuple(offers)


def _capability(where: str, capabilities: list[object], name: str) -> int | None:
    """A whole-number capability (`vCPUs`, `GPUs`, ...); None when absent or not a whole number."""
    for capability in capabilities:
        if not isinstance(capability, dict):
            raise _Malformed(f"{where}: `capabilities` must hold objects, got {_json_type(capability)}")
        fields = _Fields(f"{where} capabilities", capability)
        if fields.get("name", str) == name:
            value = fields.get("value", str)
            return int(value) if value and value.isdigit() else None
    return None


def _zones(where: str, location_info: list[object], location: str) -> tuple[str, ...]:
    for info in location_info:
        if not isinstance(info, dict):
            raise _Malformed(f"{where}: `locationInfo` must hold objects, got {_json_type(info)}")
        fields = _Fields(f"{where} locationInfo", info)
        if (fields.get("location", str) or "").lower() == location.lower():
            return tuple(sorted(fields.get_strings("zones")))
    return ()


def _applies_here(item: object, location: str) -> bool:
    """A restriction names the locations it holds in (`values`, `restrictionInfo.locations`)."""
    if not isinstance(item, dict):
        return True  # reported as malformed by `_restriction`
    info = item.get("restrictionInfo") if isinstance(item.get("restrictionInfo"), dict) else {}
    places = [*(item.get("values") or []), *(info.get("locations") or [])]
    return not places or any(isinstance(p, str) and p.lower() == location.lower() for p in places)


def _restriction(where: str, item: object, location: str) -> SkuRestriction:
    if not isinstance(item, dict):
        raise _Malformed(f"{where}: expected an object, got {_json_type(item)}")
    fields = _Fields(where, item)
    info = fields.get("restrictionInfo", dict) or {}
    return SkuRestriction(
        kind=fields.require("type", str),
        reason_code=fields.get("reasonCode", str),
        zones=tuple(sorted(_Fields(f"{where} restrictionInfo", info).get_strings("zones"))),
    )


def _parse_usages(documents: list[object]) -> tuple[QuotaUsage, ...]:
    usages = []
    for index, document in enumerate(documents):
        if not isinstance(document, dict):
            raise _Malformed(f"usage [{index}]: expected an object, got {_json_type(document)}")
        fields = _Fields(f"usage [{index}]", document)
        name = _Fields(f"usage [{index}] name", fields.require("name", dict))
        usages.append(QuotaUsage(
            name=name.require("value", str),
            display_name=name.get("localizedValue", str),
            current=fields.require("currentValue", int),
            limit=fields.require("limit", int),
        ))
    return tuple(usages)


def _parse_versions(document: object) -> tuple[KubernetesVersionOffer, ...]:
    if not isinstance(document, dict):
        raise _Malformed(f"expected an object with `values`, got {_json_type(document)}")
    offers = []
    for index, item in enumerate(_Fields("Kubernetes versions", document).get("values", list) or []):
        where = f"Kubernetes version [{index}]"
        if not isinstance(item, dict):
            raise _Malformed(f"{where}: expected an object, got {_json_type(item)}")
        fields = _Fields(where, item)
        capabilities = _Fields(f"{where} capabilities", fields.get("capabilities", dict) or {})
        offers.append(KubernetesVersionOffer(
            version=fields.require("version", str),
            is_preview=bool(fields.get("isPreview", bool)),
            is_default=bool(fields.get("isDefault", bool)),
            patch_versions=tuple(fields.get("patchVersions", dict) or {}),
            support_plans=capabilities.get_strings("supportPlan"),
        ))
    if not offers:
        raise _Malformed("the list has no Kubernetes versions, but AKS offers some in every region it runs in")
    return tuple(offers)
