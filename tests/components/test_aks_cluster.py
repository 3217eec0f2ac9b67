"""AksCluster under the mock engine: the hardened ManagedCluster inputs by their ARM wire names, the maintenance
configurations AKS reads, and the Azure RBAC role assignments (scope, role, principal, stable GUID names)."""

import dataclasses
import uuid

import pytest

from gpushare.azure.cluster_baseline import resource_group_scope, role_assignment_name
from gpushare.components.aks_cluster import AksCluster, AksClusterArgs
from gpushare.model.stack import (
    Access,
    ApiServer,
    Cluster,
    ClusterUpgrades,
    Deployer,
    MaintenanceWindow,
    NodeOsChannel,
    PrincipalKind,
    SystemPool,
    Tier,
    UpgradeChannel,
    WeekDay,
)
from gpushare.render.mock_engine import MOCK_DEPLOYER_OBJECT_ID, MOCK_SUBSCRIPTION, run_pulumi

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


CI_SP = "3f9a1c2e-6b4d-4e7a-9d1f-8c2b5a7e0d13"
DEPLOYERS = Access(deployers=(Deployer(MOCK_DEPLOYER_OBJECT_ID, PrincipalKind.USER),
                              Deployer(CI_SP, PrincipalKind.SERVICE_PRINCIPAL)))
RG_ID = f"/subscriptions/{MOCK_SUBSCRIPTION}/mock/ResourceGroup/contoso-rg"
"""The mocked resource group's ARM ID."""


def test_each_deployer_is_cluster_admin_on_the_resource_group_right_after_it():
    recording = deploy(with_cluster(access=DEPLOYERS))
    assignments = {r.name: r for r in recording.by_type(ROLE_ASSIGNMENT)}
    assert sorted(assignments) == sorted([f"cluster-deployer-{MOCK_DEPLOYER_OBJECT_ID}", f"cluster-deployer-{CI_SP}"])
    for object_id, kind in ((MOCK_DEPLOYER_OBJECT_ID, "User"), (CI_SP, "ServicePrincipal")):
        deployer = assignments[f"cluster-deployer-{object_id}"]
        inputs = deployer.inputs
        assert inputs["principalId"] == object_id
        assert inputs["principalType"] == kind  # ARM refuses a type that does not match (UnmatchedPrincipalType)
        assert inputs["roleDefinitionId"] == CLUSTER_ADMIN_ROLE
        assert inputs["scope"] == RG_ID  # the resource group, so it propagates while AKS builds the cluster
        assert deployer.depends_on == ["cluster-rg"]
        assert uuid.UUID(inputs["roleAssignmentName"]).version == 5
        assert inputs["roleAssignmentName"] == role_assignment_name(RG_ID, object_id)
    assert "azure-native:authorization:getClientConfig" not in recording.invokes
    assert "azure-native:authorization:getClientToken" not in recording.invokes


def test_the_first_deployer_takes_over_the_assignment_grant_deployer_made():
    """Same scope and principal as `grantDeployer`'s `cluster-deployer-admin`, so the same ARM name: the alias
    makes it that resource, not a second one whose create fails and whose predecessor's delete removes access."""
    recording = deploy(with_cluster(access=DEPLOYERS))
    first = recording.get(ROLE_ASSIGNMENT, f"cluster-deployer-{MOCK_DEPLOYER_OBJECT_ID}")
    assert [a.get("name") for a in first.aliases if a.get("name")] == ["cluster-deployer-admin"]
    assert first.inputs["roleAssignmentName"] == role_assignment_name(
        resource_group_scope(MOCK_SUBSCRIPTION, "contoso-rg").replace("resourceGroups", "mock/ResourceGroup"),
        MOCK_DEPLOYER_OBJECT_ID)
    assert not [a for a in recording.get(ROLE_ASSIGNMENT, f"cluster-deployer-{CI_SP}").aliases if a.get("name")]


def test_admin_groups_are_cluster_admins_on_the_cluster():
    recording = deploy(with_cluster(access=Access(admin_groups=(GROUP_A, GROUP_B))))
    groups = [r for r in recording.by_type(ROLE_ASSIGNMENT) if r.name.startswith("cluster-admins-")]
    assert sorted(g.inputs["principalId"] for g in groups) == sorted([GROUP_A, GROUP_B])  # registered concurrently
    scope = f"/subscriptions/{MOCK_SUBSCRIPTION}/mock/ManagedCluster/contoso-prod"
    for group in groups:
        assert group.inputs["principalType"] == "Group"
        assert group.inputs["roleDefinitionId"] == CLUSTER_ADMIN_ROLE
        assert group.inputs["scope"] == scope
        assert "cluster-aks" in group.depends_on
        assert group.inputs["roleAssignmentName"] == role_assignment_name(scope, group.inputs["principalId"])
    assert len({g.inputs["roleAssignmentName"] for g in groups}) == 2


def test_no_deployers_creates_no_deployer_assignment():
    recording = deploy()
    assert recording.by_type(ROLE_ASSIGNMENT) == []
    assert "azure-native:authorization:getClientToken" not in recording.invokes


def test_no_static_credential_is_read():
    recording = deploy()
    assert not [i for i in recording.invokes if "Admin" in i or "listManagedClusterAdminCredentials" in i]
