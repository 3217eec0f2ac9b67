"""`preflight` counts an existing cluster's subnet addresses by its network plugin, read through the real SDK
clients against the local ARM stub (aks-docs concepts-network-ip-address-planning.md): one address per node with
Azure CNI Overlay and kubenet; 1 + maxPods per node (and the system pool's upgrade surge) with classic Azure CNI;
with dynamic pod IP allocation one per node in the node subnet and maxPods per node in the pod subnet."""

from __future__ import annotations

import json

import pytest

from gpushare.cli import main
from tests.azure.preflight_region import REGION, T4, serve_region
from tests.azure_stub import (
    StubResponse,
    arm_agent_pool,
    arm_existing_cluster,
    arm_subnet,
    reached_arm,
    serve_existing_cluster,
)
from tests.stack_files import write_stack

SUB = "3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3"
CLUSTER, RG = "platform-aks", "rg-platform"
VNET = f"/subscriptions/{SUB}/resourceGroups/rg-network/providers/Microsoft.Network/virtualNetworks/vnet-spoke"
NODES, PODS = f"{VNET}/subnets/snet-nodes", f"{VNET}/subnets/snet-pods"
# The owners' system pool: 3 nodes of 50 pods each.
OWN_POOLS = StubResponse(200, {"value": [
    arm_agent_pool(SUB, RG, CLUSTER, "system", vmSize="Standard_D8ds_v5", count=3, mode="System", maxPods=50,
                   vnetSubnetID=NODES),
]})


@pytest.fixture
def arm(monkeypatch):
    with reached_arm(monkeypatch, SUB) as stub:
        yield stub


def existing(tmp_path, pool_extra: str = "") -> str:
    """An existing cluster with one T4 pool of up to 8 nodes in the system pool's subnet."""
    path = write_stack(tmp_path, 
        f"config:\n  azure-native:location: {REGION}\n  gpushare:cluster:\n    name: {CLUSTER}\n"
        f"    resourceGroup: {RG}\n    existing: true\n  gpushare:pools:\n"
        f"    - {{name: t4ts, vmSize: {T4}, autoscale: {{min: 1, max: 8}}{pool_extra}}}\n", "Pulumi.existing.yaml")
    return str(path)


def subnet_rows(tmp_path, capsys, arm, network: dict, system_pool: dict | None = None, pool_extra: str = "",
                expect: int = 0) -> dict[str, dict]:
    serve_region(arm, SUB, RG, CLUSTER, pools=OWN_POOLS)
    serve_existing_cluster(arm, SUB, RG, CLUSTER, arm_existing_cluster(
        SUB, RG, CLUSTER, subnet_id=NODES, network=network, system_pool=system_pool))
    assert main(["preflight", existing(tmp_path, pool_extra), "--json"]) == expect
    return {c["subject"]: c for c in json.loads(capsys.readouterr().out)["checks"] if c["check"] == "subnet"}


def test_classic_azure_cni_counts_one_address_per_node_and_per_pod_with_the_system_pools_surge(arm, tmp_path, capsys):
    # /24: 256 - 5 reserved - 153 in use (3 system nodes x (1 + 50 pods)) = 98 free. The T4 pool's 8 nodes at AKS's
    # default 30 pods take 8 x 31 = 248, the system pool's one surge node 51: 299. Overlay would count 8.
    arm.route(NODES, StubResponse(200, arm_subnet(NODES, "10.1.0.0/24", 153)))

    rows = subnet_rows(tmp_path, capsys, arm, {"networkPluginMode": None, "networkDataplane": None,
                                                "networkPolicy": None}, expect=1)

    row = rows["vnet-spoke/snet-nodes"]
    assert row["verdict"] == "fail"
    assert row["detail"] == (
        "10.1.0.0/24: 256 addresses - 5 Azure reserves - 153 in use = 98 free; the pools can add nodes taking 299 "
        "addresses (t4ts 8 x 31; system pool 3 + 1 surge - 3 running x 51), 1 + maxPods per node with Azure CNI (node "
        "subnet) (networkPlugin azure): short by 201")
    assert "maxPods" in row["fix"]


