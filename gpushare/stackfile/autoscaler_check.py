"""The stack-file check for the cluster autoscaler's GPU readiness rule (`gpushare.sharing.autoscaler_readiness`):
refused where the rule would stop the autoscaler for every pool."""

from __future__ import annotations

from typing import Any

from gpushare.model.keys import OPERATOR_KEY, POOLS_KEY
from gpushare.model.stack import Cluster, GpuPool, MigStrategy, Operator
from gpushare.sharing.autoscaler_readiness import HEALTH_THRESHOLD, UNREADY_RULE, other_nodes, unready_pools
from gpushare.stackfile.checks import Checker, name_indexes


def check_autoscaler_readiness(c: Checker, raw_pools: Any, pools: tuple[GpuPool, ...], operator: Operator,
                               cluster: Cluster) -> None:
    """Refuse a stack whose pools, in a cluster that autoscales, could take the cluster autoscaler past its
    cluster-wide unready threshold: it would then stop scaling every pool. Below the threshold `autoscaler_warnings`
    says what the autoscaler makes of those pools. An existing cluster's other pools are unknown offline, so there
    it only warns."""
    found = unready_pools(pools, operator.mig_strategy, other_nodes(cluster))
    if not found.autoscaled or not found.pools or found.healthy or cluster.existing:
        return
    index = name_indexes(raw_pools)
    names = ", ".join(pool.name for pool in found.pools)
    why = (f"in a cluster that autoscales (pools {', '.join(found.autoscaled)} do), {UNREADY_RULE}; pools {names} could "
           f"make {found.counts} unready, and {HEALTH_THRESHOLD}")
    if any(pool.mig for pool in found.pools) and operator.mig_strategy is MigStrategy.MIXED:
        c.add(f"{OPERATOR_KEY}.migStrategy",
              f"mixed advertises MIG instances as nvidia.com/mig-<slice> only: {why}; use migStrategy single (every "
              f"MIG instance advertised as nvidia.com/gpu), or fixed counts for every pool")
    for pool in found.pools:
        if pool.sharing and pool.sharing.rename_by_default and pool.name in index:
            c.add(f"{POOLS_KEY}[{index[pool.name]}].sharing.renameByDefault",
                  f"true advertises pool {pool.name}'s shares as nvidia.com/gpu.shared only: {why}; remove it (in a "
                  f"cluster that autoscales, the default is false: the shares are advertised as nvidia.com/gpu)")
