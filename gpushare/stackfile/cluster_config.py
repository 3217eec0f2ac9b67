"""`gpushare:cluster`: the AKS cluster, its system pool, access, tier, upgrades and API server."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from gpushare.model import catalog
from gpushare.model.keys import CLUSTER_KEY, POOLS_KEY
from gpushare.model.stack import (
    Access,
    ApiServer,
    Cluster,
    ClusterUpgrades,
    Deployer,
    KubernetesCredential,
    MaintenanceWindow,
    NodeOsChannel,
    OsSku,
    OutboundType,
    PrincipalKind,
    StackConfig,
    SupportPlan,
    SystemPool,
    Tier,
    UpgradeChannel,
    WeekDay,
)
from gpushare.stackfile.checks import GUID_RE, MAX_POOL_NODES, Checker, kind_of, show
from gpushare.stackfile.declarations import ARRAY, BOOLEAN, INTEGER, OBJECT, STRING, Field, Section
from gpushare.stackfile.kubernetes_version import support_plan_problem, version_support_problem
from gpushare.stackfile.network_config import NETWORK, parse_network

CLUSTER_NAME_RE = re.compile(r"^[a-zA-Z0-9]$|^[a-zA-Z0-9][-_a-zA-Z0-9]{0,61}[a-zA-Z0-9]$")
RESOURCE_GROUP_RE = re.compile(r"^[-\w.()]{0,89}[-\w()]$")
KUBERNETES_VERSION_RE = re.compile(r"^\d+\.\d+(\.\d+)?$")
VM_SIZE_RE = re.compile(r"^Standard_[A-Za-z0-9_]+$")
WINDOW_START_RE = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")
MIN_WINDOW_HOURS, MAX_WINDOW_HOURS = 4, 24
"""AKS's bounds for `maintenanceWindow.durationHours`."""
MAX_AUTHORIZED_IP_RANGES = 200
"""AKS's limit for `apiServerAccessProfile.authorizedIPRanges` without API server VNet integration."""
PRIVATE_DNS_ZONE_RE = re.compile(r"^(system|none)$", re.IGNORECASE)
"""AKS's `privateDNSZone` values for a cluster with a system-assigned identity, as gpushare's is: `system` or
`none`."""
PRIVATE_DNS_ZONE_RULE = "must be system or none"
CUSTOM_PRIVATE_DNS_ZONE_RE = re.compile(
    r"^/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[-\w.()]+/providers/Microsoft\.Network/privateDnsZones/",
    re.IGNORECASE)
"""A private DNS zone's ARM ID: AKS takes one only from a cluster with a user-assigned identity holding Private DNS
Zone Contributor and Network Contributor (aks-docs private-clusters.md)."""

NOT_ON_EXISTING: dict[str, str] = {
    "tier": "the cluster's tier belongs to its owners; gpushare reads it, and `preflight` reports it against the "
            "baseline with the `az aks update` that changes it",
    "supportPlan": "the cluster's support plan belongs to its owners, with its tier",
    "upgrades": "the cluster's upgrade channels and maintenance windows belong to its owners; gpushare reads them, "
                "and `preflight` reports them against the baseline",
    "systemPool": "the cluster already has its system pool; gpushare adds GPU pools only",
    "kubernetesVersion": "the cluster runs the version its owners chose; gpushare never upgrades it",
    "apiServer": "API server access (authorized ranges, private) is the cluster's own setting",
    "network": "AKS fixed the cluster's network when it was created; put a GPU pool in another subnet of the "
               "cluster's VNet with the pool's `subnetId`",
}
"""Keys that only make sense for a cluster gpushare creates, with why `existing: true` refuses each."""

CIDR_SHAPE = re.compile(r"^[0-9A-Fa-f:.]+/[0-9]{1,3}$")
"""What a CIDR looks like, for the schema; the validator parses it (`ipaddress`) and also refuses host bits."""

