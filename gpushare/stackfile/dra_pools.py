"""`allocation: dra` on a GPU pool: what NVIDIA's DRA driver (sigs.k8s.io/dra-driver-nvidia-gpu v0.5.0) can do with
the pool's MIG layout and sharing, refused or warned about before anything is rendered (`gpushare.sharing.dra`).

Driver facts, at v0.5.0 (module zip from the Go module proxy; `tools/dracheck` runs the driver's own checks):
- a `MigDeviceConfig` takes MPS (`sharing.strategy: MPS`, gate `MPSSupport`) but has no `timeSlicingConfig`, and the
  GPU kubelet plugin sets a time slice on full GPUs only: "timeslicing settings cannot be set on MIG devices directly.
  Hence, the API does not allow for setting `timeSlicingConfig` on a `MigDeviceConfig`"
  (cmd/gpu-kubelet-plugin/device_state.go L1316-1319; api/nvidia.com/resource/v1beta1/sharing.go L69-73);
- `TimeSlicingSettings` and `MPSSupport` are alpha and off by default (pkg/featuregates/featuregates.go L117-130);
- dynamic MIG (`DynamicMIG`, alpha) creates and destroys MIG devices per claim, "mutually exclusive with MPSSupport"
  (featuregates.go L266-268) and refuses MPS at prepare ("MPS is not yet supported when using
  featureGates.DynamicMIG=true", device_state.go L1335-1340); it would also fight AKS's own partitioning
  (`gpuInstanceProfile`, made at node creation), so gpushare keeps MIG static and offers no dynamic MIG;
- the GPU kubelet plugin itself is "not yet officially supported" (README.md "GPUs").
"""

from __future__ import annotations

from typing import Any

from gpushare.errors import ConfigProblem
from gpushare.model.keys import POOLS_KEY
from gpushare.model.stack import Allocation, Operator, SharingStrategy, StackConfig
from gpushare.stackfile.checks import Checker, SectionValues

DRA_DRIVER_VERSION = "v0.5.0"
"""The DRA driver release whose API, chart and feature gates gpushare's DRA rules and rendering follow."""
DRA_MIN_KUBERNETES = (1, 34)
"""gpushare renders DRA objects in `resource.k8s.io/v1`, which Kubernetes serves from 1.34 (DRA GA,
kubernetes.io "Dynamic Resource Allocation"; shared reference dra-fleet-versions.md section 2)."""
MIG_TIME_SLICING = ("the DRA driver cannot time-slice a MIG device: its MigDeviceConfig has no timeSlicingConfig and "
                    "the kubelet plugin sets a time slice on full GPUs only (dra-driver-nvidia-gpu v0.5.0 "
                    "cmd/gpu-kubelet-plugin/device_state.go L1316-1319)")
NO_SCALE_FROM_ZERO = ("the cluster autoscaler scales a DRA pool up from 0 nodes only when its cloud provider describes "
                      "the devices a new node would publish (template ResourceSlices, kubernetes/autoscaler#10277), "
                      "and no Azure provider support for it was found: a pod whose claim only this pool could serve "
                      "would stay Pending")
DEVICE_PLUGIN_ONLY = ("a device-plugin setting: a DRA pool's pods ask for a ResourceClaim, not an extended resource "
                      "that could be renamed or counted")


def dra_pool_rule(c: Checker, pool: SectionValues, path: str, operator: Operator) -> None:
    """The pool rules of a DRA pool: its sharing on MIG, device-plugin-only settings, and autoscaling from zero."""
    if pool["allocation"] is not Allocation.DRA:
        return
    sharing = pool["sharing"]
    if sharing and sharing.strategy is SharingStrategy.TIME_SLICING and pool["mig"]:
        c.add(f"{path}.sharing.strategy", f"time-slicing on a MIG pool with allocation dra: {MIG_TIME_SLICING}; use "
                                          f"mps (the driver runs MPS inside a MIG device), drop `sharing`, or "
                                          f"allocation: devicePlugin")
    raw_sharing: Any = pool.raw.get("sharing")
    for key in ("renameByDefault", "failRequestsGreaterThanOne"):
        if isinstance(raw_sharing, dict) and key in raw_sharing:
            c.add(f"{path}.sharing.{key}", f"{key} is {DEVICE_PLUGIN_ONLY}; remove it from this pool")
    autoscale = pool["autoscale"]
    if autoscale and autoscale.min == 0:
        c.add(f"{path}.autoscale.min", f"0 on a pool with allocation dra: {NO_SCALE_FROM_ZERO}; set min: 1 or more, "
                                       f"or allocation: devicePlugin")


def dra_problems(stack: StackConfig) -> list[ConfigProblem]:
    """What the cluster refuses for the stack's DRA pools: a pinned Kubernetes older than `resource.k8s.io/v1`."""
    version = stack.cluster.kubernetes_version
    if version is None or tuple(int(part) for part in version.split(".")[:2]) >= DRA_MIN_KUBERNETES:
        return []
    minimum = ".".join(map(str, DRA_MIN_KUBERNETES))
    return [ConfigProblem(f"{POOLS_KEY}[{i}].allocation",
                          f"dra needs Kubernetes {minimum} or newer (resource.k8s.io/v1, DRA's GA API), but "
                          f"gpushare:cluster.kubernetesVersion is {version!r}; pin {minimum} or later, or allocation: "
                          f"devicePlugin")
            for i, pool in enumerate(stack.pools) if pool.allocation is Allocation.DRA]


def dra_warnings(stack: StackConfig) -> list[str]:
    """What a DRA pool runs that its driver marks alpha or unsupported (`gpushare.plan.warnings` shows it once)."""
    warnings = []
    for pool in stack.pools:
        if pool.allocation is not Allocation.DRA:
            continue
        alpha = ["the GPU kubelet plugin is \"not yet officially supported\" (README.md)"]
        if pool.sharing and pool.sharing.strategy is SharingStrategy.MPS:
            alpha.append("MPS is behind the alpha feature gate MPSSupport" + (", inside each MIG device" if pool.mig
                                                                               else ""))
        elif pool.sharing:
            alpha.append("time-slicing settings are behind the alpha feature gate TimeSlicingSettings")
        warnings.append(f"{stack.source}: pool {pool.name}: allocation dra: in NVIDIA's DRA driver "
                        f"{DRA_DRIVER_VERSION} {'; '.join(alpha)} (pkg/featuregates/featuregates.go); its pods "
                        f"name a ResourceClaim (docs/dra-pools.md), not nvidia.com/gpu")
    return warnings
