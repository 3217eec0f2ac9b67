"""The cluster's create-only settings: read live with the real ContainerServiceClient (one GET against the local
HTTPS stub) and compared with what the stack deploys."""

from __future__ import annotations

import dataclasses
import functools

import pytest

from gpushare.azure.arm import ArmTarget, AzureReads
from gpushare.azure.deployed import DeployedPool
from gpushare.azure.deployed_cluster import DeployedCluster, read_live_cluster
from gpushare.azure.guard.cluster import CLUSTER, check_cluster, check_stack_for_program, cluster_violations
from gpushare.azure.guard.guard_report import GuardReport, raise_for_violations
from gpushare.model.environment_variables import DEPLOYED_FILE_ENV, OFFLINE_ENV
from gpushare.errors import AzureReadError, GuardViolationError
from gpushare.model.stack import GuardMode
from tests.azure.guard_builders import gpu_stack
from tests.azure.test_deployed_live import CLUSTER_AS_WANTED
from tests.azure_stub import (
    CLUSTER_IDENTITY,
    ArmStub,
    StaticTokenCredential,
    StubResponse,
    agent_pools_path,
    arm_error,
    arm_managed_cluster,
    managed_cluster_id,
)

SUB = "3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3"
RG = "rg-gpushare-dev"
NAME = "gpushare-dev"
CLUSTER_PATH = managed_cluster_id(SUB, RG, NAME)
POOLS = agent_pools_path(SUB, RG, NAME)
STACK = gpu_stack()


def arm_cluster(**network) -> dict:
    return arm_managed_cluster(SUB, RG, NAME, **network)


@pytest.fixture
def arm():
    with ArmStub() as stub:
        yield stub


def settings(arm: ArmStub) -> dict:
    return {"credential": StaticTokenCredential(), "retry_total": 1, "retry_backoff_factor": 0.01,
            **arm.client_kwargs()}


def test_reads_the_cluster_in_one_get(arm):
    arm.route(CLUSTER_PATH, StubResponse(200, arm_cluster()))
    deployed = read_live_cluster(SUB, RG, NAME, **settings(arm))
    assert deployed == DeployedCluster(
        name=NAME, dns_prefix=NAME, enable_rbac=True, network_plugin="azure", network_plugin_mode="overlay",
        network_dataplane="cilium", network_policy="cilium", pod_cidr="10.244.0.0/16", service_cidr="10.0.0.0/16",
        dns_service_ip="10.0.0.10", node_os_upgrade_channel="NodeImage", outbound_type="loadBalancer",
        tier="Standard", upgrade_channel="patch", disable_local_accounts=True, entra_managed=True, azure_rbac=True,
        kubernetes_version="1.33", identity_principal_id=CLUSTER_IDENTITY,
        system_pool=DeployedPool(name="system", vm_size="Standard_D4ds_v5", mode="System", count=2))
    (request,) = arm.requests
    assert (request.method, request.path) == ("GET", CLUSTER_PATH)


@pytest.mark.parametrize("code", ["ResourceNotFound", "ResourceGroupNotFound"])
def test_missing_cluster_is_a_first_deployment(arm, code):
    arm.route(CLUSTER_PATH, StubResponse(404, arm_error(code, "not found")))
    assert read_live_cluster(SUB, RG, NAME, **settings(arm)) is None
    assert check_cluster(STACK, GuardReport("azure"), SUB, **settings(arm)) == GuardReport("azure")


def test_cluster_as_wanted_passes(arm):
    arm.route(CLUSTER_PATH, StubResponse(200, arm_cluster()))
    report = check_cluster(STACK, GuardReport("azure"), SUB, **settings(arm))
    assert (report.violations, report.notes) == ((), ())


def test_a_node_os_channel_change_is_a_note_about_reimaging(arm):
    deployed = arm_cluster()
    deployed["properties"]["autoUpgradeProfile"]["nodeOSUpgradeChannel"] = "Unmanaged"
    arm.route(CLUSTER_PATH, StubResponse(200, deployed))
    report = check_cluster(STACK, GuardReport("azure", notes=("pool note",)), SUB, **settings(arm))
    assert report.violations == ()
    assert report.notes[0] == "pool note"
    assert "node OS upgrade channel Unmanaged -> NodeImage" in report.notes[1]
    assert "reimages every node" in report.notes[1]


