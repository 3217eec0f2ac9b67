"""`FleetPlan`: a fleet's member plans (each member's `StackPlan`, built once), its update order, the Fleet
Manager part `GpuFleet` registers, and the dispatch across clusters `FleetDispatch` registers (Kueue MultiKueue, from
the fleet file's `dispatch.manager`). Plain data: `gpushare fleet plan` reports it, the fleet program registers it."""

from __future__ import annotations

from dataclasses import dataclass

from gpushare.kubernetes.multikueue import FleetDispatchPlan, dispatch
from gpushare.model.fleet import AutoUpgrade, FleetConfig, FleetMember
from gpushare.plan.stack_plan import StackPlan, build_plan
from gpushare.stackfile.fleet_config import Fleet

CANARY_STAGE = "gpu-canary"
REST_STAGE = "fleet"
UPDATE_STRATEGY_NAME = "gpushare"


@dataclass(frozen=True)
class UpdateStage:
    """A stage of the Fleet's update strategy: its groups update in parallel, then the wait."""

    name: str
    groups: tuple[str, ...]
    wait_seconds: int
    """`afterStageWaitInSeconds`: 0 after the last stage."""


@dataclass(frozen=True)
class MemberCluster:
    """What a FleetMember needs of a member's cluster: the cluster's ARM ID is built from these (the subscription,
    when the stack file does not name it, is the fleet program's own)."""

    member: FleetMember
    cluster_name: str
    resource_group: str
    subscription_id: str | None
    existing: bool
    """An `existing: true` cluster: it joins the fleet as it is, gpushare never writes it."""

    def cluster_resource_id(self, subscription_id: str) -> str:
        """The ARM ID FleetMember's `clusterResourceId` takes (Fleet API FleetMemberProperties)."""
        return (f"/subscriptions/{self.subscription_id or subscription_id}/resourceGroups/{self.resource_group}"
                f"/providers/Microsoft.ContainerService/managedClusters/{self.cluster_name}")


@dataclass(frozen=True)
class FleetManagerPlan:
    """What `GpuFleet` registers: the Fleet, a member per cluster, the update strategy and the auto-upgrade profile.
    No agent pool is in it: nothing the fleet program does can delete or replace a GPU pool."""

    name: str
    resource_group: str
    resource_group_exists: bool
    location: str
    members: tuple[MemberCluster, ...]
    strategy_name: str
    stages: tuple[UpdateStage, ...]
    auto_upgrade: AutoUpgrade | None


@dataclass(frozen=True)
class MemberPlan:
    member: FleetMember
    plan: StackPlan
    stage: str

    @property
    def region(self) -> str:
        return self.plan.stack.location


@dataclass(frozen=True)
class FleetPlan:
    config: FleetConfig
    members: tuple[MemberPlan, ...]
    """In the fleet file's order."""
    manager: FleetManagerPlan
    dispatch: FleetDispatchPlan | None = None
    """The MultiKueue objects on the manager and the workers (member stacks by name); None without a manager."""


def update_stages(config: FleetConfig) -> tuple[UpdateStage, ...]:
    """The canary members' groups first, with the wait, then every other group (learn.microsoft.com
    azure/kubernetes-fleet/update-orchestration: stages run one after another, a stage's groups in parallel, a group's
    members one after another)."""
    canary = tuple(dict.fromkeys(m.group for m in config.members if m.canary))
    rest = tuple(dict.fromkeys(m.group for m in config.members if not m.canary))
    return (UpdateStage(CANARY_STAGE, canary, config.canary_wait_seconds), UpdateStage(REST_STAGE, rest, 0))


def build_fleet_plan(fleet: Fleet) -> FleetPlan:
    """Each member's StackPlan (built once here) and the Fleet Manager part."""
    config = fleet.config
    stages = update_stages(config)
    stage_of = {group: stage.name for stage in stages for group in stage.groups}
    members = tuple(MemberPlan(m, build_plan(fleet.stacks[m.stack]), stage_of[m.group]) for m in config.members)
    clusters = tuple(MemberCluster(member=p.member, cluster_name=p.plan.stack.cluster.name,
                                   resource_group=p.plan.stack.cluster.resource_group,
                                   subscription_id=p.plan.stack.azure.subscription_id
                                   if not p.plan.stack.azure.subscription_secret else None,
                                   existing=p.plan.stack.cluster.existing)
                     for p in members)
    manager = FleetManagerPlan(name=config.name, resource_group=config.resource_group,
                               resource_group_exists=config.resource_group_exists, location=config.location,
                               members=clusters, strategy_name=UPDATE_STRATEGY_NAME, stages=stages,
                               auto_upgrade=config.auto_upgrade)
    dispatched = dispatch(config.manager, {m.member.stack: m.plan.stack for m in members},
                          {m.member.stack: m.plan.pool_facts for m in members}) if config.manager else None
    return FleetPlan(config=config, members=members, manager=manager, dispatch=dispatched)
