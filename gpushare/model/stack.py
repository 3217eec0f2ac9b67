"""The validated stack: frozen dataclasses built by `gpushare.stackfile.config` and read by everything else."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from gpushare.model.catalog import MigProfile, VmSize
from gpushare.model.metrics import Metrics

SYSTEM_POOL_NAME = "system"

DEFAULT_SYSTEM_POOL_VM_SIZE = "Standard_D4ds_v5"
DEFAULT_SYSTEM_POOL_COUNT = 2
DEFAULT_CHART_VERSION = "v26.7.0"
"""The NVIDIA GPU Operator chart version gpushare's value paths are verified against."""
OPERATOR_VALIDATED_KUBERNETES = {"v26.7": (1, 36)}
"""The newest Kubernetes minor NVIDIA validated each GPU Operator release line on: 26.7.x up to 1.36 (NVIDIA
cloud-native-docs, GPU Operator 26.7 platform support and release notes; shared reference dra-fleet-versions.md
section 1)."""
DEFAULT_CHART_REPOSITORY = "https://helm.ngc.nvidia.com/nvidia"
"""NVIDIA's Helm repository; `gpushare:operator.repository` may name a mirror or an `oci://` registry instead."""
DEFAULT_POOL_COUNT = 1
DEFAULT_RENAME_BY_DEFAULT = True
"""`sharing.renameByDefault` in a cluster that does not autoscale: shares advertised as `<resource>.shared`."""
AUTOSCALED_RENAME_BY_DEFAULT = False
"""`sharing.renameByDefault` when any pool of the stack autoscales: the cluster autoscaler counts a GPU node without
`nvidia.com/gpu` unready (`gpushare.sharing.autoscaler_readiness`), so shares are advertised as `nvidia.com/gpu`."""
DEFAULT_FAIL_REQUESTS_GREATER_THAN_ONE = True

