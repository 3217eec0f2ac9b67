"""Preflight's quota arithmetic on parsed region facts (no Azure): what a stack can use at most, per family."""

from __future__ import annotations

import dataclasses

import pytest

from gpushare.azure.deployed import DeployedPool
from gpushare.azure.deployed_cluster import DeployedCluster
from gpushare.azure.preflight.report import Verdict
from gpushare.azure.preflight.run import evaluate
from gpushare.azure.region_offers import KubernetesVersionOffer, QuotaUsage, RegionOffers, VmSizeOffer
from gpushare.azure.subnets import Subnet
from gpushare.model.stack import Autoscale, Tenant, Upgrade
from tests.builders import pool, stack, with_pool

SUB = "3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3"
T4_FAMILY = "standardNCASv3_T4Family"
OFFERS = RegionOffers(
    location="westeurope",
    vm_sizes=(
        VmSizeOffer("Standard_D4ds_v5", "standardDDSv5Family", 4, ("1", "2", "3")),
        VmSizeOffer("Standard_NC4as_T4_v3", T4_FAMILY, 4, ("1", "2", "3")),
        VmSizeOffer("Standard_NC8as_T4_v3", T4_FAMILY, 8, ("1", "2", "3")),
    ),
    usages=(
        QuotaUsage("cores", "Total Regional vCPUs", 0, 1000),
        QuotaUsage("standardDDSv5Family", None, 0, 100),
        QuotaUsage(T4_FAMILY, None, 0, 100),
    ),
    kubernetes_versions=(KubernetesVersionOffer("1.33", False, True, ("1.33.2",), ("KubernetesOfficial",)),),
)
CONFIG = stack(
    pool("small", "Standard_NC4as_T4_v3", count=None, autoscale=Autoscale(1, 5)),  # at most 5 x 4
    pool("big", "Standard_NC8as_T4_v3", count=2),  # 2 x 8
)


def quota(report, subject: str):
    (check,) = [c for c in report.checks if c.check == "quota" and c.subject == subject]
    return check


def test_pools_of_one_family_add_up_at_their_most():
    report = evaluate(CONFIG, OFFERS, None, SUB)

    assert quota(report, T4_FAMILY).detail == (
        "needs 36 vCPUs at most (small 5 x 4; big 2 x 8); 100 free (limit 100, in use 0)")
    assert quota(report, "cores").detail.startswith(
        "needs 48 vCPUs at most (system pool 2 + 1 surge x 4; small 5 x 4; big 2 x 8)")


def test_a_pool_whose_size_changes_counts_in_full_and_a_shrinking_pool_frees_nothing():
    live = [
        DeployedPool("system", "Standard_D4ds_v5", count=2, mode="System"),
        DeployedPool("small", "standard_nc4as_t4_v3", count=7),  # more than the new max: counts 0, not -2
        DeployedPool("big", "Standard_NC4as_T4_v3", count=2),  # size changes: the new pool's 2 x 8 count
    ]

    report = evaluate(CONFIG, OFFERS, live, SUB)

    assert quota(report, T4_FAMILY).detail.startswith(
        "needs 16 vCPUs more than the cluster runs now (small 5 - 7 running x 4; big 2 (new Standard_NC8as_T4_v3 "
        "nodes) x 8)")
    # The system pool runs its 2 nodes: only AKS's default surge (10% of 2, rounded up: 1 node) is growth.
    assert quota(report, "standardDDSv5Family").detail.startswith(
        "needs 4 vCPUs more than the cluster runs now (system pool 2 + 1 surge - 2 running x 4)")


def test_quota_exactly_used_up_passes_and_one_more_fails():
    exact = dataclasses.replace(OFFERS, usages=(QuotaUsage("cores", None, 0, 1000),
                                                QuotaUsage("standardDDSv5Family", None, 0, 12),
                                                QuotaUsage(T4_FAMILY, None, 64, 100)))
    assert evaluate(CONFIG, exact, None, SUB).passed

    one_short = dataclasses.replace(exact, usages=(*exact.usages[:2], QuotaUsage(T4_FAMILY, None, 65, 100)))
    check = quota(evaluate(CONFIG, one_short, None, SUB), T4_FAMILY)
    assert check.verdict is Verdict.FAIL and check.detail.endswith("short by 1 vCPU in westeurope")


