"""What each GPU pool offers pods: the resource name the device plugin advertises and how many per node.

- whole GPUs: `nvidia.com/gpu` x GPUs;
- MIG, `single` strategy: every MIG instance is advertised as `nvidia.com/gpu`;
- MIG, `mixed` strategy: `nvidia.com/mig-<slice>` (e.g. `nvidia.com/mig-1g.5gb`);
- time-slicing / MPS: the count above x replicas, and `<resource>.shared` when `renameByDefault` is on;
- a DRA pool (`allocation: dra`): no extended resource at all. Its nodes publish their devices (GPUs, or MIG devices)
  in ResourceSlices and a pod's claim takes one whole device of the pool's DeviceClass, shared only by the pod's own
  containers, so its capacity is counted in devices of that class, under the name ResourceQuota counts them by
  (`<class>.deviceclass.resource.k8s.io/devices`), and sharing does not multiply it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction

from gpushare.model.catalog import MIG_INSTANCES_PER_GPU, MigProfile
from gpushare.model.stack import Allocation, GpuPool, MigStrategy, SharingStrategy, StackConfig, dedicated_tenant

WHOLE_GPU_RESOURCE = "nvidia.com/gpu"
SHARED_SUFFIX = ".shared"
DEVICE_CLASS_PREFIX = "gpushare-"
CLAIMS_PER_CLASS_SUFFIX = ".deviceclass.resource.k8s.io/devices"
"""The quota resource counting the devices claimed of one DeviceClass (k8s.io/api v0.34.4 core/v1/types.go
`ResourceClaimsPerClass`; kubernetes/kubernetes v1.34.4 pkg/quota/v1/evaluator/core/resource_claims.go
`V1ResourceByDeviceClass`: the class name, then this)."""


@dataclass(frozen=True)
class PoolCapacity:
    pool: str
    base_resource: str
    """The resource before sharing: the name a device-plugin sharing config lists."""
    resource: str
    """The resource pods request on this pool's nodes."""
    devices_per_node: int
    """Devices the plugin sees per node before sharing (GPUs, or MIG instances)."""
    per_node: int
    slice: str | None
    usable_share: Fraction
    """Share of each GPU's compute the MIG layout puts to use (1 without MIG)."""
    dra: bool = False
    """A DRA pool: `resource` counts the devices claimed of its DeviceClass; its nodes advertise no extended
    resource."""

    def total(self, nodes: int) -> int:
        return self.per_node * nodes


def device_class_name(pool: GpuPool) -> str:
    """The DeviceClass of a DRA pool's devices, one per kind of device (`gpushare.sharing.dra.device_classes`):
    `gpushare-<gpu>`, or `gpushare-<gpu>-mig-<profile>` on a MIG pool."""
    suffix = f"-mig-{pool.vm_size.mig_slice(pool.mig)}" if pool.mig else ""
    return f"{DEVICE_CLASS_PREFIX}{pool.vm_size.gpu.key.lower()}{suffix}"


def base_resource(pool: GpuPool, mig_strategy: MigStrategy) -> str:
    """The resource the device plugin advertises for this pool's devices, before any sharing rename; on a DRA pool,
    the quota resource of its DeviceClass (nothing is advertised)."""
    if pool.allocation is Allocation.DRA:
        return device_class_name(pool) + CLAIMS_PER_CLASS_SUFFIX
    if pool.mig and mig_strategy is MigStrategy.MIXED:
        return f"nvidia.com/mig-{pool.vm_size.mig_slice(pool.mig)}"
    return WHOLE_GPU_RESOURCE


def pool_capacity(pool: GpuPool, mig_strategy: MigStrategy) -> PoolCapacity:
    size = pool.vm_size
    devices = size.gpus * (pool.mig.instances_per_gpu if pool.mig else 1)
    resource = base = base_resource(pool, mig_strategy)
    per_node = devices
    if pool.sharing and pool.allocation is not Allocation.DRA:
        per_node *= pool.sharing.replicas
        if pool.sharing.rename_by_default:
            resource = base + SHARED_SUFFIX
    return PoolCapacity(
        pool=pool.name,
        base_resource=base,
        resource=resource,
        devices_per_node=devices,
        per_node=per_node,
        slice=size.mig_slice(pool.mig) if pool.mig else None,
        usable_share=pool.mig.usable_share if pool.mig else Fraction(1),
        dra=pool.allocation is Allocation.DRA,
    )


def device_unit(pool: GpuPool, capacity: PoolCapacity) -> str:
    """What one unit of the pool's advertised resource is, in the pool's own terms: a MIG slice of which profile, a
    share of which GPU (replicas of it), or a whole GPU; the same name (`nvidia.com/gpu`) can be any of them."""
    gpu = pool.vm_size.gpu.display_name.removeprefix("NVIDIA ")
    kind = f"MIG {capacity.slice} slice of {gpu}" if capacity.slice else f"{gpu} GPU"
    if pool.allocation is Allocation.DRA:
        shared = (f", its pod's containers sharing it by {pool.sharing.strategy.value}" if pool.sharing else "")
        return f"{kind if capacity.slice else f'whole {kind}'} claimed through DRA{shared}"
    if pool.sharing:
        return f"1/{pool.sharing.replicas} of {kind} ({pool.sharing.strategy.value}, {pool.sharing.replicas} replicas)"
    return kind if capacity.slice else f"whole {kind}"