def test_a_kubenet_cluster_is_stopped_naming_each_field_and_the_migration(arm):
    """A cluster created before the hardened baseline with kubenet: AKS cannot switch its CNI as a side effect."""
    arm.route(CLUSTER_PATH, StubResponse(200, arm_cluster(networkPlugin="kubenet", networkPluginMode=None,
                                                          networkDataplane=None, networkPolicy=None)))
    report = check_cluster(STACK, GuardReport("azure"), SUB, **settings(arm))
    assert [(v.pool, v.field, v.deployed, v.wanted) for v in report.violations] == [
        (CLUSTER, "networkProfile.networkPlugin", "kubenet", "azure"),
        (CLUSTER, "networkProfile.networkPluginMode", "(none)", "overlay"),
        (CLUSTER, "networkProfile.networkDataplane", "azure", "cilium"),
        (CLUSTER, "networkProfile.networkPolicy", "none", "cilium"),
    ]
    with pytest.raises(GuardViolationError) as raised:
        raise_for_violations(report)
    message = str(raised.value)
    assert "stack dev, cluster gpushare-dev: networkProfile.networkPlugin kubenet -> azure." in message
    assert f"az aks update -g {RG} -n {NAME} --network-plugin azure --network-plugin-mode overlay" in message
    assert "--network-dataplane cilium" in message
    assert "pulumi refresh --run-program" in message


@pytest.mark.parametrize(("field", "live", "deployed"), [
    ("dnsPrefix", {"dnsPrefix": "other-prefix"}, "other-prefix"),
    ("enableRBAC", {"enableRBAC": False}, "false"),
    ("networkProfile.podCidr", {"podCidr": "192.168.0.0/16"}, "192.168.0.0/16"),
    ("networkProfile.serviceCidr", {"serviceCidr": "172.16.0.0/16"}, "172.16.0.0/16"),
    ("networkProfile.dnsServiceIP", {"dnsServiceIP": "172.16.0.10"}, "172.16.0.10"),
], ids=["dns-prefix", "rbac", "pod-cidr", "service-cidr", "dns-service-ip"])
def test_each_create_only_setting_is_named(field, live, deployed):
    cluster = DeployedCluster(
        name=NAME, dns_prefix=NAME, enable_rbac=True, network_plugin="azure", network_plugin_mode="overlay",
        network_dataplane="cilium", network_policy="cilium", pod_cidr="10.244.0.0/16", service_cidr="10.0.0.0/16",
        dns_service_ip="10.0.0.10")
    changes = {"dns_prefix": live.get("dnsPrefix", NAME), "enable_rbac": live.get("enableRBAC", True),
               "pod_cidr": live.get("podCidr", "10.244.0.0/16"), "service_cidr": live.get("serviceCidr", "10.0.0.0/16"),
               "dns_service_ip": live.get("dnsServiceIP", "10.0.0.10")}
    (violation,) = cluster_violations(STACK, dataclasses.replace(cluster, **changes))
    assert (violation.field, violation.deployed) == (field, deployed)
    assert f"{field} {deployed} -> " in violation.message
    assert "new cluster" in violation.message


def test_case_and_unreported_defaults_are_not_changes():
    """AKS may report enums in another case and leave out what it defaulted (RBAC on)."""
    cluster = DeployedCluster(name=NAME, dns_prefix=NAME.upper(), enable_rbac=None, network_plugin="Azure",
                              network_plugin_mode="Overlay", network_dataplane="Cilium", network_policy="Cilium",
                              pod_cidr="10.244.0.0/16", service_cidr="10.0.0.0/16", dns_service_ip="10.0.0.10")
    assert cluster_violations(STACK, cluster) == []


def test_strict_fails_when_the_cluster_cannot_be_read(arm):
    arm.route(CLUSTER_PATH, StubResponse(403, arm_error("AuthorizationFailed", "no read on managedClusters")))
    with pytest.raises(AzureReadError) as raised:
        check_cluster(STACK, GuardReport("azure"), SUB, **settings(arm))
    assert f"could not read AKS cluster {NAME}" in str(raised.value)
    assert "Microsoft.ContainerService/managedClusters/read" in str(raised.value)  # the role it needs
    assert "gpushare:guard: warn" in str(raised.value)


def test_warn_carries_on_when_the_cluster_cannot_be_read(arm):
    arm.route(CLUSTER_PATH, StubResponse(403, arm_error("AuthorizationFailed", "no read on managedClusters")))
    report = check_cluster(dataclasses.replace(STACK, guard=GuardMode.WARN), GuardReport("azure"), SUB,
                           **settings(arm))
    assert report.violations == ()
    assert len(report.warnings) == 1 and "could not read AKS cluster" in report.warnings[0]


def test_malformed_cluster_is_an_azure_read_error(arm):
    arm.route(CLUSTER_PATH, StubResponse(200, {**arm_cluster(), "properties": {"enableRBAC": "yes"}}))
    with pytest.raises(AzureReadError, match="enableRBAC"):
        read_live_cluster(SUB, RG, NAME, **settings(arm))


