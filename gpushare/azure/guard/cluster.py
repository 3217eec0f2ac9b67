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
- `agentPoolProfiles[system].vmSize`, `.vnetSubnetID`: the system pool gpushare declares inside the cluster
  (`system_pool_inputs`), whose create-only settings are the pool table's (`CREATE_ONLY_INPUTS`, with its reasons
  and how it compares): every input of that table the profile declares. Compared when Azure reports the profile.
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
from dataclasses import dataclass

import gpushare.azure.agent_pool_request as agent_pool
from gpushare.azure import cluster_baseline as baseline
from gpushare.azure.agent_pool_request import NOT_REPORTED, Shown, system_pool_inputs
from gpushare.azure.arm import AzureReads
from gpushare.azure.deployed import DeployedPool
from gpushare.azure.deployed_cluster import DeployedCluster, read_live_cluster, read_maintenance_schedules
from gpushare.azure.guard.guard_report import GuardReport, Violation
from gpushare.azure.guard.guard_runs import check_for_program, raise_or_warn_on_read_error
from gpushare.errors import AzureReadError, GpushareError
from gpushare.model.environment_variables import DEPLOYED_FILE_ENV
from gpushare.model.stack import StackConfig, own_subnets
from gpushare.sharing.pool_facts import PoolFactsByName

CLUSTER = "(cluster)"
"""`Violation.pool` of a cluster-level violation."""

_MIGRATE_TO_OVERLAY = ("AKS migrates a cluster to Azure CNI Overlay in place, reimaging every node: "
                       "az aks update -g {rg} -n {name} --network-plugin azure --network-plugin-mode overlay")
_MIGRATE_TO_CILIUM = ("AKS moves an overlay cluster to the Cilium dataplane in place, reimaging every node: "
                      "az aks update -g {rg} -n {name} --network-dataplane cilium --network-policy cilium")

@dataclass(frozen=True)
class ClusterCreateOnlySetting:
    """One managed cluster setting AKS fixes when it creates the cluster."""

    path: str
    """Its ARM property path, as the guard shows it."""
    why: str
    """Why AKS cannot apply a change in place (the guard's message)."""
    wanted: Callable[[StackConfig], Shown]
    """What the stack sends, normalised for comparison and shown."""
    deployed: Callable[[DeployedCluster], Shown]
    """The same setting as the deployed cluster reports it, normalised alike (with AKS's default for what it leaves
    out)."""
    migration: str | None = None
    """The out-of-band migration AKS offers, if any (`{rg}` and `{name}` are the cluster's)."""


def _text(value: str | None, default: str | None = None) -> Shown:
    """(comparison key, shown value); None takes the value AKS uses when it reports none."""
    value = value if value is not None else default
    return (value.lower(), value) if value is not None else ("", NONE_SHOWN)


def _flag(value: bool) -> Shown:
    return value, str(value).lower()


def _private(deployed: DeployedCluster) -> bool:
    return deployed.private_cluster is True


# The deployed side's defaults are the API's for what AKS may leave out: RBAC on, the Azure dataplane, no network
# policy, a load balancer, a public API server, and AKS's own zone for a private one.
CLUSTER_CREATE_ONLY: tuple[ClusterCreateOnlySetting, ...] = (
    ClusterCreateOnlySetting(
        "dnsPrefix", "AKS builds the API server's address from the DNS prefix when it creates the cluster",
        lambda stack: _text(stack.cluster.dns_prefix), lambda live: _text(live.dns_prefix)),
    ClusterCreateOnlySetting(
        "enableRBAC", "AKS cannot turn Kubernetes RBAC on or off on an existing cluster",
        lambda stack: _flag(True), lambda live: _flag(live.enable_rbac is not False)),
    ClusterCreateOnlySetting(
        "networkProfile.networkPlugin", "AKS fixes the network plugin when it creates the cluster",
        lambda stack: _text(baseline.NETWORK_PLUGIN), lambda live: _text(live.network_plugin), _MIGRATE_TO_OVERLAY),
    ClusterCreateOnlySetting(
        "networkProfile.networkPluginMode", "AKS fixes the network plugin mode when it creates the cluster",
        lambda stack: _text(baseline.NETWORK_PLUGIN_MODE), lambda live: _text(live.network_plugin_mode),
        _MIGRATE_TO_OVERLAY),
    ClusterCreateOnlySetting(
        "networkProfile.networkDataplane", "AKS fixes the network dataplane when it creates the cluster",
        lambda stack: _text(baseline.NETWORK_DATAPLANE), lambda live: _text(live.network_dataplane, "azure"),
        _MIGRATE_TO_CILIUM),
    ClusterCreateOnlySetting(
        "networkProfile.networkPolicy", "AKS ties the network policy engine to the dataplane chosen at creation",
        lambda stack: _text(baseline.NETWORK_POLICY), lambda live: _text(live.network_policy, "none"),
        _MIGRATE_TO_CILIUM),
    ClusterCreateOnlySetting(
        "networkProfile.podCidr", "AKS fixes the pod address range when it creates the cluster",
        lambda stack: _text(baseline.POD_CIDR), lambda live: _text(live.pod_cidr)),
    ClusterCreateOnlySetting(
        "networkProfile.serviceCidr", "AKS fixes the service address range when it creates the cluster",
        lambda stack: _text(stack.cluster.network.service_cidr or baseline.SERVICE_CIDR),
        lambda live: _text(live.service_cidr)),
    ClusterCreateOnlySetting(
        "networkProfile.dnsServiceIP", "AKS fixes the cluster DNS service address when it creates the cluster",
        lambda stack: _text(stack.cluster.network.dns_service_ip or baseline.DNS_SERVICE_IP),
        lambda live: _text(live.dns_service_ip)),
    ClusterCreateOnlySetting(
        "networkProfile.outboundType", "AKS fixes the outbound type when it creates the cluster",
        lambda stack: _text(stack.cluster.network.outbound_type.value),
        lambda live: _text(live.outbound_type, "loadBalancer")),
    ClusterCreateOnlySetting(
        "apiServerAccessProfile.enablePrivateCluster", "AKS makes a cluster private, or public, when it creates it",
        lambda stack: _flag(stack.cluster.api_server.private), lambda live: _flag(_private(live))),
    ClusterCreateOnlySetting(
        "apiServerAccessProfile.privateDNSZone", "AKS fixes a private cluster's DNS zone when it creates it",
        lambda stack: _text(stack.cluster.api_server.private_dns_zone or "system"
                            if stack.cluster.api_server.private else None),
        lambda live: _text(live.private_dns_zone or "system" if _private(live) else None)),
)
"""Each create-only setting of the cluster itself; its system pool's are the pool table's
(`gpushare.azure.agent_pool_request.CREATE_ONLY_INPUTS`), compared by `system_pool_violations`."""