def test_gpu_pool_upgrade_surge_needs_quota_at_the_pools_largest_size():
    surging = dataclasses.replace(CONFIG.pools[0], upgrade=Upgrade(max_surge="50%", max_unavailable="0"))
    config = dataclasses.replace(CONFIG, pools=(surging, CONFIG.pools[1]))

    report = evaluate(config, OFFERS, None, SUB)

    # 50% of 5 nodes, rounded up: 3 extra NC4as_T4_v3 VMs while an upgrade runs.
    assert quota(report, T4_FAMILY).detail.startswith("needs 48 vCPUs at most (small 5 + 3 surge x 4; big 2 x 8)")


VNET = f"/subscriptions/{SUB}/resourceGroups/rg-net/providers/Microsoft.Network/virtualNetworks"


def existing_with_pool_subnet(subnet: str):
    config = with_pool(CONFIG, 0, subnet_id=subnet)
    return dataclasses.replace(config, cluster=dataclasses.replace(config.cluster, existing=True))


def vnet_rows(report):
    return [(c.subject, c.verdict, c.detail, c.fix) for c in report.checks if c.subject.endswith("subnetId")]


def test_an_existing_cluster_in_a_vnet_aks_manages_takes_no_pool_subnet():
    """aks-docs node-pool-unique-subnet.md: every node pool of a cluster is in one VNet, and without a subnet on the
    system pool that VNet is AKS's own (AKS refuses the pool: "does not have subnet defined")."""
    report = evaluate(existing_with_pool_subnet(f"{VNET}/spoke/subnets/gpu"), OFFERS, [], SUB,
                      cluster=DeployedCluster(name="gpushare-dev", system_subnet_id=None))
    ((subject, verdict, detail, fix),) = vnet_rows(report)
    assert (subject, verdict) == ("pool small subnetId", Verdict.FAIL)
    assert "is in a VNet AKS manages" in detail and fix.startswith("drop the pool's subnetId")


@pytest.mark.parametrize("subnet, verdict", [("spoke/subnets/gpu", None), ("hub/subnets/gpu", Verdict.FAIL)],
                         ids=["same-vnet", "other-vnet"])
def test_an_existing_clusters_pool_subnet_is_in_its_vnet(subnet, verdict):
    report = evaluate(existing_with_pool_subnet(f"{VNET}/{subnet}"), OFFERS, [], SUB,
                      cluster=DeployedCluster(name="gpushare-dev", system_subnet_id=f"{VNET}/spoke/subnets/nodes"))
    rows = vnet_rows(report)
    if verdict is None:
        assert rows == []
    else:
        ((_, found, detail, fix),) = rows
        assert found is verdict and "VNet hub, the cluster's system pool in spoke" in detail
        assert fix == f"use a subnet of {VNET}/spoke"


def existing(config=CONFIG, **operator_values):
    return dataclasses.replace(config, cluster=dataclasses.replace(config.cluster, existing=True),
                               operator=dataclasses.replace(config.operator, values=operator_values))


def operator_rows(report):
    return [(c.verdict, c.detail, c.fix) for c in report.checks if c.check == "operator"]


SYSTEM_ONLY_FOR_ADDONS = DeployedPool(name="system", vm_size="Standard_D4ds_v5", mode="System", count=2,
                                      node_taints=("CriticalAddonsOnly=true:NoSchedule",))


def test_an_existing_cluster_without_an_untainted_pool_for_the_operator_is_warned_about():
    """The GPU Operator's controller and NFD's master tolerate only the control plane: with the system pool tainted
    CriticalAddonsOnly and the GPU pools tainted, nothing can run them and the Helm release times out."""
    ((verdict, detail, fix),) = operator_rows(evaluate(existing(), OFFERS, [SYSTEM_ONLY_FOR_ADDONS], SUB))
    assert verdict is Verdict.WARN
    assert "system: CriticalAddonsOnly=true:NoSchedule" in detail and "Helm release time out" in detail
    assert "add an untainted user pool" in fix and "operator.tolerations" in fix


