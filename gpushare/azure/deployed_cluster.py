"""The managed cluster as deployed: the settings AKS fixed at its creation, read live with one ARM GET
(`managed_clusters.get`) through azure-identity and the azure-mgmt-containerservice client, for the cluster guard
(`gpushare.azure.guard.cluster`); for an existing cluster (`existing: true`) also the names of its maintenance
configurations (one list call, `maintenance_configurations.list_by_managed_cluster`), for its baseline findings.

Every field the guard reads is type-checked: a value of the wrong type must fail loudly here rather than compare
unequal (a false violation) or equal (a missed one) later.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpushare.azure.deployed import DeployedPool, pool_profile, read_cluster_resource
from gpushare.errors import AzureReadError

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

READ_ROLE_HINT = (
    "reading the cluster needs 'Microsoft.ContainerService/managedClusters/read', which the built-in Reader role "
    "and 'Azure Kubernetes Service Cluster User Role' have. Grant Reader on the cluster or its resource group: "
    "az role assignment create --assignee <identity> --role Reader --scope <cluster resource id>"
)
MAINTENANCE_ROLE_HINT = (
    "listing maintenance configurations needs 'Microsoft.ContainerService/managedClusters/maintenanceConfigurations/"
    "read', which the built-in Reader role has. Grant Reader on the cluster or its resource group: "
    "az role assignment create --assignee <identity> --role Reader --scope <cluster resource id>"
)


@dataclass(frozen=True)
class DeployedCluster:
    """The managed cluster's create-only settings as Azure reports them (None: Azure reports nothing)."""

    name: str
    dns_prefix: str | None = None
    enable_rbac: bool | None = None
    network_plugin: str | None = None
    network_plugin_mode: str | None = None
    network_dataplane: str | None = None
    network_policy: str | None = None
    pod_cidr: str | None = None
    service_cidr: str | None = None
    dns_service_ip: str | None = None
    node_os_upgrade_channel: str | None = None
    """`autoUpgradeProfile.nodeOSUpgradeChannel`: changed in place, but AKS reimages every node to apply it."""
    outbound_type: str | None = None
    """`networkProfile.outboundType`: fixed at creation."""
    private_cluster: bool | None = None
    """`apiServerAccessProfile.enablePrivateCluster`: fixed at creation."""
    private_dns_zone: str | None = None
    """`apiServerAccessProfile.privateDNSZone`: fixed at creation."""
    # What gpushare's baseline sets and AKS changes in place: read for an existing cluster's baseline findings.
    tier: str | None = None
    """`sku.tier`."""
    upgrade_channel: str | None = None
    """`autoUpgradeProfile.upgradeChannel`."""
    disable_local_accounts: bool | None = None
    entra_managed: bool | None = None
    """`aadProfile.managed`: managed Entra ID integration."""
    azure_rbac: bool | None = None
    """`aadProfile.enableAzureRBAC`."""
    oidc_issuer: bool | None = None
    """`oidcIssuerProfile.enabled`."""
    workload_identity: bool | None = None
    """`securityProfile.workloadIdentity.enabled`."""
    image_cleaner: bool | None = None
    """`securityProfile.imageCleaner.enabled`."""
    kubernetes_version: str | None = None
    """`currentKubernetesVersion`, else `kubernetesVersion`."""
    system_pool: DeployedPool | None = None
    """`agentPoolProfiles[mode=System]` read as a pool: what the cluster guard compares with the create-only pool
    table (`gpushare.azure.agent_pool_request.CREATE_ONLY_INPUTS`); None when the read has no profile with a
    `vmSize`."""
    system_subnet_id: str | None = None
    """`agentPoolProfiles[mode=System].vnetSubnetID`: where an existing cluster's GPU pools without `subnetId` go
    (the program names it too); None in a VNet AKS manages."""
    system_pod_subnet_id: str | None = None
    """`agentPoolProfiles[mode=System].podSubnetID`: set on a cluster with Azure CNI dynamic pod IP allocation, where
    pods take addresses from this subnet instead of the node subnet; an existing cluster's GPU pools send it too."""
    system_pod_ip_allocation_mode: str | None = None
    """`agentPoolProfiles[mode=System].podIPAllocationMode`: `DynamicIndividual` (AKS's default with a pod subnet) or
    `StaticBlock` (each node takes /28 blocks of 16 pod addresses)."""
    identity_principal_id: str | None = None
    """The cluster identity's object ID: `identity.principalId` (system-assigned), else the one user-assigned
    control-plane identity's (`identity.userAssignedIdentities.*.principalId`); what Network Contributor on a subnet
    of your own is granted to."""
    service_principal_client_id: str | None = None
    """`servicePrincipalProfile.clientId` of a cluster that authenticates to Azure with a service principal (AKS
    reports `msi` there for a managed identity, read as None): such a cluster has no `identity.principalId`."""
    maintenance_schedules: frozenset[str] | None = None
    """Names of the cluster's maintenance configurations (`aksManagedAutoUpgradeSchedule`, ...), lower-cased (ARM
    names compare case-insensitively): a separate read (`read_maintenance_schedules`), made for an existing cluster
    only. None: not read."""


