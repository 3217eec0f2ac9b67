"""What a stack's DRA pools need from NVIDIA's DRA driver (sigs.k8s.io/dra-driver-nvidia-gpu v0.5.0), rendered from the
stack alone: DeviceClasses selecting each pool's kind of device, the opaque sharing config a claim carries, the
driver feature gates, one ResourceClaimTemplate per tenant and pool, and the driver chart's values (the node label
that keeps the GPU Operator's device plugin off DRA nodes is `node_labels.allocation_labels`).

Sources, all at the driver's v0.5.0 module (Go module proxy) unless named otherwise: `deployments/helm/
dra-driver-nvidia-gpu/values.yaml` and `templates/`, `api/nvidia.com/resource/v1beta1/`, `pkg/featuregates/
featuregates.go`, `cmd/gpu-kubelet-plugin/` (deviceinfo.go, mig.go: the attributes its ResourceSlices publish).
`tests/sharing/test_dra.py` runs every rendered config and selector through the driver's own checks and the DRA CEL
compiler (`tools/dracheck`). `gpushare.plan.stack_plan.dra_plan` gathers them, `components/dra_driver.py` deploys them
(docs/dra-pools.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gpushare.model.catalog import GpuModel
from gpushare.model.stack import (
    DEVICE_PLUGIN_DEPLOY_LABEL,
    POOL_LABEL,
    Allocation,
    GpuPool,
    SharingStrategy,
    StackConfig,
    pool_node_taints,
)
from gpushare.sharing.capacity import device_class_name
from gpushare.sharing.operator_values import toleration

DRIVER_NAME = "gpu.nvidia.com"
"""The driver's name in ResourceSlices and opaque configs (cmd/webhook/main.go L40 `DriverName`; the chart's own
DeviceClasses select `device.driver == 'gpu.nvidia.com'`, templates/deviceclass-gpu.yaml)."""
CONFIG_API_VERSION = "resource.nvidia.com/v1beta1"
"""The opaque config API (api/nvidia.com/resource/v1beta1/api.go L27-28: GroupName, Version)."""
RESOURCE_API_VERSION = "resource.k8s.io/v1"
CHART_NAME = "dra-driver-nvidia-gpu"
CHART_VERSION = "0.5.0"
"""deployments/helm/dra-driver-nvidia-gpu/Chart.yaml `version` (strict SemVer, no `v`)."""
HOST_DRIVER_ROOT = "/"
"""`nvidiaDriverRoot` (values.yaml L19-23): "/" for a driver "installed directly on a host", AKS's. The stack file
refuses DRA pools with the operator's driver container (`gpushare.stackfile.dra_pools.OPERATOR_DRIVER_RELOAD`: its
driver manager would reload the driver under the kubelet plugin), so its root, "/run/nvidia/driver", is never set."""
CLAIM_REQUEST = "gpu"
"""The one request of a gpushare ResourceClaimTemplate; its opaque config names it."""
WHOLE_GPU_MEMORY_TOLERANCE = 0.1
"""A whole GPU reports its memory in the `memory` capacity (cmd/gpu-kubelet-plugin/partitions.go L34-43) as NVML's
total, a little under the marketed size (a 16 GB T4 reports 15 GiB): a class accepts 10% either side of the
catalog's figure, which keeps apart the models of one compute capability (A100 40/80 GB; H100 80 GB, H100 NVL 94 GB,
H200 141 GB)."""


@dataclass(frozen=True)
class DeviceKind:
    """One kind of device a DRA pool's nodes publish: a whole GPU of a model, or a MIG device of one profile."""

    model: GpuModel
    mig_slice: str | None
    """The MIG profile name the driver publishes as `profile` (`3g.40gb`), None for whole GPUs."""
    class_name: str
    """Its DeviceClass (`capacity.device_class_name`)."""

    @property
    def device_type(self) -> str:
        """The driver's `type` attribute: "gpu" or "mig" (deviceinfo.go L170-172, mig.go L141-143)."""
        return "mig" if self.mig_slice else "gpu"

    @property
    def selector(self) -> str:
        """CEL on attributes the driver publishes for every device of this type: `type`, `cudaComputeCapability` (a
        version, deviceinfo.go L185-187 and mig.go L159-161), `profile` on MIG devices (mig.go L147-149), and the
        `memory` capacity of a whole GPU (partitions.go L38-42)."""
        attributes = f"device.attributes['{DRIVER_NAME}']"
        major, minor = self.model.compute_capability
        terms = [f"device.driver == '{DRIVER_NAME}'", f"{attributes}.type == '{self.device_type}'",
                 f"{attributes}.cudaComputeCapability.compareTo(semver('{major}.{minor}.0')) == 0"]
        if self.mig_slice:
            terms.append(f"{attributes}.profile == '{self.mig_slice}'")
        else:
            memory = f"device.capacity['{DRIVER_NAME}'].memory"
            mebibytes = self.model.memory_gb * 1024
            low = math.floor(mebibytes * (1 - WHOLE_GPU_MEMORY_TOLERANCE))
            high = math.ceil(mebibytes * (1 + WHOLE_GPU_MEMORY_TOLERANCE))
            terms += [f"{memory}.compareTo(quantity('{low}Mi')) >= 0", f"{memory}.compareTo(quantity('{high}Mi')) <= 0"]
        return " && ".join(terms)


