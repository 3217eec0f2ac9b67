"""What the cluster autoscaler can do for a GPU pool, given the resource its nodes advertise.

The autoscaler decides whether a new node would fit a pending pod from a node template. On Azure that template
gets exactly one GPU resource: `nvidia.com/gpu` = the VM size's physical GPU count
(kubernetes/autoscaler `cluster-autoscaler/cloudprovider/azure/azure_template.go`, `buildNodeFromTemplate`:
`node.Status.Capacity[gpu.ResourceNvidiaGPU] = gpuCount` from the SKU; commit 55c37cd5eb, 2026-08). It knows
nothing of the device plugin's config, so:
- a pool whose nodes advertise another name (`nvidia.com/gpu.shared` under time-slicing/MPS with
  `renameByDefault: true`, `nvidia.com/mig-<slice>` under `migStrategy: mixed`) never scales up from 0 for pods
  asking for that name: the template has none of it (Azure/AKS#3427, #5161; kubernetes/autoscaler#8095);
- a pool that advertises `nvidia.com/gpu` but more per node than physical GPUs (time-slicing/MPS replicas, MIG
  instances under `single`) scales from 0, but sizes scale-ups by the physical count: more nodes than needed.
"""

from __future__ import annotations

from gpushare.sharing.capacity import SHARED_SUFFIX, WHOLE_GPU_RESOURCE, PoolCapacity, pool_capacity
from gpushare.stackfile.model import GpuPool, MigStrategy

OPERATOR_MIG_STRATEGY_KEY = "gpushare:operator.migStrategy"


def _ways_to_whole_gpu_name(pool: GpuPool, capacity: PoolCapacity) -> list[str]:
    """What makes this pool advertise `nvidia.com/gpu` instead."""
    ways = []
    if capacity.resource.endswith(SHARED_SUFFIX):
        ways.append("`renameByDefault: false` in its `sharing`")
    if capacity.base_resource != WHOLE_GPU_RESOURCE:
        ways.append(f"`{OPERATOR_MIG_STRATEGY_KEY}: single` (every MIG pool then advertises {WHOLE_GPU_RESOURCE})")
    return ways


def scale_from_zero_problem(pool: GpuPool, mig_strategy: MigStrategy) -> str | None:
    """Why `autoscale.min: 0` cannot work for this pool, with the ways out; None when it can (or no autoscale)."""
    if pool.autoscale is None or pool.autoscale.min != 0:
        return None
    capacity = pool_capacity(pool, mig_strategy)
    if capacity.resource == WHOLE_GPU_RESOURCE:
        return None
    gpus = pool.vm_size.gpus
    return (
        f"got 0, but this pool's nodes advertise {capacity.resource}, and the cluster autoscaler models a new "
        f"{pool.vm_size.name} node with only {WHOLE_GPU_RESOURCE}: {gpus} (its physical GPUs), so a pod asking for "
        f"{capacity.resource} never scales the pool up from 0; allowed: 1 or more for a pool advertising "
        f"{capacity.resource}, or 0 for one advertising {WHOLE_GPU_RESOURCE}. Fix: `min: 1`, or "
        f"{' and '.join(_ways_to_whole_gpu_name(pool, capacity))} so pods ask for {WHOLE_GPU_RESOURCE}"
    )


def overscale_warning(pool: GpuPool, capacity: PoolCapacity) -> str | None:
    """For an autoscaled pool offering more devices per node than physical GPUs: the autoscaler over-provisions."""
    if pool.autoscale is None or capacity.per_node == pool.vm_size.gpus:
        return None
    return (
        f"pool {pool.name}: autoscaled, and each node offers {capacity.per_node} x {capacity.resource} while the "
        f"cluster autoscaler models a new {pool.vm_size.name} node with {pool.vm_size.gpus} x {WHOLE_GPU_RESOURCE} "
        f"(its physical GPUs): a scale-up can add more nodes than the pending pods need (up to "
        f"max {pool.autoscale.max}); size `autoscale.max` with that in mind"
    )
