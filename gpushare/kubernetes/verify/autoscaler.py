"""What the cluster autoscaler makes of the cluster's nodes as they are (`gpushare.sharing.autoscaler_readiness`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gpushare.kubernetes.verify.api_json import ClusterSnapshot, object_name
from gpushare.kubernetes.verify.expectations import PoolExpectation
from gpushare.kubernetes.verify.findings import Finding
from gpushare.sharing.autoscaler_readiness import (
    GPU_LABEL,
    MAX_TOTAL_UNREADY_PERCENTAGE,
    OK_TOTAL_UNREADY_COUNT,
    UPSTREAM_FIX,
    UPSTREAM_ISSUE,
    cluster_healthy,
    counted_unready,
    gpu_unready,
)


@dataclass(frozen=True)
class AutoscalerView:
    """What the cluster autoscaler makes of the cluster's nodes as they are (`gpushare.sharing.autoscaler_readiness`,
    the rule of cluster-autoscaler 1.35.2, the same at the 1.33.5, 1.34.4 and 1.35.1 AKS runs)."""

    runs: bool
    """A pool of the stack autoscales, so AKS runs the autoscaler (it may also run for an existing cluster's own
    pools, which gpushare does not read)."""
    gpu_unready: tuple[str, ...]
    """Nodes it marks unready: the GPU label and no `nvidia.com/gpu` (or other GPU) allocatable."""
    unready: tuple[str, ...]
    """Every node it counts unready cluster-wide (the above, and nodes NotReady for 15 minutes after creation)."""
    total: int

    @property
    def healthy(self) -> bool:
        return cluster_healthy(len(self.unready), self.total)

    def to_json(self) -> dict:
        return {"runs": self.runs, "gpuUnreadyNodes": list(self.gpu_unready), "unreadyNodes": list(self.unready),
                "nodes": self.total, "healthy": self.healthy, "okTotalUnreadyCount": OK_TOTAL_UNREADY_COUNT,
                "maxTotalUnreadyPercentage": MAX_TOTAL_UNREADY_PERCENTAGE}


def autoscaler_view(expectations: Iterable[PoolExpectation], snapshot: ClusterSnapshot) -> AutoscalerView:
    nodes = [*snapshot.nodes, *snapshot.other_nodes]
    return AutoscalerView(
        runs=any(e.autoscaled for e in expectations),
        gpu_unready=tuple(sorted(object_name(n) for n in nodes if gpu_unready(n))),
        unready=tuple(sorted(object_name(n) for n in nodes if counted_unready(n, snapshot.now))),
        total=len(nodes),
    )


def autoscaler_findings(view: AutoscalerView) -> list[Finding]:
    """A mismatch when the autoscaler runs and its cluster-wide threshold is crossed: it then scales no pool."""
    if not view.runs or view.healthy:
        return []
    gpu = [n for n in view.unready if n in view.gpu_unready]
    others = "the others are" if gpu else "they are"
    cause = (f"{len(gpu)} of them carry {GPU_LABEL} but advertise no nvidia.com/gpu ({', '.join(gpu[:5])}"
             f"{', ...' if len(gpu) > 5 else ''}; {UPSTREAM_ISSUE}; {UPSTREAM_FIX}, not merged, would lift this); "
             if gpu else "")
    return [Finding(
        "autoscaler",
        f"the cluster autoscaler counts {len(view.unready)} of {view.total} nodes unready, more than "
        f"{OK_TOTAL_UNREADY_COUNT} and more than {MAX_TOTAL_UNREADY_PERCENTAGE:g}%: it stops scaling every pool "
        f"(ClusterStateRegistry.IsClusterHealthy)",
        f"{cause}{others} NotReady" if len(gpu) < len(view.unready) else cause.removesuffix("; "),
        "advertise nvidia.com/gpu on the GPU pools (leave sharing.renameByDefault out, migStrategy single) and "
        "`pulumi up`; `kubectl describe node` for NotReady ones",
    )]