def capacity_warnings(pool: GpuPool, capacity: PoolCapacity, stack: StackConfig) -> list[str]:
    """What a reviewer should know about this pool's layout before paying for it. MIG's isolation is advice for a
    pool that several teams' pods share: a pool dedicated to one tenant (tainted, and its policy) runs only that
    team's pods, so it gets the fact without the advice."""
    warnings = []
    if capacity.usable_share < 1:
        idle = 1 - capacity.usable_share
        gpu = pool.vm_size.gpu
        # A 1g instance holds 1/8 of the memory (the GPU's memory comes in 8 slices, its compute in 7: NVIDIA MIG
        # user guide), so seven of them leave one memory slice unused (catalog figures: 35 of 40 GB on A100 40GB).
        one_g = MIG_INSTANCES_PER_GPU[MigProfile.MIG1G]
        warnings.append(
            f"pool {pool.name}: {pool.mig.value} builds {pool.mig.instances_per_gpu} x {capacity.slice} per GPU, "
            f"leaving {idle.numerator}/{idle.denominator} of each GPU's compute idle; MIG7g uses the whole GPU, "
            f"MIG1g all of its compute but {one_g} x {gpu.mig_memory_gb(MigProfile.MIG1G)} = "
            f"{one_g * gpu.mig_memory_gb(MigProfile.MIG1G)} of its {gpu.memory_gb} GB of memory"
        )
    # A DRA pool's sharing is among one pod's containers, in the driver's own daemons: `dra_warnings` says what is
    # alpha there, and these device-plugin facts do not apply.
    plugin_sharing = pool.sharing if not capacity.dra else None
    if plugin_sharing and plugin_sharing.strategy is SharingStrategy.TIME_SLICING:
        owner = dedicated_tenant(stack, pool.name)
        device = "MIG slice" if pool.mig else "GPU"
        if pool.mig:
            advice = ""
        elif owner:
            advice = f" (all of them tenant {owner}'s: the pool is dedicated to it)"
        else:
            advice = "; use MIG for multi-tenant work"
        warnings.append(
            f"pool {pool.name}: time-slicing gives {pool.sharing.replicas} pods per {device} with no memory or fault "
            f"isolation between them{advice}"
        )
    if plugin_sharing and plugin_sharing.strategy is SharingStrategy.MPS:
        # nvidia-cuda-mps-control(1): the control daemon (one per node and resource, the device plugin's
        # mps-control-daemon) runs one MPS server at a time, as the UID of the client that started it; a client of
        # another UID is queued until that server's clients are all done. The GPUs are in EXCLUSIVE_PROCESS mode
        # (cmd/mps-control-daemon), so nothing runs around the server.
        warnings.append(
            f"pool {pool.name}: MPS serves one Linux user at a time on each node: a pod whose CUDA processes run as "
            f"another UID than those already on the node's GPUs waits at CUDA start-up until they have all exited; "
            f"run every pod on this pool as the same user (securityContext.runAsUser)"
        )
        # NVIDIA/k8s-device-plugin README (v0.20.0): "As of v0.15.0 of the device plugin, MPS support is considered
        # experimental."
        warnings.append(
            f"pool {pool.name}: NVIDIA's device plugin still calls its MPS support experimental (its README, since "
            f"v0.15.0); its time-slicing is not marked so"
        )
    if pool.vm_size.note:
        warnings.append(f"pool {pool.name}: {pool.vm_size.note}")
    if pool.vm_size.described_by_stack:
        warnings.append(
            f"pool {pool.name}: {pool.vm_size.name} is described by the stack, not the catalog "
            f"({pool.vm_size.gpus} x {pool.vm_size.gpu.display_name}): `gpushare preflight` checks its GPU count "
            f"against Azure's Resource SKUs; offline, this plan trusts the `gpu:` block"
        )
    if pool.spot:
        warnings.append(
            f"pool {pool.name}: Spot nodes can be evicted at any time, with 30 seconds' notice (Azure Scheduled "
            f"Events), whenever Azure needs the capacity or the price exceeds maxPrice; not for serving: use it for "
            f"development, batch and restartable work"
        )
    return warnings


def ambiguous_resource_warnings(pools: list[tuple[GpuPool, PoolCapacity]], stack: StackConfig) -> list[str]:
    """Pools that advertise one resource name for different devices: a pod asking for it may land on any of them.

    Moot as soon as the stack has a tenant: then the admission policies (`gpushare.kubernetes.admission`) make every
    GPU pod, in a tenant's namespace (`tenant_policy`) and in every other one (`shared_pool_policy`), set
    `nodeSelector: {gpushare.io/pool: <one pool>}`, so no pod can land on another pool whatever it asks for
    (kube-system and gpu-operator are exempt: the cluster's own DaemonSets, not workloads)."""
    if stack.tenants:
        return []
    by_resource: dict[str, list[tuple[GpuPool, PoolCapacity]]] = defaultdict(list)
    for pool, capacity in pools:
        by_resource[capacity.resource].append((pool, capacity))
    warnings = []
    for resource, entries in by_resource.items():
        devices = {_device_description(pool, capacity) for pool, capacity in entries}
        if len(devices) > 1:
            names = ", ".join(pool.name for pool, _ in entries)
            warnings.append(
                f"pools {names} all advertise {resource} but for different devices ({'; '.join(sorted(devices))}); "
                f"a pod asking for {resource} may land on any of them, so select one with a nodeSelector on "
                f"gpushare.io/pool"
            )
    return warnings


def _device_description(pool: GpuPool, capacity: PoolCapacity) -> str:
    device = f"{pool.vm_size.gpu.display_name.removeprefix('NVIDIA ')}" + (f" {capacity.slice}" if capacity.slice else "")
    if pool.sharing:
        device += f" {pool.sharing.strategy.value} x{pool.sharing.replicas}"
    return device