def dra_pools(stack: StackConfig) -> tuple[GpuPool, ...]:
    return tuple(pool for pool in stack.pools if pool.allocation is Allocation.DRA)


def device_kind(pool: GpuPool) -> DeviceKind:
    """What AKS's static MIG layout (`gpuInstanceProfile`) leaves on the pool's GPUs, as the driver publishes it."""
    return DeviceKind(pool.vm_size.gpu, pool.vm_size.mig_slice(pool.mig) if pool.mig else None,
                      device_class_name(pool))


def device_classes(stack: StackConfig) -> list[dict[str, Any]]:
    """One DeviceClass per kind of device on the DRA pools (pools of one kind share it: which pool serves a claim
    follows the pod's node placement, as on device-plugin pools)."""
    kinds = {kind.class_name: kind for kind in map(device_kind, dra_pools(stack))}.values()
    return [{"apiVersion": RESOURCE_API_VERSION, "kind": "DeviceClass",
             "metadata": {"name": kind.class_name},
             "spec": {"selectors": [{"cel": {"expression": kind.selector}}]}}
            for kind in kinds]


def device_memory_gb(pool: GpuPool) -> int:
    """The memory of one device of the pool: a MIG device's from its profile name, else the GPU's."""
    return pool.vm_size.gpu.mig_memory_gb(pool.mig) if pool.mig else pool.vm_size.gpu.memory_gb


def opaque_config(pool: GpuPool) -> dict[str, Any]:
    """The pool's sharing as the driver's opaque config: `MigDeviceConfig` for a MIG device, else `GpuConfig`
    (gpuconfig.go, migconfig.go; a config applies only to its device type, cmd/gpu-kubelet-plugin/device_state.go
    L1758-1771). MPS gives each client of the device 1/replicas of its compute (`defaultActiveThreadPercentage`) and
    of its memory (`defaultPinnedDeviceMemoryLimit`), as the device plugin's MPS daemon does per replica; time-slicing
    sets the driver's `Default` interval (sharing.go L35), the only one the device plugin's sharing used."""
    config: dict[str, Any] = {"apiVersion": CONFIG_API_VERSION, "kind": "MigDeviceConfig" if pool.mig else "GpuConfig"}
    sharing = pool.sharing
    if sharing is None:
        return config
    if sharing.strategy is SharingStrategy.MPS:
        memory_mib = device_memory_gb(pool) * 1024 // sharing.replicas
        config["sharing"] = {"strategy": "MPS", "mpsConfig": {
            "defaultActiveThreadPercentage": 100 // sharing.replicas,
            "defaultPinnedDeviceMemoryLimit": f"{memory_mib}Mi"}}
    else:
        config["sharing"] = {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Default"}}
    return config


def feature_gates(stack: StackConfig) -> dict[str, bool]:
    """The driver gates the DRA pools' sharing needs, both alpha and off by default (featuregates.go L117-130):
    without them Validate refuses the strategy ("... feature gate is not enabled", validate.go L26, L30-45)."""
    strategies = {pool.sharing.strategy for pool in dra_pools(stack) if pool.sharing}
    gates = {"MPSSupport": SharingStrategy.MPS in strategies,
             "TimeSlicingSettings": SharingStrategy.TIME_SLICING in strategies}
    return {gate: True for gate, needed in gates.items() if needed}


def claim_template(tenant: str, pool: GpuPool) -> dict[str, Any]:
    """The ResourceClaimTemplate a tenant's pods on `pool` name: one device of the pool's class with the pool's opaque
    config. Each pod gets its own device, shared by its containers; the pod's node placement picks the pool."""
    return {
        "apiVersion": RESOURCE_API_VERSION, "kind": "ResourceClaimTemplate",
        "metadata": {"name": pool.name, "namespace": tenant, "labels": {POOL_LABEL: pool.name}},
        "spec": {"spec": {"devices": {
            "requests": [{"name": CLAIM_REQUEST, "exactly": {"deviceClassName": device_kind(pool).class_name,
                                                             "count": 1}}],
            "config": [{"requests": [CLAIM_REQUEST],
                        "opaque": {"driver": DRIVER_NAME, "parameters": opaque_config(pool)}}],
        }}},
    }


def claim_templates(stack: StackConfig) -> list[dict[str, Any]]:
    """One ResourceClaimTemplate per tenant and DRA pool it may use, in stack order."""
    dra = {pool.name: pool for pool in dra_pools(stack)}
    return [claim_template(tenant.name, dra[name]) for tenant in stack.tenants for name in tenant.pools
            if name in dra]


def chart_values(stack: StackConfig) -> dict[str, Any]:
    """The DRA driver chart's values for the stack's DRA pools (deployments/helm/dra-driver-nvidia-gpu/values.yaml):
    - `nvidiaDriverRoot`: AKS's driver on the host (`HOST_DRIVER_ROOT`);
    - `gpuResourcesEnabledOverride: true`: the chart refuses GPU resources without it, since the driver "cannot be
      deployed alongside the standard GPU device plugin on the same node" (templates/validation.yaml L33-43);
      `DEVICE_PLUGIN_DEPLOY_LABEL` keeps the two apart;
    - `resources.computeDomains.enabled: false`: ComputeDomains serve Multi-Node NVLink (README.md), which no
      gpushare pool uses;
    - `featureGates` (`feature_gates`), handed to the kubelet plugin as FEATURE_GATES (templates/kubeletplugin.yaml
      L312-315);
    - `kubeletPlugin.affinity` and `tolerations` (templates/kubeletplugin.yaml L410-421): the plugin runs on the DRA
      pools' nodes only (gpushare's pool label), tolerating each of their taints; both replace the chart's defaults
      (an NFD-label affinity and the `nvidia.com/gpu` toleration, values.yaml L290-352).
    """
    pools = dra_pools(stack)
    taints = dict.fromkeys(taint for pool in pools for taint in pool_node_taints(stack, pool))
    return {
        "nvidiaDriverRoot": HOST_DRIVER_ROOT,
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        "featureGates": feature_gates(stack),
        "kubeletPlugin": {
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": POOL_LABEL, "operator": "In",
                                       "values": [pool.name for pool in pools]}]}]}}},
            "tolerations": [toleration(taint) for taint in taints],
        },
    }


