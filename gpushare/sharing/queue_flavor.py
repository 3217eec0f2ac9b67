"""What a pool's Kueue ResourceFlavor selects and tolerates: its nodes' labels and taints, read by the flavor
objects (`gpushare.kubernetes.queues`) and by the stack file's validation (the CRD's limits)."""

from __future__ import annotations

from typing import Any

from gpushare.model.stack import POOL_LABEL, SPOT_NODE_LABEL
from gpushare.sharing.operator_values import toleration
from gpushare.sharing.pool_facts import PoolFacts

MAX_FLAVOR_TOLERATIONS = 8
"""`ResourceFlavorSpec.tolerations` `maxItems: 8` (Kueue v0.19.2 CRD)."""
MAX_FLAVOR_LABELS = 8
"""`ResourceFlavorSpec.nodeLabels` `maxProperties: 8` (Kueue v0.19.2 CRD)."""


def flavor_node_labels(facts: PoolFacts) -> dict[str, str]:
    """The pool's label, plus AKS's Spot label on a Spot pool: when Kueue admits a workload on the flavor it adds
    these to the pod template (`pkg/podset` `Merge` via `FromAssignment`), so the pods land on that pool only. The
    Spot label is `kubernetes.azure.com/priority`, which AKS sets on every Spot node, not the `scalesetpriority`
    label AKS deprecated (`model.stack.SPOT_NODE_LABEL`)."""
    labels = {POOL_LABEL: facts.pool.name}
    if facts.pool.spot:
        labels[SPOT_NODE_LABEL] = facts.aks_labels[SPOT_NODE_LABEL]
    return labels


def flavor_tolerations(facts: PoolFacts) -> list[dict[str, Any]]:
    """A toleration for every taint the pool's nodes carry."""
    return [toleration(t) for t in facts.tolerated_taints]
