"""An AKS cluster gpushare did not create (`gpushare:cluster.existing: true`): read, never written.

The cluster and its resource group are never registered, so no run can change or delete them: the program reads the
cluster with one `getManagedCluster` invoke (REST 2025-09-01 `managedClusters` GET, as `az aks show`) for the outputs
the rest of the program uses, the same ones `AksCluster` gives. Its settings are compared with gpushare's baseline
by `preflight` (`gpushare.azure.cluster_baseline.baseline_findings`), never applied.

The one thing it may create is "Azure Kubernetes Service RBAC Cluster Admin" for each of `access.deployers`, on the
cluster (not its resource group, which is not gpushare's), named from the cluster's ID and the deployer's object ID
only, so every run plans the same assignments whoever runs it; removing the stack removes those assignments and
nothing of the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_azure_native import authorization, containerservice

from gpushare.components.aks_cluster import deployer_role_assignment
from gpushare.model.stack import Cluster, Deployer


@dataclass(frozen=True)
class ExistingClusterArgs:
    cluster: Cluster
    """Required. The validated cluster settings (`existing: true`): its name and resource group."""


class ExistingCluster(pulumi.ComponentResource):
    """The existing cluster's outputs, read; and the deployers' data-plane role on it (`access.deployers`)."""

    cluster_name: pulumi.Output[str]
    oidc_issuer_url: pulumi.Output[str | None]
    """None when the cluster's OIDC issuer is off (a baseline finding)."""
    resource_group_name: pulumi.Output[str]
    resource_id: pulumi.Output[str]
    identity_principal_id: pulumi.Output[str | None]
    """The cluster's system-assigned identity, for Network Contributor on a pool subnet it does not own."""
    default_subnet_id: pulumi.Output[str | None]
    """The subnet of the cluster's system pool (`agentPoolProfiles[mode=System].vnetSubnetID`): where a GPU pool
    without `subnetId` goes, named explicitly rather than left to AKS. None in a VNet AKS manages."""
    default_pod_subnet_id: pulumi.Output[str | None]
    """The pod subnet of the cluster's system pool (`podSubnetID`) on a cluster with Azure CNI dynamic pod IP
    allocation: every GPU pool sends it too, since a pool without one has its "pod IPs statically assigned on the node
    subnet" (AKS API `podSubnetID`), the classic Azure CNI the cluster's owners did not choose. None otherwise."""

    def __init__(self, name: str, args: ExistingClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:cluster:ExistingCluster", name, None, opts)
        cluster = args.cluster
        found = containerservice.get_managed_cluster_output(
            resource_group_name=cluster.resource_group, resource_name=cluster.name,
            opts=pulumi.InvokeOptions(parent=self))
        self.cluster_name = found.name
        self.resource_group_name = pulumi.Output.from_input(cluster.resource_group)
        self.resource_id = found.id
        self.oidc_issuer_url = found.oidc_issuer_profile.apply(lambda profile: profile.issuer_url if profile else None)
        self.identity_principal_id = found.identity.apply(_control_plane_principal)
        self.default_subnet_id = found.agent_pool_profiles.apply(lambda p: _system_pool_field(p, "vnet_subnet_id"))
        self.default_pod_subnet_id = found.agent_pool_profiles.apply(
            lambda p: _system_pool_field(p, "pod_subnet_id"))
        # Said in every preview: the Kubernetes provider then holds the cluster's static client certificate
        # (`provider_kubeconfig`), which gpushare's own clusters never have.
        found.aad_profile.apply(lambda aad: None if aad and aad.managed else pulumi.log.warn(
            f"cluster {cluster.name} is below gpushare's baseline: it has no Entra ID integration, so gpushare "
            "reaches Kubernetes with the local-account client certificate listClusterUserCredential returns; "
            f"`preflight` lists the settings and fixes (az aks update -g {cluster.resource_group} -n {cluster.name} "
            "--enable-aad --enable-azure-rbac, then --disable-local-accounts)", self))
        # Annotated here, not in the class body, for the reason AksCluster gives.
        self.deployer_access: list[authorization.RoleAssignment] = [
            self._deployer_access(name, cluster, deployer) for deployer in cluster.access.deployers]
        """RBAC Cluster Admin on the cluster for each of `cluster.access.deployers`; every Kubernetes resource waits
        for them."""
        self.register_outputs({
            "cluster_name": self.cluster_name,
            "oidc_issuer_url": self.oidc_issuer_url,
            "resource_group_name": self.resource_group_name,
            "resource_id": self.resource_id,
        })

    def _deployer_access(self, name: str, cluster: Cluster, deployer: Deployer) -> authorization.RoleAssignment:
        return deployer_role_assignment(f"{name}-deployer-{deployer.object_id}", self.resource_id, deployer,
                                        f"existing cluster {cluster.name}", pulumi.ResourceOptions(parent=self))


def _control_plane_principal(identity) -> str | None:
    """The cluster identity's object ID: system-assigned (`principalId`), or the one user-assigned control-plane
    identity AKS allows (`userAssignedIdentities.*.principalId`), common on clusters made for a network of your own."""
    if identity is None:
        return None
    if identity.principal_id:
        return identity.principal_id
    assigned = list((identity.user_assigned_identities or {}).values())
    return assigned[0].principal_id if assigned else None


def _system_pool_field(profiles, field: str) -> str | None:
    systems = [p for p in profiles or [] if str(p.mode or "").lower() == "system"] or list(profiles or [])
    return getattr(systems[0], field) if systems else None
