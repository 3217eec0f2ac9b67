"""`gpushare:cluster.existing`, `resourceGroupExists`, `network`, `apiServer.private` and a pool's `subnetId`: what
they build, and each bad input with its key, value, rule and fix."""

from __future__ import annotations

import pytest

from gpushare.azure import cluster_baseline
from gpushare.model.stack import Network, OutboundType, pool_subnet
from gpushare.stackfile import network_config
from tests.stackfile.test_config import assert_problems, cluster, parse, problems_of, raw_with

C = "gpushare:cluster"
SUB = "3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3"
VNET = f"/subscriptions/{SUB}/resourceGroups/rg-network/providers/Microsoft.Network/virtualNetworks/vnet-spoke"
NODES, GPU = f"{VNET}/subnets/snet-nodes", f"{VNET}/subnets/snet-gpu"
OTHER_VNET_SUBNET = NODES.replace("vnet-spoke", "vnet-hub")


def pool(**changes):
    return lambda raw: raw["gpushare:pools"][0].update(changes)


def test_the_offline_defaults_are_the_baselines():
    assert network_config.POD_CIDR_FOR_CHECKS == cluster_baseline.POD_CIDR
    assert network_config.DEFAULT_SERVICE_CIDR == cluster_baseline.SERVICE_CIDR


def test_existing_cluster_is_read_with_its_group():
    got = parse(raw_with(cluster(name="platform-aks", resourceGroup="rg-platform", existing=True))).cluster
    assert (got.name, got.resource_group, got.existing, got.resource_group_exists) == (
        "platform-aks", "rg-platform", True, True)


@pytest.mark.parametrize("key, value, words", [
    ("tier", "Free", "preflight"),
    ("upgrades", {"channel": "stable"}, "upgrade channels"),
    ("systemPool", {"count": 3}, "system pool"),
    ("kubernetesVersion", "1.33", "never upgrades"),
    ("apiServer", {"authorizedIpRanges": ["203.0.113.0/24"]}, "API server"),
    ("network", {"subnetId": NODES}, "subnetId"),
])
def test_existing_refuses_what_only_a_created_cluster_can_honour(key, value, words):
    problems = problems_of(raw_with(cluster(resourceGroup="rg", existing=True, **{key: value})))
    assert_problems(problems, [(f"{C}.{key}", ["not with existing: true", words, "remove it"])])


def test_existing_refuses_admin_groups_but_takes_deployers():
    problems = problems_of(raw_with(cluster(resourceGroup="rg", existing=True, access={
        "adminGroups": ["0b5e7c1a-2f4d-4e8a-9c3b-6d1f2a7e5b90"]})))
    assert_problems(problems, [(f"{C}.access.adminGroups", ["not with existing: true", "out of band"])])
    stack = parse(raw_with(cluster(resourceGroup="rg", existing=True, access={
        "deployers": [{"objectId": "0b5e7c1a-2f4d-4e8a-9c3b-6d1f2a7e5b90", "type": "Group"}]})))
    assert [d.object_id for d in stack.cluster.access.deployers] == ["0b5e7c1a-2f4d-4e8a-9c3b-6d1f2a7e5b90"]


def test_existing_needs_the_resource_group():
    assert_problems(problems_of(raw_with(cluster(existing=True))),
                    [(f"{C}.resourceGroup", ["required", "az aks list"])])


def test_pre_created_resource_group():
    assert parse(raw_with(cluster(resourceGroupExists=True))).cluster.resource_group_exists is True
    assert_problems(problems_of(raw_with(cluster(resourceGroupExists="yes"))),
                    [(f"{C}.resourceGroupExists", ["true or false"])])


def test_network_and_pool_subnets():
    stack = parse(raw_with(
        cluster(network={"subnetId": NODES, "serviceCidr": "172.16.0.0/16", "dnsServiceIp": "172.16.0.10",
                         "outboundType": "userDefinedRouting"}),
        lambda raw: raw["gpushare:pools"].append({"name": "t4b", "vmSize": "Standard_NC4as_T4_v3", "subnetId": GPU})))
    assert stack.cluster.network == Network(NODES, "172.16.0.0/16", "172.16.0.10", OutboundType.USER_DEFINED_ROUTING)
    assert [pool_subnet(stack, p) for p in stack.pools] == [NODES, GPU]


