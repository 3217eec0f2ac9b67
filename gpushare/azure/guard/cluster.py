"""The cluster guard: settings AKS fixes when it creates the managed cluster.

The cluster is protected (`protect=True`): a change Pulumi would apply by replacing it stops with a terse engine
error, and one Pulumi sends as an update AKS rejects. Either way nothing can be applied; this guard compares the
stack with the deployed cluster first and explains, naming the field, as the pool guard (`gpushare.azure.guard`) does.

Create-only settings (`CLUSTER_CREATE_ONLY`), by ARM property path:
- `dnsPrefix`: the API server's FQDN is built from it at creation;
- `enableRBAC`: AKS docs: Kubernetes RBAC cannot be turned on or off on an existing cluster;
- `networkProfile.networkPlugin`, `.networkPluginMode`, `.networkDataplane`, `.networkPolicy`: the CNI. AKS has
  one-way, out-of-band migrations (kubenet or Azure CNI to Azure CNI Overlay, the Azure dataplane to Cilium,
  `az aks update`), each reimaging every node, which for GPU pools is an outage of its own: never as a side effect;
- `networkProfile.podCidr`, `.serviceCidr`, `.dnsServiceIP`: address ranges fixed at creation;
- `networkProfile.outboundType`: REST 2025-09-01 (the SDK's `OutboundType`): "can only be set at cluster creation
  time and cannot be changed later";
- `apiServerAccessProfile.enablePrivateCluster`, `.privateDNSZone`: AKS makes a cluster private (and picks its DNS
  zone) when it creates it (AKS docs private-clusters.md).
- `agentPoolProfiles[system].vmSize`, `.vnetSubnetID`: the system pool gpushare declares inside the cluster; AKS
  fixes a VMSS pool's size and subnet when it creates it (aks-docs resize-node-pool.md: resizing in place is a
  preview, API 2026-01-02-preview; node-pool-unique-subnet.md). Compared when Azure reports them.
An existing cluster (`existing: true`) is never written, so none of this applies to it: it must exist (a missing one
stops the run, `ExistingClusterMissingError`), and its settings are baseline findings for preflight.
Everything else gpushare sets on the cluster (Entra ID, local accounts, tier, upgrade channels, authorized IP ranges,
Image Cleaner) AKS changes in place. A node OS channel change is reported as a note: AKS docs
(auto-upgrade-node-image.md): "Once you change from one channel to another channel, a reimage is triggered leading
to rolling nodes", GPU nodes included.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from gpushare.azure import cluster_baseline as baseline
from gpushare.azure.agent_pool_request import NONE_SUBNET, NOT_REPORTED
from gpushare.azure.arm import AzureReads
from gpushare.azure.deployed_cluster import DeployedCluster, read_live_cluster, read_maintenance_schedules
from gpushare.azure.guard.report import GuardReport, Violation
from gpushare.azure.guard.run import check_for_program, raise_or_warn_on_read_error
from gpushare.errors import AzureReadError, GpushareError
from gpushare.model.environment_variables import DEPLOYED_FILE_ENV
from gpushare.model.stack import StackConfig, own_subnets

CLUSTER = "(cluster)"
"""`Violation.pool` of a cluster-level violation."""

_MIGRATE_TO_OVERLAY = ("AKS migrates a cluster to Azure CNI Overlay in place, reimaging every node: "
                       "az aks update -g {rg} -n {name} --network-plugin azure --network-plugin-mode overlay")
_MIGRATE_TO_CILIUM = ("AKS moves an overlay cluster to the Cilium dataplane in place, reimaging every node: "
                      "az aks update -g {rg} -n {name} --network-dataplane cilium --network-policy cilium")

_SYSTEM_VM_SIZE, _SYSTEM_SUBNET = "agentPoolProfiles[system].vmSize", "agentPoolProfiles[system].vnetSubnetID"

CLUSTER_CREATE_ONLY: dict[str, tuple[str, str | None]] = {
    "dnsPrefix": ("AKS builds the API server's address from the DNS prefix when it creates the cluster", None),
    "enableRBAC": ("AKS cannot turn Kubernetes RBAC on or off on an existing cluster", None),
    "networkProfile.networkPlugin": ("AKS fixes the network plugin when it creates the cluster", _MIGRATE_TO_OVERLAY),
    "networkProfile.networkPluginMode": ("AKS fixes the network plugin mode when it creates the cluster",
                                         _MIGRATE_TO_OVERLAY),
    "networkProfile.networkDataplane": ("AKS fixes the network dataplane when it creates the cluster",
                                        _MIGRATE_TO_CILIUM),
    "networkProfile.networkPolicy": ("AKS ties the network policy engine to the dataplane chosen at creation",
                                     _MIGRATE_TO_CILIUM),
    "networkProfile.podCidr": ("AKS fixes the pod address range when it creates the cluster", None),
    "networkProfile.serviceCidr": ("AKS fixes the service address range when it creates the cluster", None),
    "networkProfile.dnsServiceIP": ("AKS fixes the cluster DNS service address when it creates the cluster", None),
    "networkProfile.outboundType": ("AKS fixes the outbound type when it creates the cluster", None),
    "apiServerAccessProfile.enablePrivateCluster": ("AKS makes a cluster private, or public, when it creates it", None),
    "apiServerAccessProfile.privateDNSZone": ("AKS fixes a private cluster's DNS zone when it creates it", None),
    _SYSTEM_VM_SIZE: ("AKS fixes the system pool's VM size (gpushare:cluster.systemPool.vmSize) when it creates the "
                      "pool; keep the deployed size in the stack", None),
    _SYSTEM_SUBNET: ("AKS cannot move the system pool to another subnet (gpushare:cluster.network.subnetId); keep "
                     "the deployed subnet in the stack", None),
}
"""Each create-only cluster setting: why AKS cannot apply a change in place, and the out-of-band migration if any."""

NONE_SHOWN = "(none)"


def _text(value: str | None, default: str | None = None) -> tuple[str, str]:
    """(comparison key, shown value); None takes the value AKS uses when it reports none."""
    value = value if value is not None else default
    return (value.lower(), value) if value is not None else ("", NONE_SHOWN)


def wanted_settings(stack: StackConfig) -> dict[str, tuple[object, str]]:
    network, api = stack.cluster.network, stack.cluster.api_server
    return {
        "dnsPrefix": _text(stack.cluster.dns_prefix),
        "enableRBAC": (True, "true"),
        "networkProfile.networkPlugin": _text(baseline.NETWORK_PLUGIN),
        "networkProfile.networkPluginMode": _text(baseline.NETWORK_PLUGIN_MODE),
        "networkProfile.networkDataplane": _text(baseline.NETWORK_DATAPLANE),
        "networkProfile.networkPolicy": _text(baseline.NETWORK_POLICY),
        "networkProfile.podCidr": _text(baseline.POD_CIDR),
        "networkProfile.serviceCidr": _text(network.service_cidr or baseline.SERVICE_CIDR),
        "networkProfile.dnsServiceIP": _text(network.dns_service_ip or baseline.DNS_SERVICE_IP),
        "networkProfile.outboundType": _text(network.outbound_type.value),
        "apiServerAccessProfile.enablePrivateCluster": (api.private, str(api.private).lower()),
        "apiServerAccessProfile.privateDNSZone": _text(api.private_dns_zone or "system" if api.private else None),
        _SYSTEM_VM_SIZE: _text(stack.cluster.system_pool.vm_size),
        _SYSTEM_SUBNET: _text(network.subnet_id, NONE_SUBNET),
    }


def deployed_settings(deployed: DeployedCluster) -> dict[str, tuple[object, str]]:
    # API defaults for what AKS may leave out: RBAC on, the Azure dataplane, no network policy.
    rbac = deployed.enable_rbac is not False
    private = deployed.private_cluster is True
    return {
        "dnsPrefix": _text(deployed.dns_prefix),
        "enableRBAC": (rbac, str(rbac).lower()),
        "networkProfile.networkPlugin": _text(deployed.network_plugin),
        "networkProfile.networkPluginMode": _text(deployed.network_plugin_mode),
        "networkProfile.networkDataplane": _text(deployed.network_dataplane, "azure"),
        "networkProfile.networkPolicy": _text(deployed.network_policy, "none"),
        "networkProfile.podCidr": _text(deployed.pod_cidr),
        "networkProfile.serviceCidr": _text(deployed.service_cidr),
        "networkProfile.dnsServiceIP": _text(deployed.dns_service_ip),
        # API defaults: a load balancer, a public API server, and AKS's own zone for a private one.
        "networkProfile.outboundType": _text(deployed.outbound_type, "loadBalancer"),
        "apiServerAccessProfile.enablePrivateCluster": (private, str(private).lower()),
        "apiServerAccessProfile.privateDNSZone": _text(deployed.private_dns_zone or "system" if private else None),
        # Compared when the read has the system pool's profile (its vmSize): then a missing vnetSubnetID is a VNet
        # AKS manages. Without the profile (a hand-written read), neither is compared.
        _SYSTEM_VM_SIZE: _text(deployed.system_vm_size) if deployed.system_vm_size else NOT_REPORTED,
        _SYSTEM_SUBNET: _text(deployed.system_subnet_id, NONE_SUBNET) if deployed.system_vm_size else NOT_REPORTED,
    }


def cluster_violations(stack: StackConfig, deployed: DeployedCluster | None) -> list[Violation]:
    """One violation per create-only setting the stack would change on the deployed cluster (None: none yet)."""
    if deployed is None:
        return []
    wanted, live = wanted_settings(stack), deployed_settings(deployed)
    return [
        Violation(CLUSTER, field, live[field][1], wanted[field][1],
                  _message(stack, field, live[field][1], wanted[field][1]))
        for field in CLUSTER_CREATE_ONLY
        if live[field] is not NOT_REPORTED and live[field][0] != wanted[field][0]
        # A private DNS zone is compared between private clusters; public <-> private is enablePrivateCluster's.
        and not (field == _PRIVATE_DNS_ZONE and live[_PRIVATE][0] != wanted[_PRIVATE][0])
    ]


_PRIVATE, _PRIVATE_DNS_ZONE = "apiServerAccessProfile.enablePrivateCluster", "apiServerAccessProfile.privateDNSZone"


def _node_os_note(stack: StackConfig, deployed: DeployedCluster | None) -> str | None:
    if deployed is None:
        return None
    # NodeImage is AKS's default for clusters created with API 2023-06-01 or later.
    was = deployed.node_os_upgrade_channel or "NodeImage"
    wants = stack.cluster.upgrades.node_os.value
    if was.lower() == wants.lower():
        return None
    return (f"cluster {stack.cluster.name}: node OS upgrade channel {was} -> {wants}. AKS applies this in place but "
            "reimages every node to do so, GPU nodes included (rolling, within the pools' surge settings): their "
            "pods restart")


def _message(stack: StackConfig, field: str, deployed: str, wanted: str) -> str:
    cluster = stack.cluster
    why, migration = CLUSTER_CREATE_ONLY[field]
    lines = [
        f"stack {stack.stack}, cluster {cluster.name}: {field} {deployed} -> {wanted}.",
        f"  {why}: this stack cannot be applied to it; replacing the cluster would delete every GPU pool "
        "and workload on it.",
        "  Ways forward:",
    ]
    if migration:
        lines.append(f"  - {migration.format(rg=cluster.resource_group, name=cluster.name)}; then run "
                     "`pulumi refresh --run-program` so the state records it, and apply again;")
    lines.append(f"  - or deploy a new cluster (another `name` in {stack.source}, or a new stack), move the "
                 "workloads to it, and retire this one.")
    return "\n".join(lines)


class ExistingClusterMissingError(GpushareError):
    """`existing: true` names a cluster Azure does not have: nothing to add pools to. Exits as a failed check."""

    exit_code = 1


def missing_cluster_message(stack: StackConfig, subscription_id: str) -> str:
    cluster = stack.cluster
    return (f"AKS cluster {cluster.name} not found in resource group {cluster.resource_group} (subscription "
            f"{subscription_id}), but {stack.source} says existing: true; check gpushare:cluster.name and "
            f"resourceGroup (`az aks list -o table` lists the clusters this identity can read), or remove "
            f"`existing: true` to have gpushare create the cluster")


class ServicePrincipalClusterError(GpushareError):
    """An existing cluster authenticates with a service principal, and the stack needs its managed identity."""

    exit_code = 1


def service_principal_problem(stack: StackConfig, deployed: DeployedCluster) -> tuple[str, str] | None:
    """Why an existing cluster without a managed identity cannot take the stack, and the fix; or None. gpushare grants
    the cluster's identity Network Contributor on each subnet of your own a pool names (`SubnetAccess`); a service
    principal cluster has no `identity.principalId` to grant it to, and the role assignment would fail on a null
    principal."""
    subnets = own_subnets(stack)
    if deployed.identity_principal_id or not subnets:
        return None
    cluster = stack.cluster
    who = (f"service principal {deployed.service_principal_client_id} (servicePrincipalProfile.clientId)"
           if deployed.service_principal_client_id else "no managed identity")
    names = ", ".join("/".join(s.split("/")[-3::2]) for s in subnets)
    return (f"cluster {cluster.name} authenticates to Azure with {who}, not a managed identity: it has no principal "
            f"ID, so gpushare cannot grant it Network Contributor on the subnets the pools name ({names})",
            f"move the cluster to a managed identity: az aks update -g {cluster.resource_group} -n {cluster.name} "
            "--enable-managed-identity (aks-docs use-managed-identity.md; its nodes keep the service principal "
            "until each pool's next node-image upgrade); or remove the pools' subnetId, so they join the system "
            "pool's subnet, which the cluster can join already")


def check_cluster(stack: StackConfig, report: GuardReport, subscription_id: str,
                  **read_kwargs: object) -> GuardReport:
    """Read the deployed cluster (one GET; an existing one's maintenance configurations too, one list) and add its
    violations to the pool guard's `report`; the cluster read travels on in the report (`GuardReport.cluster`) for
    preflight's baseline findings.

    Unreadable Azure is handled as for the pools: `strict` raises, `warn` carries on with a warning. An existing
    cluster (`existing: true`) that is not there raises `ExistingClusterMissingError`; one that is has no
    create-only settings to compare (gpushare writes none of them).
    `read_kwargs` go to `read_live_cluster` (credential, base_url, SDK client settings).
    """
    cluster = stack.cluster
    try:
        deployed = read_live_cluster(subscription_id, cluster.resource_group, cluster.name, **read_kwargs)
    except AzureReadError as err:
        warning = raise_or_warn_on_read_error(
            stack, err, "deploys on the cluster's protection alone",
            "Continuing because gpushare:guard is warn, relying on the cluster's protection")
        return dataclasses.replace(report, warnings=(*report.warnings, warning))
    if cluster.existing:
        if deployed is None:
            raise ExistingClusterMissingError(missing_cluster_message(stack, subscription_id))
        if problem := service_principal_problem(stack, deployed):
            raise ServicePrincipalClusterError(f"stack {stack.stack}: {problem[0]}; {problem[1]}")
        try:
            schedules = read_maintenance_schedules(subscription_id, cluster.resource_group, cluster.name,
                                                   **read_kwargs)
        except AzureReadError as err:
            warning = raise_or_warn_on_read_error(
                stack, err, "deploys without comparing them with the baseline",
                "Continuing because gpushare:guard is warn: gpushare writes no maintenance window on an existing "
                "cluster, so nothing else depends on this read")
            return dataclasses.replace(report, warnings=(*report.warnings, warning), cluster=deployed)
        return dataclasses.replace(report, cluster=dataclasses.replace(deployed, maintenance_schedules=schedules))
    note = _node_os_note(stack, deployed)
    return dataclasses.replace(report, violations=(*cluster_violations(stack, deployed), *report.violations),
                               notes=(*report.notes, *([note] if note else [])), cluster=deployed)


def check_stack_for_program(stack: StackConfig, environ: Mapping[str, str],
                            azure: Callable[[], AzureReads]) -> GuardReport | None:
    """The whole guard as the Pulumi program runs it: the pools (`gpushare.azure.guard.run.check_for_program`), and
    under `pulumi preview`/`up` the cluster's create-only settings too, with the same target and credential
    (`azure`, cached by the caller). A saved `--deployed` file holds node pools only, and an offline render compares
    nothing."""
    report = check_for_program(stack, environ, azure)
    if report is None or environ.get(DEPLOYED_FILE_ENV):
        return report
    reads = azure()
    return check_cluster(stack, report, reads.target.subscription_id, **reads.read_kwargs())