GPU_TAINT = "nvidia.com/gpu=present:NoSchedule"
"""Put on every GPU pool so only pods that ask for GPUs land there; the operator's DaemonSets tolerate it."""
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
DEVICE_PLUGIN_DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"
"""`false` on a DRA pool's nodes keeps the GPU Operator's device plugin (and its MPS control daemon) off them: their
DaemonSets select `"true"` of it (NVIDIA/gpu-operator v26.7.0 assets/state-device-plugin/0500_daemonset.yaml
L19-20). The operator only fills in a deploy label a node lacks or holds empty: "If a required state label already
exists on the node with a non-empty value, honor it" (v26.7.0 controllers/state_manager.go L469-485
`addGPUStateLabels`; v26.3.0 kept any existing value), and the driver manager that pauses operands across a reload of
the operator's driver keeps `false` as it is (NVIDIA/k8s-driver-manager cmd/driver-manager/main.go @0c04c81
`maybeSetPaused`, `maybeSetTrue`). So `false` sent in the pool's AKS nodeLabels keeps the device plugin off while
the operator's driver, toolkit, GFD and DCGM exporter still run there; the guard reads it to tell a deployed pool's
allocation."""
POOL_LABEL = "gpushare.io/pool"
"""Marks a node pool as gpushare's: the guard refuses to delete a pool carrying it that the stack no longer lists."""
SHARING_LABEL = "gpushare.io/sharing"
"""Records a pool's sharing (`sharing_label`), so the guard sees a sharing change in what Azure reports."""
TENANT_LABEL = "gpushare.io/tenant"
"""On a tenant's namespace, and the key of the taint on a pool dedicated to one tenant."""
NO_SHARING = "none"
CUDA_CHECK_IMAGE = "nvcr.io/nvidia/cuda:12.1.0-base-ubi8"
"""The CUDA base image NVIDIA's GPU Operator docs run `nvidia-smi` in (`openshift/mig-ocp.rst`); the driver's
`nvidia-smi` is mounted into it by the container toolkit. Used by `verify --smoke` and the tenants' pod snippet."""
SPOT_PRIORITY_LABEL = "kubernetes.azure.com/scalesetpriority"
"""The key of the taint (`spot:NoSchedule`) AKS puts on every node of a Spot pool, and of the label (`spot`) AKS
lists among a Spot pool's `nodeLabels` (aks-docs spot-node-pool.md @fb060ab L41, L124-128): gpushare sends that label
with the pool's labels (`gpushare.sharing.node_labels`). As a node label it is deprecated: AKS's reserved labels mark
it "(deprecated) ... Prefer `kubernetes.azure.com/priority` instead" (aks-docs use-labels.md @fb060ab L191-192,
since 73324d145, 2026-04-30), so gpushare selects Spot nodes by `SPOT_NODE_LABEL`."""
SPOT_NODE_LABEL = "kubernetes.azure.com/priority"
"""The label AKS sets on every node to its VM priority, `spot` or `regular` (aks-docs use-labels.md @fb060ab L192),
the replacement AKS names for the deprecated `kubernetes.azure.com/scalesetpriority`: what Kueue's flavor of a Spot
pool selects (`gpushare.sharing.queue_flavor`). AKS sets it itself; gpushare never sends it."""
SPOT_TAINT = f"{SPOT_PRIORITY_LABEL}=spot:NoSchedule"
"""The taint AKS itself puts on every node of a Spot pool, and into the pool's `nodeTaints` (aks-docs
spot-node-pool.md): gpushare sends it with a Spot pool's taints, so a `pulumi refresh` that reads it back shows no
standing diff, and everything that must run on a GPU node tolerates it. The taint keeps the old key: AKS deprecated
`kubernetes.azure.com/scalesetpriority` as a label only, and its Spot page still names this taint."""
AUTOSCALER_RESOURCE_TAG_PREFIX = "k8s.io_cluster-autoscaler_node-template_resources_"
"""Scale-set tags with this prefix are gpushare's: they tell the cluster autoscaler what a pool's nodes advertise
(`gpushare.sharing.autoscaling`). A user tag of that prefix would overwrite them, so it is refused."""
AUTOSCALER_LABEL_TAG_PREFIX = "k8s.io_cluster-autoscaler_node-template_label_"
AUTOSCALER_TAINT_TAG_PREFIX = "k8s.io_cluster-autoscaler_node-template_taint_"
"""Scale-set tags naming the labels and taints of an autoscaled pool's nodes for the autoscaler's scale-from-zero
template (kubernetes/autoscaler cluster-autoscaler-1.35.2 `cloudprovider/azure/azure_util.go` `nodeLabelTagName`,
`nodeTaintTagName`); gpushare's too, so refused as user tags like the resource tags."""
AUTOSCALER_TAG_PREFIXES = (AUTOSCALER_RESOURCE_TAG_PREFIX, AUTOSCALER_LABEL_TAG_PREFIX, AUTOSCALER_TAINT_TAG_PREFIX)
MIG_STRATEGY_LABEL = "gpushare.io/mig-strategy"
"""On MIG pools: the `operator.migStrategy` (`single`/`mixed`) they were deployed with, so the guard sees a strategy
change (it renames the resource the pool advertises) in what Azure reports."""


class DriverOwner(str, Enum):
    """Who installs the NVIDIA driver on GPU nodes."""

    AKS = "aks"
    OPERATOR = "operator"


class MigStrategy(str, Enum):
    """How the device plugin advertises MIG devices, cluster-wide (the chart's `mig.strategy`)."""

    SINGLE = "single"
    MIXED = "mixed"


class SharingStrategy(str, Enum):
    TIME_SLICING = "time-slicing"
    MPS = "mps"


class Allocation(str, Enum):
    """How a GPU pool's devices reach pods: the operator's device plugin (extended resources such as
    `nvidia.com/gpu`), or Dynamic Resource Allocation through NVIDIA's DRA driver (ResourceClaims;
    `gpushare.sharing.dra`)."""

    DEVICE_PLUGIN = "devicePlugin"
    DRA = "dra"


class OsSku(str, Enum):
    UBUNTU = "Ubuntu"
    AZURE_LINUX = "AzureLinux"


class GuardMode(str, Enum):
    """What the guard does when Azure cannot be read: fail (`strict`) or continue on protection alone (`warn`)."""

    STRICT = "strict"
    WARN = "warn"


class Tier(str, Enum):
    """The AKS control-plane tier (`sku.tier`): Standard carries the uptime SLA; Free is for development; Premium is
    Standard plus long-term support (aks-docs long-term-support.md: LTS "is available on the Premium tier")."""

    STANDARD = "Standard"
    FREE = "Free"
    PREMIUM = "Premium"


