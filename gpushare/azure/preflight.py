"""Preflight: can the stack's GPUs be had in its region, before `pulumi up` creates anything?

Checks, each a row (check, subject, verdict, detail, fix), from one `RegionOffers` read (three ARM calls) and the
deployed pools the guard already read (one call), so the checks of sizes, zones, quota and versions make four calls
whatever the pool count (subnets and role assignments one more each):

- `vm-size`: each pool's size and the system pool's is offered in the region and not restricted for the
  subscription (`restrictions[type=Location]`, with its reason code);
- `zones`: each pool's zones are among the zones the size is offered in there, less `restrictions[type=Zone]`;
- `quota`: per quota family, and for the regional total (`cores`), the vCPUs the stack can use at most (fixed count
  or autoscale max, times the size's vCPUs, the system pool included) fit in `limit - currentValue`. When the
  cluster exists, Azure's current usage already holds its pools, so only each pool's growth over its current node
  count is needed (a pool whose VM size changes is a new pool: all of it). An upgrade's surge nodes count too:
  each GPU pool's `upgrade.maxSurge` (gpushare's default 0) at its largest size, AKS's default 10% for the system
  pool.
- `gpus`: a pool whose size the stack describes (`gpu:`) has the GPU count Azure reports (`GPUs`); any pool whose
  count differs from what Azure reports fails;
- `os-disk`: an ephemeral OS disk fits the size's cache (`CachedDiskBytes`) or temp disk (`MaxResourceVolumeMB`);
  a Spot pool evicted with Deallocate gets no ephemeral OS disk from AKS's default (`aks_os_disk_type`);
- Spot pools count in the regional low-priority bucket (`lowPriorityCores`), not in their family or `cores`;
- `kubernetes-version`: the stack's `kubernetesVersion` is offered in the region and not preview-only.
- on an existing cluster (`existing: true`), from the cluster guard's one cluster read: `cluster` fails alone when
  the cluster is not there (nothing else is worth checking); otherwise `baseline` rows warn for each setting below
  gpushare's hardened baseline, with the `az aks update` that fixes it (`cluster_baseline.baseline_findings`), and
  for each upgrade channel without its maintenance window (one more read, the maintenance configurations), with the
  `az aks maintenanceconfiguration add` that gives it gpushare's. The cluster's own system pool and version are its
  owners': not counted, not checked.
- `subnet` (a subnet of your own, `network.subnetId` or a pool's `subnetId`; one read per subnet,
  `gpushare.azure.subnets`): it exists, and has a free address for every address the stack's pools in it can take,
  by the existing cluster's network plugin (`gpushare.azure.pod_addressing`), its pod subnet included;
- `identity`: an existing cluster that authenticates with a service principal, when a pool names a subnet;
- `gpu-software`: an existing cluster's own AKS-managed GPU pools the GPU Operator would reach
  (`owner_gpu_pool_checks`); the CLI adds a Kubernetes read (`gpushare.kubernetes.gpu_software`).
- `role-assignment` (one read per assignment the program creates, `gpushare.azure.role_assignments`): the principal
  does not already hold the role at that very scope under another name, which makes `pulumi up` fail with
  `RoleAssignmentExists` (a deployer granted Cluster Admin by hand, the cluster's identity Network Contributor on
  its subnet when the VNet was built).

VM sizes' vCPUs and families come from the SKU list; gpushare's catalog is the fallback for GPU sizes.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum

from gpushare.azure.arm import AzureReads
from gpushare.azure.cluster_baseline import POD_CIDR, SERVICE_CIDR, baseline_findings
from gpushare.azure.cluster_guard import missing_cluster_message, service_principal_problem
from gpushare.azure.deployed import DeployedPool
from gpushare.azure.deployed_cluster import DeployedCluster
from gpushare.azure.guard import GuardReport, raise_or_warn_on_read_error
from gpushare.azure.pod_addressing import GPUSHARE_CLUSTER, Addressing, Plugin, cluster_addressing
from gpushare.azure.region_offers import LOW_PRIORITY_CORES, REGIONAL_CORES, RegionOffers, VmSizeOffer, read_region
from gpushare.azure.role_assignments import FoundAssignment, collisions, planned_assignments, read_assignments
from gpushare.azure.subnets import AZURE_RESERVED_PER_SUBNET, Subnet, read_subnets
from gpushare.errors import AzureReadError, GpushareError
from gpushare.model.catalog import current_gpu_sizes, find_vm_size
from gpushare.model.environment_variables import DEPLOYED_FILE_ENV, OFFLINE_ENV
from gpushare.model.stack import (
    POOL_LABEL,
    SYSTEM_POOL_NAME,
    GpuPool,
    OsDiskType,
    PreflightMode,
    SpotEviction,
    StackConfig,
    own_subnets,
    pool_subnet,
)
from gpushare.sharing.node_selection import REPELLING_EFFECTS, untolerated
from gpushare.sharing.operator_values import chart_values
from gpushare.sharing.upgrades import nodes_at_once
from gpushare.stackfile.kubernetes_version import TENANTS_MIN_KUBERNETES_VERSION, kubernetes_version_problem
from gpushare.stackfile.network_config import vnet_id, vnet_name, vnet_of

AKS_DEFAULT_MAX_SURGE = "10%"
"""The system pool is an inline profile without `upgradeSettings`, so AKS's default applies: "If not specified,
the default is 10%" (AKS API `maxSurge`, as Az.Aks documents it), fractions rounded up: one extra node for 1-10."""
PORTAL_QUOTAS = "in the Azure portal: Quotas > Compute, filtered to the region, 'New quota request'"
OFFICIAL_PLAN = "KubernetesOfficial"


