"""Preflight on an existing cluster, on parsed facts (no Azure): a pool's subnet in the cluster's VNet, a node for
the GPU Operator's own pods, the cluster's Kubernetes version for the tenants' policies."""

from __future__ import annotations

import dataclasses

import pytest

from gpushare.azure.deployed import DeployedPool
from gpushare.azure.deployed_cluster import DeployedCluster
from gpushare.azure.preflight.preflight_report import Verdict
from gpushare.azure.preflight.preflight_runs import evaluate
from gpushare.model.stack import Tenant
from tests.azure.preflight.parsed_region import CONFIG, OFFERS, SUB, VNET
from tests.builders import with_pool


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