def test_classic_azure_cni_uses_the_pools_own_max_pods(arm, tmp_path, capsys):
    # 8 x (1 + 10) + 51 = 139 <= 512 - 5 - 153 = 354.
    arm.route(NODES, StubResponse(200, arm_subnet(NODES, "10.1.0.0/23", 153)))

    rows = subnet_rows(tmp_path, capsys, arm, {"networkPluginMode": None}, pool_extra=", maxPods: 10")

    assert rows["vnet-spoke/snet-nodes"]["verdict"] == "pass"
    assert "taking 139 addresses (t4ts 8 x 11;" in rows["vnet-spoke/snet-nodes"]["detail"]


def test_dynamic_pod_ip_allocation_counts_nodes_in_the_node_subnet_and_pods_in_the_pod_subnet(arm, tmp_path, capsys):
    arm.route(NODES, StubResponse(200, arm_subnet(NODES, "10.1.0.0/28", 3)))  # 16 - 5 - 3 = 8 free
    arm.route(PODS, StubResponse(200, arm_subnet(PODS, "10.2.0.0/22", 150)))  # 1024 - 5 - 150 = 869 free

    rows = subnet_rows(tmp_path, capsys, arm, {"networkPluginMode": None}, {"podSubnetID": PODS}, expect=1)

    nodes, pods = rows["vnet-spoke/snet-nodes"], rows["vnet-spoke/snet-pods"]
    # Nodes: 8 + the system pool's surge node = 9 > 8 free.
    assert (nodes["verdict"], nodes["detail"].split("; ", 1)[1]) == (
        "fail", "the pools can add 9 nodes (t4ts 8; system pool 3 + 1 surge - 3 running), one address each with Azure "
                "CNI with dynamic pod IP allocation (networkPlugin azure, podSubnetID snet-pods): short by 1")
    # Pods: 8 x 110 (AKS's default with a pod subnet) + 1 x 50 = 930 > 869 free.
    assert pods["verdict"] == "fail"
    assert pods["detail"].endswith(
        "the pools' pods can take 930 addresses (t4ts 8 x 110 pods; system pool 3 + 1 surge - 3 running x 50 pods), "
        "maxPods per node in the pod subnet with Azure CNI with dynamic pod IP allocation (networkPlugin azure, "
        "podSubnetID snet-pods): short by 61")
    assert arm.count(PODS) == 1


def test_static_block_pod_allocation_takes_whole_blocks_of_16(arm, tmp_path, capsys):
    arm.route(NODES, StubResponse(200, arm_subnet(NODES, "10.1.0.0/24", 3)))
    arm.route(PODS, StubResponse(200, arm_subnet(PODS, "10.2.0.0/22", 0)))

    rows = subnet_rows(tmp_path, capsys, arm, {"networkPluginMode": None},
                       {"podSubnetID": PODS, "podIPAllocationMode": "StaticBlock"}, pool_extra=", maxPods: 30")

    # 30 pods are two /28 blocks: 32 addresses per node.
    assert "(t4ts 8 x 32 pods; system pool 3 + 1 surge - 3 running x 64 pods)" in rows["vnet-spoke/snet-pods"]["detail"]


def test_kubenet_counts_one_address_per_node(arm, tmp_path, capsys):
    arm.route(NODES, StubResponse(200, arm_subnet(NODES, "10.1.0.0/28", 3)))  # 8 free

    rows = subnet_rows(tmp_path, capsys, arm, {"networkPlugin": "kubenet", "networkPluginMode": None,
                                                "networkDataplane": None, "networkPolicy": None})

    row = rows["vnet-spoke/snet-nodes"]
    assert row["verdict"] == "pass"
    assert row["detail"].endswith("the pools can add 8 nodes (t4ts 8), one address each with kubenet (networkPlugin "
                                  "kubenet)")


def test_a_cni_of_its_own_is_counted_per_node_and_warned_about(arm, tmp_path, capsys):
    arm.route(NODES, StubResponse(200, arm_subnet(NODES, "10.1.0.0/24", 3)))

    rows = subnet_rows(tmp_path, capsys, arm, {"networkPlugin": "none", "networkPluginMode": None,
                                                "networkDataplane": None, "networkPolicy": None})

    assert rows["vnet-spoke/snet-nodes"]["verdict"] == "warn"
    assert "(networkPlugin none) is not one gpushare knows" in rows["vnet-spoke/snet-nodes"]["detail"]
