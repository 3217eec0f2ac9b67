"""Role assignment names and IDs: stable GUIDs, so re-runs never replace an assignment."""

import uuid

from gpushare.azure.cluster_baseline import (
    cluster_scope,
    resource_group_scope,
    role_assignment_name,
    role_definition_id,
)

SUB = "3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3"
USER = "5c0f3e2a-8b71-4d9e-a6c4-2f1b7e9d3a58"


def test_name_is_a_guid_that_repeats_for_the_same_grant():
    scope = resource_group_scope(SUB, "rg-gpu")
    name = role_assignment_name(scope, USER)
    assert str(uuid.UUID(name)) == name
    assert role_assignment_name(scope, USER) == name
    # ARM compares IDs case-insensitively: the same grant written differently is the same assignment.
    assert role_assignment_name(scope.upper(), USER.upper()) == name


def test_name_differs_per_scope_principal_and_role():
    rg = resource_group_scope(SUB, "rg-gpu")
    names = {
        role_assignment_name(rg, USER),
        role_assignment_name(cluster_scope(SUB, "rg-gpu", "c1"), USER),
        role_assignment_name(resource_group_scope(SUB, "rg-other"), USER),
        role_assignment_name(rg, "0b5e7c1a-2f4d-4e8a-9c3b-6d1f2a7e5b90"),
        role_assignment_name(rg, USER, role="7f6c6a51-bcf8-42ba-9220-52d62157d7db"),
    }
    assert len(names) == 5


def test_ids_are_arm_ids():
    assert role_definition_id(SUB) == (f"/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/"
                                       "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b")
    assert cluster_scope(SUB, "rg", "c1") == (f"/subscriptions/{SUB}/resourceGroups/rg/providers/"
                                              "Microsoft.ContainerService/managedClusters/c1")


def test_an_existing_cluster_below_every_baseline_setting_gets_one_finding_and_fix_each():
    from gpushare.azure.cluster_baseline import baseline_findings
    from gpushare.azure.deployed_cluster import DeployedCluster

    bare = DeployedCluster(name="platform-aks", network_plugin="kubenet")  # what AKS's API defaults amount to
    found = {f.setting: f for f in baseline_findings("rg-platform", "platform-aks", bare)}

    assert sorted(found) == sorted([
        "sku.tier", "autoUpgradeProfile.upgradeChannel", "aadProfile.managed", "disableLocalAccounts",
        "networkProfile.networkPluginMode", "networkProfile.networkDataplane", "oidcIssuerProfile.enabled",
        "securityProfile.workloadIdentity.enabled", "securityProfile.imageCleaner.enabled"])
    assert all(f.fix.startswith("az aks update -g rg-platform -n platform-aks --") for f in found.values())
    assert (found["sku.tier"].deployed, found["sku.tier"].wanted) == ("Free", "Standard")
    assert "reimages every node" in found["networkProfile.networkPluginMode"].fix
    at_baseline = DeployedCluster(
        name="platform-aks", network_plugin="azure", network_plugin_mode="overlay", network_dataplane="cilium",
        tier="Standard", upgrade_channel="patch", disable_local_accounts=True, entra_managed=True, azure_rbac=True,
        oidc_issuer=True, workload_identity=True, image_cleaner=True)
    assert baseline_findings("rg-platform", "platform-aks", at_baseline) == []


def test_maintenance_windows_are_compared_only_once_read_and_by_name_in_any_case():
    from gpushare.azure.cluster_baseline import baseline_findings
    from gpushare.azure.deployed_cluster import DeployedCluster

    cluster = DeployedCluster(name="platform-aks", upgrade_channel="stable", node_os_upgrade_channel="NodeImage")
    settings = {f.setting for f in baseline_findings("rg-platform", "platform-aks", cluster)}
    assert not any(s.startswith("maintenanceConfigurations/") for s in settings)  # not read: nothing to say

    # ARM names compare case-insensitively; the reader lower-cases them.
    read = DeployedCluster(name="platform-aks", upgrade_channel="stable", node_os_upgrade_channel="NodeImage",
                           maintenance_schedules=frozenset({"aksmanagedautoupgradeschedule", "default"}))
    (window,) = [f for f in baseline_findings("rg-platform", "platform-aks", read)
                 if f.setting.startswith("maintenanceConfigurations/")]
    # `default` schedules AKS's own weekly releases, not the node OS channel's upgrades.
    assert window.setting == "maintenanceConfigurations/aksManagedNodeOSUpgradeSchedule"
    assert window.why.startswith("autoUpgradeProfile.nodeOSUpgradeChannel is NodeImage, so AKS applies node image "
                                 "upgrades at any time")