CHART_REPOSITORY = "oci://registry.k8s.io/dra-driver-nvidia/charts"
"""Where the project publishes its chart: `hack/build-and-publish-chart.sh` pushes it to `oci://${IMG_PREFIX}/charts`
and `tests/bats/Makefile` L23 installs a released one from `oci://registry.k8s.io/dra-driver-nvidia/charts/
dra-driver-nvidia-gpu` (its images are at `registry.k8s.io/dra-driver-nvidia`, values.yaml L62)."""
RELEASE_NAME = NAMESPACE = "dra-driver-nvidia-gpu"
"""The release and namespace the driver's own install scripts use (demo/clusters/kind/install-dra-driver-gpu.sh
L26: `helm upgrade -i --create-namespace --namespace dra-driver-nvidia-gpu dra-driver-nvidia-gpu`)."""


@dataclass(frozen=True)
class DraRelease:
    """The DRA driver's Helm release, pinned."""

    chart: str
    version: str
    namespace: str
    name: str
    values: dict[str, Any]


@dataclass(frozen=True)
class DraPool:
    """One DRA pool as the plan shows it: its kind of device, the opaque config its claims carry, and each tenant's
    template on it (tenant -> template name, in the tenant's namespace)."""

    kind: DeviceKind
    config: dict[str, Any]
    templates: dict[str, str]


@dataclass(frozen=True)
class DraPlan:
    """What a stack's DRA pools need in the cluster: the driver's release, gpushare's DeviceClasses, each tenant's
    ResourceClaimTemplates (by tenant name, in stack order), and each DRA pool by name."""

    release: DraRelease
    device_classes: tuple[dict[str, Any], ...]
    claim_templates: dict[str, tuple[dict[str, Any], ...]]
    pools: dict[str, DraPool]


CHART_DEVICE_CLASSES = ("gpu.nvidia.com", "mig.nvidia.com")
"""The DeviceClasses the chart installs itself whenever `resources.gpus.enabled` (templates/deviceclass-gpu.yaml,
deviceclass-mig.yaml): every GPU, and every MIG device, of the driver on any node, and `gpu.nvidia.com` maps the
extended resource `nvidia.com/gpu` onto DRA (`extendedResourceName`, under resource.k8s.io/v1)."""


def dra_plan(stack: StackConfig) -> DraPlan | None:
    """The DRA part of a stack's plan; None without DRA pools."""
    pools = dra_pools(stack)
    if not pools:
        return None
    templates: dict[str, list[dict[str, Any]]] = {}
    for template in claim_templates(stack):
        templates.setdefault(template["metadata"]["namespace"], []).append(template)
    release = DraRelease(chart=f"{CHART_REPOSITORY}/{CHART_NAME}", version=CHART_VERSION, namespace=NAMESPACE,
                         name=RELEASE_NAME, values=chart_values(stack))
    by_pool = {pool.name: DraPool(
        kind=device_kind(pool), config=opaque_config(pool),
        templates={tenant: template["metadata"]["name"] for tenant, found in templates.items() for template in found
                   if template["metadata"]["labels"][POOL_LABEL] == pool.name}) for pool in pools}
    return DraPlan(release=release, device_classes=tuple(device_classes(stack)),
                   claim_templates={tenant: tuple(found) for tenant, found in templates.items()}, pools=by_pool)
