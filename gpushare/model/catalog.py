"""GPU VM sizes AKS can run, the GPU on each, and the MIG slice each AKS `gpuInstanceProfile` produces on it.

Facts from Microsoft's VM size pages and AKS's multi-instance GPU doc (see docs/catalog.md). AKS partitions
every GPU of a MIG pool into the maximum number of instances of the profile's slice count: 7, 3, 2, 1, 1
instances for MIG1g, MIG2g, MIG3g, MIG4g, MIG7g (GPU-instance profile IDs 19, 14, 9, 5, 0).
"""

from __future__ import annotations

import datetime
import difflib
import re
from dataclasses import dataclass, field
from enum import Enum
from fractions import Fraction


class MigProfile(str, Enum):
    """AKS agent pool `gpuInstanceProfile` values."""

    MIG1G = "MIG1g"
    MIG2G = "MIG2g"
    MIG3G = "MIG3g"
    MIG4G = "MIG4g"
    MIG7G = "MIG7g"

    @property
    def compute_slices(self) -> int:
        """Compute slices (of 7 per GPU) one instance of this profile takes: MIG3g -> 3."""
        return int(self.value[3])

    @property
    def instances_per_gpu(self) -> int:
        """How many instances AKS creates on each GPU: always 7/3/2/1/1."""
        return MIG_INSTANCES_PER_GPU[self]

    @property
    def usable_share(self) -> Fraction:
        """Share of each GPU's compute the AKS layout puts to use: MIG3g builds 2 x 3g -> 6/7, MIG4g 1 x 4g -> 4/7."""
        return Fraction(self.instances_per_gpu * self.compute_slices, MIG_COMPUTE_SLICES_PER_GPU)


MIG_COMPUTE_SLICES_PER_GPU = 7
MIG_INSTANCES_PER_GPU = {
    MigProfile.MIG1G: 7,
    MigProfile.MIG2G: 3,
    MigProfile.MIG3G: 2,
    MigProfile.MIG4G: 1,
    MigProfile.MIG7G: 1,
}

MPS_MAX_CLIENTS_MODERN = 48
"""The most MPS replicas per GPU the device plugin accepts from compute capability 7.5 (T4 and newer), 16 below: the
device plugin's own check, not CUDA's MPS daemon's. Its mps-control-daemon refuses a GPU with more replicas before
starting MPS on it (NVIDIA/k8s-device-plugin v0.20.0 `cmd/mps-control-daemon/mps/device.go` `assertReplicas` and
`maxClients`, called from `manager.go` L97: "maximum allowed replicas exceeded: 49 > 48")."""
MPS_MAX_CLIENTS_LEGACY = 16


@dataclass(frozen=True)
class GpuModel:
    """One GPU model as the node sees it."""

    key: str
    display_name: str
    memory_gb: int
    compute_capability: tuple[int, int]
    mig_slices: dict[MigProfile, str] = field(default_factory=dict)
    """MIG slice name (`1g.5gb`) per AKS profile; empty for GPUs without MIG."""

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_slices)

    def mig_memory_gb(self, profile: MigProfile) -> int:
        """The memory of one instance of `profile`, from its slice name: `1g.5gb` -> 5."""
        return int(self.mig_slices[profile].split(".")[1].removesuffix("gb"))

    @property
    def mps_max_clients(self) -> int:
        return MPS_MAX_CLIENTS_MODERN if self.compute_capability >= (7, 5) else MPS_MAX_CLIENTS_LEGACY


def _slices(memory: tuple[int, int, int, int, int]) -> dict[MigProfile, str]:
    """Slice names for the five AKS profiles from the memory (GB) of each: 1g, 2g, 3g, 4g, 7g."""
    return {profile: f"{profile.compute_slices}g.{gb}gb" for profile, gb in zip(MigProfile, memory)}