DEPLOYERS_EXAMPLE = "e.g. [{objectId: 0b5e7c1a-2f4d-4e8a-9c3b-6d1f2a7e5b90, type: ServicePrincipal}]"
SYSTEM_POOL = Section((
    Field("vmSize", STRING, "The system pool's VM size (general purpose, not a GPU size): it runs the cluster "
                            "add-ons only.",
          pattern=VM_SIZE_RE, rule="must be an Azure VM size such as Standard_D4ds_v5"),
    Field("count", INTEGER, "The system pool's node count.", minimum=1,
          maximum=MAX_POOL_NODES, why=" (a system pool needs at least one node)"),
), model=SystemPool)
DEPLOYER = Section((
    Field("objectId", STRING, "The principal's Entra object ID (a user's, a service principal's (not its client "
                              "ID), a group's).", required=True, pattern=GUID_RE,
          examples=("0b5e7c1a-2f4d-4e8a-9c3b-6d1f2a7e5b90",),
          missing=f"the principal's object ID; {DEPLOYERS_EXAMPLE}"),
    Field("type", STRING, "The principal's type; ARM refuses an assignment whose type does not match.",
          required=True, enum=PrincipalKind, attr="kind",
          missing="ServicePrincipal (also a managed identity), User or Group; ARM refuses a role assignment whose "
                  "type does not match the principal (UnmatchedPrincipalType)"),
), model=Deployer)
ACCESS = Section((
    Field("adminGroups", ARRAY, "Entra group object IDs given \"Azure Kubernetes Service RBAC Cluster Admin\" on "
                                "the cluster.",
          unique=True,
          items=Field("adminGroup", STRING, "An Entra group's object ID (a GUID).", pattern=GUID_RE,
                      examples=("3f2504e0-4f89-41d3-9a0c-0305e82c3301",))),
    Field("deployers", ARRAY, "The identities that deploy the stack, each given \"Azure Kubernetes Service RBAC "
                              "Cluster Admin\" at the resource group (on the cluster with existing: true) so the program can "
                              "reach the Kubernetes API; "
                              "named here, never read from whoever runs the program.",
          items=Field("deployer", OBJECT, "One principal: its Entra object ID and its type.", section=DEPLOYER)),
    Field("grantDeployer", BOOLEAN, "No longer supported with true (it granted whoever ran the program); list the "
                                    "identities under deployers.",
          default=False, attr=""),
    Field("kubernetesCredential", STRING, "How the program's Kubernetes provider authenticates: a token fetched "
                                          "once (60-90 minutes), or kubelogin renewing it for long runs.",
          enum=KubernetesCredential),
), model=Access)
WINDOW = Section((
    Field("day", STRING, "The weekday of the weekly maintenance window.", enum=WeekDay),
    Field("start", STRING, "When the window opens, \"HH:MM\" UTC. Quote it: YAML 1.1 (PyYAML, so plan) reads an "
                           "unquoted time from 1:00 on without a leading zero, e.g. 22:30, as the base-60 number "
                           "1350, refused; 00:00 to 09:59 with the zero, e.g. 02:00, stay text.",
          pattern=WINDOW_START_RE, empty_is_default=False,
          rule="must be a UTC time \"HH:MM\" from \"00:00\" to \"23:59\""),
    Field("hours", INTEGER, "How long the window lasts.",
          minimum=MIN_WINDOW_HOURS, maximum=MAX_WINDOW_HOURS, why=" (AKS maintenance windows last 4 to 24 hours)"),
), model=MaintenanceWindow)
CLUSTER_UPGRADES = Section((
    Field("channel", STRING, "AKS's auto-upgrade channel for the Kubernetes version; stable and rapid cannot be "
                             "combined with a pinned kubernetesVersion, patch not with a pinned patch release.",
          enum=UpgradeChannel),
    Field("nodeOs", STRING, "AKS's node OS upgrade channel (NodeImage when channel is node-image).",
          enum=NodeOsChannel),
    Field("window", OBJECT, "When AKS may upgrade (weekly, UTC).", default_text="Sunday 02:00 UTC for 4 hours",
          section=WINDOW),
), model=ClusterUpgrades)
API_SERVER = Section((
    Field("authorizedIpRanges", ARRAY, "CIDRs allowed to reach the API server; empty: any address (authentication "
                                       "still applies).",
          max_items=MAX_AUTHORIZED_IP_RANGES, unique=True,
          items=Field("authorizedIpRange", STRING, "A network in CIDR notation such as 203.0.113.0/24, without "
                                                   "host bits.", pattern=CIDR_SHAPE,
                      examples=("203.0.113.0/24",))),
    Field("private", BOOLEAN, "A private cluster: the API server has no public address (previews, deploys and "
                              "verify then need a runner inside the network); not with authorizedIpRanges."),
    Field("privateDnsZone", STRING, "A private cluster's DNS zone: system (AKS's, in the node resource group) or "
                                    "none (your DNS resolves the API server).",
          default_text="AKS's (system)", pattern=PRIVATE_DNS_ZONE_RE, examples=("system",),
          rule=PRIVATE_DNS_ZONE_RULE),
), model=ApiServer)
CLUSTER = Section((
    Field("name", STRING, "The AKS cluster name.", required=True, pattern=CLUSTER_NAME_RE,
          examples=("contoso-prod",),
          missing="the AKS cluster name (letters, digits, '-' and '_', at most 63 characters)",
          rule="must be 1-63 letters, digits, '-' or '_', starting and ending with a letter or digit"),
    Field("resourceGroup", STRING, "The resource group gpushare creates the cluster in.", default_text="<name>-rg",
          examples=("contoso-prod-rg",),
          pattern=RESOURCE_GROUP_RE, rule="must be 1-90 letters, digits, '_', '-', '.', '(' or ')', not ending in '.'"),
    Field("kubernetesVersion", STRING, "A Kubernetes version to pin (\"1.36\" or \"1.36.2\", quoted); absent: AKS's "
                                       "default, then the upgrade channel's. A minor AKS supports only under "
                                       "long-term support (1.32-1.34) needs tier Premium and supportPlan "
                                       "AKSLongTermSupport.",
          pattern=KUBERNETES_VERSION_RE, examples=("1.36",),
          rule="must be a Kubernetes version such as \"1.36\" or \"1.36.2\""),
    Field("systemPool", OBJECT, "The system node pool (cluster add-ons).",
          default_text=f"{SystemPool().count} x {SystemPool().vm_size}", section=SYSTEM_POOL),
    Field("access", OBJECT, "Who administers the cluster (Entra ID with Azure RBAC).", section=ACCESS),
    Field("tier", STRING, "The AKS control-plane tier: Standard carries the uptime SLA, Free is for development, "
                          "Premium adds long-term support (supportPlan AKSLongTermSupport).",
          enum=Tier),
    Field("supportPlan", STRING, "The Kubernetes support plan: AKSLongTermSupport keeps a minor supported for a "
                                 "year after its standard support ends, and needs tier Premium.",
          default_text=SupportPlan.KUBERNETES_OFFICIAL.value, enum=SupportPlan),
    Field("upgrades", OBJECT, "How and when AKS upgrades the cluster on its own.", section=CLUSTER_UPGRADES),
    Field("apiServer", OBJECT, "Who may reach the Kubernetes API server.", section=API_SERVER),
    Field("existing", BOOLEAN, "Add GPU pools, the operator and tenants to a cluster gpushare did not create: it "
                               "is read, never written (needs resourceGroup; refuses the keys of a cluster "
                               "gpushare creates)."),
    Field("resourceGroupExists", BOOLEAN, "The resource group exists already: gpushare reads it instead of "
                                          "creating it, and never deletes it."),
    Field("network", OBJECT, "The subnet and address ranges of a cluster gpushare creates.",
          default_text="a VNet AKS manages", section=NETWORK),
), model=Cluster)
CLUSTER_FIELD = Field(CLUSTER_KEY, OBJECT, "The AKS cluster: at least its name.", required=True, section=CLUSTER)
CLUSTER_KEYS = CLUSTER.keys


