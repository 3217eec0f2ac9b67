"""The hardened cluster baseline: fixed settings gpushare applies to every cluster, and Azure RBAC names.

Sources: Microsoft's AKS baseline (mspnp/aks-baseline `cluster-stamp.bicep`), Azure Verified Modules' AKS
production pattern and the CIS AKS benchmark (5.4.4 network policy, 5.5.x Entra ID and Azure RBAC), as collected in
the project's `aks-security.md` reference.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from gpushare.azure.deployed_cluster import DeployedCluster
from gpushare.model.stack import MaintenanceWindow

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
"""AKS reads only maintenance configurations with these names for the two upgrade channels; `default` is for AKS's
own weekly releases only (AKS docs planned-maintenance.md, "Schedule configuration types"). A channel without its
schedule upgrades whenever AKS gets to it."""
UPGRADING_NODE_OS_CHANNELS = ("nodeimage", "securitypatch")
"""Node OS channels AKS applies itself (in `aksManagedNodeOSUpgradeSchedule`); `None` does nothing and `Unmanaged`
leaves it to the OS's own unattended upgrades, which no AKS schedule governs."""

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


def subscription_of(resource_id: str) -> str:
    """The subscription of an ARM resource ID (`/subscriptions/<id>/...`)."""
    parts = resource_id.split("/")
    if len(parts) < 3 or parts[1].lower() != "subscriptions" or not parts[2]:
        raise ValueError(f"not an ARM resource ID: {resource_id!r}")
    return parts[2]


def role_assignment_name(scope: str, principal_id: str, role: str = RBAC_CLUSTER_ADMIN_ROLE) -> str:
    """A role assignment's name must be a GUID. Derived from what it grants (ARM IDs compare case-insensitively),
    so every run asks for the same assignment and never replaces it."""
    return str(uuid.uuid5(_ROLE_ASSIGNMENT_NAMESPACE, f"{scope.lower()}|{principal_id.lower()}|{role}"))


@dataclass(frozen=True)
class BaselineFinding:
    """One setting of an existing cluster (`existing: true`) below gpushare's baseline: read, never written."""

    setting: str
    """The ARM property path (`sku.tier`, `disableLocalAccounts`)."""
    deployed: str
    wanted: str
    fix: str
    """The `az aks update` (or `az aks maintenanceconfiguration add`) that brings it to the baseline (run by the
    cluster's owners)."""
    why: str = ""
    """What the difference does, when the setting's name does not say it."""


