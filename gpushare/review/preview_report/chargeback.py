"""The chargeback of each side of a previewed change, for `report --prices`: each GPU pool's month at its most nodes
split by `gpushare.showback.chargeback.split_pool_cost` among the tenants' guarantees as the preview deploys them (a
pool one tenant's policy lists is wholly its own; a pool several list, each tenant's ClusterQueue `nominalQuota` on
the pool's flavor), in the shape of `plan --json`'s `cost.pools[].chargeback`, so `review.chargeback_changes` shows
both sides as `compare` does. A pool several tenants list with no ClusterQueue for one of them (queues off, or a
preview without `--show-sames`) has no guarantee to split by: it is left out, and said so."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpushare.review.gpu_changes import PoolSide, PoolTransition, SideCost, capacity
from gpushare.review.preview_report.digest import Preview
from gpushare.model.stack import TENANT_LABEL
from gpushare.review.preview_report.tenants import CLUSTER_QUEUE_TYPE, POLICY_TYPE
from gpushare.review.tenant_changes import pools_from_annotation
from gpushare.showback.chargeback import cents, split_pool_cost

_ABSENT = {"old": ("create", "create-replacement"), "new": ("delete", "delete-replaced")}


def _on_side(preview: Preview, type_: str, side: str) -> list[Mapping[str, Any]]:
    return [inputs for step in preview.steps if step.type == type_ and step.op not in _ABSENT[side]
            and (inputs := step.inputs(side)) is not None]


def _tenant_pools(preview: Preview, side: str) -> dict[str, tuple[str, ...]]:
    """Tenant -> the pools its policy lets its pods use (the policy's pools annotation)."""
    found = {}
    for inputs in _on_side(preview, POLICY_TYPE, side):
        metadata = inputs.get("metadata") if isinstance(inputs.get("metadata"), Mapping) else {}
        tenant = (metadata.get("labels") or {}).get(TENANT_LABEL)
        pools = pools_from_annotation(metadata)
        if isinstance(tenant, str) and pools is not None:
            found[tenant] = pools
    return found


def _nominal(preview: Preview, side: str) -> dict[str, dict[str, int]]:
    """ClusterQueue (its tenant) -> flavor (its pool) -> the nominalQuota of the flavor's first resource (a GPU
    flavor covers one resource: `queues.cluster_queue`)."""
    found: dict[str, dict[str, int]] = {}
    for inputs in _on_side(preview, CLUSTER_QUEUE_TYPE, side):
        name = (inputs.get("metadata") or {}).get("name")
        groups = (inputs.get("spec") or {}).get("resourceGroups") or ()
        flavors = [flavor for group in groups if isinstance(group, Mapping) for flavor in group.get("flavors") or ()
                   if isinstance(flavor, Mapping)]
        found[str(name)] = {str(f.get("name")): f["resources"][0]["nominalQuota"] for f in flavors
                            if f.get("resources") and isinstance(f["resources"][0].get("nominalQuota"), int)}
    return found


def _guarantees_known(pool: str, listed: Mapping[str, tuple[str, ...]], nominal: Mapping[str, object]) -> bool:
    owners = [tenant for tenant, pools in listed.items() if pool in pools]
    return len(owners) < 2 or all(tenant in nominal for tenant in owners)


def _split(pool: str, side: PoolSide, cost: SideCost | None, listed: Mapping[str, tuple[str, ...]],
           nominal: Mapping[str, Mapping[str, int]]) -> dict[str, Any] | None:
    """None without a price or a capacity (the GPU table says which)."""
    nodes = capacity(side)
    if cost is None or cost.monthly_max is None or nodes.per_node is None or nodes.max_nodes is None:
        return None
    slices = nodes.per_node * nodes.max_nodes
    owners = [tenant for tenant, pools in listed.items() if pool in pools]
    guarantees = ({owners[0]: slices} if len(owners) == 1
                  else {tenant: nominal[tenant].get(pool, 0) for tenant in owners})
    split = split_pool_cost(cents(round(cost.monthly_max, 2)), slices, guarantees)
    return split.to_json() | {"nodes": nodes.max_nodes}


def preview_chargeback(preview: Preview, transitions: list[PoolTransition]) -> tuple[dict, dict, list[str]]:
    """(before, after, pools left out): each side as a `cost`-shaped object with `pools[].chargeback`."""
    sides: dict[str, dict] = {}
    left_out = []
    for side, attr, cost_attr in (("old", "before", "cost_before"), ("new", "after", "cost_after")):
        listed, nominal = _tenant_pools(preview, side), _nominal(preview, side)
        pools = []
        for t in transitions:
            pool_side = getattr(t, attr)
            if pool_side is None:
                continue
            if not _guarantees_known(t.name, listed, nominal):
                left_out.append(t.name)
            elif (split := _split(t.name, pool_side, getattr(t, cost_attr), listed, nominal)) is not None:
                pools.append({"name": t.name, "chargeback": split})
        sides[side] = {"pools": pools}
    return sides["old"], sides["new"], list(dict.fromkeys(left_out))