def parse_cluster(c: Checker, value: Any) -> Cluster | None:
    path = CLUSTER_KEY
    if value is None:
        c.add(path, "required: the AKS cluster, at least `name:` (e.g. `gpushare:cluster: {name: contoso-prod}`)")
        return None
    existing = isinstance(value, dict) and value.get("existing") is True
    if existing:
        _refuse_on_existing(c, value, path)
        value = {key: item for key, item in value.items() if key not in NOT_ON_EXISTING}
    cluster = c.section_values(value, CLUSTER, path, rules={
        "kubernetesVersion": _kubernetes_version, "systemPool": _parse_system_pool, "access": _parse_access,
        "upgrades": _parse_upgrades, "apiServer": _parse_api_server, "network": parse_network,
    })
    if cluster is None:
        return None
    name = cluster["name"]
    resource_group = cluster["resourceGroup"] or (f"{name}-rg" if name else None)
    upgrades = cluster["upgrades"] or ClusterUpgrades()
    _check_version_against_channel(c, path, cluster["kubernetesVersion"], upgrades.channel)
    tier, plan = cluster["tier"] or Tier.STANDARD, cluster["supportPlan"] or SupportPlan.KUBERNETES_OFFICIAL
    if (problem := support_plan_problem(tier, plan)) is not None:
        c.add(f"{path}.supportPlan", problem)
    elif cluster["kubernetesVersion"] is not None:
        if (problem := version_support_problem(cluster["kubernetesVersion"], tier, plan)) is not None:
            c.add(f"{path}.kubernetesVersion", problem)
    if name is None or resource_group is None:
        return None
    return cluster.model(resource_group=resource_group,
                         resource_group_exists=cluster["resourceGroupExists"] or existing)


