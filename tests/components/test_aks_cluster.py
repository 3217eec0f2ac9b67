"""AksCluster under the mock engine: the hardened ManagedCluster inputs by their ARM wire names, the maintenance
configurations AKS reads, and the Azure RBAC role assignments (scope, role, principal, stable GUID names)."""

import dataclasses
import uuid

import pytest

from gpushare.azure.cluster_baseline import cluster_scope, resource_group_scope, role_assignment_name
from gpushare.components.aks_cluster import AksCluster, AksClusterArgs
from gpushare.render.mock_engine import MOCK_DEPLOYER_OBJECT_ID, MOCK_SUBSCRIPTION, GpushareMocks, mock_jwt, run_pulumi
from gpushare.stackfile.model import (
    Access,
    ApiServer,
    Cluster,
    ClusterUpgrades,
    MaintenanceWindow,
    NodeOsChannel,
    SystemPool,
    Tier,
    UpgradeChannel,
    WeekDay,
)

CLUSTER = Cluster(name="contoso-prod", resource_group="contoso-rg", kubernetes_version="1.33",
                  system_pool=SystemPool(vm_size="Standard_D8ds_v5", count=3))
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
MAINTENANCE = "azure-native:containerservice:MaintenanceConfiguration"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
CLUSTER_ADMIN_ROLE = (f"/subscriptions/{MOCK_SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/"
                      "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b")
GROUP_A = "0b5e7c1a-2f4d-4e8a-9c3b-6d1f2a7e5b90"
GROUP_B = "7d2f4a10-93c1-4b6e-8f0a-1c5e9b3d2a64"


def deploy(cluster: Cluster = CLUSTER):
    return run_pulumi(lambda: AksCluster("cluster", AksClusterArgs(cluster=cluster, location="westeurope")))


def with_cluster(**changes) -> Cluster:
    return dataclasses.replace(CLUSTER, **changes)


def test_cluster_has_only_the_system_pool_inline_and_identity_features_on():
    recording = deploy()
    group = recording.get("azure-native:resources:ResourceGroup", "cluster-rg")
    assert group.inputs == {"resourceGroupName": "contoso-rg", "location": "westeurope"}
    assert group.protect is True  # deleting the group would delete the cluster and every GPU pool in it
    managed = recording.get(MANAGED_CLUSTER, "cluster-aks")
    inputs = managed.inputs
    assert inputs["resourceName"] == "contoso-prod"
    assert inputs["kubernetesVersion"] == "1.33"
    assert inputs["agentPoolProfiles"] == [{
        "name": "system", "mode": "System", "vmSize": "Standard_D8ds_v5", "count": 3, "osType": "Linux",
        "type": "VirtualMachineScaleSets",
    }]
    assert inputs["oidcIssuerProfile"] == {"enabled": True}
    assert inputs["securityProfile"]["workloadIdentity"] == {"enabled": True}
    assert inputs["identity"] == {"type": "SystemAssigned"}
    assert managed.protect is True
    assert managed.depends_on == ["cluster-rg"]


def test_cluster_carries_the_hardened_baseline_under_arm_names():
    """Names as ARM's managedClusters API (2025-09-01) spells them; the mock engine records the wire names."""
    inputs = deploy().get(MANAGED_CLUSTER, "cluster-aks").inputs
    assert inputs["aadProfile"] == {"managed": True, "enableAzureRBAC": True}
    assert inputs["disableLocalAccounts"] is True
    assert inputs["enableRBAC"] is True
    assert inputs["sku"] == {"name": "Base", "tier": "Standard"}
    assert inputs["autoUpgradeProfile"] == {"upgradeChannel": "patch", "nodeOSUpgradeChannel": "NodeImage"}
    # outboundType is the SDK's default for a network profile; the address ranges are set by gpushare.
    assert inputs["networkProfile"] == {"networkPlugin": "azure", "networkPluginMode": "overlay",
                                        "networkDataplane": "cilium", "networkPolicy": "cilium",
                                        "podCidr": "10.244.0.0/16", "serviceCidr": "10.0.0.0/16",
                                        "dnsServiceIP": "10.0.0.10", "outboundType": "loadBalancer"}
    assert inputs["securityProfile"]["imageCleaner"] == {"enabled": True, "intervalHours": 168}
    assert inputs["apiServerAccessProfile"] == {"authorizedIPRanges": []}
    assert inputs["dnsPrefix"] == "contoso-prod"


def test_stack_settings_reach_the_cluster():
    cluster = with_cluster(tier=Tier.FREE,
                           upgrades=ClusterUpgrades(UpgradeChannel.STABLE, NodeOsChannel.SECURITY_PATCH),
                           api_server=ApiServer(("203.0.113.0/24", "198.51.100.7/32")))
    inputs = deploy(cluster).get(MANAGED_CLUSTER, "cluster-aks").inputs
    assert inputs["sku"] == {"name": "Base", "tier": "Free"}
    assert inputs["autoUpgradeProfile"] == {"upgradeChannel": "stable", "nodeOSUpgradeChannel": "SecurityPatch"}
    assert inputs["apiServerAccessProfile"] == {"authorizedIPRanges": ["203.0.113.0/24", "198.51.100.7/32"]}