A100_40GB = GpuModel("A100-40GB", "NVIDIA A100 40GB", 40, (8, 0), _slices((5, 10, 20, 20, 40)))
A100_80GB = GpuModel("A100-80GB", "NVIDIA A100 80GB", 80, (8, 0), _slices((10, 20, 40, 40, 80)))
H100_80GB = GpuModel("H100-80GB", "NVIDIA H100 80GB", 80, (9, 0), _slices((10, 20, 40, 40, 80)))
H100_NVL_94GB = GpuModel("H100-NVL-94GB", "NVIDIA H100 NVL 94GB", 94, (9, 0), _slices((12, 24, 47, 47, 94)))
H200_141GB = GpuModel("H200-141GB", "NVIDIA H200 141GB", 141, (9, 0), _slices((18, 35, 71, 71, 141)))
T4_16GB = GpuModel("T4-16GB", "NVIDIA T4 16GB", 16, (7, 5))
V100_16GB = GpuModel("V100-16GB", "NVIDIA V100 16GB", 16, (7, 0))
A10_24GB = GpuModel("A10-24GB", "NVIDIA A10 24GB", 24, (8, 6))


@dataclass(frozen=True)
class GpuProduct:
    """A GPU product a stack may name in a pool's `gpu.model`, for sizes the catalog lacks."""

    name: str
    """As written in `gpu.model` (compared without case): `A10`, `H100`."""
    compute_capability: tuple[int, int]
    mig: bool
    """On NVIDIA's MIG list (docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-gpus.html)."""
    models: tuple[GpuModel, ...] = ()
    """The memory variants gpushare knows, with their MIG slice tables (MIG needs one of these)."""


GPU_PRODUCTS: tuple[GpuProduct, ...] = (
    GpuProduct("T4", (7, 5), False, (T4_16GB,)),
    GpuProduct("V100", (7, 0), False, (V100_16GB,)),
    GpuProduct("A10", (8, 6), False, (A10_24GB,)),
    GpuProduct("L4", (8, 9), False),
    GpuProduct("L40S", (8, 9), False),
    GpuProduct("A30", (8, 0), True),
    GpuProduct("A100", (8, 0), True, (A100_40GB, A100_80GB)),
    GpuProduct("H100", (9, 0), True, (H100_80GB, H100_NVL_94GB)),
    GpuProduct("H200", (9, 0), True, (H200_141GB,)),
    GpuProduct("B200", (10, 0), True),
    GpuProduct("GB200", (10, 0), True),
)
"""Compute capabilities from NVIDIA's CUDA GPU list (developer.nvidia.com/cuda-gpus). A MIG-capable product
without a slice table here (A30: 4 slices per GPU, which AKS's partitioning, built for 7, does not handle;
Blackwell B200/GB200: no AKS MIG support documented) can run whole or shared GPUs, not MIG."""


def find_gpu_product(name: str) -> GpuProduct | None:
    key = re.sub(r"^(nvidia|tesla)[\s-]*", "", name.strip(), flags=re.IGNORECASE).replace(" ", "").lower()
    return next((p for p in GPU_PRODUCTS if p.name.lower() == key), None)


def stack_gpu_model(product: GpuProduct, memory_gb: int) -> GpuModel:
    """The GPU a stack describes: the known variant with that memory (with its MIG slices), else one without MIG
    slices (whole and shared GPUs need none)."""
    known = next((m for m in product.models if m.memory_gb == memory_gb), None)
    return known or GpuModel(f"{product.name}-{memory_gb}GB", f"NVIDIA {product.name} {memory_gb}GB", memory_gb,
                             product.compute_capability)


@dataclass(frozen=True)
class VmSize:
    """An Azure GPU VM size."""

    name: str
    series: str
    gpu: GpuModel
    gpus: int
    vcpus: int
    memory_gib: int | None
    """None for a size the stack describes (`gpu:`): the node's memory is then unknown offline."""
    quota_family: str | None
    """vCPU quota family as Azure's usage API names it (compare case-insensitively, spaces removed); None for a
    size the stack describes (preflight reads it from the Resource SKUs API)."""
    retired_on: datetime.date | None = None
    replacement: str | None = None
    """For a retired size: the current size to move to, and why."""
    note: str | None = None
    described_by_stack: bool = False
    """True for a size outside the catalog whose GPUs the pool's `gpu:` block describes."""

    @property
    def mig_capable(self) -> bool:
        return self.gpu.mig_capable

    def mig_slice(self, profile: MigProfile) -> str:
        return self.gpu.mig_slices[profile]