def _kubernetes_version(c: Checker, value: Any, path: str) -> str | None:
    if isinstance(value, float):
        newest = ".".join(map(str, catalog.NEWEST_AKS_KUBERNETES_MINOR))  # a minor every tier may pin
        c.add(path, f"YAML reads an unquoted version as a number (here {value}); quote it as written, e.g. "
                    f"kubernetesVersion: \"{newest}\"")
        return None
    return c.check(CLUSTER["kubernetesVersion"], value, path)


def _refuse_on_existing(c: Checker, raw: dict[str, Any], path: str) -> None:
    for key, why in NOT_ON_EXISTING.items():
        if key in raw:
            c.add(f"{path}.{key}", f"not with existing: true: {why}; remove it")
    access = raw.get("access")
    if isinstance(access, dict) and access.get("adminGroups"):
        c.add(f"{path}.access.adminGroups", "not with existing: true: who administers a cluster gpushare did not "
                                            "create is its owners' choice, and gpushare would add role assignments "
                                            "on it; grant them out of band and remove adminGroups")
    if "resourceGroup" not in raw:
        c.add(f"{path}.resourceGroup", "required with existing: true: the resource group the cluster is in "
                                       "(`az aks list --query \"[?name=='<name>'].resourceGroup\" -o tsv`)")


def _check_version_against_channel(c: Checker, path: str, version: str | None, channel: UpgradeChannel) -> None:
    """AKS moves the version along its upgrade channel; a stack pinning what the channel changes would ask AKS to
    downgrade on the next run, which AKS refuses."""
    if version is None:
        return
    if channel is UpgradeChannel.PATCH and version.count(".") == 2:
        minor = version.rsplit(".", 1)[0]
        c.add(f"{path}.kubernetesVersion", f"{version} pins a patch release, but upgrades.channel patch moves "
                                           f"the cluster to newer patches; write \"{minor}\", or set channel: none")
    elif channel in (UpgradeChannel.STABLE, UpgradeChannel.RAPID):
        c.add(f"{path}.kubernetesVersion", f"upgrades.channel {channel.value} moves the cluster to newer minor "
                                           f"versions, so a fixed version ({version}) would ask AKS to downgrade; "
                                           f"remove kubernetesVersion, or use channel patch")