NONE_SHOWN = "(none)"

SYSTEM_POOL_PATH = "agentPoolProfiles[system]"
"""Where the system pool's settings sit in the cluster resource, as the guard names them."""


def cluster_violations(stack: StackConfig, deployed: DeployedCluster | None) -> list[Violation]:
    """One violation per create-only setting the stack would change on the deployed cluster, its system pool's
    included (None: no cluster yet)."""
    if deployed is None:
        return []
    live = {setting.path: setting.deployed(deployed) for setting in CLUSTER_CREATE_ONLY}
    return [
        *(_violation(stack, setting.path, live[setting.path], setting.wanted(stack), setting.why, setting.migration)
          for setting in CLUSTER_CREATE_ONLY
          if live[setting.path][0] != setting.wanted(stack)[0]
          # A private DNS zone is compared between private clusters; public <-> private is enablePrivateCluster's.
          and not (setting.path == _PRIVATE_DNS_ZONE and live[_PRIVATE][0] != stack.cluster.api_server.private)),
        *system_pool_violations(stack, deployed.system_pool),
    ]


def system_pool_violations(stack: StackConfig, deployed: DeployedPool | None) -> list[Violation]:
    """The system pool gpushare declares inside the cluster, against the deployed one (None: the read has no system
    pool profile, so nothing is compared): each create-only pool input the profile declares (`system_pool_inputs`),
    compared as the pool guard compares a GPU pool's. AKS fixes a VMSS pool's size and subnet when it creates it
    (aks-docs resize-node-pool.md: resizing in place is a preview, API 2026-01-02-preview;
    node-pool-unique-subnet.md)."""
    if deployed is None:
        return []
    declared = system_pool_inputs(stack.cluster)
    violations = []
    for entry in agent_pool.CREATE_ONLY_INPUTS:
        if entry.keyword not in declared or (live := entry.deployed(deployed)) is None or live is NOT_REPORTED:
            continue
        if live[0] is not None and live[0] != (wanted := entry.sent(declared[entry.keyword]))[0]:
            violations.append(_violation(stack, f"{SYSTEM_POOL_PATH}.{entry.field}", live, wanted,
                                         entry.system_pool_why or entry.why, None))
    return violations


_PRIVATE, _PRIVATE_DNS_ZONE = "apiServerAccessProfile.enablePrivateCluster", "apiServerAccessProfile.privateDNSZone"


def _violation(stack: StackConfig, field: str, deployed: Shown, wanted: Shown, why: str,
               migration: str | None) -> Violation:
    return Violation(CLUSTER, field, deployed[1], wanted[1], _message(stack, field, deployed[1], wanted[1], why,
                                                                      migration))


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


def _message(stack: StackConfig, field: str, deployed: str, wanted: str, why: str, migration: str | None) -> str:
    cluster = stack.cluster
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


def check_stack_for_program(stack: StackConfig, environ: Mapping[str, str], azure: Callable[[], AzureReads],
                            facts: PoolFactsByName | None = None) -> GuardReport | None:
    """The whole guard as the Pulumi program runs it: the pools (`gpushare.azure.guard.guard_runs.check_for_program`), and
    under `pulumi preview`/`up` the cluster's create-only settings too, with the same target and credential
    (`azure`, cached by the caller). A saved `--deployed` file holds node pools only, and an offline render compares
    nothing."""
    report = check_for_program(stack, environ, azure, facts)
    if report is None or environ.get(DEPLOYED_FILE_ENV):
        return report
    reads = azure()
    return check_cluster(stack, report, reads.target.subscription_id, **reads.read_kwargs())