class _Malformed(Exception):
    """The cluster document does not have the types Azure gives it; the message says where."""


def read_live_cluster(
    subscription_id: str,
    resource_group: str,
    cluster: str,
    *,
    credential: TokenCredential | None = None,
    base_url: str | None = None,
    **client_kwargs: object,
) -> DeployedCluster | None:
    """The managed cluster from ARM (one GET), or None when it (or its resource group) does not exist yet.

    Same settings and failures as `gpushare.azure.deployed.read_live`: every failure is an `AzureReadError` naming the
    cluster and the fix.
    """
    what = f"could not read AKS cluster {cluster} (resource group {resource_group}, subscription {subscription_id})"
    document = read_cluster_resource(
        what, subscription_id, lambda client: client.managed_clusters.get(resource_group, cluster).as_dict(),
        READ_ROLE_HINT, credential=credential, base_url=base_url, client_kwargs=client_kwargs,
    )
    if document is None:
        return None
    try:
        return _parse_cluster(cluster, document)
    except _Malformed as err:
        raise AzureReadError(f"{what}: Azure answered with an unexpected cluster: {err}") from None


def read_maintenance_schedules(
    subscription_id: str,
    resource_group: str,
    cluster: str,
    *,
    credential: TokenCredential | None = None,
    base_url: str | None = None,
    **client_kwargs: object,
) -> frozenset[str] | None:
    """The names of the cluster's maintenance configurations (one list call; the pager may follow `nextLink`), or
    None when the cluster is not there. Failures as for `read_live_cluster`, with this read's role hint."""
    what = (f"could not read the maintenance configurations of AKS cluster {cluster} (resource group "
            f"{resource_group}, subscription {subscription_id})")
    documents = read_cluster_resource(
        what, subscription_id,
        lambda client: [window.as_dict() for window in
                        client.maintenance_configurations.list_by_managed_cluster(resource_group, cluster)],
        MAINTENANCE_ROLE_HINT, credential=credential, base_url=base_url, client_kwargs=client_kwargs,
    )
    if documents is None:
        return None
    try:
        names = [_get(document, "name", str, cluster) for document in documents]
    except _Malformed as err:
        raise AzureReadError(f"{what}: Azure answered with an unexpected list: {err}") from None
    return frozenset(name.lower() for name in names if name)