KNOWLEDGE_DATE = datetime.date(2026, 10, 31)
"""When the facts below (sizes, retirements) were last checked; what may have changed since, `gpushare preflight`
reads live."""
AKS_CALENDAR_DATE = datetime.date(2026, 12, 3)
"""When the AKS Kubernetes calendar below was last checked (aks-docs supported-kubernetes-versions.md @fb060ab
L48-74, long-term-support.md L42; Azure/AKS CHANGELOG.md @8d1c890, release notes up to 2026-07-17)."""
AKS_STANDARD_MINORS = ((1, 35), (1, 36))
"""The minors AKS supports on every tier (the `KubernetesOfficial` support plan) at `AKS_CALENDAR_DATE`: 1.35 until
Mar 2027, 1.36 (GA Jun 2026, Azure/AKS CHANGELOG.md L116: "now generally available") until Jun 2027; 1.34's ended in
Nov 2026 (the calendar's "End of life" column). 1.37 is only planned (the calendar's "AKS GA" Oct 2026; CHANGELOG.md
L37: "expected to be available in October 2026"), with no release note of its GA seen, so it is not listed: a pin of
1.37 passes offline as newer than the calendar, and `preflight` asks AKS whether the region offers it."""
AKS_LTS_ONLY_MINORS = ((1, 32), (1, 33), (1, 34))
"""The minors AKS supports only under long-term support at `AKS_CALENDAR_DATE` (the calendar's "LTS End of life":
Mar, Jul and Nov 2027; 1.31's ended in Nov 2026). Long-term support needs the Premium tier and the
`AKSLongTermSupport` support plan ("Enabling LTS requires moving your cluster to the Premium tier and explicitly
selecting the LTS support plan", long-term-support.md). The oldest of them is the oldest minor a stack may pin, on
which the tenants' policies are also judged (tools/vapcheck/go.1.32.mod)."""
NEWEST_AKS_KUBERNETES_MINOR = AKS_STANDARD_MINORS[-1]
"""The newest GA Kubernetes minor AKS offered at `AKS_CALENDAR_DATE`, which the control-plane tests run
(tools/controlplane)."""


def oldest_supported_kubernetes_minor() -> tuple[int, int]:
    """The oldest minor AKS creates clusters on without long-term support at `AKS_CALENDAR_DATE`: 1.35."""
    return AKS_STANDARD_MINORS[0]


NCV3_RETIRED = datetime.date(2025, 9, 30)

