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

With `operator.driver: operator` the GPU Operator's driver manager reloads the driver on a node, and nothing it does
removes the standalone chart's kubelet plugin first (`OPERATOR_DRIVER_RELOAD`, the sources cited there), so a DRA
pool takes AKS's driver.
"""

from __future__ import annotations

from typing import Any

from gpushare.errors import ConfigProblem
from gpushare.model.keys import OPERATOR_KEY, POOLS_KEY
from gpushare.model.stack import Allocation, DriverOwner, Operator, SharingStrategy, StackConfig
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
# Why a DRA pool cannot take the operator's driver, from the sources (GPU Operator chart v26.7.0 runs
# nvcr.io/nvidia/cloud-native/k8s-driver-manager v0.12.0, deployments/gpu-operator/values.yaml L199-204; both
# repositories at those tags). Before the driver container reloads the driver on a node, the driver manager
# (cmd/driver-manager/main.go, uninstallDriver L279-522):
# 1. pauses the operator's own components by flipping their `nvidia.com/gpu.deploy.<component>` labels from "true" to
#    "paused-for-driver-upgrade" (evictAllGPUOperatorComponents L656-698, maybeSetPaused L728-740), together with the
#    one label a user may name, NODE_LABEL_FOR_GPU_POD_EVICTION (L680-684), and waits only for the operator's pods by
#    their `app` labels in the operator's namespace (waitForPodsToTerminate L742-829);
# 2. then evicts the pods using a GPU, DRA claim holders included (L409-426; internal/kubernetes/client.go podUsesGPU
#    L352-370 reads each claim's allocation for driver gpu.nvidia.com);
# 3. then, and only if the node carries `nvidia.com/gpu.deploy.dra-driver`, pauses that label and waits for
#    `app=nvidia-dra-driver-kubelet-plugin` in the operator's namespace (evictKubeletPlugin L700-726): "It services
#    NodeUnprepareResources for every claim-holder ..., so it must outlive them; draining it alongside them would
#    deadlock" (L700-703). rescheduleGPUOperatorComponents (L1037-1073) restores every paused label.
# A kubelet plugin left running through the reload "stays bound to the previous driver rootfs and would fail to prepare
# claims against the replacement" (L310-312, again L371-376): the reason step 3 restarts it.
# The chart's kubelet plugin could follow step 3 only by requiring `nvidia.com/gpu.deploy.dra-driver: "true"`, but under
# a ClusterPolicy the operator deletes that label from every GPU node (gpu-operator controllers/state_manager.go
# removeGPUStateLabels L496-521: every key of the DRA stack's gpuClusterStateLabels L131-137 outside the container set
# gpuStateLabels L98-108 is deleted), and keeps it only while pods holding gpu.nvidia.com claims are on the node
# (controllers/nodelabeling_controller.go L290-304): on a new node, before any claim, it is gone, and the plugin with
# it. Following the custom label instead (step 1) removes the plugin before step 2 evicts the claim holders, the order
# the driver manager's authors call a deadlock. Neither is safe, so the stack file refuses the combination.
OPERATOR_DRIVER_RELOAD = (
    "the GPU Operator's driver manager (k8s-driver-manager v0.12.0, run by chart v26.7.0) reloads the driver without "
    "removing the DRA driver chart's kubelet plugin first, and a plugin left running stays bound to the old driver "
    "and cannot prepare claims after the reload (cmd/driver-manager/main.go L310-312), so the pool's pods would stop "
    "getting GPUs; it restarts a DRA kubelet plugin only by the label nvidia.com/gpu.deploy.dra-driver "
    "(evictKubeletPlugin), which the operator deletes from GPU nodes under a ClusterPolicy (gpu-operator "
    "controllers/state_manager.go removeGPUStateLabels), and the label a user may name for it "
    "(NODE_LABEL_FOR_GPU_POD_EVICTION) removes the plugin before the pods holding claims are evicted, which the driver "
    "manager itself calls a deadlock (main.go L700-703)")
DEVICE_PLUGIN_ONLY = ("a device-plugin setting: a DRA pool's pods ask for a ResourceClaim, not an extended resource "
                      "that could be renamed or counted")


def dra_pool_rule(c: Checker, pool: SectionValues, path: str, operator: Operator) -> None:
    """The pool rules of a DRA pool: its sharing on MIG, device-plugin-only settings, the operator's driver, and
    autoscaling from zero."""
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
    if operator.driver is DriverOwner.OPERATOR:
        c.add(f"{path}.allocation", f"dra with {OPERATOR_KEY}.driver: operator is refused: {OPERATOR_DRIVER_RELOAD}; "
                                    f"set {OPERATOR_KEY}.driver: aks (AKS's driver comes with the node, and a node "
                                    f"image upgrade replaces the node: nothing reloads it under the plugin), or "
                                    f"allocation: devicePlugin on this pool")
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