class SupportPlan(str, Enum):
    """`supportPlan`: the Kubernetes support plan; `AKSLongTermSupport` needs the Premium tier."""

    KUBERNETES_OFFICIAL = "KubernetesOfficial"
    LONG_TERM_SUPPORT = "AKSLongTermSupport"


class UpgradeChannel(str, Enum):
    """`autoUpgradeProfile.upgradeChannel`: how AKS upgrades the Kubernetes version on its own."""

    PATCH = "patch"
    STABLE = "stable"
    RAPID = "rapid"
    NODE_IMAGE = "node-image"
    NONE = "none"


class NodeOsChannel(str, Enum):
    """`autoUpgradeProfile.nodeOSUpgradeChannel`: how AKS keeps the nodes' OS image patched."""

    NODE_IMAGE = "NodeImage"
    SECURITY_PATCH = "SecurityPatch"
    UNMANAGED = "Unmanaged"
    NONE = "None"


class WeekDay(str, Enum):
    SUNDAY = "Sunday"
    MONDAY = "Monday"
    TUESDAY = "Tuesday"
    WEDNESDAY = "Wednesday"
    THURSDAY = "Thursday"
    FRIDAY = "Friday"
    SATURDAY = "Saturday"


@dataclass(frozen=True)
class MaintenanceWindow:
    """When AKS may upgrade (weekly, UTC); GPU pools are drained and their nodes replaced inside it."""

    day: WeekDay = WeekDay.SUNDAY
    start: str = "02:00"
    """"HH:MM", UTC."""
    hours: int = 4
    """AKS allows 4 to 24."""


@dataclass(frozen=True)
class ClusterUpgrades:
    channel: UpgradeChannel = UpgradeChannel.PATCH
    node_os: NodeOsChannel = NodeOsChannel.NODE_IMAGE
    window: MaintenanceWindow = MaintenanceWindow()


class PrincipalKind(str, Enum):
    """A role assignment's `principalType`: ARM refuses one that does not match the principal
    (`UnmatchedPrincipalType`)."""

    SERVICE_PRINCIPAL = "ServicePrincipal"
    USER = "User"
    GROUP = "Group"


@dataclass(frozen=True)
class Deployer:
    """An Entra principal that deploys the stack and so manages its Kubernetes objects."""

    object_id: str
    """Lower-case object ID (a GUID): of the user, the service principal (not its app ID) or the group."""
    kind: PrincipalKind


class KubernetesCredential(str, Enum):
    """How the program's Kubernetes provider authenticates (`gpushare.kubernetes.kubeconfig`)."""

    TOKEN = "token"
    """A token fetched once when the program starts (no binary needed); lives 60-90 minutes."""
    KUBELOGIN_AZURECLI = "kubelogin-azurecli"
    """kubelogin asks the az CLI for a new token whenever the last one expires."""
    KUBELOGIN_WORKLOADIDENTITY = "kubelogin-workloadidentity"
    """kubelogin exchanges a federated token whenever the last Azure token expires: on GitHub Actions the job's own
    OIDC token (`id-token: write`), elsewhere the file in AZURE_FEDERATED_TOKEN_FILE."""


@dataclass(frozen=True)
class Access:
    """Who gets "Azure Kubernetes Service RBAC Cluster Admin" on the cluster (Entra ID with Azure RBAC), and how the
    program itself authenticates to the Kubernetes API."""

    admin_groups: tuple[str, ...] = ()
    """Entra group object IDs, assigned on the cluster."""
    deployers: tuple[Deployer, ...] = ()
    """The identities that run the program, assigned at the resource group (on the cluster with `existing: true`)
    so the program can reach the Kubernetes API. Named in the stack, never read from whoever runs it: every run
    plans the same assignments."""
    kubernetes_credential: KubernetesCredential = KubernetesCredential.TOKEN


@dataclass(frozen=True)
class ApiServer:
    authorized_ip_ranges: tuple[str, ...] = ()
    """CIDRs allowed to reach the API server; empty means any address (authentication still applies)."""
    private: bool = False
    """A private cluster (`apiServerAccessProfile.enablePrivateCluster`): the API server has a private address in
    the cluster's VNet only, so previews, deploys and `verify` need a runner inside that network."""
    private_dns_zone: str | None = None
    """`apiServerAccessProfile.privateDNSZone`: `system`, `none` or a private DNS zone's ARM ID; None: AKS's
    default (`system`)."""