VM_SIZES: tuple[VmSize, ...] = (
    VmSize("Standard_ND96asr_v4", "NDasrA100_v4", A100_40GB, 8, 96, 900, "StandardNDASv4_A100Family"),
    VmSize("Standard_ND96amsr_A100_v4", "NDm_A100_v4", A100_80GB, 8, 96, 1900, "standardNDAMSv4_A100Family"),
    *(
        VmSize(
            f"Standard_NC{vcpus}ads_A100_v4", "NC_A100_v4", A100_80GB, gpus, vcpus, mem, "StandardNCADSA100v4Family",
            note="Azure deploys no new NC_A100_v4 capacity; prefer NCads_H100_v5 for new pools",
        )
        for gpus, vcpus, mem in ((1, 24, 220), (2, 48, 440), (4, 96, 880))
    ),
    VmSize("Standard_NC40ads_H100_v5", "NCads_H100_v5", H100_NVL_94GB, 1, 40, 320, "StandardNCadsH100v5Family"),
    VmSize("Standard_NC80adis_H100_v5", "NCads_H100_v5", H100_NVL_94GB, 2, 80, 640, "StandardNCadsH100v5Family"),
    VmSize("Standard_ND96isr_H100_v5", "ND_H100_v5", H100_80GB, 8, 96, 1900, "standardNDSH100v5Family"),
    VmSize("Standard_ND96isr_H200_v5", "ND_H200_v5", H200_141GB, 8, 96, 1850, "standardNDISRH200V5Family"),
    # NVadsA10_v5's whole-GPU sizes (compute-docs nvadsa10v5-series.md; AKS installs its GRID ("converged") driver
    # on them: Azure/AgentBaker `ConvergedGPUDriverSizes`). The fractional ones are refused (`REFUSED_SIZES`).
    *(
        VmSize(name, "NVadsA10_v5", A10_24GB, gpus, vcpus, mem, "StandardNVADSA10v5Family")
        for name, gpus, vcpus, mem in (
            ("Standard_NV36ads_A10_v5", 1, 36, 440),
            ("Standard_NV36adms_A10_v5", 1, 36, 880),
            ("Standard_NV72ads_A10_v5", 2, 72, 880),
        )
    ),
    *(
        VmSize(f"Standard_NC{vcpus}as_T4_v3", "NCasT4_v3", T4_16GB, gpus, vcpus, mem, "StandardNCASv3_T4Family")
        for gpus, vcpus, mem in ((1, 4, 28), (1, 8, 56), (1, 16, 110), (4, 64, 440))
    ),
    *(
        VmSize(
            name, "NCv3", V100_16GB, gpus, vcpus, mem, "standardNCSv3Family",
            retired_on=NCV3_RETIRED, replacement=replacement,
        )
        for name, gpus, vcpus, mem, replacement in (
            ("Standard_NC6s_v3", 1, 6, 112, "Standard_NC4as_T4_v3 (1 x T4) or Standard_NC40ads_H100_v5 (1 x H100, MIG)"),
            ("Standard_NC12s_v3", 2, 12, 224, "Standard_NC80adis_H100_v5 (2 x H100, MIG)"),
            ("Standard_NC24s_v3", 4, 24, 448, "Standard_NC64as_T4_v3 (4 x T4) or Standard_NC80adis_H100_v5 (2 x H100, MIG)"),
            ("Standard_NC24rs_v3", 4, 24, 448, "Standard_NC64as_T4_v3 (4 x T4) or Standard_NC80adis_H100_v5 (2 x H100, MIG)"),
        )
    ),
)

_BY_NAME = {size.name.lower(): size for size in VM_SIZES}

_FRACTIONAL_A10 = (
    "gives the VM a fraction of one A10 through NVIDIA vGPU ({share} of the GPU, {memory} GB; compute-docs "
    "nvadsa10v5-series.md) under AKS's GRID driver (Azure/AgentBaker `ConvergedGPUDriverSizes`); the device plugin "
    "would advertise that slice as one whole nvidia.com/gpu, so the plan's capacity and any sharing on top of it "
    "would promise a GPU that is not there; use Standard_NV36ads_A10_v5 (one whole A10) and share it with "
    "time-slicing"
)
_AMD = ("has AMD GPUs; gpushare provisions NVIDIA GPUs through NVIDIA's GPU Operator, and AKS's GPU node "
        "support is NVIDIA's (aks-docs use-nvidia-gpu.md: NVv4 is not supported); use an NVIDIA size")
REFUSED_SIZES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^Standard_NV6ads_A10_v5$", re.I), _FRACTIONAL_A10.format(share="1/6", memory=4)),
    (re.compile(r"^Standard_NV12ads_A10_v5$", re.I), _FRACTIONAL_A10.format(share="1/3", memory=8)),
    (re.compile(r"^Standard_NV18ads_A10_v5$", re.I), _FRACTIONAL_A10.format(share="1/2", memory=12)),
    (re.compile(r"^Standard_NV\d+as_v4$", re.I), _AMD),
    (re.compile(r"^Standard_N[DGV]\d+\w*_(MI300X|V620|V710)_v\d+$", re.I), _AMD),
)
"""GPU sizes no `gpu:` block can make work, each with why (see docs/catalog.md)."""


def refused_size_reason(name: str) -> str | None:
    return next((why for pattern, why in REFUSED_SIZES if pattern.match(name)), None)


VCPUS_IN_NAME_RE = re.compile(r"^Standard_N[A-Z]*?(?P<vcpus>\d+)", re.IGNORECASE)
"""Azure's size naming: family letters, then the vCPU count (`Standard_NV36ads_A10_v5`: 36 vCPUs; compute-docs
vm-naming-conventions.md)."""


def vcpus_from_name(name: str) -> int | None:
    found = VCPUS_IN_NAME_RE.match(name)
    return int(found["vcpus"]) if found else None


