"""Preflight's entry points: every check's row from what was read (`evaluate`), the reads beside the guard's
(`read_for_preflight`), and the runs: `gpushare preflight`'s (`check_live`) and the Pulumi program's
(`check_for_program`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from gpushare.azure.arm import AzureReads
from gpushare.azure.cluster_baseline import POD_CIDR, SERVICE_CIDR
from gpushare.azure.deployed import DeployedPool
from gpushare.azure.deployed_cluster import DeployedCluster
from gpushare.azure.guard.cluster import missing_cluster_message, service_principal_problem
from gpushare.azure.guard.guard_report import GuardReport
from gpushare.azure.guard.guard_runs import raise_or_warn_on_read_error
from gpushare.azure.pod_addressing import GPUSHARE_CLUSTER, cluster_addressing
from gpushare.azure.preflight.existing_cluster import (
    baseline_checks,
    existing_version_checks,
    existing_vnet_checks,
    operator_node_checks,
    own_system_surge,
    owner_gpu_pool_checks,
)
from gpushare.azure.preflight.nodes import AKS_DEFAULT_MAX_SURGE, Node
from gpushare.azure.preflight.offers import (
    gpu_check,
    os_disk_check,
    size_check,
    spot_eviction_check,
    version_check,
    zone_check,
)
from gpushare.azure.preflight.quota import quota_checks
from gpushare.azure.preflight.preflight_report import Check, PreflightReport, Verdict
from gpushare.azure.preflight.role_assignments import role_assignment_checks
from gpushare.azure.preflight.subnets import stack_subnets, subnet_checks
from gpushare.azure.region_offers import RegionOffers, read_region
from gpushare.azure.role_assignments import FoundAssignment, planned_assignments, read_assignments
from gpushare.azure.subnets import Subnet, read_subnets
from gpushare.errors import AzureReadError
from gpushare.model.environment_variables import DEPLOYED_FILE_ENV, OFFLINE_ENV
from gpushare.model.stack import SYSTEM_POOL_NAME, PreflightMode, StackConfig, pool_subnet
from gpushare.sharing.upgrades import nodes_at_once


def preflight_nodes(stack: StackConfig, cluster: DeployedCluster | None) -> list[Node]:
    """The node pools preflight counts: a created cluster's system pool and every GPU pool, at their most nodes
    with an upgrade's surge. `cluster`: the managed cluster as read (an existing one's system subnet)."""
    existing = stack.cluster.existing
    system = stack.cluster.system_pool
    pools = [] if existing else [Node("system pool", SYSTEM_POOL_NAME, system.vm_size, system.count,
                                       nodes_at_once(AKS_DEFAULT_MAX_SURGE, system.count))]
    # On an existing cluster a pool without subnetId joins the system pool's subnet (as the program sends it).
    default_subnet = cluster.system_subnet_id if existing and cluster else None
    pools += [Node(f"pool {p.name}", p.name, p.vm_size.name, p.max_nodes,
                    nodes_at_once(p.upgrade_settings.max_surge, p.max_nodes) if p.upgrade_settings else 0, p.zones,
                    p.spot is not None,
                    pool_subnet(stack, p) or default_subnet, p.max_pods)
              for p in stack.pools]
    if not existing and stack.cluster.network.subnet_id:
        pools[0] = dataclasses.replace(pools[0], subnet=stack.cluster.network.subnet_id)
    return pools


def evaluate(stack: StackConfig, offers: RegionOffers, deployed: Iterable[DeployedPool] | None,
             subscription_id: str, cluster: DeployedCluster | None = None,
             subnets: Mapping[str, Subnet | None] | None = None, cluster_found: bool | None = None,
             assignments: Mapping[tuple[str, str], tuple[FoundAssignment, ...]] | None = None) -> PreflightReport:
    """Every check's row. `deployed` is None when the cluster does not exist yet; `cluster` is the managed cluster
    as read (for an existing cluster's baseline, and its identity), `cluster_found` False when Azure said it is not
    there (None: not asked); `subnets` each subnet of the stack as read (None: not there); `assignments` the role
    assignments `role_assignments.read_assignments` found (None: not read, no rows)."""
    existing = stack.cluster.existing
    if existing and cluster_found is False:
        return PreflightReport(stack.stack, stack.source, stack.location, subscription_id, False, (
            Check("cluster", f"{stack.cluster.name} (resource group {stack.cluster.resource_group})", Verdict.FAIL,
                  missing_cluster_message(stack, subscription_id),
                  "fix gpushare:cluster.name / resourceGroup, or remove existing: true"),))
    pools = preflight_nodes(stack, cluster)
    live = {p.name: p for p in deployed} if deployed is not None else None
    checks = [size_check(pool, offers) for pool in pools]
    checks += [c for pool in pools if pool.zones for c in zone_check(pool, offers)]
    checks += [c for pool in stack.pools if (c := gpu_check(pool, offers))]
    checks += [c for pool in stack.pools if (c := os_disk_check(pool, offers))]
    checks += [c for pool in stack.pools if (c := spot_eviction_check(pool, offers))]
    checks += quota_checks(pools, offers, live, subscription_id)
    if existing:
        checks += baseline_checks(stack, cluster)
        checks += existing_vnet_checks(stack, cluster)
        checks += operator_node_checks(stack, live)
        checks += owner_gpu_pool_checks(stack, live, offers)
        checks += existing_version_checks(stack, cluster)
        if cluster is not None and (problem := service_principal_problem(stack, cluster)):
            checks.append(Check("identity", f"cluster {stack.cluster.name}", Verdict.FAIL, *problem))
    else:
        checks.append(version_check(stack, offers, live))
    ranges = {} if existing else {
        "serviceCidr": stack.cluster.network.service_cidr or SERVICE_CIDR, "podCidr (Azure CNI Overlay)": POD_CIDR}
    addressing = cluster_addressing(cluster) if existing else GPUSHARE_CLUSTER
    checks += subnet_checks(pools + own_system_surge(cluster, live, addressing, pools), subnets or {}, live, ranges,
                            addressing)
    if assignments is not None:
        checks += role_assignment_checks(stack, subscription_id, cluster, assignments)
    return PreflightReport(stack.stack, stack.source, stack.location, subscription_id, live is not None,
                           tuple(checks))


@dataclass(frozen=True)
class PreflightReads:
    """What preflight reads beside the guard's pools and cluster."""

    offers: RegionOffers
    subnets: Mapping[str, Subnet | None]
    assignments: Mapping[tuple[str, str], tuple[FoundAssignment, ...]]


def read_for_preflight(stack: StackConfig, reads: AzureReads, cluster: DeployedCluster | None,
                       offers: RegionOffers | None = None) -> PreflightReads:
    """The region (three calls; none when `offers` has it read already, as for a fleet's second member there),
    each subnet and each planned role assignment's scope (one call each); `cluster` as read (None: not there, or
    not read)."""
    subscription_id = reads.target.subscription_id
    return PreflightReads(
        offers=offers if offers is not None else read_region(subscription_id, stack.location, **reads.read_kwargs()),
        subnets=read_subnets(subscription_id, stack_subnets(stack, cluster), **reads.read_kwargs()),
        assignments=read_assignments(subscription_id, planned_assignments(stack, subscription_id, cluster),
                                     **reads.read_kwargs()),
    )


def check_live(stack: StackConfig, reads: AzureReads, deployed: Iterable[DeployedPool] | None,
               cluster: DeployedCluster | None = None) -> PreflightReport:
    """`read_for_preflight`, and evaluate. Azure being unreadable follows `gpushare:guard`: `strict` raises the
    `AzureReadError`; `warn` returns a report with no checks and the warning."""
    subscription_id = reads.target.subscription_id
    try:
        read = read_for_preflight(stack, reads, cluster)
    except AzureReadError as err:
        warning = raise_or_warn_on_read_error(
            stack, err, "deploys without these checks",
            "Continuing without preflight because gpushare:guard is warn: a size, zone, quota or version problem will "
            "fail at `pulumi up` instead")
        return PreflightReport(stack.stack, stack.source, stack.location, subscription_id, None, warnings=(warning,))
    return evaluate(stack, read.offers, deployed, subscription_id, cluster, read.subnets,
                    assignments=read.assignments)


def check_for_program(stack: StackConfig, environ: Mapping[str, str], azure: Callable[[], AzureReads],
                      guard: GuardReport | None) -> PreflightReport | None:
    """Preflight as the Pulumi program runs it: under `pulumi preview`/`up`, after the guard, reusing its
    agent-pool read; not at all with `gpushare:preflight: off`, an offline `plan` or `plan --deployed FILE`."""
    if stack.preflight is PreflightMode.OFF or environ.get(DEPLOYED_FILE_ENV) or environ.get(OFFLINE_ENV):
        return None
    return check_live(stack, azure(), guard.deployed if guard else None, guard.cluster if guard else None)