class OutboundType(str, Enum):
    """`networkProfile.outboundType`: how nodes reach the internet. AKS fixes it at creation (the SDK's
    `OutboundType`: "This can only be set at cluster creation time and cannot be changed later")."""

    LOAD_BALANCER = "loadBalancer"
    USER_DEFINED_ROUTING = "userDefinedRouting"
    MANAGED_NAT_GATEWAY = "managedNATGateway"


@dataclass(frozen=True)
class Network:
    """The cluster's network when gpushare creates the cluster: an existing subnet (else AKS makes a VNet) and the
    service range. Azure CNI Overlay keeps the pod range private whatever the subnet."""

    subnet_id: str | None = None
    """An existing subnet's ARM ID for the system pool and, by default, every GPU pool."""
    service_cidr: str | None = None
    """None: gpushare's default (`cluster_baseline.SERVICE_CIDR`)."""
    dns_service_ip: str | None = None
    """None: gpushare's default (`cluster_baseline.DNS_SERVICE_IP`)."""
    outbound_type: OutboundType = OutboundType.LOAD_BALANCER


class PreflightMode(str, Enum):
    """What a failed preflight check does under `pulumi preview`/`up`: stop the run, warn, or skip the checks."""

    STRICT = "strict"
    WARN = "warn"
    OFF = "off"


class AzureEnvironment(str, Enum):
    """The Azure cloud, as azure-native's `environment` setting names it."""

    PUBLIC = "public"
    USGOVERNMENT = "usgovernment"
    CHINA = "china"


@dataclass(frozen=True)
class AzureSettings:
    """Where Azure lives for the stack's reads (guard, preflight): the provider's own settings in the stack file."""

    subscription_id: str | None = None
    """`azure-native:subscriptionId`; the CLI falls back to AZURE_SUBSCRIPTION_ID, the program asks the provider."""
    environment: AzureEnvironment = AzureEnvironment.PUBLIC
    """`azure-native:environment`."""
    subscription_secret: bool = False
    """`azure-native:subscriptionId` is a Pulumi secret (`{secure: ...}`): the program gets it decrypted from the
    provider; the CLI, which has no Pulumi CLI to decrypt it, needs AZURE_SUBSCRIPTION_ID."""


@dataclass(frozen=True)
class SystemPool:
    vm_size: str = DEFAULT_SYSTEM_POOL_VM_SIZE
    count: int = DEFAULT_SYSTEM_POOL_COUNT


@dataclass(frozen=True)
class Cluster:
    name: str
    resource_group: str
    kubernetes_version: str | None
    system_pool: SystemPool = SystemPool()
    access: Access = Access()
    tier: Tier = Tier.STANDARD
    support_plan: SupportPlan = SupportPlan.KUBERNETES_OFFICIAL
    upgrades: ClusterUpgrades = ClusterUpgrades()
    api_server: ApiServer = ApiServer()
    existing: bool = False
    """An AKS cluster gpushare did not create (`existing: true`): it adds its GPU pools, the operator and the tenants
    to it, reads its settings, and never writes or deletes the cluster or its resource group."""
    resource_group_exists: bool = False
    """`resourceGroupExists: true`: the resource group was made beforehand (say by the team that grants the deploy
    identity its rights there); gpushare reads it instead of creating it, and never deletes it."""
    network: Network = Network()

    @property
    def dns_prefix(self) -> str:
        """The API server's DNS prefix: AKS allows 1-54 letters, digits and '-', starting and ending with a letter
        or digit, where a cluster name may also hold '_' and run to 63. Derived, so it never changes (changing it
        replaces the cluster)."""
        return re.sub(r"[^A-Za-z0-9-]", "-", self.name)[:54].strip("-")


@dataclass(frozen=True)
class Operator:
    chart_version: str = DEFAULT_CHART_VERSION
    driver: DriverOwner = DriverOwner.AKS
    mig_strategy: MigStrategy = MigStrategy.SINGLE
    repository: str = DEFAULT_CHART_REPOSITORY
    """A Helm repository URL, or an `oci://` registry path holding the `gpu-operator` chart."""
    values: dict = field(default_factory=dict, hash=False)
    """`gpushare:operator.values`: the user's chart values, deep-merged over gpushare's (lists replaced)."""