def stack_described_size(name: str, gpu: GpuModel, gpus: int, vcpus: int) -> VmSize:
    """A size outside the catalog, as its pool's `gpu:` block describes it; preflight checks it live."""
    return VmSize(name, "", gpu, gpus, vcpus, None, None, described_by_stack=True)


def find_vm_size(name: str) -> VmSize | None:
    """The catalog entry for `name` (Azure size names are case-insensitive), or None."""
    return _BY_NAME.get(name.lower())


def current_gpu_sizes() -> list[VmSize]:
    """Every size a new pool may use: in the catalog and not retired."""
    return [size for size in VM_SIZES if size.retired_on is None]


def mig_capable_sizes() -> list[VmSize]:
    return [size for size in current_gpu_sizes() if size.mig_capable]


NON_GPU_FAMILY_RE = re.compile(r"^Standard_(?P<family>A|B|DC|DS|D|EC|E|FX|F|GS|G|HB|HC|HX|H|L|M)\d", re.IGNORECASE)
"""Azure VM families without GPUs (general purpose A, B, D; memory E, M; compute F, FX; storage L; HPC H, HB, HC,
HX; confidential DC, EC). GPU sizes are N-series (NC, ND, NV, NG)."""


def non_gpu_family(name: str) -> str | None:
    """The family letters of a size name from a family without GPUs (`Standard_D4ds_v5` -> `D`), else None."""
    found = NON_GPU_FAMILY_RE.match(name)
    return found["family"].upper() if found else None


def closest_vm_sizes(name: str, limit: int = 3) -> list[str]:
    """Current GPU sizes whose names look like `name`, for 'did you mean' hints."""
    names = [size.name for size in current_gpu_sizes()]
    lowered = {n.lower(): n for n in names}
    return [lowered[m] for m in difflib.get_close_matches(name.lower(), list(lowered), n=limit, cutoff=0.6)]


@dataclass(frozen=True)
class ProductLabel:
    """The GPU's name as GPU Feature Discovery writes it into `nvidia.com/gpu.product`: NVML's device name with
    spaces turned into dashes (device plugin `internal/lm/resource.go`, `sanitise`)."""

    value: str
    confirmed: bool
    """True when NVIDIA's own docs show this value; otherwise it was seen on nodes in public repositories only, and
    `gpushare verify` checks just the suffixes GFD adds (`-MIG-<slice>`, `-SHARED`), not the name."""
    source: str


GPU_PRODUCT_LABELS: dict[str, ProductLabel] = {
    "NCasT4_v3": ProductLabel(
        "Tesla-T4", True, "NVIDIA/cloud-native-docs gpu-operator/gpu-sharing.rst (nvidia.com/gpu.product=Tesla-T4)"),
    "NDasrA100_v4": ProductLabel(
        "NVIDIA-A100-SXM4-40GB", True, "NVIDIA/cloud-native-docs openshift/mig-ocp.rst (NVIDIA-A100-SXM4-40GB)"),
    "ND_H100_v5": ProductLabel(
        "NVIDIA-H100-80GB-HBM3", True,
        "NVIDIA/cloud-native-docs gpu-operator/gpu-operator-mig.rst (NVIDIA-H100-80GB-HBM3)"),
    "NDm_A100_v4": ProductLabel("NVIDIA-A100-SXM4-80GB", False, "node labels in public cluster configs"),
    "NC_A100_v4": ProductLabel("NVIDIA-A100-80GB-PCIe", False, "node labels in public cluster configs"),
    "NCads_H100_v5": ProductLabel("NVIDIA-H100-NVL", False, "node labels in public cluster configs"),
    "ND_H200_v5": ProductLabel("NVIDIA-H200", False, "node labels in public cluster configs"),
    "NCv3": ProductLabel("Tesla-V100-PCIE-16GB", False, "node labels in public cluster configs"),
}
"""`nvidia.com/gpu.product` per VM series (A100 80GB is SXM4 on NDm_A100_v4 but PCIe on NC_A100_v4, so the GPU model
alone does not decide it)."""


def gpu_product_label(size: VmSize) -> ProductLabel | None:
    return GPU_PRODUCT_LABELS.get(size.series)