def _parse_cluster(name: str, document: dict[str, Any]) -> DeployedCluster:
    properties = _get(document, "properties", dict, name) or {}
    network = _get(properties, "networkProfile", dict, name) or {}
    upgrades = _get(properties, "autoUpgradeProfile", dict, name) or {}
    api = _get(properties, "apiServerAccessProfile", dict, name) or {}
    aad = _get(properties, "aadProfile", dict, name) or {}
    security = _get(properties, "securityProfile", dict, name) or {}
    return DeployedCluster(
        name=name,
        dns_prefix=_get(properties, "dnsPrefix", str, name),
        enable_rbac=_get(properties, "enableRBAC", bool, name),
        network_plugin=_get(network, "networkPlugin", str, name),
        network_plugin_mode=_get(network, "networkPluginMode", str, name),
        network_dataplane=_get(network, "networkDataplane", str, name),
        network_policy=_get(network, "networkPolicy", str, name),
        pod_cidr=_get(network, "podCidr", str, name),
        service_cidr=_get(network, "serviceCidr", str, name),
        dns_service_ip=_get(network, "dnsServiceIP", str, name),
        node_os_upgrade_channel=_get(upgrades, "nodeOSUpgradeChannel", str, name),
        outbound_type=_get(network, "outboundType", str, name),
        private_cluster=_get(api, "enablePrivateCluster", bool, name),
        private_dns_zone=_get(api, "privateDNSZone", str, name),
        tier=_get(_get(document, "sku", dict, name) or {}, "tier", str, name),
        upgrade_channel=_get(upgrades, "upgradeChannel", str, name),
        disable_local_accounts=_get(properties, "disableLocalAccounts", bool, name),
        entra_managed=_get(aad, "managed", bool, name) if aad else None,
        azure_rbac=_get(aad, "enableAzureRBAC", bool, name) if aad else None,
        oidc_issuer=_get(_get(properties, "oidcIssuerProfile", dict, name) or {}, "enabled", bool, name),
        workload_identity=_get(_get(security, "workloadIdentity", dict, name) or {}, "enabled", bool, name),
        image_cleaner=_get(_get(security, "imageCleaner", dict, name) or {}, "enabled", bool, name),
        kubernetes_version=(_get(properties, "currentKubernetesVersion", str, name)
                            or _get(properties, "kubernetesVersion", str, name)),
        system_pool=_system_pool(system, name) if (system := _system_profile(properties, name)) else None,
        system_subnet_id=_get(system, "vnetSubnetID", str, name) if system else None,
        system_pod_subnet_id=_get(system, "podSubnetID", str, name) if system else None,
        system_pod_ip_allocation_mode=_get(system, "podIPAllocationMode", str, name) if system else None,
        identity_principal_id=_identity_principal(_get(document, "identity", dict, name) or {}, name),
        service_principal_client_id=_service_principal(properties, name),
    )


def _identity_principal(identity: dict[str, Any], name: str) -> str | None:
    if principal := _get(identity, "principalId", str, name):
        return principal
    assigned = [a for a in (_get(identity, "userAssignedIdentities", dict, name) or {}).values() if isinstance(a, dict)]
    return _get(assigned[0], "principalId", str, name) if assigned else None


def _service_principal(properties: dict[str, Any], name: str) -> str | None:
    client_id = _get(_get(properties, "servicePrincipalProfile", dict, name) or {}, "clientId", str, name)
    return client_id if client_id and client_id.lower() != "msi" else None


def _system_pool(profile: dict[str, Any], name: str) -> DeployedPool | None:
    if _get(profile, "vmSize", str, name) is None:
        return None
    try:
        return pool_profile(profile)
    except ValueError as err:
        raise _Malformed(f"agentPoolProfiles: {err}") from None


def _system_profile(properties: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The first system pool's profile (the first pool's when none says its mode)."""
    profiles = [p for p in _get(properties, "agentPoolProfiles", list, name) or [] if isinstance(p, dict)]
    systems = [p for p in profiles if str(p.get("mode", "")).lower() == "system"] or profiles
    return systems[0] if systems else None


_KINDS = {str: "a string", bool: "true or false", dict: "an object", list: "a list"}


def _get(document: dict[str, Any], key: str, kind: type, cluster: str) -> Any:
    """`document[key]` if it has the type Azure gives it; missing and null are the same (not set)."""
    value = document.get(key)
    if value is not None and not isinstance(value, kind):
        raise _Malformed(f"cluster {cluster}: `{key}` must be {_KINDS[kind]}, got {type(value).__name__} {value!r}")
    return value