@dataclass(frozen=True)
class Sharing:
    strategy: SharingStrategy
    replicas: int
    rename_by_default: bool = DEFAULT_RENAME_BY_DEFAULT
    """As the stack file wrote it, else the default for the stack (`gpushare.stackfile.pool_config.parse_pools`):
    every consumer reads this one value."""
    fail_requests_greater_than_one: bool = DEFAULT_FAIL_REQUESTS_GREATER_THAN_ONE
    rename_written: bool = field(default=False, compare=False)
    """The stack file set `renameByDefault` itself."""


def sharing_label(sharing: Sharing | None) -> str:
    """`SHARING_LABEL`'s value: `none`, or strategy and replicas per GPU (`time-slicing-4`, `mps-2`)."""
    return f"{sharing.strategy.value}-{sharing.replicas}" if sharing else NO_SHARING


@dataclass(frozen=True)
class Autoscale:
    min: int
    max: int


DEFAULT_MAX_SURGE = "0"
DEFAULT_MAX_UNAVAILABLE = "1"


@dataclass(frozen=True)
class Upgrade:
    """A pool's AKS `upgradeSettings`, as AKS takes them: a node count (`"1"`) or a percentage of the pool (`"33%"`).
    The default replaces nodes one at a time in place: AKS's own default surges an extra VM per pool, which for a
    GPU pool needs spare GPU quota."""

    max_surge: str = DEFAULT_MAX_SURGE
    max_unavailable: str = DEFAULT_MAX_UNAVAILABLE


class SpotEviction(str, Enum):
    """`scaleSetEvictionPolicy`: what Azure does with an evicted Spot node (AKS's default is Delete)."""

    DELETE = "Delete"
    DEALLOCATE = "Deallocate"


SPOT_UPGRADE = ("AKS takes no maxSurge or maxUnavailable on a Spot pool (it refuses them: \"Spot pools can't set "
                "max surge\") and upgrades one without surge nodes, cordoning each node with an eviction notice, "
                "no drain (aks-docs spot-node-pool.md, \"Upgrade a Spot node pool\")")
"""Why a Spot pool has no `upgrade:` and sends no upgradeSettings."""

SPOT_MARKET_PRICE = -1.0
"""`spotMaxPrice: -1`: pay up to the on-demand price, never evicted for price."""


@dataclass(frozen=True)
class Spot:
    """A Spot pool (`scaleSetPriority: Spot`): the cheapest GPUs, evicted whenever Azure needs the capacity."""

    max_price: float = SPOT_MARKET_PRICE
    """USD per hour per node, or -1 for up to the on-demand price."""
    eviction: SpotEviction = SpotEviction.DELETE


class OsDiskType(str, Enum):
    MANAGED = "Managed"
    EPHEMERAL = "Ephemeral"


@dataclass(frozen=True)
class OsDisk:
    """The nodes' OS disk (`osDiskSizeGB`, `osDiskType`); None fields are AKS's defaults. Fixed at creation."""

    size_gb: int | None = None
    type: OsDiskType | None = None


