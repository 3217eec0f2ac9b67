"""The node pools as preflight counts them (the system pool and each GPU pool): at their most nodes, with an
upgrade's surge, and what each can add over what it runs now. VM sizes' vCPUs and families come from Azure's SKU
list; gpushare's catalog is the fallback for GPU sizes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpushare.azure.deployed import DeployedPool
from gpushare.azure.region_offers import VmSizeOffer
from gpushare.model.catalog import find_vm_size

AKS_DEFAULT_MAX_SURGE = "10%"
"""The system pool is an inline profile without `upgradeSettings`, so AKS's default applies: "If not specified,
the default is 10%" (AKS API `maxSurge`, as Az.Aks documents it), fractions rounded up: one extra node for 1-10."""


@dataclass(frozen=True)
class Node:
    """One node pool as preflight counts it."""

    label: str
    """`pool t4ts` or `system pool`."""
    name: str
    vm_size: str
    nodes: int
    """The most nodes the pool can have: count, or autoscale max."""
    surge: int
    """Extra nodes an upgrade adds for a while (`upgradeSettings.maxSurge` at `nodes`): they need quota too."""
    zones: tuple[str, ...] = ()
    spot: bool = False
    """Counted in the regional Spot bucket (`lowPriorityCores`) instead of its family and `cores`."""
    subnet: str | None = None
    """The subnet of your own its nodes join; None: a VNet AKS manages (or an existing cluster's own subnet)."""
    max_pods: int | None = None
    """The pool's `maxPods`; None: AKS's default for the cluster's network plugin (`pod_addressing`)."""

    @property
    def peak(self) -> int:
        return self.nodes + self.surge

    @property
    def shown(self) -> str:
        return f"{self.nodes} + {self.surge} surge" if self.surge else str(self.nodes)


def vcpus_of(offer: VmSizeOffer | None, pool: Node) -> int | None:
    if offer is not None and offer.vcpus:
        return offer.vcpus
    size = find_vm_size(pool.vm_size)
    return size.vcpus if size else None


def family_of(offer: VmSizeOffer | None, pool: Node) -> str | None:
    if offer is not None and offer.family:
        return offer.family
    size = find_vm_size(pool.vm_size)
    return size.quota_family if size else None


def growth(pool: Node, live: Mapping[str, DeployedPool] | None) -> tuple[int, str]:
    """Nodes the pool can add over what it runs now, and how that was counted."""
    current = live.get(pool.name) if live is not None else None
    if current is None:
        return pool.peak, pool.shown
    if current.vm_size.lower() != pool.vm_size.lower():
        return pool.peak, f"{pool.shown} (new {pool.vm_size} nodes)"
    running = current.count or 0
    return max(pool.peak - running, 0), f"{pool.shown} - {running} running"
