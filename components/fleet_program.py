"""The fleet stack's Pulumi program: the fleet file named by config `gpushare:fleetFile` (relative to the project
directory), validated with its members, its Fleet Manager part registered as a `GpuFleet`, and, with a
`dispatch.manager` and some tenant to dispatch, its MultiKueue objects as a `FleetDispatch` on the member clusters
(reached as each member's own program reaches its cluster, `ClusterAccess`). It reads no member
stack's outputs: each member cluster's ID comes from its stack file (name and resource group, fixed once the
cluster exists), so the fleet plans offline and a StackReference could add nothing the file does not state."""

from __future__ import annotations

from pathlib import Path

import pulumi
from pulumi_azure_native import authorization, containerservice

from gpushare.components.cluster_access import ClusterAccess, ClusterAccessArgs
from gpushare.components.fleet_dispatch import FleetDispatch, FleetDispatchArgs
from gpushare.components.gpu_fleet import GpuFleet, GpuFleetArgs
from gpushare.errors import GpushareError
from gpushare.kubernetes.kubeconfig import api_server
from gpushare.plan.fleet_plan import FleetPlan, build_fleet_plan
from gpushare.stackfile.fleet_config import load_fleet

FLEET_FILE_KEY = "fleetFile"


def fleet_plan(path: Path) -> FleetPlan:
    """The fleet's plan, or `pulumi.RunError` with every problem in the fleet file and its members."""
    try:
        return build_fleet_plan(load_fleet(path))
    except GpushareError as exc:
        raise pulumi.RunError(str(exc)) from None


def fleet_program() -> GpuFleet:
    """Register the fleet named by `gpushare:fleetFile` and export its IDs and each member's update role."""
    plan = fleet_plan(Path(pulumi.Config("gpushare").require(FLEET_FILE_KEY)))
    fleet = GpuFleet("fleet", GpuFleetArgs(plan=plan.manager))
    pulumi.export("fleetId", fleet.fleet_id)
    pulumi.export("updateStrategyId", fleet.update_strategy_id)
    pulumi.export("members", {m.member.stack: {"group": m.member.group, "stage": m.stage, "region": m.region}
                              for m in plan.members})
    dispatch = fleet_dispatch(plan)
    if dispatch is not None:
        pulumi.export("dispatch", dispatch.dispatched)
    return fleet


def fleet_dispatch(plan: FleetPlan) -> FleetDispatch | None:
    """The MultiKueue objects on the manager and the workers' identity for it; None when no tenant is dispatched.
    Each member's cluster is read with the fleet stack's identity, in its subscription (docs/multikueue.md, Limits:
    a member in another subscription is reached only when the fleet stack's Azure provider can list its
    credentials)."""
    found = plan.dispatch
    if found is None or not found.manager_objects:
        return None
    subscription = authorization.get_client_config_output().subscription_id
    clusters = {cluster.member.stack: cluster for cluster in plan.manager.members}

    def access(stack: str) -> ClusterAccess:
        cluster = clusters[stack]
        return ClusterAccess(f"dispatch-{stack}", ClusterAccessArgs(
            resource_group_name=cluster.resource_group, cluster_name=cluster.cluster_name,
            cluster_id=subscription.apply(cluster.cluster_resource_id)))

    def server(stack: str) -> pulumi.Output[str]:
        credentials = containerservice.list_managed_cluster_user_credentials_output(
            resource_group_name=clusters[stack].resource_group, resource_name=clusters[stack].cluster_name)
        return credentials.kubeconfigs[0].value.apply(api_server)

    return FleetDispatch("dispatch", FleetDispatchArgs(
        plan=found, manager_provider=access(found.manager).provider,
        worker_providers={worker: access(worker).provider for worker in found.workers},
        worker_servers={worker: server(worker) for worker in found.workers}))
