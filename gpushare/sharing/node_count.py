"""The node count gpushare sends for a pool.

AKS requires `count` on every agent-pool PUT and, for an autoscaled pool, refuses one outside `[minCount,
maxCount]`; what it expects is the current node count (Azure/AKS#1627: "its value has to be the current node
count"). Sending anything else scales the pool to it.
"""

from __future__ import annotations

from gpushare.model.stack import GpuPool


def count_to_send(pool: GpuPool, live_count: int | None) -> int:
    """A fixed pool's `count`; for an autoscaled pool the live count clamped to `[min, max]` (what the autoscaler
    itself would move to under the new bounds), or `min` when the live count is unknown (a new pool)."""
    if pool.autoscale is None:
        return pool.count or 0
    if live_count is None:
        return pool.autoscale.min
    return min(max(live_count, pool.autoscale.min), pool.autoscale.max)