def test_an_untainted_pool_or_the_operators_own_tolerations_need_no_warning():
    apps = DeployedPool(name="apps", vm_size="Standard_D8ds_v5", mode="User", count=3,
                        node_taints=("example.com/soft=true:PreferNoSchedule",))
    assert operator_rows(evaluate(existing(), OFFERS, [SYSTEM_ONLY_FOR_ADDONS, apps], SUB)) == []
    tolerating = existing(operator={"tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}]})
    assert operator_rows(evaluate(tolerating, OFFERS, [SYSTEM_ONLY_FOR_ADDONS], SUB)) == []
    # A cluster gpushare creates has its own untainted system pool.
    assert operator_rows(evaluate(CONFIG, OFFERS, [SYSTEM_ONLY_FOR_ADDONS], SUB)) == []


@pytest.mark.parametrize(("version", "verdict"), [("1.29.9", Verdict.FAIL), ("1.30.0", Verdict.PASS)])
def test_an_existing_cluster_below_the_tenants_kubernetes_is_refused_with_the_upgrade(version, verdict):
    """ValidatingAdmissionPolicy v1 is GA from 1.30: on 1.29 the first tenant policy fails `pulumi up`."""
    config = dataclasses.replace(existing(), tenants=(Tenant(name="vision", pools=("small",)),))
    report = evaluate(config, OFFERS, [], SUB, cluster=DeployedCluster(name="gpushare-dev", kubernetes_version=version))
    (row,) = [c for c in report.checks if c.check == "kubernetes-version"]
    assert row.verdict is verdict
    if verdict is Verdict.FAIL:
        assert "the cluster runs Kubernetes 1.29.9; the tenants' admission policies need 1.30 or newer" in row.detail
        assert "az aks upgrade" in row.fix and "--kubernetes-version 1.30" in row.fix
        assert not report.passed
    assert not [c for c in evaluate(existing(), OFFERS, [], SUB, cluster=DeployedCluster(
        name="gpushare-dev", kubernetes_version="1.29.9")).checks if c.check == "kubernetes-version"], \
        "without tenants the version is the cluster's owners' business"


def test_a_no_execute_taint_on_every_other_pool_repels_the_operator_too():
    """NoExecute keeps pods off as NoSchedule does (and evicts those running): the operator's controller has no node."""
    evicting = dataclasses.replace(SYSTEM_ONLY_FOR_ADDONS, node_taints=("CriticalAddonsOnly=true:NoExecute",))
    ((verdict, detail, _),) = operator_rows(evaluate(existing(), OFFERS, [evicting], SUB))
    assert verdict is Verdict.WARN and "system: CriticalAddonsOnly=true:NoExecute" in detail


# --- subnets of your own ----------------------------------------------------------------------------------------

NODES, GPU = f"{VNET}/spoke/subnets/nodes", f"{VNET}/spoke/subnets/gpu"


def in_subnets(config=CONFIG, **network):
    """`config` in subnets of its own: the system pool in NODES, pool `small` (at most 5 nodes) in GPU."""
    config = with_pool(config, 0, subnet_id=GPU)
    return dataclasses.replace(config, cluster=dataclasses.replace(config.cluster, network=dataclasses.replace(
        config.cluster.network, subnet_id=NODES, **network)))


def subnet_row(report, name: str):
    (check,) = [c for c in report.checks if c.check == "subnet" and c.subject == f"spoke/{name}"]
    return check


@pytest.mark.parametrize(("used", "verdict"), [(246, Verdict.PASS), (247, Verdict.FAIL)],
                         ids=["exactly-enough", "one-short"])
def test_a_subnet_with_exactly_the_free_addresses_its_pools_can_add_passes(used, verdict):
    """/24: 256 - 5 Azure reserves - 246 in use = 5 free, for pool small's 5 nodes: enough; one more in use is not."""
    subnets = {NODES.lower(): Subnet(NODES, "10.1.0.0/24", 0), GPU.lower(): Subnet(GPU, "10.1.1.0/24", used)}
    check = subnet_row(evaluate(in_subnets(), OFFERS, None, SUB, subnets=subnets), "gpu")
    assert check.verdict is verdict, check.detail
    assert check.detail.startswith(f"10.1.1.0/24: 256 addresses - 5 Azure reserves - {used} in use = {251 - used} "
                                   "free; the pools can add 5 nodes (small 5)")


def test_the_stacks_own_service_cidr_is_what_a_subnet_must_not_overlap():
    """A stack that moves the service range (network.serviceCidr) into its VNet's space: the subnet inside it fails,
    naming the stack's range, and the default range no longer counts."""
    config = in_subnets(service_cidr="10.1.0.0/16", dns_service_ip="10.1.0.10")
    subnets = {NODES.lower(): Subnet(NODES, "10.0.0.0/24", 0), GPU.lower(): Subnet(GPU, "10.1.1.0/24", 0)}
    report = evaluate(config, OFFERS, None, SUB, subnets=subnets)
    gpu = subnet_row(report, "gpu")
    assert gpu.verdict is Verdict.FAIL and gpu.detail == "10.1.1.0/24 overlaps the cluster's serviceCidr 10.1.0.0/16"
    assert subnet_row(report, "nodes").verdict is Verdict.PASS, "10.0.0.0/24 is in the default range, not this one"