def _parse_access(c: Checker, value: Any, path: str) -> Access | None:
    access = c.section_values(value, ACCESS, path, rules={"adminGroups": _admin_groups, "deployers": _parse_deployers,
                                                         "grantDeployer": _grant_deployer})
    return access.model() if access is not None else None


def _admin_groups(c: Checker, value: Any, path: str) -> tuple[str, ...] | None:
    if not isinstance(value, list):
        c.add(path, f"expected a list of Entra group object IDs, got {kind_of(value)} {show(value)}")
        return None
    groups: list[str] = []
    for i, group in enumerate(value):
        where = f"{path}[{i}]"
        if not isinstance(group, str) or not GUID_RE.match(group):
            c.add(where, f"must be an Entra group's object ID, a GUID such as 0b5e7c1a-2f4d-4e8a-9c3b-6d1f2a7e5b90, "
                         f"got {show(group)}; find it with `az ad group show --group <name> --query id -o tsv`")
        elif group.lower() in groups:
            c.add(where, f"group {group} is listed twice")
        else:
            groups.append(group.lower())
    return tuple(groups)


def _grant_deployer(c: Checker, value: Any, path: str) -> bool | None:
    grant = c.boolean(value, path)
    if grant:
        # It assigned whoever ran the program: the preview identity planned a replace of it on every PR, and a
        # deploy by another identity really replaced it, delete first (azure-native's Diff), so that run's
        # Kubernetes calls met a 403 while the new assignment propagated.
        c.add(path,
              "is no longer supported: it granted whoever runs the program, so each identity (you locally, CI) "
              "replaced the last one's access; name the deploy identities instead, e.g. `deployers: [{objectId: "
              "<id>, type: User}]` with your ID from `az ad signed-in-user show --query id -o tsv`, and for CI "
              "`{objectId: <id>, type: ServicePrincipal}` from `az ad sp show --id <client ID> --query id -o tsv`; list "
              "the identity that ran the last deploy first: it takes over the assignment grantDeployer made")
        return None
    return grant


def _deployer_object_id(c: Checker, value: Any, path: str) -> str | None:
    if not isinstance(value, str) or not GUID_RE.match(value):
        c.add(path, f"must be an Entra object ID, a GUID, got {show(value)}; a user's: `az ad signed-in-user show "
                    f"--query id -o tsv`, a service principal's (not its client/app ID): `az ad sp show --id "
                    f"<client ID> --query id -o tsv`, a group's: `az ad group show --group <name> --query id -o tsv`")
        return None
    return value.lower()


def _parse_deployers(c: Checker, value: Any, path: str) -> tuple[Deployer, ...]:
    if not isinstance(value, list):
        c.add(path, f"expected a list of {{objectId, type}}, got {kind_of(value)} {show(value)}; {DEPLOYERS_EXAMPLE}")
        return ()
    deployers: list[Deployer] = []
    for i, item in enumerate(value):
        where = f"{path}[{i}]"
        deployer = c.section_values(item, DEPLOYER, where, rules={"objectId": _deployer_object_id})
        if deployer is None:
            continue
        object_id = deployer["objectId"]
        if object_id and any(d.object_id == object_id for d in deployers):
            c.add(f"{where}.objectId", f"{object_id} is listed twice")
        elif not deployer.incomplete:
            deployers.append(deployer.model())
    return tuple(deployers)


def access_warnings(access: Access) -> list[str]:
    """A stack naming no deployer relies on assignments made outside it."""
    if access.deployers:
        return []
    return [f"{CLUSTER_KEY}.access.deployers is empty: the program grants nobody Kubernetes access, so `pulumi up` reaches "
            "the cluster only if the identity running it holds \"Azure Kubernetes Service RBAC Cluster Admin\" "
            f"(or Writer) from elsewhere; list it under {CLUSTER_KEY}.access.deployers (docs/security.md \"Who holds "
            "cluster admin\")"]