def test_both_maintenance_windows_use_the_names_aks_reads():
    window = MaintenanceWindow(WeekDay.SATURDAY, "22:30", 6)
    recording = deploy(with_cluster(upgrades=ClusterUpgrades(window=window)))
    configs = {r.inputs["configName"]: r for r in recording.by_type(MAINTENANCE)}
    assert set(configs) == {"aksManagedAutoUpgradeSchedule", "aksManagedNodeOSUpgradeSchedule"}
    for config in configs.values():
        assert config.inputs["maintenanceWindow"] == {
            "schedule": {"weekly": {"dayOfWeek": "Saturday", "intervalWeeks": 1}},
            "startTime": "22:30", "durationHours": 6, "utcOffset": "+00:00"}
        assert config.inputs["resourceName"] == "contoso-prod"
        assert config.inputs["resourceGroupName"] == "contoso-rg"
        assert "cluster-aks" in config.depends_on
        assert config.parent == "cluster"


@pytest.mark.parametrize(("upgrades", "schedules"), [
    (ClusterUpgrades(channel=UpgradeChannel.NONE), {"aksManagedNodeOSUpgradeSchedule"}),
    (ClusterUpgrades(node_os=NodeOsChannel.UNMANAGED), {"aksManagedAutoUpgradeSchedule"}),
    (ClusterUpgrades(UpgradeChannel.NONE, NodeOsChannel.NONE), set()),
], ids=["no-auto-upgrade", "unmanaged-node-os", "neither"])
def test_a_channel_that_upgrades_nothing_gets_no_window(upgrades, schedules):
    recording = deploy(with_cluster(upgrades=upgrades))
    assert {r.inputs["configName"] for r in recording.by_type(MAINTENANCE)} == schedules


def test_deployer_is_cluster_admin_on_the_resource_group_right_after_it():
    recording = deploy()
    (deployer,) = [r for r in recording.by_type(ROLE_ASSIGNMENT) if r.name == "cluster-deployer-admin"]
    inputs = deployer.inputs
    assert inputs["principalId"] == MOCK_DEPLOYER_OBJECT_ID
    assert inputs["roleDefinitionId"] == CLUSTER_ADMIN_ROLE
    # The mocked resource group's ARM ID: the assignment's scope comes from the resource group, not the cluster.
    assert inputs["scope"] == f"/subscriptions/{MOCK_SUBSCRIPTION}/mock/ResourceGroup/contoso-rg"
    assert deployer.depends_on == ["cluster-rg"]
    assert inputs["principalType"] == "User"  # the mocked token is a person's (az login)
    name = inputs["roleAssignmentName"]
    assert uuid.UUID(name).version == 5
    assert name == role_assignment_name(resource_group_scope(MOCK_SUBSCRIPTION, "contoso-rg"), MOCK_DEPLOYER_OBJECT_ID)
    assert deploy().get(ROLE_ASSIGNMENT, "cluster-deployer-admin").inputs["roleAssignmentName"] == name


def test_a_service_principal_deployer_is_assigned_as_one(monkeypatch):
    """ARM refuses `principalType: User` for a service principal (UnmatchedPrincipalType), CI's usual identity."""
    monkeypatch.setattr(GpushareMocks, "client_token", mock_jwt({"oid": MOCK_DEPLOYER_OBJECT_ID, "idtyp": "app",
                                                                 "roles": []}))
    deployer = deploy().get(ROLE_ASSIGNMENT, "cluster-deployer-admin")
    assert deployer.inputs["principalType"] == "ServicePrincipal"
    assert "principalType" not in deployer.secret_inputs


def test_admin_groups_are_cluster_admins_on_the_cluster():
    recording = deploy(with_cluster(access=Access(admin_groups=(GROUP_A, GROUP_B))))
    groups = [r for r in recording.by_type(ROLE_ASSIGNMENT) if r.name.startswith("cluster-admins-")]
    assert sorted(g.inputs["principalId"] for g in groups) == sorted([GROUP_A, GROUP_B])  # registered concurrently
    scope = cluster_scope(MOCK_SUBSCRIPTION, "contoso-rg", "contoso-prod")
    for group in groups:
        assert group.inputs["principalType"] == "Group"
        assert group.inputs["roleDefinitionId"] == CLUSTER_ADMIN_ROLE
        assert group.inputs["scope"] == f"/subscriptions/{MOCK_SUBSCRIPTION}/mock/ManagedCluster/contoso-prod"
        assert "cluster-aks" in group.depends_on
        assert group.inputs["roleAssignmentName"] == role_assignment_name(scope, group.inputs["principalId"])
    assert len({g.inputs["roleAssignmentName"] for g in groups}) == 2


def test_grant_deployer_false_creates_no_deployer_assignment():
    recording = deploy(with_cluster(access=Access(grant_deployer=False)))
    assert recording.by_type(ROLE_ASSIGNMENT) == []
    assert "azure-native:authorization:getClientToken" not in recording.invokes


def test_no_static_credential_is_read():
    recording = deploy()
    assert not [i for i in recording.invokes if "Admin" in i or "listManagedClusterAdminCredentials" in i]
