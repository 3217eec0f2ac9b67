"""Azure Kubernetes Fleet Manager for a gpushare fleet: the Fleet, one FleetMember per member cluster (existing
clusters too), the update strategy whose stages follow the fleet file (the GPU canary first, its wait, then the rest),
and an auto-upgrade profile where asked (channel NodeImage: node-image-only runs, which refresh the GPU driver AKS
ships in the image).

pulumi-azure-native 3.29's Fleet resources are on REST API 2024-05-02-preview (each class's docstring): it has no
approval gates on stages or groups and no maxConcurrency; those need a newer API version (docs/fleets.md, "Limits").
No agent pool or cluster is registered here, so nothing the fleet stack does can delete or replace a GPU pool: a
member that leaves the fleet is only removed from it (FleetMember's DELETE leaves the cluster as it is)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_azure_native import authorization, containerservice, resources

from gpushare.plan.fleet_plan import FleetManagerPlan, MemberCluster


@dataclass(frozen=True)
class GpuFleetArgs:
    plan: FleetManagerPlan
    """Required. The fleet's Fleet Manager part (`build_fleet_plan(...).manager`)."""


class GpuFleet(pulumi.ComponentResource):
    """The Fleet, its members, its update strategy and, when the fleet file asks, its auto-upgrade profile."""

    fleet_id: pulumi.Output[str]
    update_strategy_id: pulumi.Output[str]

    def __init__(self, name: str, args: GpuFleetArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:fleet:GpuFleet", name, None, opts)
        plan = args.plan
        child = pulumi.ResourceOptions(parent=self)
        group = None if plan.resource_group_exists else resources.ResourceGroup(
            f"{name}-rg", resource_group_name=plan.resource_group, location=plan.location, opts=child)
        in_group = pulumi.ResourceOptions(parent=self, depends_on=[group] if group else [])
        # No hub profile: a hubless Fleet runs update orchestration across members without a hub cluster to pay for
        # (learn.microsoft.com azure/kubernetes-fleet/concepts-choosing-fleet).
        self.fleet = containerservice.Fleet(f"{name}-fleet", resource_group_name=plan.resource_group,
                                            fleet_name=plan.name, location=plan.location, opts=in_group)
        subscription = authorization.get_client_config_output(opts=pulumi.InvokeOptions(parent=self)).subscription_id
        on_fleet = pulumi.ResourceOptions(parent=self, depends_on=[self.fleet])
        self.members = {member.member.stack: self._member(name, plan, member, subscription, on_fleet)
                        for member in plan.members}
        # A stage's groups must be groups of existing members (UpdateGroup.name), so the strategy follows them.
        self.update_strategy = containerservice.FleetUpdateStrategy(
            f"{name}-strategy", resource_group_name=plan.resource_group, fleet_name=plan.name,
            update_strategy_name=plan.strategy_name,
            strategy=containerservice.UpdateRunStrategyArgs(stages=[
                containerservice.UpdateStageArgs(
                    name=stage.name, groups=[containerservice.UpdateGroupArgs(name=g) for g in stage.groups],
                    after_stage_wait_in_seconds=stage.wait_seconds or None)
                for stage in plan.stages]),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(self.members.values())))
        self.auto_upgrade = None
        if plan.auto_upgrade:
            auto = plan.auto_upgrade
            # The SDK types `channel` with the managed cluster's UpgradeChannel enum (lower-case values); the Fleet
            # API's are Stable, Rapid and NodeImage, so the value is passed as the API spells it.
            self.auto_upgrade = containerservice.AutoUpgradeProfile(
                f"{name}-auto-upgrade", resource_group_name=plan.resource_group, fleet_name=plan.name,
                auto_upgrade_profile_name=f"gpushare-{auto.channel.value.lower()}", channel=auto.channel.value,
                node_image_selection=containerservice.AutoUpgradeNodeImageSelectionArgs(
                    type=auto.node_image_selection.value),
                update_strategy_id=self.update_strategy.id,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.update_strategy]))
        self.fleet_id = self.fleet.id
        self.update_strategy_id = self.update_strategy.id
        self.register_outputs({"fleet_id": self.fleet_id, "update_strategy_id": self.update_strategy_id})

    def _member(self, name: str, plan: FleetManagerPlan, member: MemberCluster, subscription: pulumi.Output[str],
                opts: pulumi.ResourceOptions) -> containerservice.FleetMember:
        return containerservice.FleetMember(
            f"{name}-member-{member.member.stack}", resource_group_name=plan.resource_group, fleet_name=plan.name,
            fleet_member_name=member.member.name, group=member.member.group,
            cluster_resource_id=subscription.apply(member.cluster_resource_id), opts=opts)