def api_server_warnings(cluster: Cluster) -> list[str]:
    """Authorized IP ranges behind your own egress: AKS adds only the Standard load balancer's outbound IP to them
    (aks-docs api-server-authorized-ip-ranges.md), and recommends listing "the cluster egress IP address (firewall,
    NAT gateway, ...)": the nodes reach a public API server from it."""
    outbound = cluster.network.outbound_type
    if not cluster.api_server.authorized_ip_ranges or outbound is OutboundType.LOAD_BALANCER:
        return []
    return [f"{CLUSTER_KEY}.apiServer.authorizedIpRanges with network.outboundType {outbound.value}: the nodes reach "
            f"the API server from your egress address (the firewall or NAT gateway), and AKS adds only its load "
            f"balancer's outbound IP to the ranges; list that egress address among authorizedIpRanges, or the API "
            f"server refuses the nodes' own calls"]


def node_os_warnings(stack: StackConfig) -> list[str]:
    """SecurityPatch with AzureLinux GPU pools: aks-docs auto-upgrade-node-os-image.md, "Azure Linux doesn't support
    this channel on GPU-enabled VMs", and use-nvidia-gpu.md: "automatic security patches aren't applied"."""
    cluster = stack.cluster
    azure_linux = [pool.name for pool in stack.pools if pool.os_sku is OsSku.AZURE_LINUX]
    if cluster.existing or cluster.upgrades.node_os is not NodeOsChannel.SECURITY_PATCH or not azure_linux:
        return []
    return [f"{stack.source}: {CLUSTER_KEY}.upgrades.nodeOs SecurityPatch does not patch AzureLinux GPU nodes (AKS "
            f"does not support the channel on Azure Linux GPU VMs), so pools {', '.join(azure_linux)} get no "
            f"automatic security patches; use nodeOs: NodeImage (a patched node image every week, within the "
            f"maintenance window), or osSku: Ubuntu"]


def _parse_upgrades(c: Checker, value: Any, path: str) -> ClusterUpgrades | None:
    upgrades = c.section(value, CLUSTER_UPGRADES, path, rules={"window": _parse_window})
    if upgrades is None:
        return None
    if upgrades.channel is UpgradeChannel.NODE_IMAGE and upgrades.node_os is not NodeOsChannel.NODE_IMAGE:
        # AKS: with the node-image upgrade channel, the node OS channel is NodeImage and cannot be set otherwise.
        node_os = upgrades.node_os.value
        c.add(f"{path}.nodeOs", f"channel node-image upgrades node images itself, so nodeOs must be NodeImage, got "
                                f"{node_os!r}; use channel patch (or stable) with nodeOs {node_os}")
    return upgrades


def _parse_window(c: Checker, value: Any, path: str) -> MaintenanceWindow | None:
    return c.section(value, WINDOW, path, rules={"start": _window_start})


def _window_start(c: Checker, value: Any, path: str) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        # YAML 1.1 (PyYAML, hence `plan`) reads an unquoted 22:30 as the base-60 number 1350 (its int resolver wants a
        # first digit 1-9, so 02:00 stays a string); the Pulumi CLI's YAML 1.2 keeps "22:30" a string.
        hours, minutes = divmod(value, 60)
        if 0 <= value < 24 * 60:
            c.add(path, f"YAML 1.1 reads an unquoted {hours}:{minutes:02d} as the base-60 number {value}; quote it: "
                        f"start: \"{hours:02d}:{minutes:02d}\"")
        else:
            c.add(path, f"YAML 1.1 reads an unquoted time as a number (here {value}); quote it, e.g. start: \"22:30\"")
        return None
    return c.check(WINDOW["start"], value, path)


def _parse_api_server(c: Checker, value: Any, path: str) -> ApiServer | None:
    api_server = c.section_values(value, API_SERVER, path, rules={"authorizedIpRanges": _authorized_ip_ranges,
                                                                  "privateDnsZone": _private_dns_zone})
    if api_server is None:
        return None
    private = api_server["private"]
    if api_server["privateDnsZone"] is not None and not private:
        c.add(f"{path}.privateDnsZone", "only for a private cluster: set private: true, or remove privateDnsZone")
    if private and api_server.raw.get("authorizedIpRanges"):
        c.add(f"{path}.authorizedIpRanges", "not with private: true: AKS refuses authorized IP ranges on a private "
                                            "cluster, whose API server has no public address to restrict; remove "
                                            "one of them")
        return api_server.model(authorized_ip_ranges=())
    if "authorizedIpRanges" in api_server.failed:
        return None
    return api_server.model()


