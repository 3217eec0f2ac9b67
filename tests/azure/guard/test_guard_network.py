"""The guard on the settings AKS fixes for your own network and a private API server: a pool's `vnetSubnetID`, the
cluster's outbound type and private API server. Each is refused on a live pool or cluster with its way forward."""

from __future__ import annotations

import dataclasses

from gpushare.azure.deployed import read_file
from gpushare.azure.deployed_cluster import DeployedCluster
from gpushare.azure.guard.cluster import cluster_violations
from gpushare.azure.guard.guard_runs import evaluate
from gpushare.model.stack import ApiServer, Network, OutboundType
from tests.azure.guard_builders import MIG_POOL, SYSTEM_POOL, deployed_like, gpu_stack

VNET = ("/subscriptions/3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3/resourceGroups/rg-net/providers/Microsoft.Network/"
        "virtualNetworks/vnet")
NODES, GPU = f"{VNET}/subnets/snet-nodes", f"{VNET}/subnets/snet-gpu"
CLUSTER_AS_WANTED = DeployedCluster(
    name="gpushare-dev", dns_prefix="gpushare-dev", enable_rbac=True, network_plugin="azure",
    network_plugin_mode="overlay", network_dataplane="cilium", network_policy="cilium", pod_cidr="10.244.0.0/16",
    service_cidr="10.0.0.0/16", dns_service_ip="10.0.0.10", node_os_upgrade_channel="NodeImage")


def with_subnet(subnet: str | None):
    return gpu_stack(dataclasses.replace(MIG_POOL, subnet_id=subnet))


def test_moving_a_live_pool_to_another_subnet_is_refused_with_the_migration_advice():
    report = evaluate(with_subnet(GPU), [SYSTEM_POOL, deployed_like(MIG_POOL, vnet_subnet_id=NODES)], "azure")

    (violation,) = report.violations
    assert (violation.pool, violation.field, violation.deployed, violation.wanted) == (
        "a100mig", "vnetSubnetID", NODES, GPU)
    assert "AKS cannot move an existing node pool to another subnet" in violation.message
    assert "blue/green: add a pool with a new name and vnetSubnetID" in violation.message
    assert "recreate: true" in violation.message


def test_same_subnet_in_another_case_is_no_change_and_a_pool_naming_none_is_not_compared():
    assert evaluate(with_subnet(GPU.upper()), [deployed_like(MIG_POOL, vnet_subnet_id=GPU)], "azure").violations == ()
    assert evaluate(with_subnet(None), [deployed_like(MIG_POOL, vnet_subnet_id=GPU)], "azure").violations == ()


def test_the_cli_shape_of_vnet_subnet_id_is_read(tmp_path):
    path = tmp_path / "pools.json"
    path.write_text(f'[{{"name": "a100mig", "vmSize": "Standard_ND96asr_v4", "vnetSubnetId": "{GPU}"}}]')
    (pool,) = read_file(path)
    assert pool.vnet_subnet_id == GPU


def cluster_stack(network: Network = Network(), api: ApiServer = ApiServer()):
    stack = gpu_stack()
    return dataclasses.replace(stack, cluster=dataclasses.replace(stack.cluster, network=network, api_server=api))


def test_outbound_type_and_private_api_server_are_fixed_at_creation():
    deployed = dataclasses.replace(CLUSTER_AS_WANTED, outbound_type="loadBalancer")
    udr = cluster_violations(cluster_stack(Network(NODES, outbound_type=OutboundType.USER_DEFINED_ROUTING)), deployed)
    assert [(v.field, v.deployed, v.wanted) for v in udr] == [
        ("networkProfile.outboundType", "loadBalancer", "userDefinedRouting")]
    assert "AKS fixes the outbound type when it creates the cluster" in udr[0].message
    assert "deploy a new cluster" in udr[0].message

    private = cluster_violations(cluster_stack(api=ApiServer(private=True)), deployed)
    assert [(v.field, v.deployed, v.wanted) for v in private] == [
        ("apiServerAccessProfile.enablePrivateCluster", "false", "true")]


def test_a_private_cluster_as_deployed_passes():
    deployed = dataclasses.replace(CLUSTER_AS_WANTED, private_cluster=True, private_dns_zone="system")
    assert cluster_violations(cluster_stack(api=ApiServer(private=True)), deployed) == []
    zone = cluster_violations(cluster_stack(api=ApiServer(private=True, private_dns_zone="none")), deployed)
    assert [(v.field, v.deployed, v.wanted) for v in zone] == [("apiServerAccessProfile.privateDNSZone", "system",
                                                                "none")]
