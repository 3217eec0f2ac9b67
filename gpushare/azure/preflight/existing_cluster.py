"""An existing cluster (`existing: true`), from the cluster guard's one cluster read and its agent-pool read:
`baseline` rows warn for each setting below gpushare's hardened baseline, with the `az aks update` that fixes it
(`cluster_baseline.baseline_findings`), and for each upgrade channel without its maintenance window; its Kubernetes
runs the tenants' policies; a pool's `subnetId` is in the cluster's VNet; the GPU Operator's own pods have a node
to run on; the owners' GPU pools the operator would reach (`gpu-software`). The cluster's own system pool and
version are its owners': not counted for quota, not checked (its surge counts in a shared subnet)."""

from __future__ import annotations

from collections.abc import Mapping

from gpushare.azure.cluster_baseline import baseline_findings
from gpushare.azure.deployed import DeployedPool
from gpushare.azure.deployed_cluster import DeployedCluster
from gpushare.azure.pod_addressing import Addressing
from gpushare.azure.preflight.nodes import AKS_DEFAULT_MAX_SURGE, Node
from gpushare.azure.preflight.preflight_report import Check, Verdict
from gpushare.azure.region_offers import RegionOffers
from gpushare.model.catalog import find_vm_size
from gpushare.model.stack import POOL_LABEL, StackConfig
from gpushare.sharing.node_selection import REPELLING_EFFECTS, untolerated
from gpushare.sharing.operator_values import chart_values
from gpushare.sharing.upgrades import nodes_at_once
from gpushare.stackfile.kubernetes_version import TENANTS_MIN_KUBERNETES_VERSION, kubernetes_version_problem
from gpushare.stackfile.network_config import vnet_id, vnet_name, vnet_of


def existing_version_checks(stack: StackConfig, cluster: DeployedCluster | None) -> list[Check]:
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


def baseline_checks(stack: StackConfig, cluster: DeployedCluster | None) -> list[Check]:
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


def operator_node_checks(stack: StackConfig, live: Mapping[str, DeployedPool] | None) -> list[Check]:
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


def existing_vnet_checks(stack: StackConfig, cluster: DeployedCluster | None) -> list[Check]:
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


def own_system_surge(cluster: DeployedCluster | None, live: Mapping[str, DeployedPool] | None,
                      addressing: Addressing, gpu_pools: list[Node]) -> list[Node]:
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
    return [Node("system pool", system.name, system.vm_size, system.count,
                  nodes_at_once(AKS_DEFAULT_MAX_SURGE, system.count), subnet=cluster.system_subnet_id,
                  max_pods=system.max_pods)]