def _private_dns_zone(c: Checker, value: Any, path: str) -> str | None:
    if isinstance(value, str) and CUSTOM_PRIVATE_DNS_ZONE_RE.match(value):
        c.add(path, "a zone of your own needs a cluster with a user-assigned identity holding Private DNS Zone "
                    "Contributor on it (aks-docs private-clusters.md), and the cluster gpushare creates has a "
                    "system-assigned one; use system (AKS makes the zone) or none (your DNS resolves the API server, "
                    "e.g. a zone of yours linked to the VNet)")
        return None
    return c.string(value, path, PRIVATE_DNS_ZONE_RE, PRIVATE_DNS_ZONE_RULE)


def _authorized_ip_ranges(c: Checker, value: Any, path: str) -> tuple[str, ...] | None:
    if not isinstance(value, list):
        c.add(path, f"expected a list of CIDRs such as [\"203.0.113.0/24\"], got {kind_of(value)} {show(value)}")
        return None
    if len(value) > MAX_AUTHORIZED_IP_RANGES:
        c.add(path, f"AKS allows at most {MAX_AUTHORIZED_IP_RANGES} authorized IP ranges, got {len(value)}; "
                    f"merge adjacent ranges into wider CIDRs")
    cidrs: list[str] = []
    for i, item in enumerate(value):
        cidr = _cidr(c, item, f"{path}[{i}]")
        if cidr and cidr in cidrs:
            c.add(f"{path}[{i}]", f"{cidr} is listed twice")
        elif cidr:
            cidrs.append(cidr)
    return tuple(cidrs)


def _cidr(c: Checker, value: Any, path: str) -> str | None:
    if not isinstance(value, str) or "/" not in value:
        fix = f"; for one address write {value}/32" if isinstance(value, str) and _is_address(value) else ""
        c.add(path, f"must be a CIDR such as 203.0.113.0/24, got {show(value)}{fix}")
        return None
    try:
        interface = ipaddress.ip_interface(value)
    except ValueError:
        c.add(path, f"must be a CIDR such as 203.0.113.0/24, got {show(value)}")
        return None
    if interface.ip != interface.network.network_address:
        c.add(path, f"{value} has host bits set; write the network, {interface.network}")
        return None
    return value


def _is_address(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _parse_system_pool(c: Checker, value: Any, path: str) -> SystemPool | None:
    if isinstance(value, dict) and "spot" in value:
        # Reported as what it is rather than as an unknown key: a Spot system pool is a real AKS question.
        c.add(f"{path}.spot", f"AKS does not allow Spot for system pools (aks-docs spot-node-pool.md: \"A Spot node "
                              f"pool can't be a system node pool\"), and evicting it would take the cluster's add-ons "
                              f"down; remove it, and put Spot GPUs in a pool of {POOLS_KEY} with `spot:`")
        value = {key: item for key, item in value.items() if key != "spot"}
    system_pool = c.section(value, SYSTEM_POOL, path)
    if system_pool is None:
        return None
    vm_size, default = system_pool.vm_size, SYSTEM_POOL["vmSize"].default
    if catalog.find_vm_size(vm_size):
        c.add(f"{path}.vmSize", f"{vm_size} is a GPU size; the system pool runs cluster add-ons only, so use a "
                                f"general-purpose size such as {default} and put GPUs in {POOLS_KEY}")
    elif vm_size.lower().startswith("standard_b"):
        c.add(f"{path}.vmSize", f"{vm_size} is a B-series (burstable) size, which AKS does not support for system "
                                f"pools (aks-docs quotas-skus-regions.md); use a general-purpose size such as "
                                f"{default}")
    return system_pool
