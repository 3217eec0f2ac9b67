"""The cluster autoscaler's GPU readiness rule and its cluster-wide health threshold, as plain Python.

Read from kubernetes/autoscaler at tag cluster-autoscaler-1.35.2 (commit 2d42588803c7), under `cluster-autoscaler/`,
and tested against that code itself (tools/autoscalercheck, tests/sharing/test_autoscaler_readiness_go.py):

- `processors/customresources/gpu_processor.go`, `GpuCustomResourcesProcessor.FilterOutNodesWithUnreadyResources`:
  every ready node that carries the cloud's GPU label but has no GPU allocatable (`utils/gpu/gpu.go`
  `NodeHasGpuAllocatable`: a non-zero `nvidia.com/gpu`, `amd.com/gpu`, `habana.ai/gaudi`, `gpu.intel.com/xe` or
  `microsoft.com/directx`) is turned into an unready copy (`kubernetes.ResourceUnready`), for as long as it lives.
  "Ready" is the ready-node lister's (`utils/kubernetes/ready.go` `IsNodeReadyAndSchedulable`): a Ready node, not
  cordoned. On Azure the label is `kubernetes.azure.com/accelerator` (`cloudprovider/azure/azure_cloud_provider.go`
  `GPULabel`), which AKS puts on every GPU node (`azure_template.go` writes it, `nvidia`, on the template of every
  NVIDIA SKU to match), and the provider exposes no GPU through DRA.
  So a node whose GPUs are advertised as `nvidia.com/gpu.shared` (`renameByDefault: true`) or only as
  `nvidia.com/mig-<slice>` (MIG under `migStrategy: mixed`) counts as unready. kubernetes/autoscaler#8095 (open).
- `clusterstate/clusterstate.go`, `ClusterStateRegistry.IsClusterHealthy`: the cluster is unhealthy when more than
  `--ok-total-unready-count` (3) nodes are unready and they are more than `--max-total-unready-percentage` (45) % of
  all nodes (`config/flags/flags.go` defaults); `StaticAutoscaler.RunOnce` (`core/static_autoscaler.go`) then
  stops ("Cluster is not ready for autoscaling") and neither scales up nor down, for every pool.
  `updateReadinessStats` counts every node, in an autoscaled group or not; a node not ready within
  `MaxNodeStartupTime` (15 minutes) of its creation is "not started", not unready, until then.

AKS runs cluster-autoscaler 1.33.5, 1.34.4 and 1.35.1 for those Kubernetes minors (Azure/AKS CHANGELOG.md@8d1c890).
Read at those tags, the rule is the same for NVIDIA nodes: 1.35.1 (3929ade99d23) has the very files of 1.35.2;
1.34.4 (ff63487e5dc7) has the same `FilterOutNodesWithUnreadyResources` (DRA check, `NodeHasGpuAllocatable` over the
same five resources); 1.33.5 (c4f0859592a7) accepts only a non-zero `nvidia.com/gpu` or `microsoft.com/directx` and
has no DRA check, neither of which a shared or mixed-MIG NVIDIA node has. All three keep the GPU label, the
`IsClusterHealthy` threshold (3 and 45%, the same flag defaults), `MaxNodeStartupTime` and the stop in `RunOnce`.
Upstream moved to kubernetes-sigs/cluster-autoscaler, where the fix for MIG and renamed resources is open as #92
(not merged): once merged and shipped by AKS it would lift this rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation

from gpushare.model.stack import Allocation, Cluster, GpuPool, MigStrategy, StackConfig

AUTOSCALER_RELEASE = "cluster-autoscaler 1.33.5, 1.34.4 and 1.35.1 as AKS runs them"
UPSTREAM_ISSUE = "kubernetes/autoscaler#8095"
"""The open issue: nodes whose GPUs are advertised under another resource name are counted unready."""
UPSTREAM_FIX = "kubernetes-sigs/cluster-autoscaler#92"
"""The upstream fix (not merged): it would count such nodes ready and lift the rule."""
GPU_LABEL = "kubernetes.azure.com/accelerator"
GPU_VENDOR_RESOURCES = ("nvidia.com/gpu", "habana.ai/gaudi", "gpu.intel.com/xe", "amd.com/gpu",
                        "microsoft.com/directx")
"""`gpu.GPUVendorResourceNames`: a non-zero allocatable of any of them is a GPU the processor accepts."""
OK_TOTAL_UNREADY_COUNT = 3
MAX_TOTAL_UNREADY_PERCENTAGE = 45.0
MAX_NODE_STARTUP = timedelta(minutes=15)
"""`clusterstate.MaxNodeStartupTime`."""
_NOT_READY_TAINTS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/disk-pressure",
                               "node.kubernetes.io/network-unavailable"})


def _nonzero(quantity: object) -> bool:
    """A resource quantity above zero ("4", "1k"); what is not a number counts as none."""
    text = str(quantity).strip()
    for suffix in ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "k", "M", "G", "T", "P", "E", "m"):
        if text.endswith(suffix):
            text = text[: -len(suffix)]
            break
    try:
        return Decimal(text) != 0
    except InvalidOperation:
        return False


def node_ready(node: Mapping) -> bool:
    """`kubernetes.GetNodeReadiness(node).Ready`: a Ready condition that is True, no DiskPressure or
    NetworkUnavailable, no not-ready taint; a node without a Ready condition is not ready."""
    status, spec = node.get("status") or {}, node.get("spec") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    if "Ready" not in conditions or conditions["Ready"] in ("False", "Unknown"):
        return False
    if conditions.get("DiskPressure") == "True" or conditions.get("NetworkUnavailable") == "True":
        return False
    return not any(t.get("key") in _NOT_READY_TAINTS for t in spec.get("taints") or [])


def has_gpu_allocatable(node: Mapping) -> bool:
    """`gpu.NodeHasGpuAllocatable`."""
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return any(_nonzero(allocatable[name]) for name in GPU_VENDOR_RESOURCES if name in allocatable)


def gpu_unready(node: Mapping) -> bool:
    """Whether `FilterOutNodesWithUnreadyResources` marks `node` (the API's JSON) unready: a ready, schedulable node
    with the GPU label and no GPU allocatable."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    schedulable = node_ready(node) and not (node.get("spec") or {}).get("unschedulable")
    return schedulable and GPU_LABEL in labels and not has_gpu_allocatable(node)


def counted_unready(node: Mapping, now: datetime) -> bool:
    """Whether `updateReadinessStats` puts `node` among the cluster's unready nodes: not ready (after the GPU rule)
    and created at least `MAX_NODE_STARTUP` ago."""
    if node_ready(node) and not gpu_unready(node):
        return False
    created = (node.get("metadata") or {}).get("creationTimestamp")
    if not created:
        return True  # Go's zero time: long ago
    return datetime.fromisoformat(str(created).replace("Z", "+00:00")) + MAX_NODE_STARTUP <= now


def cluster_healthy(unready: int, total: int, ok_count: int = OK_TOTAL_UNREADY_COUNT,
                    max_percentage: float = MAX_TOTAL_UNREADY_PERCENTAGE) -> bool:
    """`IsClusterHealthy`: false when more than `ok_count` nodes are unready and more than `max_percentage` % of
    `total`."""
    return not (unready > ok_count and unready > max_percentage / 100.0 * total)


def advertises_gpu_resource(pool: GpuPool, mig_strategy: MigStrategy) -> bool:
    """Whether the pool's nodes advertise `nvidia.com/gpu`, which is what the processor looks for: not a MIG pool
    under `mixed` (`nvidia.com/mig-<slice>`) and not a share renamed to `<resource>.shared`. The resource's name
    itself is `gpushare.sharing.capacity.pool_capacity`'s; a test holds the two to the same answer. A DRA pool's
    nodes advertise none at all (the Azure provider exposes no GPU through DRA, above)."""
    if pool.allocation is Allocation.DRA:
        return False
    if pool.mig and mig_strategy is MigStrategy.MIXED:
        return False
    return not (pool.sharing and pool.sharing.rename_by_default)


# --- what a stack's pools make of it ------------------------------------------------------------------------

UNREADY_RULE = (f"the cluster autoscaler counts a node with the {GPU_LABEL} label and no nvidia.com/gpu allocatable as "
         f"unready for as long as it lives (GpuCustomResourcesProcessor.FilterOutNodesWithUnreadyResources, "
         f"{AUTOSCALER_RELEASE}; {UPSTREAM_ISSUE}, open; the upstream fix {UPSTREAM_FIX}, not merged, would lift "
         f"this)")
HEALTH_THRESHOLD = (f"more than {OK_TOTAL_UNREADY_COUNT} unready nodes making up more than "
              f"{MAX_TOTAL_UNREADY_PERCENTAGE:g}% of the cluster stop the autoscaler for every pool "
              f"(ClusterStateRegistry.IsClusterHealthy)")


@dataclass(frozen=True)
class UnreadyPools:
    """The pools whose nodes the cluster autoscaler would count unready, and the worst case for its threshold."""

    autoscaled: tuple[str, ...]
    """The stack's pools that autoscale: with any, AKS runs the cluster autoscaler."""
    pools: tuple[GpuPool, ...]
    """The pools that advertise no `nvidia.com/gpu` (`advertises_gpu_resource`)."""
    unready_nodes: int
    """Those pools' nodes at their most."""
    total_nodes: int
    """The nodes counted then: those pools at their most, every other pool of the stack at its fewest, and the
    cluster's other nodes where known (`other_nodes`)."""
    other_nodes: int | None
    """The nodes of the cluster's pools the stack does not list: the system pool gpushare creates, or an existing
    cluster's own pools as read; None when they were not read (they are left out of `total_nodes`)."""

    @property
    def healthy(self) -> bool:
        """At worst, with an existing cluster's unread pools left out: each of their nodes lowers the share."""
        return cluster_healthy(self.unready_nodes, self.total_nodes)

    @property
    def counts(self) -> str:
        if self.other_nodes is None:
            return (f"up to {self.unready_nodes} of the {self.total_nodes} nodes of gpushare's pools (the existing "
                    "cluster's other pools were not read)")
        return f"up to {self.unready_nodes} of the cluster's {self.total_nodes} nodes"

    @property
    def nodes_to_act(self) -> int:
        """The fewest nodes the cluster needs for the autoscaler to act with `unready_nodes` unready."""
        total = self.total_nodes
        while not cluster_healthy(self.unready_nodes, total):
            total += 1
        return total


def unready_pools(pools: tuple[GpuPool, ...], mig_strategy: MigStrategy, other_nodes: int | None) -> UnreadyPools:
    unready = tuple(pool for pool in pools if not advertises_gpu_resource(pool, mig_strategy))
    unready_nodes = sum(pool.max_nodes for pool in unready)
    stack_others = sum(pool.min_nodes for pool in pools if pool not in unready)
    return UnreadyPools(autoscaled=tuple(pool.name for pool in pools if pool.autoscale), pools=unready,
                        unready_nodes=unready_nodes, total_nodes=(other_nodes or 0) + unready_nodes + stack_others,
                        other_nodes=other_nodes)


def other_nodes(cluster: Cluster, existing_other_nodes: int | None = None) -> int | None:
    """The nodes outside the stack's pools: the system pool of a cluster gpushare creates; on an existing cluster
    its own pools' nodes as read (`existing_other_nodes`), None when not read."""
    return existing_other_nodes if cluster.existing else cluster.system_pool.count


def why_unready(pool: GpuPool, mig_strategy: MigStrategy) -> str:
    if pool.allocation is Allocation.DRA:
        return "allocation dra publishes its devices in ResourceSlices and advertises no nvidia.com/gpu"
    if pool.mig and mig_strategy is MigStrategy.MIXED:
        return (f"migStrategy mixed advertises its MIG instances as nvidia.com/mig-{pool.vm_size.mig_slice(pool.mig)} "
                f"only")
    return "renameByDefault: true advertises its shares as nvidia.com/gpu.shared only"


def autoscaler_warnings(stack: StackConfig, existing_other_nodes: int | None = None) -> list[str]:
    """What the cluster autoscaler makes of pools that advertise no `nvidia.com/gpu`, when it runs (any pool of the
    stack autoscales) or may run (an existing cluster's other pools). `existing_other_nodes`: an existing cluster's
    nodes outside the stack's pools, as read (None: not read)."""
    found = unready_pools(stack.pools, stack.operator.mig_strategy, other_nodes(stack.cluster, existing_other_nodes))
    if not found.pools or not (found.autoscaled or stack.cluster.existing):
        return []
    warnings = []
    for pool in found.pools:
        if pool.allocation is Allocation.DRA:
            fix = "allocation: devicePlugin advertises nvidia.com/gpu"
        elif pool.sharing and pool.sharing.rename_by_default:
            fix = "remove renameByDefault to advertise nvidia.com/gpu"
        else:
            fix = "use migStrategy single to advertise nvidia.com/gpu"
        if found.autoscaled:
            where = f"the cluster autoscales (pools {', '.join(found.autoscaled)}): {UNREADY_RULE}"
        else:
            where = (f"if the existing cluster's own pools autoscale, {UNREADY_RULE}; `gpushare verify` reports the live "
                     f"count")
        warnings.append(f"pool {pool.name}: {why_unready(pool, stack.operator.mig_strategy)}, and {where}; its "
                        f"nodes are left out of the autoscaler's ready nodes, and {_verdict(found)}; {fix}")
    return warnings


def _verdict(found: UnreadyPools) -> str:
    """What the threshold makes of `found` at worst, in words that agree with its numbers (and `plan --json`'s
    `autoscaler.healthy`)."""
    acts = "it still acts" if found.autoscaled else "it would still act"
    stops = "it stops" if found.autoscaled else "it would stop"
    if found.healthy:
        return f"with {found.counts} unready {acts} ({HEALTH_THRESHOLD})"
    if found.other_nodes is None:
        return (f"with {found.counts} unready {stops} scaling every pool unless the cluster's other pools hold at "
                f"least {found.nodes_to_act - found.total_nodes} more nodes ({HEALTH_THRESHOLD}; `plan --deployed FILE` "
                "or the live run reads them)")
    return f"with {found.counts} unready {stops} scaling every pool ({HEALTH_THRESHOLD})"
