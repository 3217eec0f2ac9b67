"""The AKS cluster: its resource group, a hardened managed cluster whose only inline pool is a small system pool,
its maintenance windows, and the Azure RBAC role assignments that let people and the deployer use it.

GPU pools are never inline: AKS refuses to add inline pools to an existing cluster, and editing inline profiles
puts every pool into `Scaling`. They are separate `GpuNodePool` components (see gpu_node_pool.py).

The baseline (see `gpushare.azure.cluster_baseline` and docs/security.md): managed Entra ID
with Azure RBAC for Kubernetes authorization and local accounts off (no static credential exists), the SKU tier,
auto-upgrade channels with one maintenance window, Azure CNI Overlay with the Cilium dataplane and network policy, Image Cleaner, the
OIDC issuer and workload identity, and optional API server authorized IP ranges.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_azure_native import authorization, containerservice, resources

from gpushare.azure import cluster_baseline as baseline
from gpushare.azure.agent_pool_request import system_pool_inputs
from gpushare.model.stack import Cluster, Deployer, NodeOsChannel, OutboundType, UpgradeChannel

LEGACY_DEPLOYER_NAME = "deployer-admin"
"""The child that `grantDeployer` created for whoever ran the program (`<name>-deployer-admin`)."""


@dataclass(frozen=True)
class AksClusterArgs:
    cluster: Cluster
    """Required. The validated cluster settings."""
    location: str
    """Required. Azure region of the resource group and the cluster."""


def deployer_role_assignment(resource_name: str, scope: pulumi.Output[str], deployer: Deployer, of: str,
                             opts: pulumi.ResourceOptions) -> authorization.RoleAssignment:
    """"Azure Kubernetes Service RBAC Cluster Admin" for one of `cluster.access.deployers` on `scope` (a resource
    group, or an existing cluster), named from the scope and the principal only: the same on every run, by anyone."""
    return authorization.RoleAssignment(
        resource_name,
        role_assignment_name=scope.apply(lambda s: baseline.role_assignment_name(s, deployer.object_id)),
        scope=scope,
        principal_id=deployer.object_id,
        principal_type=deployer.kind.value,
        role_definition_id=scope.apply(lambda s: baseline.role_definition_id(baseline.subscription_of(s))),
        description=f"gpushare: a deploy identity (gpushare:cluster.access.deployers) of {of}",
        opts=opts,
    )


class AksCluster(pulumi.ComponentResource):
    """Resource group + hardened AKS cluster, both protected against deletion, with the cluster's maintenance
    windows and role assignments."""

    cluster_name: pulumi.Output[str]
    """The AKS cluster's name in Azure."""
    oidc_issuer_url: pulumi.Output[str]
    """Issuer URL for workload identity federation."""
    resource_group_name: pulumi.Output[str]
    """The resource group holding the cluster."""
    resource_id: pulumi.Output[str]
    """ARM ID of the managed cluster."""
    identity_principal_id: pulumi.Output[str]
    """The cluster's system-assigned identity: it needs Network Contributor on a subnet it does not own."""

    def __init__(self, name: str, args: AksClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:cluster:AksCluster", name, None, opts)
        cluster = args.cluster
        if cluster.resource_group_exists:
            # Made beforehand (`resourceGroupExists: true`): read, so it is never in the state and never deleted;
            # azure-native refuses to create a group that exists.
            group = resources.get_resource_group_output(resource_group_name=cluster.resource_group,
                                                        opts=pulumi.InvokeOptions(parent=self))
            self.resource_group_id, group_name = group.id, group.name
        else:
            created = resources.ResourceGroup(
                f"{name}-rg", resource_group_name=cluster.resource_group, location=args.location,
                # Deleting the resource group deletes the cluster and every GPU pool in it, protected or not.
                opts=pulumi.ResourceOptions(parent=self, protect=True),
            )
            self.resource_group_id, group_name = created.id, created.name
        self.resource_group_name = group_name
        # Right after the resource group and before the cluster: AKS takes minutes to build the cluster, time for
        # the assignment to propagate (AKS docs: up to five minutes) before the first Kubernetes call.
        # Declared here, not in the class body: the SDK evaluates a component class's annotations when it registers
        # (pulumi/_types.py resource_types), and naming `authorization` there loads all of pulumi_azure_native's
        # authorization package (0.18 s) for a stack that declares no role assignment.
        self.deployer_access: list[authorization.RoleAssignment] = [
            self._deployer_access(name, cluster, deployer, first=i == 0)
            for i, deployer in enumerate(cluster.access.deployers)
        ]
        """RBAC Cluster Admin for each of `cluster.access.deployers`; every Kubernetes resource waits for them."""
        upgrades, network, api = cluster.upgrades, cluster.network, cluster.api_server
        self.managed_cluster = containerservice.ManagedCluster(
            f"{name}-aks",
            resource_name_=cluster.name,
            resource_group_name=group_name,
            location=args.location,
            dns_prefix=cluster.dns_prefix,
            kubernetes_version=cluster.kubernetes_version,
            identity=containerservice.ManagedClusterIdentityArgs(
                type=containerservice.ResourceIdentityType.SYSTEM_ASSIGNED,
            ),
            sku=containerservice.ManagedClusterSKUArgs(name=baseline.SKU_NAME, tier=cluster.tier.value),
            # KubernetesOfficial is AKS's default; AKSLongTermSupport (Premium tier only) keeps an LTS-only minor.
            support_plan=cluster.support_plan.value,
            agent_pool_profiles=[
                containerservice.ManagedClusterAgentPoolProfileArgs(**system_pool_inputs(cluster)),
            ],
            # Entra ID only: Azure RBAC authorizes Kubernetes calls, no certificate-based local account exists.
            aad_profile=containerservice.ManagedClusterAADProfileArgs(managed=True, enable_azure_rbac=True),
            disable_local_accounts=True,
            enable_rbac=True,
            auto_upgrade_profile=containerservice.ManagedClusterAutoUpgradeProfileArgs(
                upgrade_channel=upgrades.channel.value, node_os_upgrade_channel=upgrades.node_os.value,
            ),
            api_server_access_profile=containerservice.ManagedClusterAPIServerAccessProfileArgs(
                # Sent even when empty, so removing the last range opens the API server again; never on a private
                # cluster, which AKS refuses them on.
                authorized_ip_ranges=None if api.private else list(api.authorized_ip_ranges),
                # enablePrivateCluster, privateDNSZone (REST 2025-09-01): fixed when AKS creates the cluster.
                enable_private_cluster=True if api.private else None,
                private_dns_zone=api.private_dns_zone if api.private else None,
            ),
            network_profile=containerservice.ContainerServiceNetworkProfileArgs(
                network_plugin=baseline.NETWORK_PLUGIN,
                network_plugin_mode=baseline.NETWORK_PLUGIN_MODE,
                network_dataplane=baseline.NETWORK_DATAPLANE,
                network_policy=baseline.NETWORK_POLICY,
                pod_cidr=baseline.POD_CIDR,
                service_cidr=network.service_cidr or baseline.SERVICE_CIDR,
                dns_service_ip=network.dns_service_ip or baseline.DNS_SERVICE_IP,
                # outboundType (REST 2025-09-01; the SDK's OutboundType: set at creation only). Sent when it is not
                # AKS's default (loadBalancer), so clusters deployed before the key plan no change.
                outbound_type=(None if network.outbound_type is OutboundType.LOAD_BALANCER
                               else network.outbound_type.value),
            ),
            oidc_issuer_profile=containerservice.ManagedClusterOIDCIssuerProfileArgs(enabled=True),
            security_profile=containerservice.ManagedClusterSecurityProfileArgs(
                workload_identity=containerservice.ManagedClusterSecurityProfileWorkloadIdentityArgs(enabled=True),
                image_cleaner=containerservice.ManagedClusterSecurityProfileImageCleanerArgs(
                    enabled=True, interval_hours=baseline.IMAGE_CLEANER_INTERVAL_HOURS,
                ),
            ),
            # Deleting or replacing the cluster deletes every GPU pool with it.
            opts=pulumi.ResourceOptions(parent=self, protect=True),
        )
        self.maintenance_windows = self._maintenance_windows(name, cluster)
        self.admin_group_access = [
            self._admin_group_access(name, cluster, group) for group in cluster.access.admin_groups
        ]
        self.cluster_name = self.managed_cluster.name
        self.oidc_issuer_url = self.managed_cluster.oidc_issuer_profile.apply(
            lambda profile: profile.issuer_url if profile else None
        )
        self.identity_principal_id = self.managed_cluster.identity.apply(
            lambda identity: identity.principal_id if identity else None)
        self.resource_id = self.managed_cluster.id
        self.register_outputs({
            "cluster_name": self.cluster_name,
            "oidc_issuer_url": self.oidc_issuer_url,
            "resource_group_name": self.resource_group_name,
            "resource_id": self.resource_id,
        })

    # Every input of a role assignment comes from the stack and the scope's own ARM ID, never from the identity
    # running the program (`getClientConfig`): azure-native's `Diff` (provider/pkg/provider/provider.go) answers
    # `DeleteBeforeReplace` for any replace of a resource that is not auto-named, so an assignment whose principal
    # or name followed the runner would be deleted and re-created by each new runner, and that run's Kubernetes
    # calls would meet a 403 while the new assignment propagates. The name is a GUID derived from scope and
    # principal: the same on every run, by anyone.

    def _deployer_access(self, name: str, cluster: Cluster, deployer: Deployer,
                         first: bool) -> authorization.RoleAssignment:
        # `grantDeployer` registered the runner's assignment as `<name>-deployer-admin` with this very ARM name
        # (same scope, same principal): the first deployer takes that state over, so a stack that lists the
        # identity which has been deploying it first sees no change at all.
        aliases = [pulumi.Alias(name=f"{name}-{LEGACY_DEPLOYER_NAME}")] if first else []
        return deployer_role_assignment(f"{name}-deployer-{deployer.object_id}", self.resource_group_id, deployer,
                                        f"cluster {cluster.name}", pulumi.ResourceOptions(parent=self, aliases=aliases))

    def _admin_group_access(self, name: str, cluster: Cluster, group: str) -> authorization.RoleAssignment:
        scope = self.managed_cluster.id
        return authorization.RoleAssignment(
            f"{name}-admins-{group}",
            role_assignment_name=scope.apply(lambda s: baseline.role_assignment_name(s, group)),
            scope=scope,
            principal_id=group,
            principal_type=authorization.PrincipalType.GROUP,
            role_definition_id=scope.apply(lambda s: baseline.role_definition_id(baseline.subscription_of(s))),
            description=f"gpushare: an admin group (gpushare:cluster.access.adminGroups) of cluster {cluster.name}",
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _maintenance_windows(self, name: str, cluster: Cluster) -> list[containerservice.MaintenanceConfiguration]:
        """One weekly window for both upgrade channels; a channel that upgrades nothing gets no schedule."""
        upgrades = cluster.upgrades
        window = upgrades.window
        schedules = []
        if upgrades.channel is not UpgradeChannel.NONE:
            schedules.append(("upgrade-window", baseline.AUTO_UPGRADE_SCHEDULE))
        if upgrades.node_os not in (NodeOsChannel.NONE, NodeOsChannel.UNMANAGED):
            schedules.append(("node-os-window", baseline.NODE_OS_UPGRADE_SCHEDULE))
        return [
            containerservice.MaintenanceConfiguration(
                f"{name}-{suffix}",
                resource_group_name=self.resource_group_name,
                resource_name_=self.managed_cluster.name,
                config_name=config_name,
                maintenance_window=containerservice.MaintenanceWindowArgs(
                    schedule=containerservice.ScheduleArgs(
                        weekly=containerservice.WeeklyScheduleArgs(day_of_week=window.day.value, interval_weeks=1),
                    ),
                    start_time=window.start,
                    duration_hours=window.hours,
                    utc_offset="+00:00",
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for suffix, config_name in schedules
        ]
