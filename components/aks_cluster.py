"""The AKS cluster: its resource group and a managed cluster whose only inline pool is a small system pool.

GPU pools are never inline: AKS refuses to add inline pools to an existing cluster, and editing inline profiles
puts every pool into `Scaling`. They are separate `GpuNodePool` components (see gpu_node_pool.py).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import pulumi
from pulumi_azure_native import containerservice, resources

from gpushare.model import SYSTEM_POOL_NAME, Cluster


@dataclass(frozen=True)
class AksClusterArgs:
    cluster: Cluster
    """Required. The validated cluster settings."""
    location: str
    """Required. Azure region of the resource group and the cluster."""


class AksCluster(pulumi.ComponentResource):
    """Resource group + AKS cluster with OIDC issuer and workload identity on, both protected against deletion."""

    cluster_name: pulumi.Output[str]
    """The AKS cluster's name in Azure."""
    kubeconfig: pulumi.Output[str]
    """Secret. The cluster-user kubeconfig, decoded, for the Kubernetes provider."""
    oidc_issuer_url: pulumi.Output[str]
    """Issuer URL for workload identity federation."""
    resource_group_name: pulumi.Output[str]
    """The resource group holding the cluster."""
    resource_id: pulumi.Output[str]
    """ARM ID of the managed cluster."""

    def __init__(self, name: str, args: AksClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:cluster:AksCluster", name, None, opts)
        cluster = args.cluster
        self.resource_group = resources.ResourceGroup(
            f"{name}-rg", resource_group_name=cluster.resource_group, location=args.location,
            # Deleting the resource group deletes the cluster and every GPU pool in it, protected or not.
            opts=pulumi.ResourceOptions(parent=self, protect=True),
        )
        self.managed_cluster = containerservice.ManagedCluster(
            f"{name}-aks",
            resource_name_=cluster.name,
            resource_group_name=self.resource_group.name,
            location=args.location,
            dns_prefix=cluster.dns_prefix,
            kubernetes_version=cluster.kubernetes_version,
            identity=containerservice.ManagedClusterIdentityArgs(
                type=containerservice.ResourceIdentityType.SYSTEM_ASSIGNED,
            ),
            agent_pool_profiles=[
                containerservice.ManagedClusterAgentPoolProfileArgs(
                    name=SYSTEM_POOL_NAME,
                    mode=containerservice.AgentPoolMode.SYSTEM,
                    vm_size=cluster.system_pool.vm_size,
                    count=cluster.system_pool.count,
                    os_type=containerservice.OSType.LINUX,
                    type=containerservice.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS,
                ),
            ],
            oidc_issuer_profile=containerservice.ManagedClusterOIDCIssuerProfileArgs(enabled=True),
            security_profile=containerservice.ManagedClusterSecurityProfileArgs(
                workload_identity=containerservice.ManagedClusterSecurityProfileWorkloadIdentityArgs(enabled=True),
            ),
            # Deleting or replacing the cluster deletes every GPU pool with it.
            opts=pulumi.ResourceOptions(parent=self, protect=True),
        )
        credentials = containerservice.list_managed_cluster_user_credentials_output(
            resource_group_name=self.resource_group.name, resource_name=self.managed_cluster.name,
        )
        self.cluster_name = self.managed_cluster.name
        self.kubeconfig = pulumi.Output.secret(
            # The credentials API returns the kubeconfig base64-encoded; the Kubernetes provider wants YAML.
            credentials.kubeconfigs[0].value.apply(lambda encoded: base64.b64decode(encoded).decode("utf-8"))
        )
        self.oidc_issuer_url = self.managed_cluster.oidc_issuer_profile.apply(
            lambda profile: profile.issuer_url if profile else None
        )
        self.resource_group_name = self.resource_group.name
        self.resource_id = self.managed_cluster.id
        self.register_outputs({
            "cluster_name": self.cluster_name,
            "kubeconfig": self.kubeconfig,
            "oidc_issuer_url": self.oidc_issuer_url,
            "resource_group_name": self.resource_group_name,
            "resource_id": self.resource_id,
        })