class Verdict(str, Enum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"


@dataclass(frozen=True)
class Check:
    check: str
    """`vm-size`, `zones`, `gpus`, `os-disk`, `quota` or `kubernetes-version`."""
    subject: str
    """What was checked: `pool t4ts`, `system pool`, `standardNCASv3_T4Family`, `cores`, `1.33`."""
    verdict: Verdict
    detail: str
    fix: str = ""

    def to_json(self) -> dict:
        return {"check": self.check, "subject": self.subject, "verdict": self.verdict.value, "detail": self.detail,
                "fix": self.fix}


@dataclass(frozen=True)
class PreflightReport:
    stack: str
    source: str
    region: str
    subscription_id: str
    cluster_exists: bool | None
    """None when the cluster could not be read (then every pool counts in full)."""
    checks: tuple[Check, ...] = ()
    warnings: tuple[str, ...] = ()
    """Azure being unreadable under `gpushare:guard: warn`."""

    @property
    def failures(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.verdict is Verdict.FAIL)

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_json(self) -> dict:
        return {
            "stack": self.stack,
            "stackFile": self.source,
            "region": self.region,
            "subscriptionId": self.subscription_id,
            "clusterExists": self.cluster_exists,
            "passed": self.passed,
            "checks": [c.to_json() for c in self.checks],
            "warnings": list(self.warnings),
        }


class PreflightFailedError(GpushareError):
    """A preflight check failed: the stack would fail at `pulumi up`."""

    exit_code = 1


@dataclass(frozen=True)
class _Node:
    """One node pool as preflight counts it."""

    label: str
    """`pool t4ts` or `system pool`."""
    name: str
    vm_size: str
    nodes: int
    """The most nodes the pool can have: count, or autoscale max."""
    surge: int
    """Extra nodes an upgrade adds for a while (`upgradeSettings.maxSurge` at `nodes`): they need quota too."""
    zones: tuple[str, ...] = ()
    spot: bool = False
    """Counted in the regional Spot bucket (`lowPriorityCores`) instead of its family and `cores`."""
    subnet: str | None = None
    """The subnet of your own its nodes join; None: a VNet AKS manages (or an existing cluster's own subnet)."""
    max_pods: int | None = None
    """The pool's `maxPods`; None: AKS's default for the cluster's network plugin (`pod_addressing`)."""

    @property
    def peak(self) -> int:
        return self.nodes + self.surge

    @property
    def shown(self) -> str:
        return f"{self.nodes} + {self.surge} surge" if self.surge else str(self.nodes)


def evaluate(stack: StackConfig, offers: RegionOffers, deployed: Iterable[DeployedPool] | None,
             subscription_id: str, cluster: DeployedCluster | None = None,
             subnets: Mapping[str, Subnet | None] | None = None, cluster_found: bool | None = None,
             assignments: Mapping[tuple[str, str], tuple[FoundAssignment, ...]] | None = None) -> PreflightReport:
    """Every check's row. `deployed` is None when the cluster does not exist yet; `cluster` is the managed cluster
    as read (for an existing cluster's baseline, and its identity), `cluster_found` False when Azure said it is not
    there (None: not asked); `subnets` each subnet of the stack as read (None: not there); `assignments` the role
    assignments `role_assignments.read_assignments` found (None: not read, no rows)."""
    existing = stack.cluster.existing
    if existing and cluster_found is False:
        return PreflightReport(stack.stack, stack.source, stack.location, subscription_id, False, (
            Check("cluster", f"{stack.cluster.name} (resource group {stack.cluster.resource_group})", Verdict.FAIL,
                  missing_cluster_message(stack, subscription_id),
                  "fix gpushare:cluster.name / resourceGroup, or remove existing: true"),))
    system = stack.cluster.system_pool
    pools = [] if existing else [_Node("system pool", SYSTEM_POOL_NAME, system.vm_size, system.count,
                                       nodes_at_once(AKS_DEFAULT_MAX_SURGE, system.count))]
    # On an existing cluster a pool without subnetId joins the system pool's subnet (as the program sends it).
    default_subnet = cluster.system_subnet_id if existing and cluster else None
    pools += [_Node(f"pool {p.name}", p.name, p.vm_size.name, p.max_nodes,
                    nodes_at_once(p.upgrade_settings.max_surge, p.max_nodes) if p.upgrade_settings else 0, p.zones,
                    p.spot is not None,
                    pool_subnet(stack, p) or default_subnet, p.max_pods)
              for p in stack.pools]
    if not existing and stack.cluster.network.subnet_id:
        pools[0] = dataclasses.replace(pools[0], subnet=stack.cluster.network.subnet_id)
    live = {p.name: p for p in deployed} if deployed is not None else None
    checks = [_size_check(pool, offers) for pool in pools]
    checks += [c for pool in pools if pool.zones for c in _zone_check(pool, offers)]
    checks += [c for pool in stack.pools if (c := _gpu_check(pool, offers))]
    checks += [c for pool in stack.pools if (c := _os_disk_check(pool, offers))]
    checks += [c for pool in stack.pools if (c := spot_eviction_check(pool, offers))]
    checks += _quota_checks(pools, offers, live, subscription_id)
    if existing:
        checks += _baseline_checks(stack, cluster)
        checks += _existing_vnet_checks(stack, cluster)
        checks += _operator_node_checks(stack, live)
        checks += owner_gpu_pool_checks(stack, live, offers)
        checks += _existing_version_checks(stack, cluster)
        if cluster is not None and (problem := service_principal_problem(stack, cluster)):
            checks.append(Check("identity", f"cluster {stack.cluster.name}", Verdict.FAIL, *problem))
    else:
        checks.append(_version_check(stack, offers, live))
    ranges = {} if existing else {
        "serviceCidr": stack.cluster.network.service_cidr or SERVICE_CIDR, "podCidr (Azure CNI Overlay)": POD_CIDR}
    addressing = cluster_addressing(cluster) if existing else GPUSHARE_CLUSTER
    checks += subnet_checks(pools + _own_system_surge(cluster, live, addressing, pools), subnets or {}, live, ranges,
                            addressing)
    if assignments is not None:
        checks += role_assignment_checks(stack, subscription_id, cluster, assignments)
    return PreflightReport(stack.stack, stack.source, stack.location, subscription_id, live is not None,
                           tuple(checks))


def role_assignment_checks(stack: StackConfig, subscription_id: str, cluster: DeployedCluster | None,
                           assignments: Mapping[tuple[str, str], tuple[FoundAssignment, ...]]) -> list[Check]:
    """Per assignment the program creates: fails when Azure has the same principal, role and scope under another
    name (ARM refuses a second: `RoleAssignmentExists`)."""
    checks = []
    for planned in planned_assignments(stack, subscription_id, cluster):
        subject = f"{planned.subject} on {'/'.join(planned.scope.split('/')[-2:])}"
        found, ours = collisions(planned, assignments)
        if found is None:
            checks.append(Check("role-assignment", subject, Verdict.PASS,
                                f"{planned.role_name} on {planned.scope}: none yet, `pulumi up` creates it"))
        elif ours:
            checks.append(Check("role-assignment", subject, Verdict.PASS,
                                f"{planned.role_name} on {planned.scope} exists under gpushare's name {found.name} "
                                "(from an earlier `up`; a second stack listing the same principal on this scope "
                                "could not create it again: list it in one stack)"))
        else:
            checks.append(Check(
                "role-assignment", subject, Verdict.FAIL,
                f"{planned.principal_id} already holds {planned.role_name} on {planned.scope} through role assignment "
                f"{found.name}, made outside gpushare: creating gpushare's ({planned.name}) fails with "
                "RoleAssignmentExists (Azure keeps one per principal, role and scope)",
                planned.fix.replace("{id}", found.id)))
    return checks


def _existing_version_checks(stack: StackConfig, cluster: DeployedCluster | None) -> list[Check]:
    """An existing cluster's Kubernetes runs the tenants' policies only from 1.30 (ValidatingAdmissionPolicy v1):
    below that the API server does not serve the kind and `pulumi up` fails on the first policy."""
    if not stack.tenants or cluster is None or cluster.kubernetes_version is None:
        return []
    version = cluster.kubernetes_version
    minimum = ".".join(map(str, TENANTS_MIN_KUBERNETES_VERSION))
    if kubernetes_version_problem(version) is None:
        return [Check("kubernetes-version", f"cluster {stack.cluster.name} {version}", Verdict.PASS,
                      f"runs Kubernetes {version}: the tenants' admission policies need {minimum} or newer")]
    return [Check("kubernetes-version", f"cluster {stack.cluster.name} {version}", Verdict.FAIL,
                  f"the cluster runs Kubernetes {version}; the tenants' admission policies need {minimum} or newer "
                  f"(ValidatingAdmissionPolicy v1), so `pulumi up` would fail on the first policy",
                  f"have the cluster's owners upgrade it (`az aks upgrade -g {stack.cluster.resource_group} -n "
                  f"{stack.cluster.name} --kubernetes-version {minimum}`, one minor at a time), or remove "
                  f"gpushare:tenants")]


def _baseline_checks(stack: StackConfig, cluster: DeployedCluster | None) -> list[Check]:
    subject = f"cluster {stack.cluster.name}"
    if cluster is None:
        return [Check("baseline", subject, Verdict.WARN,
                      "the cluster's settings were not read (Azure unreadable under gpushare:guard: warn), so they "
                      "were not compared with the baseline", "run `preflight` again once Azure can be read")]
    found = baseline_findings(stack.cluster.resource_group, stack.cluster.name, cluster)
    checks = [Check("baseline", f"{subject} {f.setting}", Verdict.WARN,
                    f"{f.setting} is {f.deployed}, gpushare's baseline is {f.wanted}"
                    + (f": {f.why}" if f.why else "") + " (read, not written: the cluster is its owners')", f.fix)
              for f in found]
    if cluster.maintenance_schedules is None:
        checks.append(Check("baseline", f"{subject} maintenanceConfigurations", Verdict.WARN,
                            "the cluster's maintenance windows were not read (Azure unreadable under gpushare:guard: "
                            "warn), so they were not compared with the baseline",
                            "run `preflight` again once Azure can be read"))
    return checks or [Check("baseline", subject, Verdict.PASS,
                            "every setting gpushare's baseline reads is at the baseline, maintenance windows included")]


def _operator_node_checks(stack: StackConfig, live: Mapping[str, DeployedPool] | None) -> list[Check]:
    """On an existing cluster, a node the GPU Operator's own pods can run on. Its controller and NFD's master and
    gc tolerate only the control plane's taint (the chart's `operator.tolerations`, `node-feature-discovery.master`
    and `.gc`), and the GPU pools are tainted: when every other pool repels them too (a system pool tainted
    CriticalAddonsOnly, as AKS suggests), they stay Pending and the Helm release times out."""
    own = stack.operator.values.get("operator")
    if live is None or (isinstance(own, dict) and own.get("tolerations")):
        return []
    gpu_pools = {pool.name for pool in stack.pools}
    others = [pool for name, pool in live.items() if name not in gpu_pools and POOL_LABEL not in pool.node_labels]
    if not others or any(not _repelling(pool) for pool in others):
        return []
    taints = "; ".join(f"{pool.name}: {', '.join(_repelling(pool))}" for pool in others)
    return [Check("operator", f"cluster {stack.cluster.name}", Verdict.WARN,
                  f"every pool gpushare does not manage is tainted ({taints}), and the GPU Operator's controller and "
                  f"NFD's master and gc tolerate only the control plane's taint: they would stay Pending and the Helm "
                  f"release time out",
                  "add an untainted user pool, or tolerate the taint in gpushare:operator.values (operator."
                  "tolerations, node-feature-discovery.master.tolerations and node-feature-discovery.gc.tolerations)")]


def owner_gpu_pool_checks(stack: StackConfig, live: Mapping[str, DeployedPool] | None,
                          offers: RegionOffers) -> list[Check]:
    """On an existing cluster, the owners' GPU pools that the GPU Operator gpushare installs would reach. NFD labels
    every NVIDIA node its worker runs on, and the operator then runs its device plugin on each (its DaemonSets
    select `nvidia.com/gpu.deploy.*` labels the operator sets from NFD's), wherever the pool's taints are among the
    ones they tolerate (`daemonsets.tolerations`: the GPU pools' taints). On an AKS-managed GPU pool
    (`gpuProfile.nvidia.managementMode: Managed`) AKS runs its own device plugin (aks-docs aks-managed-gpu-nodes.md):
    two device plugins on one node advertise its GPUs twice, which breaks that pool (refused). Elsewhere the
    operator takes over the owners' GPU nodes with the chart's default device-plugin config (warned)."""
    if live is None:
        return []
    ours = {pool.name for pool in stack.pools}
    tolerations = (chart_values(stack).get("daemonsets") or {}).get("tolerations") or []
    cluster = stack.cluster
    checks = []
    for pool in live.values():
        if pool.name in ours or POOL_LABEL in pool.node_labels or not _has_gpus(pool.vm_size, offers):
            continue
        subject = f"pool {pool.name} ({pool.vm_size})"
        managed = (pool.gpu_management_mode or "").lower() == "managed"
        keeping_off = untolerated(tolerations, pool.node_taints)
        taint_fix = (f"taint the pool with a taint gpushare's pools do not carry, keeping its current ones (AKS "
                     f"updates taints in place): az aks nodepool update -g {cluster.resource_group} --cluster-name "
                     f"{cluster.name} -n {pool.name} --node-taints "
                     f"{','.join([*pool.node_taints, 'sku=gpu:NoSchedule'])}")
        if managed and not keeping_off:
            checks.append(Check(
                "gpu-software", subject, Verdict.FAIL,
                f"an AKS-managed GPU pool (gpuProfile.nvidia.managementMode Managed): AKS runs the NVIDIA device "
                f"plugin on its nodes, and none of its taints ({', '.join(pool.node_taints) or 'none'}) keeps the GPU "
                "Operator gpushare installs off them, so each node would get a second device plugin advertising the "
                "same GPUs",
                f"{taint_fix}; or move its workloads to gpushare's pools and delete it"))
        elif managed:
            checks.append(Check(
                "gpu-software", subject, Verdict.PASS,
                f"an AKS-managed GPU pool: AKS runs its device plugin there, and its taint {keeping_off[0]} keeps the "
                "GPU Operator gpushare installs off it"))
        elif not keeping_off:
            checks.append(Check(
                "gpu-software", subject, Verdict.WARN,
                f"a GPU pool of the cluster's owners without a taint that keeps the GPU Operator gpushare installs off "
                f"it ({', '.join(pool.node_taints) or 'no taints'}): the operator will run its device plugin there "
                "too, with the chart's default config (whole GPUs); if the owners run a device plugin of their own there, "
                "each node gets two (run `preflight --kubeconfig` to look for one)",
                f"{taint_fix}, if the operator should stay off it"))
    return checks


def _has_gpus(vm_size: str, offers: RegionOffers) -> bool:
    offer = offers.vm_size(vm_size)
    if offer is not None and offer.gpus is not None:
        return offer.gpus > 0
    return find_vm_size(vm_size) is not None


def _repelling(pool: DeployedPool) -> list[str]:
    return [taint for taint in pool.node_taints if taint.rsplit(":", 1)[-1] in REPELLING_EFFECTS]


def _existing_vnet_checks(stack: StackConfig, cluster: DeployedCluster | None) -> list[Check]:
    """A pool's `subnetId` on an existing cluster: in the VNet of the cluster's system pool, since every node pool of
    a cluster is in one VNet (aks-docs node-pool-unique-subnet.md); none at all when AKS manages the cluster's VNet
    (its system pool names no subnet), where AKS refuses a pool with one ("does not have subnet defined")."""
    if cluster is None:
        return []
    checks = []
    system = cluster.system_subnet_id
    for pool in stack.pools:
        if not pool.subnet_id:
            continue
        subject = f"pool {pool.name} subnetId"
        if system is None:
            checks.append(Check("subnet", subject, Verdict.FAIL,
                                f"cluster {stack.cluster.name} is in a VNet AKS manages (its system pool names no "
                                f"subnet), and every node pool of a cluster is in one VNet: AKS refuses pool "
                                f"{pool.name} in {pool.subnet_id}",
                                "drop the pool's subnetId: the pool then joins the cluster's VNet"))
        elif vnet_of(pool.subnet_id) != vnet_of(system):
            checks.append(Check("subnet", subject, Verdict.FAIL,
                                f"the subnet is in VNet {vnet_name(pool.subnet_id)}, the cluster's "
                                f"system pool in {vnet_name(system)}: AKS puts every node pool of a "
                                "cluster in one VNet",
                                f"use a subnet of {vnet_id(system)}"))
    return checks


def _own_system_surge(cluster: DeployedCluster | None, live: Mapping[str, DeployedPool] | None,
                      addressing: Addressing, gpu_pools: list[_Node]) -> list[_Node]:
    """An existing cluster's system pool in a flat network: its nodes already hold their addresses (counted in use),
    but an upgrade's surge node (AKS's default 10%, the pool's own settings not read) takes 1 + maxPods more, in the
    subnet the GPU pools share with it (aks-docs concepts-network-ip-address-planning.md: "(number of nodes + max
    surge nodes)"). Counted for subnets only, never for quota: the pool is its owners'."""
    if cluster is None or live is None or not addressing.flat or not cluster.system_subnet_id:
        return []
    if not any((pool.subnet or "").lower() == cluster.system_subnet_id.lower() for pool in gpu_pools):
        return []  # no GPU pool shares the subnet: not gpushare's to count
    system = next((p for p in live.values() if (p.mode or "").lower() == "system"), None)
    if system is None or not system.count:
        return []
    return [_Node("system pool", system.name, system.vm_size, system.count,
                  nodes_at_once(AKS_DEFAULT_MAX_SURGE, system.count), subnet=cluster.system_subnet_id,
                  max_pods=system.max_pods)]


def subnet_checks(pools: list[_Node], subnets: Mapping[str, Subnet | None],
                  live: Mapping[str, DeployedPool] | None, ranges: Mapping[str, str] | None = None,
                  addressing: Addressing = GPUSHARE_CLUSTER) -> list[Check]:
    """Per subnet: it exists, does not overlap the cluster's own `ranges` (service and pod CIDRs, which AKS refuses
    to overlap a node subnet: known only now that the subnet's range is read), and its free addresses cover what
    the nodes its pools can add take there, by the cluster's network plugin (`pod_addressing`): one per node with
    Azure CNI Overlay and kubenet, 1 + maxPods with classic Azure CNI, and with dynamic pod IP allocation one per
    node in the node subnet and maxPods in the pod subnet; an upgrade's surge nodes take theirs too. Free = the
    range's size, less the 5 addresses Azure reserves in every subnet, less the IP configurations already in it (each
    running node holds its own, and its pods' with a flat network; so do other devices in the subnet)."""
    checks = []
    by_subnet: dict[str, list[tuple[_Node, int, str]]] = {}
    for pool in pools:
        nodes, how = _growth(pool, live)
        name = pool.label.removeprefix("pool ")
        if pool.subnet:
            per_node = addressing.node_subnet_addresses(pool.max_pods)
            by_subnet.setdefault(pool.subnet.lower(), []).append(
                (pool, nodes * per_node, f"{name} {how}" + (f" x {per_node}" if per_node != 1 else "")))
        if addressing.pod_subnet_id and (pods := addressing.pod_subnet_addresses(pool.max_pods)):
            by_subnet.setdefault(addressing.pod_subnet_id.lower(), []).append(
                (pool, nodes * pods, f"{name} {how} x {pods} pods"))
    for key, members in by_subnet.items():
        pod_subnet = addressing.pod_subnet_id is not None and key == addressing.pod_subnet_id.lower()
        subnet_id = addressing.pod_subnet_id if pod_subnet else (members[0][0].subnet or key)
        short = "/".join(subnet_id.split("/")[-3::2])
        subnet = subnets.get(key)
        if subnet is None:
            checks.append(Check("subnet", short, Verdict.FAIL, f"subnet {subnet_id} does not exist (or this identity "
                                                               "cannot see it)",
                                "create it, or fix the subnetId; reading it needs Reader (or Network Contributor) on "
                                "its VNet"))
            continue
        prefix = ipaddress.ip_network(subnet.address_prefix, strict=False)
        overlaps = [f"{name} {cidr}" for name, cidr in (ranges or {}).items()
                    if prefix.overlaps(ipaddress.ip_network(cidr))]
        if overlaps:
            checks.append(Check("subnet", short, Verdict.FAIL,
                                f"{subnet.address_prefix} overlaps the cluster's {' and '.join(overlaps)}",
                                "set gpushare:cluster.network.serviceCidr (with dnsServiceIp) to a private range "
                                "outside your VNet, or use a subnet outside these ranges"))
            continue
        parts = [part for _, _, part in members]
        need = sum(addresses for _, addresses, _ in members)
        free = subnet.free_addresses
        detail = (f"{subnet.address_prefix}: {subnet.size} addresses - {AZURE_RESERVED_PER_SUBNET} Azure reserves - "
                  f"{subnet.used} in use = {free} free; " + _subnet_need(addressing, pod_subnet, need, parts))
        if need > free:
            checks.append(Check("subnet", short, Verdict.FAIL, f"{detail}: short by {need - free}",
                                "use a larger subnet (a pool's subnetId, fixed when the pool is created), or lower "
                                "the pools' count / autoscale max / upgrade.maxSurge"
                                + (" / maxPods" if addressing.flat else "")))
        elif addressing.plugin is Plugin.OTHER:
            checks.append(Check("subnet", short, Verdict.WARN,
                                f"{detail}; the cluster's CNI ({addressing.read}) is not one gpushare knows, so only "
                                "one address per node was counted",
                                "check the subnet against your CNI's own address needs"))
        else:
            checks.append(Check("subnet", short, Verdict.PASS, detail))
    return checks


def _subnet_need(addressing: Addressing, pod_subnet: bool, need: int, parts: list[str]) -> str:
    """What the pools take in one subnet, and the rule it was counted by."""
    counted = f"({'; '.join(parts)})"
    if pod_subnet:
        return (f"the pools' pods can take {need} addresses {counted}, maxPods per node in the pod subnet with "
                f"{addressing.plugin.value} ({addressing.read})")
    if addressing.plugin is Plugin.NODE_SUBNET:
        return (f"the pools can add nodes taking {need} addresses {counted}, 1 + maxPods per node with "
                f"{addressing.plugin.value} ({addressing.read})")
    nodes = f"the pools can add {need} node{'s' if need != 1 else ''} {counted}, one address each with "
    if addressing.plugin is Plugin.OVERLAY:
        return nodes + addressing.plugin.value
    return nodes + f"{addressing.plugin.value} ({addressing.read})"


def _sizes_offered_here(offers: RegionOffers) -> str:
    """The catalog's current GPU sizes this subscription can deploy in the region: what to pick instead."""
    names = [s.name for s in current_gpu_sizes()
             if (offer := offers.vm_size(s.name)) is not None and offer.location_restriction is None]
    return ", ".join(names) or "none of gpushare's catalog"


def _size_check(pool: _Node, offers: RegionOffers) -> Check:
    region = offers.location
    offer = offers.vm_size(pool.vm_size)
    subject = f"{pool.label} ({pool.vm_size})"
    if offer is None:
        instead = (f"set gpushare:cluster.systemPool.vmSize to a size offered there (`az vm list-skus --location "
                   f"{region} --resource-type virtualMachines -o table`)" if pool.name == SYSTEM_POOL_NAME else
                   f"GPU sizes available to this subscription in {region}: {_sizes_offered_here(offers)}")
        return Check("vm-size", subject, Verdict.FAIL,
                     f"{pool.vm_size} is not offered in {region}",
                     f"use another region or size (`az vm list-skus --size {pool.vm_size} --all -o table` lists "
                     f"the regions); {instead}")
    restriction = offer.location_restriction
    if restriction is not None:
        return Check("vm-size", subject, Verdict.FAIL,
                     f"{pool.vm_size} is offered in {region} but not to this subscription "
                     f"(restriction {restriction.reason_code or 'without a reason code'})",
                     _restriction_fix(restriction.reason_code, pool.vm_size, region))
    facts = [f"family {offer.family}" if offer.family else "no quota family", f"{_vcpus_of(offer, pool)} vCPUs"]
    facts.append(f"zones {', '.join(_offered_zones(offer))}" if _offered_zones(offer) else "no zones")
    return Check("vm-size", subject, Verdict.PASS, f"{pool.vm_size} offered in {region} ({'; '.join(facts)})")


def _gpu_check(pool: GpuPool, offers: RegionOffers) -> Check | None:
    """The GPU count Azure reports for the size against the stack's: a row for every size the stack describes, and
    for a catalog size only when Azure disagrees with the catalog."""
    size = pool.vm_size
    offer = offers.vm_size(size.name)
    subject = f"pool {pool.name} ({size.name})"
    if offer is None or offer.location_restriction is not None:
        return None  # the vm-size row already fails
    source = "the pool's `gpu:` block" if size.described_by_stack else "gpushare's catalog"
    if offer.gpus is None:
        return (Check("gpus", subject, Verdict.WARN,
                      f"Azure reports no GPUs capability for {size.name}: the {size.gpus} GPU(s) of {source} "
                      "could not be checked") if size.described_by_stack else None)
    if offer.gpus == size.gpus:
        return (Check("gpus", subject, Verdict.PASS, f"{size.name} has {offer.gpus} GPU(s), as {source} says")
                if size.described_by_stack else None)
    if offer.gpus == 0:
        fix = f"{size.name} has no GPUs: choose an NVIDIA GPU size (NC, ND, NV)"
    else:
        fix = (f"set `gpu.count: {offer.gpus}` in the pool" if size.described_by_stack else
               f"report it: gpushare's catalog says {size.gpus}; until it is fixed, the plan's capacity is wrong")
    return Check("gpus", subject, Verdict.FAIL,
                 f"Azure reports {offer.gpus} GPU(s) per {size.name} node, {source} says {size.gpus}: the plan's "
                 "capacity and every device-plugin count would be wrong", fix)


def _os_disk_check(pool: GpuPool, offers: RegionOffers) -> Check | None:
    """An ephemeral OS disk lives on the VM's cache or its temp disk; AKS refuses one bigger than both."""
    disk = pool.os_disk
    offer = offers.vm_size(pool.vm_size.name)
    if disk.type is not OsDiskType.EPHEMERAL or disk.size_gb is None or offer is None:
        return None
    subject = f"pool {pool.name} ({pool.vm_size.name})"
    cache_gib = (offer.cached_disk_bytes or 0) // 2**30
    temp_gib = (offer.resource_volume_mb or 0) // 1024
    room = max(cache_gib, temp_gib)
    detail = f"ephemeral OS disk of {disk.size_gb} GB; cache {cache_gib} GiB, temp disk {temp_gib} GiB"
    if disk.size_gb <= room:
        return Check("os-disk", subject, Verdict.PASS, f"{detail}: fits")
    return Check("os-disk", subject, Verdict.FAIL, f"{detail}: does not fit either",
                 f"set `osDisk.sizeGb` to at most {room}" if room >= 30 else
                 "use `osDisk.type: Managed` (this size has no room for an ephemeral OS disk)")


AKS_EPHEMERAL_MIN_TEMP_GIB = 128
"""aks-docs concepts-storage.md, "Default OS disk sizing": a size that supports ephemeral OS disks gets one, sized to
its temp disk, "so long as the temp is at least 128 GiB", when the pool sets no OS disk size."""


def aks_os_disk_type(pool: GpuPool, offer: VmSizeOffer | None) -> tuple[OsDiskType | None, str]:
    """The OS disk AKS gives the pool's nodes, and why. The stack's `osDisk.type` when set; otherwise "When you don't
    explicitly request Azure managed disks for the OS, AKS defaults to ephemeral OS if possible for a given node pool
    configuration" (aks-docs concepts-storage.md, "Ephemeral OS disk"): with `osDisk.sizeGb`, when that fits the
    size's cache (`CachedDiskBytes`) or temp disk (`MaxResourceVolumeMB`), the capabilities Azure's SKU list
    reports; without, when the temp disk is at least `AKS_EPHEMERAL_MIN_TEMP_GIB`. None when Azure reports neither."""
    disk = pool.os_disk
    if disk.type is not None:
        return disk.type, f"osDisk.type {disk.type.value}"
    if offer is None or (offer.cached_disk_bytes is None and offer.resource_volume_mb is None):
        return None, f"Azure reports no cache or temp disk size for {pool.vm_size.name}"
    cache_gib, temp_gib = (offer.cached_disk_bytes or 0) // 2**30, (offer.resource_volume_mb or 0) // 1024
    disks = f"cache {cache_gib} GiB, temp disk {temp_gib} GiB"
    if disk.size_gb is not None:
        fits = disk.size_gb <= max(cache_gib, temp_gib)
        return ((OsDiskType.EPHEMERAL, f"osDisk.sizeGb {disk.size_gb} fits the {disks}, so AKS picks ephemeral")
                if fits else (OsDiskType.MANAGED, f"osDisk.sizeGb {disk.size_gb} fits neither the {disks}"))
    if temp_gib >= AKS_EPHEMERAL_MIN_TEMP_GIB:
        return OsDiskType.EPHEMERAL, (f"no osDisk set and the {disks}: AKS picks an ephemeral OS disk of the temp "
                                      f"disk's size (at least {AKS_EPHEMERAL_MIN_TEMP_GIB} GiB)")
    return OsDiskType.MANAGED, f"no osDisk set and the {disks}, below {AKS_EPHEMERAL_MIN_TEMP_GIB} GiB of temp disk"


def spot_eviction_check(pool: GpuPool, offers: RegionOffers) -> Check | None:
    """A Spot pool evicted with Deallocate keeps its nodes' OS disks, which an ephemeral OS disk cannot do (Azure's
    ephemeral OS disk FAQ: "users need to Delete instead of deallocating them"). The stack asking for Ephemeral is
    refused offline (`pool_config`); this checks the disk AKS picks when the stack names no type."""
    if pool.spot is None or pool.spot.eviction is not SpotEviction.DEALLOCATE or pool.os_disk.type is not None:
        return None
    subject = f"pool {pool.name} ({pool.vm_size.name})"
    offer = offers.vm_size(pool.vm_size.name)
    if offer is not None and offer.location_restriction is not None:
        return None  # the vm-size row already fails
    chosen, why = aks_os_disk_type(pool, offer)
    fix = "set the pool's osDisk.type: Managed (kept on deallocation), or spot.eviction: Delete"
    if chosen is OsDiskType.EPHEMERAL:
        return Check("os-disk", subject, Verdict.FAIL,
                     f"spot.eviction Deallocate, but {why}, and an ephemeral OS disk cannot be stop-deallocated: "
                     "AKS refuses the pool", fix)
    if chosen is None:
        return Check("os-disk", subject, Verdict.WARN,
                     f"spot.eviction Deallocate: {why}, so whether AKS picks an ephemeral OS disk (which cannot be "
                     "deallocated) is unknown", fix)
    return Check("os-disk", subject, Verdict.PASS, f"spot.eviction Deallocate with a managed OS disk: {why}")


def _restriction_fix(reason: str | None, size: str, region: str) -> str:
    if reason == "QuotaId":
        return (f"this subscription's offer type cannot deploy {size}: use a subscription of another offer "
                "(e.g. pay-as-you-go or EA), or another size")
    return (f"ask Azure support to enable {size} in {region} for this subscription (a 'Service and subscription "
            "limits (quotas)' request), or use another region or size")


def _offered_zones(offer: VmSizeOffer) -> list[str]:
    restricted = offer.restricted_zones
    return [zone for zone in offer.zones if zone not in restricted]


def _zone_check(pool: _Node, offers: RegionOffers) -> list[Check]:
    offer = offers.vm_size(pool.vm_size)
    if offer is None or offer.location_restriction is not None:
        return []  # the vm-size row already fails
    subject = f"{pool.label} ({pool.vm_size})"
    offered = _offered_zones(offer)
    missing = [zone for zone in pool.zones if zone not in offered]
    wanted = ", ".join(pool.zones)
    if not missing:
        return [Check("zones", subject, Verdict.PASS, f"zones {wanted} offered in {offers.location}")]
    reasons = offer.restricted_zones
    why = "; ".join(
        f"zone {zone}: restricted for this subscription ({reasons[zone] or 'no reason code'})" if zone in reasons
        else f"zone {zone}: not offered" for zone in missing)
    offered_text = ", ".join(offered) or "none"
    fix = (f"set `zones` to zones from {offered_text}" if offered else "remove `zones` from the pool") + \
        " (zones are fixed when a pool is created), or use another size or region"
    return [Check("zones", subject, Verdict.FAIL,
                  f"{pool.vm_size} in {offers.location}: {why}; offered zones: {offered_text}", fix)]


def _vcpus_of(offer: VmSizeOffer | None, pool: _Node) -> int | None:
    if offer is not None and offer.vcpus:
        return offer.vcpus
    size = find_vm_size(pool.vm_size)
    return size.vcpus if size else None


def _family_of(offer: VmSizeOffer | None, pool: _Node) -> str | None:
    if offer is not None and offer.family:
        return offer.family
    size = find_vm_size(pool.vm_size)
    return size.quota_family if size else None


def _growth(pool: _Node, live: Mapping[str, DeployedPool] | None) -> tuple[int, str]:
    """Nodes the pool can add over what it runs now, and how that was counted."""
    current = live.get(pool.name) if live is not None else None
    if current is None:
        return pool.peak, pool.shown
    if current.vm_size.lower() != pool.vm_size.lower():
        return pool.peak, f"{pool.shown} (new {pool.vm_size} nodes)"
    running = current.count or 0
    return max(pool.peak - running, 0), f"{pool.shown} - {running} running"


def _quota_checks(pools: list[_Node], offers: RegionOffers,
                  live: Mapping[str, DeployedPool] | None, subscription_id: str) -> list[Check]:
    by_family: dict[str, list[tuple[_Node, int, str, int]]] = {}
    spot: list[tuple[_Node, int, str, int]] = []
    uncounted = []
    for pool in pools:
        offer = offers.vm_size(pool.vm_size)
        family, vcpus = _family_of(offer, pool), _vcpus_of(offer, pool)
        if vcpus is None or (family is None and not pool.spot):
            uncounted.append(pool.label)
            continue
        nodes, how = _growth(pool, live)
        (spot if pool.spot else by_family.setdefault(family, [])).append((pool, nodes, how, vcpus))
    checks = []
    total_need = 0
    total_parts = []
    for family, members in by_family.items():
        need = sum(nodes * vcpus for _, nodes, _, vcpus in members)
        total_need += need
        parts = [f"{pool.label.removeprefix('pool ')} {how} x {vcpus}" for pool, _, how, vcpus in members]
        total_parts += parts
        usage = offers.usage(family)
        if usage is None:
            checks.append(Check(
                "quota", family, Verdict.FAIL,
                f"needs {need} vCPUs ({'; '.join(parts)}), but Azure reports no {family} quota in {offers.location}",
                _quota_fix(family, None, need, 0, offers.location, subscription_id)))
            continue
        checks.append(_quota_row(usage.name, usage.display_name, need, parts, usage.current, usage.limit,
                                 offers.location, subscription_id, live is not None))
    cores = offers.usage(REGIONAL_CORES)
    if cores is not None:
        checks.append(_quota_row(cores.name, cores.display_name, total_need, total_parts, cores.current,
                                 cores.limit, offers.location, subscription_id, live is not None))
    else:
        checks.append(Check("quota", REGIONAL_CORES, Verdict.WARN,
                            f"Azure reported no regional vCPU total ({REGIONAL_CORES}) for {offers.location}: "
                            "only the families were checked"))
    if spot:
        checks.append(_spot_quota_row(spot, offers, live, subscription_id))
    if uncounted:
        checks.append(Check("quota", "uncounted", Verdict.WARN,
                            f"{', '.join(uncounted)}: size not offered here and not in gpushare's catalog, so its "
                            "vCPUs are not counted",
                            "fix the vm-size row first"))
    return checks


def _spot_quota_row(members: list[tuple[_Node, int, str, int]], offers: RegionOffers,
                    live: Mapping[str, DeployedPool] | None, subscription_id: str) -> Check:
    need = sum(nodes * vcpus for _, nodes, _, vcpus in members)
    parts = [f"{pool.label.removeprefix('pool ')} {how} x {vcpus}" for pool, _, how, vcpus in members]
    usage = offers.usage(LOW_PRIORITY_CORES)
    if usage is None:
        return Check("quota", LOW_PRIORITY_CORES, Verdict.FAIL,
                     f"Spot pools need {need} vCPUs ({'; '.join(parts)}), but Azure reports no Spot vCPU quota "
                     f"({LOW_PRIORITY_CORES}) in {offers.location}",
                     _quota_fix(LOW_PRIORITY_CORES, None, need, 0, offers.location, subscription_id))
    return _quota_row(usage.name, usage.display_name, need, parts, usage.current, usage.limit, offers.location,
                      subscription_id, live is not None)


def _quota_row(name: str, display: str | None, need: int, parts: list[str], current: int, limit: int,
               region: str, subscription_id: str, existing: bool) -> Check:
    free = max(limit - current, 0)
    what = "more than the cluster runs now" if existing else "at most"
    detail = (f"needs {need} vCPUs {what} ({'; '.join(parts) or 'nothing'}); {free} free "
              f"(limit {limit}, in use {current})")
    if need <= free:
        return Check("quota", name, Verdict.PASS, detail)
    short = need - free
    return Check("quota", name, Verdict.FAIL,
                 f"{detail}: short by {short} vCPU{'s' if short != 1 else ''} in {region}",
                 _quota_fix(name, display, need, current, region, subscription_id))


def _quota_fix(name: str, display: str | None, need: int, current: int, region: str, subscription_id: str) -> str:
    new_limit = current + need
    scope = f"/subscriptions/{subscription_id}/providers/Microsoft.Compute/locations/{region}"
    portal = f"{PORTAL_QUOTAS}" + (f" for '{display}'" if display else "")
    kind = "lowPriority" if name == LOW_PRIORITY_CORES else "dedicated"
    return (f"request a limit of at least {new_limit} vCPUs for {name} in {region}: az quota update "
            f"--resource-name {name} --scope {scope} --limit-object value={new_limit} --resource-type {kind} "
            f"(the quota CLI extension), or {portal}; or lower the pools' count / autoscale max")


def _version_check(stack: StackConfig, offers: RegionOffers, live: Mapping[str, DeployedPool] | None) -> Check:
    wanted = stack.cluster.kubernetes_version
    offered = ", ".join(_describe_version(v) for v in offers.kubernetes_versions)
    if wanted is None:
        default = next((v.version for v in offers.kubernetes_versions if v.is_default), None)
        return Check("kubernetes-version", "(AKS default)", Verdict.PASS,
                     f"not set: AKS picks its default{f' ({default})' if default else ''}; offered: {offered}")
    minor = ".".join(wanted.split(".")[:2])
    offer = next((v for v in offers.kubernetes_versions if v.version == minor), None)
    if offer is None or (wanted != minor and wanted not in offer.patch_versions):
        running = _running_version(live, wanted)
        if running:
            return Check("kubernetes-version", wanted, Verdict.WARN,
                         f"{wanted} is no longer offered in {offers.location}, but the cluster already runs it "
                         f"({running}); offered: {offered}",
                         "upgrade soon: set kubernetesVersion to an offered version (one minor at a time)")
        if offer is not None:
            return Check("kubernetes-version", wanted, Verdict.FAIL,
                         f"patch {wanted} is not offered in {offers.location} (patches of {minor}: "
                         f"{', '.join(offer.patch_versions) or 'none'})",
                         f"set kubernetesVersion to \"{minor}\" (AKS then runs its newest patch) or one of the patches")
        return Check("kubernetes-version", wanted, Verdict.FAIL,
                     f"{wanted} is not offered in {offers.location}; offered: {offered}",
                     "set gpushare:cluster.kubernetesVersion to an offered version, or remove it for AKS's default")
    if offer.is_preview:
        return Check("kubernetes-version", wanted, Verdict.FAIL,
                     f"{minor} is preview-only in {offers.location}; offered: {offered}",
                     "use a generally available version")
    if offer.support_plans and OFFICIAL_PLAN not in offer.support_plans:
        return Check("kubernetes-version", wanted, Verdict.WARN,
                     f"{minor} is offered in {offers.location} only with AKS long-term support "
                     f"({', '.join(offer.support_plans)}), which needs the cluster's Premium tier",
                     "use a version with community support, or run the cluster on the Premium tier with LTS")
    return Check("kubernetes-version", wanted, Verdict.PASS, f"{wanted} offered in {offers.location}")


def _describe_version(offer) -> str:
    marks = [m for m, on in (("default", offer.is_default), ("preview", offer.is_preview),
                             ("LTS only", bool(offer.support_plans) and OFFICIAL_PLAN not in offer.support_plans))
             if on]
    return f"{offer.version} ({', '.join(marks)})" if marks else offer.version


def _running_version(live: Mapping[str, DeployedPool] | None, wanted: str) -> str | None:
    if not live:
        return None
    for pool in live.values():
        version = pool.orchestrator_version
        if version and (version == wanted or version.startswith(f"{wanted}.")):
            return f"pool {pool.name} on {version}"
    return None


def stack_subnets(stack: StackConfig, cluster: DeployedCluster | None = None) -> list[str]:
    """Every subnet the stack's pools use, the system pool's first; on an existing cluster (`cluster` as read) the
    subnet of its system pool when a GPU pool names none."""
    ids = own_subnets(stack)
    if stack.cluster.existing and cluster and any(pool_subnet(stack, pool) is None for pool in stack.pools):
        ids.append(cluster.system_subnet_id)
    if stack.cluster.existing and (pods := cluster_addressing(cluster).pod_subnet_id):
        ids.append(pods)
    return list(dict.fromkeys(subnet for subnet in ids if subnet))


@dataclass(frozen=True)
class PreflightReads:
    """What preflight reads beside the guard's pools and cluster."""

    offers: RegionOffers
    subnets: Mapping[str, Subnet | None]
    assignments: Mapping[tuple[str, str], tuple[FoundAssignment, ...]]


def read_for_preflight(stack: StackConfig, reads: AzureReads, cluster: DeployedCluster | None) -> PreflightReads:
    """The region (three calls), each subnet and each planned role assignment's scope (one call each); `cluster` as
    read (None: not there, or not read)."""
    subscription_id = reads.target.subscription_id
    return PreflightReads(
        offers=read_region(subscription_id, stack.location, **reads.read_kwargs()),
        subnets=read_subnets(subscription_id, stack_subnets(stack, cluster), **reads.read_kwargs()),
        assignments=read_assignments(subscription_id, planned_assignments(stack, subscription_id, cluster),
                                     **reads.read_kwargs()),
    )


def check_live(stack: StackConfig, reads: AzureReads, deployed: Iterable[DeployedPool] | None,
               cluster: DeployedCluster | None = None) -> PreflightReport:
    """`read_for_preflight`, and evaluate. Azure being unreadable follows `gpushare:guard`: `strict` raises the
    `AzureReadError`; `warn` returns a report with no checks and the warning."""
    subscription_id = reads.target.subscription_id
    try:
        read = read_for_preflight(stack, reads, cluster)
    except AzureReadError as err:
        warning = raise_or_warn_on_read_error(
            stack, err, "deploys without these checks",
            "Continuing without preflight because gpushare:guard is warn: a size, zone, quota or version problem will "
            "fail at `pulumi up` instead")
        return PreflightReport(stack.stack, stack.source, stack.location, subscription_id, None, warnings=(warning,))
    return evaluate(stack, read.offers, deployed, subscription_id, cluster, read.subnets,
                    assignments=read.assignments)


def check_for_program(stack: StackConfig, environ: Mapping[str, str], azure: Callable[[], AzureReads],
                      guard: GuardReport | None) -> PreflightReport | None:
    """Preflight as the Pulumi program runs it: under `pulumi preview`/`up`, after the guard, reusing its
    agent-pool read; not at all with `gpushare:preflight: off`, an offline `plan` or `plan --deployed FILE`."""
    if stack.preflight is PreflightMode.OFF or environ.get(DEPLOYED_FILE_ENV) or environ.get(OFFLINE_ENV):
        return None
    return check_live(stack, azure(), guard.deployed if guard else None, guard.cluster if guard else None)


def findings(report: PreflightReport, verdict: Verdict = Verdict.FAIL) -> list[str]:
    """One line per check with `verdict` (failed ones by default), with its fix."""
    return [f"{c.check} {c.subject}: {c.detail}" + (f"\n  fix: {c.fix}" if c.fix else "")
            for c in report.checks if c.verdict is verdict]


def raise_for_failures(report: PreflightReport, *, details: bool = True) -> None:
    """One `PreflightFailedError` for every failed check: each with detail and fix (the program's message), or
    only naming them when the table with the fixes was printed already (`details=False`, the CLI)."""
    if report.passed:
        return
    count = len(report.failures)
    header = (f"preflight: {count} check{'s' if count != 1 else ''} failed for stack {report.stack} in "
              f"{report.region} (subscription {report.subscription_id}); `pulumi up` would fail on "
              f"{'them' if count != 1 else 'it'}")
    if not details:
        names = ", ".join(f"{c.check} {c.subject}" for c in report.failures)
        raise PreflightFailedError(f"{header}: {names} (see the fix for each in the output)")
    raise PreflightFailedError("\n".join([f"{header}:", *(f"- {line}" for line in findings(report))]))


_COLUMNS = ("CHECK", "SUBJECT", "VERDICT", "DETAIL")


def render_text(report: PreflightReport) -> str:
    exists = {True: "exists", False: "does not exist yet", None: "could not be read"}[report.cluster_exists]
    lines = [f"Preflight for stack {report.stack} ({report.source}) in {report.region}, subscription "
             f"{report.subscription_id}; cluster {exists}", ""]
    rows = [[c.check, c.subject, c.verdict.value, c.detail] for c in report.checks]
    widths = [max(len(cell) for cell in column) for column in zip(_COLUMNS, *rows)] if rows else []
    for row in ([list(_COLUMNS), *rows] if rows else []):
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    fixes = [c for c in report.checks if c.fix and c.verdict is not Verdict.PASS]
    if fixes:
        lines += ["", "Fixes:"] + [f"  {c.check} {c.subject}: {c.fix}" for c in fixes]
    if report.warnings:
        lines += ["", "Warnings:"] + [f"  ! {w}" for w in report.warnings]
    failed = len(report.failures)
    lines += ["", f"{failed} check(s) failed" if failed else "All checks passed"]
    return "\n".join(lines)