@dataclass(frozen=True)
class GpuPool:
    """One GPU node pool as the stack wants it. `count` is set for fixed pools, `autoscale` for autoscaled ones."""

    name: str
    vm_size: VmSize
    mig: MigProfile | None = None
    sharing: Sharing | None = None
    count: int | None = DEFAULT_POOL_COUNT
    autoscale: Autoscale | None = None
    zones: tuple[str, ...] = ()
    os_sku: OsSku = OsSku.UBUNTU
    recreate: bool = False
    """Accept a delete-and-recreate of this pool for one run (lifts its protection); see the guard."""
    upgrade: Upgrade = Upgrade()
    """The stack's `upgrade:` (a Spot pool has none): read `upgrade_settings`, what AKS gets."""
    labels: tuple[tuple[str, str], ...] = ()
    """The user's own node labels, merged with gpushare's (`gpushare.sharing.node_labels`)."""
    user_taints: tuple[str, ...] = ()
    """The user's own node taints (`key=value:Effect`), after the GPU taint."""
    os_disk: OsDisk = OsDisk()
    max_pods: int | None = None
    """None: AKS's default for the cluster's network plugin."""
    tags: tuple[tuple[str, str], ...] = ()
    """The user's own Azure tags on the agent pool (AKS copies them onto its scale set)."""
    spot: Spot | None = None
    subnet_id: str | None = None
    """The subnet of this pool's nodes (`vnetSubnetID`); None: the cluster's (`network.subnetId`, or on an existing
    cluster the subnet AKS gives a pool that names none)."""
    allocation: Allocation = Allocation.DEVICE_PLUGIN

    @property
    def min_nodes(self) -> int:
        return self.autoscale.min if self.autoscale else self.count or 0

    @property
    def max_nodes(self) -> int:
        return self.autoscale.max if self.autoscale else self.count or 0

    @property
    def taints(self) -> tuple[str, ...]:
        """The taints gpushare sends AKS: the GPU taint, then the user's own."""
        return (GPU_TAINT, *self.user_taints)

    @property
    def upgrade_settings(self) -> Upgrade | None:
        """The upgradeSettings gpushare sends AKS: none on a Spot pool (SPOT_UPGRADE)."""
        return None if self.spot else self.upgrade


class ReclaimWithinCohort(str, Enum):
    """Kueue's `preemption.reclaimWithinCohort`: whose workloads running on this queue's lent quota are preempted when
    it needs that quota back."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    ANY = "Any"


class WithinClusterQueue(str, Enum):
    """Kueue's `preemption.withinClusterQueue`: whether a workload preempts the queue's own lower-priority ones."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"


@dataclass(frozen=True)
class TenantQueue:
    """A tenant's Kueue queue (`queue:`), read when `gpushare:queues.enabled`; see `gpushare.kubernetes.queues`."""

    nominal: tuple[tuple[str, int], ...] | None = None
    """(advertised resource, units guaranteed to the tenant); None: its quota (or its share of its pools)."""
    borrowing_limit: tuple[tuple[str, int], ...] = ()
    """(resource, most units it may borrow on each pool it shares); a resource absent: no limit."""
    lending_limit: tuple[tuple[str, int], ...] = ()
    """(resource, most of its nominal units on each pool it shares others may borrow); absent: all of them."""
    priority: int = 0
    """The value of the tenant's WorkloadPriorityClass."""
    reclaim_within_cohort: ReclaimWithinCohort = ReclaimWithinCohort.ANY
    within_cluster_queue: WithinClusterQueue = WithinClusterQueue.LOWER_PRIORITY


DEFAULT_KUEUE_VERSION = "v0.19.2"
"""The Kueue release gpushare's queue objects (API `kueue.x-k8s.io/v1beta2`) are checked against."""


@dataclass(frozen=True)
class Queues:
    """`gpushare:queues`: Kueue installed and the tenants' queues compiled from the stack."""

    enabled: bool = False
    kueue_version: str = DEFAULT_KUEUE_VERSION
    fair_sharing: bool = False
    """Kueue's fair sharing (its Configuration's `fairSharing.enable`): borrowing and preemption by usage share."""
    borrowing_by_design: bool = False
    """The tenants borrow on purpose: `plan` states what may be borrowed per pool without warning about it."""


@dataclass(frozen=True)
class Tenant:
    """A team: a namespace of the same name whose GPU pods may use only `pools` (see `gpushare.kubernetes.tenants`)."""

    name: str
    pools: tuple[str, ...]
    quota: tuple[tuple[str, int], ...] = ()
    """(advertised resource, most units requested at once in the namespace), in stack order."""
    pool_quota: tuple[tuple[str, int], ...] = ()
    """(pool, units of its advertised resource guaranteed to the tenant there), `quota.pools` in stack order: its
    queue's nominalQuota on that pool's flavor, and its GPU pods must go through its LocalQueues."""
    groups: tuple[str, ...] = ()
    """Entra ID group object IDs bound to the `edit` ClusterRole in the namespace."""
    guaranteed: bool = True
    """GPU pods must be Guaranteed QoS (CPU and memory requests equal to limits in every container)."""
    queue: TenantQueue = TenantQueue()