@pytest.mark.parametrize("mutation, path, words", [
    (cluster(network={"subnetId": f"{VNET}/snet-nodes"}), f"{C}.network.subnetId",
     ["subnet's ARM ID", "/virtualNetworks/<vnet>/subnets/<subnet>", "az network vnet subnet show"]),
    (pool(subnetId="snet-gpu"), "gpushare:pools[0].subnetId", ["subnet's ARM ID", "'snet-gpu'"]),
    (lambda raw: (cluster(network={"subnetId": NODES})(raw), pool(subnetId=OTHER_VNET_SUBNET)(raw)),
     "gpushare:pools[0].subnetId", ["vnet-hub", "vnet-spoke", "one VNet"]),
    (cluster(network={"serviceCidr": "10.244.0.0/20", "dnsServiceIp": "10.244.0.10"}), f"{C}.network.serviceCidr",
     ["overlaps the pod range 10.244.0.0/16"]),
    (cluster(network={"serviceCidr": "172.16.0.0/16", "dnsServiceIp": "10.0.0.10"}), f"{C}.network.dnsServiceIp",
     ["10.0.0.10 is outside the service range 172.16.0.0/16", "172.16.0.10"]),
    (cluster(network={"dnsServiceIp": "10.0.0.1"}), f"{C}.network.dnsServiceIp", ["first", "reserves"]),
    (cluster(network={"serviceCidr": "172.16.0.0/16"}), f"{C}.network.dnsServiceIp", ["required", "172.16.0.10"]),
    (cluster(network={"serviceCidr": "8.8.0.0/16", "dnsServiceIp": "8.8.0.10"}), f"{C}.network.serviceCidr",
     ["private IPv4 CIDR"]),
    (cluster(network={"outboundType": "userDefinedRouting"}), f"{C}.network.outboundType",
     ["needs network.subnetId", "route table"]),
    (cluster(network={"outboundType": "managedNATGateway", "subnetId": NODES}), f"{C}.network.outboundType",
     ["cannot be used with network.subnetId"]),
    (cluster(network={"outboundType": "nat"}), f"{C}.network.outboundType",
     ["loadBalancer, userDefinedRouting, managedNATGateway"]),
    (cluster(apiServer={"private": True, "authorizedIpRanges": ["203.0.113.0/24"]}),
     f"{C}.apiServer.authorizedIpRanges", ["not with private: true", "AKS refuses"]),
    (cluster(apiServer={"privateDnsZone": "system"}), f"{C}.apiServer.privateDnsZone", ["only for a private cluster"]),
    (cluster(apiServer={"private": True, "privateDnsZone": "my.zone"}), f"{C}.apiServer.privateDnsZone",
     ["must be system or none", "'my.zone'"]),
    # aks-docs private-clusters.md: a custom zone needs a user-assigned identity; gpushare's cluster has a
    # system-assigned one, so AKS would refuse the cluster at creation.
    (cluster(apiServer={"private": True, "privateDnsZone": (
        f"/subscriptions/{SUB}/resourceGroups/rg-dns/providers/Microsoft.Network/privateDnsZones/"
        "platform.privatelink.westeurope.azmk8s.io")}), f"{C}.apiServer.privateDnsZone",
     ["user-assigned identity", "system-assigned one", "use system", "or none"]),
    # aks-docs concepts-network-cni-overview.md: reserved for every cluster; 172.16.0.0/12 contains two of them.
    (cluster(network={"serviceCidr": "172.16.0.0/12", "dnsServiceIp": "172.16.0.10"}), f"{C}.network.serviceCidr",
     ["overlaps 172.30.0.0/16, 172.31.0.0/16, which AKS reserves", "10.0.0.0/16"]),
    (cluster(network={"serviceCidr": "169.254.0.0/16", "dnsServiceIp": "169.254.0.10"}), f"{C}.network.serviceCidr",
     ["169.254.0.0/16 overlaps 169.254.0.0/16, which AKS reserves"]),
    # aks-docs node-pool-unique-subnet.md: every pool in one VNet; without network.subnetId AKS makes the VNet.
    (pool(subnetId=GPU), "gpushare:pools[0].subnetId",
     ["names a subnet, but the cluster has no gpushare:cluster.network.subnetId", "one VNet",
      "set network.subnetId to a subnet of vnet-spoke"]),
])
def test_bad_network_input_names_key_value_rule_and_fix(mutation, path, words):
    assert_problems(problems_of(raw_with(mutation)), [(path, words)])


@pytest.mark.parametrize("zone", ["system", "none"])
def test_private_cluster(zone):
    api = parse(raw_with(cluster(apiServer={"private": True, "privateDnsZone": zone}))).cluster.api_server
    assert (api.private, api.private_dns_zone, api.authorized_ip_ranges) == (True, zone, ())


def test_an_existing_clusters_pools_may_name_subnets_preflight_checks():
    """An existing cluster's VNet is not in the stack: a pool's subnetId is checked against it by `preflight`."""
    stack = parse(raw_with(cluster(resourceGroup="rg", existing=True), pool(subnetId=GPU)))
    assert stack.pools[0].subnet_id == GPU


def test_an_existing_clusters_pools_in_two_vnets_are_refused_offline():
    """The cluster's VNet is read only by preflight, but two pools in different VNets cannot both be in it."""
    def second_pool(raw):
        raw["gpushare:pools"].append({**raw["gpushare:pools"][0], "name": "t4b", "subnetId": OTHER_VNET_SUBNET})
    found = problems_of(raw_with(cluster(resourceGroup="rg", existing=True), pool(subnetId=GPU), second_pool))
    assert [(p.path, p.message) for p in found] == [(
        "gpushare:pools[1].subnetId",
        "pool t4b's subnet is in VNet vnet-hub, pool t4's in vnet-spoke: AKS puts every node pool of a cluster in one "
        "VNet, the cluster's; use subnets of the VNet of its system pool")]


def test_a_new_clusters_pool_in_another_vnet_than_the_clusters_subnet_is_refused_with_both_vnets():
    """aks-docs node-pool-unique-subnet.md: every node pool of a cluster in one VNet, for a cluster gpushare
    creates as for an existing one: naming a subnet of another VNet is refused offline, not left to AKS."""
    hub = f"/subscriptions/{SUB}/resourceGroups/rg-network/providers/Microsoft.Network/virtualNetworks/vnet-hub"
    problems = problems_of(raw_with(cluster(network={"subnetId": NODES}), pool(subnetId=f"{hub}/subnets/snet-gpu")))
    assert_problems(problems, [("gpushare:pools[0].subnetId",
                                ["is in VNet vnet-hub", "the cluster's (gpushare:cluster.network.subnetId) is in "
                                 "vnet-spoke", "one VNet", f"use a subnet of {VNET}"])])