def test_program_guard_reads_pools_once_and_the_cluster_once(arm, monkeypatch):
    """Under `pulumi preview`: one node-pool list, one cluster GET, with the run's one target and credential."""
    # The stub's CA trusted as the program trusts a CA: through requests' REQUESTS_CA_BUNDLE.
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", arm.ca_path)
    arm.route(POOLS, CLUSTER_AS_WANTED)
    arm.route(CLUSTER_PATH, StubResponse(200, arm_cluster(networkDataplane="azure")))
    asked = []
    reads = AzureReads(ArmTarget(SUB, endpoint=arm.base_url), StaticTokenCredential())
    report = check_stack_for_program(STACK, {}, functools.cache(lambda: asked.append(1) or reads))
    assert [v.field for v in report.violations] == ["networkProfile.networkDataplane"]
    assert (arm.count(POOLS), arm.count(CLUSTER_PATH), len(asked)) == (1, 1, 1)


@pytest.mark.parametrize("environ", [{OFFLINE_ENV: "1"}, {DEPLOYED_FILE_ENV: "nodepools.json"}])
def test_offline_and_file_runs_do_not_read_the_cluster(environ, monkeypatch):
    import gpushare.azure.guard.cluster
    import gpushare.azure.guard.guard_runs

    def must_not_read(*args, **kwargs):
        raise AssertionError("the cluster was read")

    monkeypatch.setattr(gpushare.azure.guard.cluster, "read_live_cluster", must_not_read)
    monkeypatch.setattr(gpushare.azure.guard.guard_runs, "check_file", lambda stack, path, facts=None: GuardReport(str(path)))
    check_stack_for_program(STACK, environ, lambda: pytest.fail("Azure was asked"))


SPOKE = f"/subscriptions/{SUB}/resourceGroups/rg-net/providers/Microsoft.Network/virtualNetworks/spoke/subnets"


def with_network(subnet: str | None):
    return dataclasses.replace(STACK, cluster=dataclasses.replace(
        STACK.cluster, network=dataclasses.replace(STACK.cluster.network, subnet_id=subnet)))


@pytest.mark.parametrize(("stack", "profile", "field", "deployed", "wanted"), [
    (STACK, {"vmSize": "Standard_D8ds_v5"}, "agentPoolProfiles[system].vmSize", "Standard_D8ds_v5",
     "Standard_D4ds_v5"),
    (with_network(f"{SPOKE}/nodes"), {}, "agentPoolProfiles[system].vnetSubnetID", "none (a VNet AKS manages)",
     f"{SPOKE}/nodes"),
    (with_network(f"{SPOKE}/nodes2"), {"vnetSubnetID": f"{SPOKE}/nodes"}, "agentPoolProfiles[system].vnetSubnetID",
     f"{SPOKE}/nodes", f"{SPOKE}/nodes2"),
], ids=["vm-size", "subnet-added", "subnet-moved"])
def test_the_system_pools_size_and_subnet_are_fixed(arm, stack, profile, field, deployed, wanted):
    """The system pool lives inside the cluster resource: a change would reach AKS as a cluster update it refuses
    (aks-docs resize-node-pool.md: resizing in place is a preview; node-pool-unique-subnet.md)."""
    cluster = arm_cluster()
    cluster["properties"]["agentPoolProfiles"][0].update(profile)
    arm.route(CLUSTER_PATH, StubResponse(200, cluster))
    (violation,) = cluster_violations(stack, read_live_cluster(SUB, RG, NAME, **settings(arm)))
    assert (violation.field, violation.deployed, violation.wanted) == (field, deployed, wanted)
    assert "keep the deployed" in violation.message


def test_the_system_pool_is_compared_case_insensitively_and_only_when_reported():
    cluster = DeployedCluster(name=NAME, dns_prefix=NAME, network_plugin="azure", network_plugin_mode="overlay",
                              network_dataplane="cilium", network_policy="cilium", pod_cidr="10.244.0.0/16",
                              service_cidr="10.0.0.0/16", dns_service_ip="10.0.0.10")
    assert cluster_violations(STACK, dataclasses.replace(
        cluster, system_pool=DeployedPool(name="system", vm_size="standard_d4ds_v5"))) == []
    assert cluster_violations(with_network(f"{SPOKE}/nodes"), cluster) == []


def test_the_system_pool_is_found_by_its_mode_wherever_the_cluster_lists_it(arm):
    """`agentPoolProfiles` lists every pool of the cluster, GPU pools too, in no documented order: the system pool's
    size and subnet are read from the one in mode System, or a GPU pool listed first would be reported as a change to
    the system pool."""
    cluster = arm_cluster()
    (system,) = cluster["properties"]["agentPoolProfiles"]
    cluster["properties"]["agentPoolProfiles"] = [
        {"name": "t4ts", "mode": "User", "count": 1, "vmSize": "Standard_NC4as_T4_v3", "vnetSubnetID": f"{SPOKE}/gpu"},
        system]
    arm.route(CLUSTER_PATH, StubResponse(200, cluster))
    deployed = read_live_cluster(SUB, RG, NAME, **settings(arm))
    assert (deployed.system_pool.vm_size, deployed.system_subnet_id) == ("Standard_D4ds_v5", None)
    assert cluster_violations(STACK, deployed) == []
