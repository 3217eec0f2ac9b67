"""Every warning about a stack, gathered once in the order `plan` and `pulumi up` show them: the cluster's, the
operator's and the pools' tags and autoscaler, the long run, each pool's layout and the DRA pools' alpha pieces, then
tenants, queues and showback."""

from __future__ import annotations

from collections.abc import Mapping

from gpushare.azure.deployed import unlisted_nodes
from gpushare.azure.guard.guard_report import GuardReport
from gpushare.kubernetes.long_run_warning import long_run_warning
from gpushare.kubernetes.queues import queue_warnings
from gpushare.kubernetes.tenants import pod_security_warnings, tenant_warnings
from gpushare.model.stack import StackConfig
from gpushare.sharing.autoscaler_readiness import autoscaler_warnings
from gpushare.sharing.autoscaling import tag_warnings
from gpushare.sharing.capacity import ambiguous_resource_warnings, capacity_warnings
from gpushare.sharing.operator_values import operator_warnings
from gpushare.sharing.pool_facts import PoolFactsByName
from gpushare.showback.rules import deployment_warnings as showback_warnings
from gpushare.stackfile.cluster_config import access_warnings, api_server_warnings, node_os_warnings
from gpushare.stackfile.dra_pools import dra_warnings
from gpushare.stackfile.kubernetes_version import kubernetes_version_warnings


def plan_warnings(stack: StackConfig, facts: PoolFactsByName, tags: Mapping[str, Mapping[str, str]],
                  guard: GuardReport | None) -> list[str]:
    deployed = guard.deployed if guard else None
    warnings = [*kubernetes_version_warnings(stack), *access_warnings(stack.cluster.access),
                *api_server_warnings(stack.cluster), *node_os_warnings(stack), *operator_warnings(stack),
                *tag_warnings(facts, tags), *autoscaler_warnings(stack, unlisted_nodes(stack, deployed))]
    if long_run := long_run_warning(stack, guard):
        warnings.append(long_run)
    capacities = [(pool.pool, pool.capacity) for pool in facts.values()]
    for pool, capacity in capacities:
        warnings += capacity_warnings(pool, capacity, stack)
    warnings += dra_warnings(stack)
    return [*warnings, *ambiguous_resource_warnings(capacities, stack), *tenant_warnings(stack, facts),
            *pod_security_warnings(stack), *queue_warnings(stack, facts), *showback_warnings(stack)]