def baseline_findings(resource_group: str, name: str, deployed: DeployedCluster) -> list[BaselineFinding]:
    """Every baseline setting the existing cluster does not have, with its fix. Missing values take AKS's API
    defaults (Free tier, no upgrade channel, NodeImage node OS channel, local accounts on, no Entra ID). Maintenance
    windows are compared only when they were read (`deployed.maintenance_schedules`)."""
    update = f"az aks update -g {resource_group} -n {name}"
    reimages = " (AKS reimages every node to apply it, GPU nodes included: do it in a maintenance window)"
    upgrade_channel = deployed.upgrade_channel or "none"
    node_os_channel = deployed.node_os_upgrade_channel or "NodeImage"
    checks: list[tuple[str, str, str, bool, str]] = [
        # Premium is Standard plus long-term support: it carries the same uptime SLA.
        ("sku.tier", deployed.tier or "Free", "Standard", (deployed.tier or "Free").lower() in ("standard", "premium"),
         f"{update} --tier standard"),
        ("autoUpgradeProfile.upgradeChannel", upgrade_channel, "patch", upgrade_channel.lower() != "none",
         f"{update} --auto-upgrade-channel patch"),
        ("autoUpgradeProfile.nodeOSUpgradeChannel", node_os_channel, "NodeImage",
         node_os_channel.lower() in UPGRADING_NODE_OS_CHANNELS, f"{update} --node-os-upgrade-channel NodeImage"),
        ("aadProfile.managed", str(bool(deployed.entra_managed)).lower(), "true", bool(deployed.entra_managed),
         f"{update} --enable-aad --enable-azure-rbac (then Kubernetes access goes through Entra ID)"),
        ("aadProfile.enableAzureRBAC", str(bool(deployed.azure_rbac)).lower(), "true",
         bool(deployed.azure_rbac) or not deployed.entra_managed, f"{update} --enable-azure-rbac"),
        ("disableLocalAccounts", str(bool(deployed.disable_local_accounts)).lower(), "true",
         bool(deployed.disable_local_accounts),
         f"{update} --disable-local-accounts (after Entra ID: static client certificates stop working)"),
        ("networkProfile.networkPluginMode", deployed.network_plugin_mode or "none", NETWORK_PLUGIN_MODE,
         (deployed.network_plugin_mode or "").lower() == NETWORK_PLUGIN_MODE,
         f"{update} --network-plugin azure --network-plugin-mode overlay{reimages}"),
        ("networkProfile.networkDataplane", deployed.network_dataplane or "azure", NETWORK_DATAPLANE,
         (deployed.network_dataplane or "azure").lower() == NETWORK_DATAPLANE,
         f"{update} --network-dataplane cilium --network-policy cilium{reimages}"),
        ("oidcIssuerProfile.enabled", str(bool(deployed.oidc_issuer)).lower(), "true", bool(deployed.oidc_issuer),
         f"{update} --enable-oidc-issuer"),
        ("securityProfile.workloadIdentity.enabled", str(bool(deployed.workload_identity)).lower(), "true",
         bool(deployed.workload_identity), f"{update} --enable-oidc-issuer --enable-workload-identity"),
        ("securityProfile.imageCleaner.enabled", str(bool(deployed.image_cleaner)).lower(), "true",
         bool(deployed.image_cleaner),
         f"{update} --enable-image-cleaner --image-cleaner-interval-hours {IMAGE_CLEANER_INTERVAL_HOURS}"),
    ]
    found = [BaselineFinding(setting, was, wanted, fix) for setting, was, wanted, ok, fix in checks if not ok]
    if deployed.maintenance_schedules is not None:
        found += _missing_schedules(resource_group, name, deployed.maintenance_schedules, [
            (AUTO_UPGRADE_SCHEDULE, "autoUpgradeProfile.upgradeChannel", upgrade_channel,
             upgrade_channel.lower() != "none", "Kubernetes version upgrades"),
            (NODE_OS_UPGRADE_SCHEDULE, "autoUpgradeProfile.nodeOSUpgradeChannel", node_os_channel,
             node_os_channel.lower() in UPGRADING_NODE_OS_CHANNELS, "node image upgrades"),
        ])
    return found


def _missing_schedules(resource_group: str, name: str, schedules: frozenset[str],
                       channels: list[tuple[str, str, str, bool, str]]) -> list[BaselineFinding]:
    """A maintenance window for each upgrade channel that has none. The baseline's channels both upgrade, so a
    channel that is off (its own finding) needs its window too, before the fix turns it on."""
    window = MaintenanceWindow()
    wanted = f"weekly, {window.day.value} {window.start} UTC for {window.hours} hours"
    found = []
    for schedule, channel, value, upgrades, what in channels:
        if schedule.lower() in schedules:
            continue
        why = (f"{channel} is {value}, so AKS applies {what} at any time, GPU nodes included (drained and "
               "replaced while their jobs run)" if upgrades else
               f"once {channel} is set to the baseline's channel, AKS would apply {what} at any time without it")
        found.append(BaselineFinding(
            f"maintenanceConfigurations/{schedule}", "missing", wanted,
            f"az aks maintenanceconfiguration add --resource-group {resource_group} --cluster-name {name} --name "
            f"{schedule} --schedule-type Weekly --day-of-week {window.day.value} --interval-weeks 1 --start-time "
            f"{window.start} --duration {window.hours} --utc-offset +00:00", why))
    return found