@dataclass(frozen=True)
class PlatformNamespace:
    """A namespace of cluster add-ons (`gpushare:platform.namespaces`: CNI, node agents, monitoring) whose workloads
    may tolerate every taint and set device variables on `pools`, past the pool binding (see
    `gpushare.kubernetes.admission.policies.shared_pool_policy`). Writing to it is trusted like writing to
    kube-system."""

    name: str
    pools: tuple[str, ...] | None = None
    """The GPU pools its workloads may reach; None: every pool."""


def dedicated_tenant(stack: StackConfig, pool_name: str) -> str | None:
    """The tenant a pool is dedicated to: the only tenant listing it, or None (no tenant, or several)."""
    owners = [tenant.name for tenant in stack.tenants if pool_name in tenant.pools]
    return owners[0] if len(owners) == 1 else None


def tenant_taint(tenant_name: str) -> str:
    return f"{TENANT_LABEL}={tenant_name}:NoSchedule"


def pool_node_taints(stack: StackConfig, pool: GpuPool) -> tuple[str, ...]:
    """The pool's AKS node taints: the GPU taint and the user's, plus `gpushare.io/tenant=<name>:NoSchedule` on a
    pool dedicated to one tenant, plus on a Spot pool the Spot taint AKS adds itself (`SPOT_TAINT`, last). AKS
    changes `nodeTaints` of an existing pool in place (`az aks nodepool update --node-taints`, aks-docs
    use-node-taints.md), and NoSchedule evicts no running pod."""
    owner = dedicated_tenant(stack, pool.name)
    return (*pool.taints, *((tenant_taint(owner),) if owner else ()), *((SPOT_TAINT,) if pool.spot else ()))


def pool_subnet(stack: StackConfig, pool: GpuPool) -> str | None:
    """The subnet a GPU pool's nodes join: its own `subnetId`, else the cluster's `network.subnetId`."""
    return pool.subnet_id or stack.cluster.network.subnet_id


def own_subnets(stack: StackConfig) -> list[str]:
    """Each distinct subnet of your own the stack names (`network.subnetId`, pools' `subnetId`), in order: those the
    cluster's identity is granted Network Contributor on."""
    named = [stack.cluster.network.subnet_id, *(pool_subnet(stack, pool) for pool in stack.pools)]
    return list(dict.fromkeys(subnet for subnet in named if subnet))


@dataclass(frozen=True)
class DispatchedTenant:
    """A fleet tenant that Kueue MultiKueue dispatches from this stack's cluster (the fleet's `dispatch.manager`) to
    the `workers`, where it has pools; it has none here."""

    name: str
    """Its name, and its namespace on this cluster (the fleet stack's, `FleetDispatch`)."""
    workers: tuple[str, ...]
    """The member stacks its Jobs may go to: the fleet stack binds one policy per worker to its namespace here
    (`gpushare.kubernetes.multikueue.manager_policy_name`)."""


@dataclass(frozen=True)
class FleetManagerRole:
    """This stack's cluster is its fleet's MultiKueue manager (`gpushare:fleet`, the fleet file's
    `dispatch.manager`), and these tenants are dispatched from it (`gpushare.sharing.dispatch_choice`)."""

    fleet: str
    """The fleet file, as named in messages."""
    tenants: tuple[DispatchedTenant, ...]
    """In the fleet's order; their namespaces are judged by the fleet's dispatch policies, so the stack's shared
    policy leaves them out."""


@dataclass(frozen=True)
class StackConfig:
    """A whole validated stack file."""

    source: str
    """The stack file, as named in messages."""
    stack: str
    location: str
    cluster: Cluster
    operator: Operator
    pools: tuple[GpuPool, ...]
    guard: GuardMode = GuardMode.STRICT
    preflight: PreflightMode = PreflightMode.STRICT
    azure: AzureSettings = AzureSettings()
    tenants: tuple[Tenant, ...] = ()
    platform: tuple[PlatformNamespace, ...] = ()
    """`gpushare:platform.namespaces`, in stack order."""
    queues: Queues = Queues()
    metrics: Metrics | None = None
    """`gpushare:metrics` (`gpushare.stackfile.metrics_config`); None: no showback rules."""
    fleet_manager: FleetManagerRole | None = None
    """Set when the stack's fleet (`gpushare:fleet`) dispatches tenants from this cluster; None otherwise (a stack
    in no fleet, or a member that dispatches nothing)."""
