"""The hardened cluster baseline: fixed settings gpushare applies to every cluster, and Azure RBAC names.

Sources: Microsoft's AKS baseline (mspnp/aks-baseline `cluster-stamp.bicep`), Azure Verified Modules' AKS
production pattern and the CIS AKS benchmark (5.4.4 network policy, 5.5.x Entra ID and Azure RBAC), as collected in
the project's `aks-security.md` reference.
"""

from __future__ import annotations

import uuid

NETWORK_PLUGIN = "azure"
NETWORK_PLUGIN_MODE = "overlay"
"""Azure CNI Overlay: pods get addresses from a private overlay range, not from the VNet."""
NETWORK_DATAPLANE = "cilium"
NETWORK_POLICY = "cilium"
"""With the Cilium dataplane AKS enforces network policy through Cilium; the two are set together."""
POD_CIDR = "10.244.0.0/16"
SERVICE_CIDR = "10.0.0.0/16"
DNS_SERVICE_IP = "10.0.0.10"
"""The overlay's pod range and the service range: AKS's own defaults, set explicitly because AKS fixes them when it
creates the cluster and the guard compares them."""
IMAGE_CLEANER_INTERVAL_HOURS = 168
"""Image Cleaner removes unused (and vulnerable) images from nodes once a week."""
SKU_NAME = "Base"

AUTO_UPGRADE_SCHEDULE = "aksManagedAutoUpgradeSchedule"
NODE_OS_UPGRADE_SCHEDULE = "aksManagedNodeOSUpgradeSchedule"
"""AKS reads only maintenance configurations with these names for the two upgrade channels."""

RBAC_CLUSTER_ADMIN_ROLE = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"
"""Built-in role "Azure Kubernetes Service RBAC Cluster Admin": every Kubernetes action on the cluster."""

NETWORK_CONTRIBUTOR_ROLE = "4d97b98b-1d4f-4787-a291-c67834d212e7"
"""Built-in role "Network Contributor": what AKS's identity needs on a subnet of your own VNet."""

_ROLE_ASSIGNMENT_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://gpushare.io/role-assignments")


def role_definition_id(subscription_id: str, role: str = RBAC_CLUSTER_ADMIN_ROLE) -> str:
    return f"/subscriptions/{subscription_id}/providers/Microsoft.Authorization/roleDefinitions/{role}"


def resource_group_scope(subscription_id: str, resource_group: str) -> str:
    return f"/subscriptions/{subscription_id}/resourceGroups/{resource_group}"


def cluster_scope(subscription_id: str, resource_group: str, cluster: str) -> str:
    return (f"{resource_group_scope(subscription_id, resource_group)}"
            f"/providers/Microsoft.ContainerService/managedClusters/{cluster}")


def role_assignment_name(scope: str, principal_id: str, role: str = RBAC_CLUSTER_ADMIN_ROLE) -> str:
    """A role assignment's name must be a GUID. Derived from what it grants (ARM IDs compare case-insensitively),
    so every run asks for the same assignment and never replaces it."""
    return str(uuid.uuid5(_ROLE_ASSIGNMENT_NAMESPACE, f"{scope.lower()}|{principal_id.lower()}|{role}"))
