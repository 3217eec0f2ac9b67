"""The real `__main__.py` under the mock engine for an existing cluster (`stacks/Pulumi.existing.yaml`), a cluster in
subnets of your own, a private cluster and a pre-created resource group; and the existing cluster's reads going to
the local ARM stub as under `pulumi preview`."""

from __future__ import annotations

import pulumi
import pytest
import yaml

from gpushare.render.mock_engine import (
    MOCK_CLUSTER_PRINCIPAL_ID,
    MOCK_EXISTING_SUBNET,
    MOCK_SUBSCRIPTION,
    MOCK_USER_TOKEN,
    GpushareMocks,
    run_program,
)
from gpushare.stackfile.config import encode_engine_config, read_stack_file
from gpushare.stackfile.project import resolve_stack_file
from tests.azure.preflight_region import serve_region
from tests.azure_stub import (
    StubResponse,
    arm_agent_pool,
    arm_error,
    arm_existing_cluster,
    arm_maintenance_windows,
    arm_role_assignment,
    arm_subnet,
    maintenance_configurations_path,
    managed_cluster_id,
    reached_arm,
    role_assignments_path,
    serve_existing_cluster,
)

AGENT_POOL = "azure-native:containerservice:AgentPool"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
RESOURCE_GROUP = "azure-native:resources:ResourceGroup"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
PROVIDER = "pulumi:providers:kubernetes"
CLUSTER, RG = "platform-aks", "rg-platform"
VNET = f"/subscriptions/{MOCK_SUBSCRIPTION}/resourceGroups/rg-net/providers/Microsoft.Network/virtualNetworks/vnet"
NODES, GPU = f"{VNET}/subnets/snet-nodes", f"{VNET}/subnets/snet-gpu"
NETWORK_CONTRIBUTOR = "4d97b98b-1d4f-4787-a291-c67834d212e7"

LOCAL_ACCOUNT_KUBECONFIG = """apiVersion: v1
clusters:
- cluster: {certificate-authority-data: bW9jay1jYQ==, server: 'https://platform-aks.hcp.westeurope.azmk8s.invalid:443'}
  name: platform-aks
contexts:
- context: {cluster: platform-aks, user: clusterUser_rg-platform_platform-aks}
  name: platform-aks
current-context: platform-aks
kind: Config
users:
- name: clusterUser_rg-platform_platform-aks
  user: {client-certificate-data: Y2VydA==, client-key-data: a2V5}
"""


def existing_stack(**changes):
    raw = read_stack_file(resolve_stack_file("existing")).config
    raw["gpushare:cluster"].update(changes)
    return raw


DEPLOYER = "0b5e7c1a-2f4d-4e8a-9c3b-6d1f2a7e5b90"


@pytest.fixture(scope="module")
def existing():
    return run_program("existing", encode_engine_config(existing_stack(
        access={"deployers": [{"objectId": DEPLOYER, "type": "ServicePrincipal"}]})))


def test_existing_cluster_registers_no_cluster_and_no_resource_group(existing):
    assert existing.by_type(MANAGED_CLUSTER) == [] and existing.by_type(RESOURCE_GROUP) == []
    assert "azure-native:containerservice:getManagedCluster" in existing.invokes


def test_gpu_pools_are_added_to_the_named_cluster(existing):
    pools = existing.by_type(AGENT_POOL)
    assert [(p.inputs["agentPoolName"], p.inputs["resourceName"], p.inputs["resourceGroupName"]) for p in pools] == [
        ("t4ts", CLUSTER, RG), ("a100mig", CLUSTER, RG)]
    t4ts, a100mig = pools
    assert t4ts.inputs["vnetSubnetID"] == MOCK_EXISTING_SUBNET  # no subnetId: the subnet of the cluster's system pool
    assert a100mig.inputs["vnetSubnetID"].endswith("/virtualNetworks/vnet-spoke/subnets/snet-gpu")
    assert "vnetSubnetID" in a100mig.replace_on_changes and all(p.protect for p in pools)


def test_kubernetes_provider_is_built_from_the_existing_clusters_credentials(existing):
    (provider,) = existing.by_type(PROVIDER)
    assert provider.inputs["clusterIdentifier"] == (f"/subscriptions/{MOCK_SUBSCRIPTION}/resourceGroups/{RG}"
                                                    f"/providers/Microsoft.ContainerService/managedClusters/{CLUSTER}")
    assert [u["user"] for u in yaml.safe_load(provider.inputs["kubeconfig"])["users"]] == [{"token": MOCK_USER_TOKEN}]
    assert "azure-native:containerservice:listManagedClusterUserCredentials" in existing.invokes


def test_only_the_deployers_access_and_the_subnet_role_are_created_on_it(existing):
    assignments = {r.name: r for r in existing.by_type(ROLE_ASSIGNMENT)}
    assert sorted(assignments) == [f"cluster-deployer-{DEPLOYER}", "cluster-subnets-vnet-spoke-snet-gpu"]
    deployer = assignments[f"cluster-deployer-{DEPLOYER}"].inputs
    assert deployer["scope"].endswith(f"/managedClusters/{CLUSTER}") and deployer["principalId"] == DEPLOYER
    subnet = assignments["cluster-subnets-vnet-spoke-snet-gpu"].inputs
    assert subnet["principalId"] == MOCK_CLUSTER_PRINCIPAL_ID
    assert subnet["roleDefinitionId"].endswith(NETWORK_CONTRIBUTOR) and subnet["scope"].endswith("/snet-gpu")


def test_gpu_pools_on_a_cluster_with_a_pod_subnet_send_the_system_pools_pod_subnet(existing, monkeypatch):
    """A pool without `podSubnetID` has its "pod IPs statically assigned on the node subnet" (AKS API): classic
    Azure CNI on a cluster whose owners chose dynamic pod IP allocation, and the pod subnet preflight counted unused."""
    pods = MOCK_EXISTING_SUBNET.replace("snet-nodes", "snet-pods")
    monkeypatch.setattr(GpushareMocks, "existing_cluster", {"agentPoolProfiles": [
        {"name": "system", "mode": "System", "vmSize": "Standard_D4ds_v5", "count": 3,
         "vnetSubnetID": MOCK_EXISTING_SUBNET, "podSubnetID": pods}]})

    pools = run_program("existing", encode_engine_config(existing_stack())).by_type(AGENT_POOL)

    assert [p.inputs["podSubnetID"] for p in pools] == [pods, pods]
    assert all("podSubnetID" in p.replace_on_changes for p in pools)
    # Without one (the module's cluster: Azure CNI Overlay), none is sent.
    assert not any("podSubnetID" in p.inputs for p in existing.by_type(AGENT_POOL))


def test_local_accounts_cluster_keeps_its_client_certificate_and_is_said_to_be_below_baseline(monkeypatch):
    monkeypatch.setattr(GpushareMocks, "user_kubeconfig", LOCAL_ACCOUNT_KUBECONFIG)
    monkeypatch.setattr(GpushareMocks, "existing_cluster", {"aadProfile": None, "disableLocalAccounts": False})

    recording = run_program("existing", encode_engine_config(existing_stack()))

    (provider,) = recording.by_type(PROVIDER)
    assert yaml.safe_load(provider.inputs["kubeconfig"])["users"][0]["user"] == {
        "client-certificate-data": "Y2VydA==", "client-key-data": "a2V5"}
    assert any("below gpushare's baseline" in w and "--enable-aad" in w for w in recording.warnings), \
        recording.warnings


def test_local_accounts_cluster_keeps_its_client_certificate_with_kubelogin_asked_for(monkeypatch):
    """kubelogin speaks Entra ID only: on a cluster without it the certificate is still the one credential."""
    monkeypatch.setattr(GpushareMocks, "user_kubeconfig", LOCAL_ACCOUNT_KUBECONFIG)
    monkeypatch.setattr(GpushareMocks, "existing_cluster", {"aadProfile": None, "disableLocalAccounts": False})

    recording = run_program("existing", encode_engine_config(existing_stack(
        access={"kubernetesCredential": "kubelogin-azurecli"})))

    (provider,) = recording.by_type(PROVIDER)
    assert yaml.safe_load(provider.inputs["kubeconfig"])["users"][0]["user"] == {
        "client-certificate-data": "Y2VydA==", "client-key-data": "a2V5"}


def byo_subnet_stack():
    raw = read_stack_file(resolve_stack_file("prod")).config
    raw["gpushare:cluster"]["network"] = {"subnetId": NODES, "outboundType": "userDefinedRouting",
                                          "serviceCidr": "172.16.0.0/16", "dnsServiceIp": "172.16.0.10"}
    raw["gpushare:pools"][-1]["subnetId"] = GPU
    return raw


def test_byo_subnet_puts_the_system_pool_and_every_gpu_pool_in_it():
    recording = run_program("prod", encode_engine_config(byo_subnet_stack()))
    (cluster,) = recording.by_type(MANAGED_CLUSTER)
    (system,) = cluster.inputs["agentPoolProfiles"]
    assert system["vnetSubnetID"] == NODES
    network = cluster.inputs["networkProfile"]
    assert (network["outboundType"], network["serviceCidr"], network["dnsServiceIP"], network["networkPluginMode"]) \
        == ("userDefinedRouting", "172.16.0.0/16", "172.16.0.10", "overlay")
    pools = recording.by_type(AGENT_POOL)
    assert len(pools) == 3
    assert [p.inputs["vnetSubnetID"] for p in pools] == [NODES, NODES, GPU]
    assert sorted(r.name for r in recording.by_type(ROLE_ASSIGNMENT) if r.name.startswith("cluster-subnets")) == [
        "cluster-subnets-vnet-snet-gpu", "cluster-subnets-vnet-snet-nodes"]


def test_each_gpu_pool_is_created_after_the_role_on_its_own_subnet():
    """AKS checks the cluster identity's right to join the subnet when it creates the pool: the pool waits for the
    assignment on the subnet it joins, not on another subnet's."""
    recording = run_program("prod", encode_engine_config(byo_subnet_stack()))
    pools = recording.by_type(AGENT_POOL)
    waits = {p.inputs["vnetSubnetID"]: [d for d in p.depends_on if d.startswith("cluster-subnets")] for p in pools}
    assert waits == {NODES: ["cluster-subnets-vnet-snet-nodes"], GPU: ["cluster-subnets-vnet-snet-gpu"]}


def test_a_pool_in_aks_own_vnet_waits_for_no_role_assignment():
    recording = run_program("prod", encode_engine_config(read_stack_file(resolve_stack_file("prod")).config))
    assert all(not any(d.startswith("cluster-subnets") for d in p.depends_on) for p in recording.by_type(AGENT_POOL))


def test_private_cluster():
    raw = read_stack_file(resolve_stack_file("contoso-prod")).config
    raw["gpushare:cluster"]["apiServer"] = {"private": True, "privateDnsZone": "none"}
    (cluster,) = run_program("contoso-prod", encode_engine_config(raw)).by_type(MANAGED_CLUSTER)
    assert cluster.inputs["apiServerAccessProfile"] == {"enablePrivateCluster": True, "privateDNSZone": "none"}


def test_pre_created_resource_group_is_read_not_created():
    raw = read_stack_file(resolve_stack_file("contoso-prod")).config
    raw["gpushare:cluster"]["resourceGroupExists"] = True
    raw["gpushare:cluster"]["access"] = {"deployers": [{"objectId": DEPLOYER, "type": "User"}]}
    recording = run_program("contoso-prod", encode_engine_config(raw))
    assert recording.by_type(RESOURCE_GROUP) == []
    assert "azure-native:resources:getResourceGroup" in recording.invokes
    (cluster,) = recording.by_type(MANAGED_CLUSTER)
    assert cluster.inputs["resourceGroupName"] == "contoso-prod-rg"
    (deployer,) = [r for r in recording.by_type(ROLE_ASSIGNMENT) if r.name == f"cluster-deployer-{DEPLOYER}"]
    assert deployer.inputs["scope"] == f"/subscriptions/{MOCK_SUBSCRIPTION}/resourceGroups/contoso-prod-rg"


# --- under `pulumi preview`: the existing cluster's reads go to the ARM stub ----------------------------------------

@pytest.fixture
def arm(monkeypatch):
    with reached_arm(monkeypatch) as stub:
        yield stub


def own_pools(*extra: dict) -> StubResponse:
    return StubResponse(200, {"value": [
        arm_agent_pool(MOCK_SUBSCRIPTION, RG, CLUSTER, "system", vmSize="Standard_D8ds_v5", count=3, mode="System"),
        *extra]})


def live_program(guard: str | None = None, **changes):
    raw = existing_stack(**changes)
    if guard:
        raw["gpushare:guard"] = guard
    raw["gpushare:pools"] = raw["gpushare:pools"][:1]  # t4ts, in the cluster's subnet: no subnet read
    raw.pop("gpushare:tenants")
    return run_program("existing", encode_engine_config(raw), live_guard=True, check=False)


def test_preview_reads_the_existing_cluster_and_adds_the_pools(arm):
    serve_region(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, pools=own_pools())
    serve_existing_cluster(arm, MOCK_SUBSCRIPTION, RG, CLUSTER,
                           arm_existing_cluster(MOCK_SUBSCRIPTION, RG, CLUSTER, tier="Free"),
                           StubResponse(200, arm_maintenance_windows(MOCK_SUBSCRIPTION, RG, CLUSTER,
                                                                     "aksManagedNodeOSUpgradeSchedule")))

    recording = live_program()

    assert recording.error is None, recording.error
    assert [p.inputs["agentPoolName"] for p in recording.by_type(AGENT_POOL)] == ["t4ts"]
    assert any(w.startswith("preflight: baseline cluster platform-aks sku.tier") and "--tier standard" in w
               for w in recording.warnings), recording.warnings
    assert any(w.startswith("preflight: baseline cluster platform-aks maintenanceConfigurations/"
                            "aksManagedAutoUpgradeSchedule") and "az aks maintenanceconfiguration add" in w
               for w in recording.warnings), recording.warnings
    # The pools, the region (three), the cluster and its maintenance windows: one request each.
    assert len(arm.requests) == 6
    assert arm.count(maintenance_configurations_path(MOCK_SUBSCRIPTION, RG, CLUSTER)) == 1


FORBIDDEN = StubResponse(403, arm_error("AuthorizationFailed", "no maintenanceConfigurations/read"))


def test_unreadable_maintenance_windows_under_guard_warn_are_a_warning_and_the_pools_still_register(arm):
    serve_region(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, pools=own_pools())
    serve_existing_cluster(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, windows=FORBIDDEN)

    recording = live_program(guard="warn")

    assert recording.error is None, recording.error
    assert [p.inputs["agentPoolName"] for p in recording.by_type(AGENT_POOL)] == ["t4ts"]
    assert any(w.startswith(f"could not read the maintenance configurations of AKS cluster {CLUSTER}")
               and "permission denied (HTTP 403 AuthorizationFailed" in w and "gpushare:guard is warn" in w
               for w in recording.warnings), recording.warnings
    assert any(w.startswith("preflight: baseline cluster platform-aks maintenanceConfigurations: the cluster's "
                            "maintenance windows were not read") for w in recording.warnings), recording.warnings


def test_unreadable_maintenance_windows_under_guard_strict_stop_the_run_naming_the_role(arm):
    serve_region(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, pools=own_pools())
    serve_existing_cluster(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, windows=FORBIDDEN)

    recording = live_program()

    assert isinstance(recording.error, pulumi.RunError)
    assert "managedClusters/maintenanceConfigurations/read', which the built-in Reader role has" in \
        str(recording.error)
    assert "gpushare:guard is strict" in str(recording.error)
    assert [r for r in recording.resources if r.custom] == []


def test_preview_stops_on_a_missing_existing_cluster_before_anything_registers(arm):
    missing = StubResponse(404, arm_error("ResourceNotFound", "not found"))
    serve_region(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, pools=missing)
    arm.route(managed_cluster_id(MOCK_SUBSCRIPTION, RG, CLUSTER), missing)

    recording = live_program()

    assert isinstance(recording.error, pulumi.RunError)
    assert f"AKS cluster {CLUSTER} not found in resource group {RG}" in str(recording.error)
    assert [r for r in recording.resources if r.custom] == []


def service_principal_cluster() -> dict:
    """A cluster made with `az aks create --service-principal`: no `identity`, the principal's client ID instead."""
    document = arm_existing_cluster(MOCK_SUBSCRIPTION, RG, CLUSTER, subnet_id=MOCK_EXISTING_SUBNET)
    document.pop("identity")
    document["properties"]["servicePrincipalProfile"] = {"clientId": "9a8b7c6d-0000-4e8a-9c61-7f3b2a9d4e10"}
    return document


def test_preview_stops_on_a_service_principal_cluster_when_a_pool_names_a_subnet(arm):
    """gpushare grants the cluster's identity Network Contributor on a pool's subnet: a service principal cluster has
    no principal ID for that, which otherwise surfaces as a role assignment with a null principal."""
    serve_region(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, pools=own_pools())
    serve_existing_cluster(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, service_principal_cluster())
    raw = existing_stack()
    raw.pop("gpushare:tenants")

    recording = run_program("existing", encode_engine_config(raw), live_guard=True, check=False)

    assert isinstance(recording.error, pulumi.RunError)
    message = str(recording.error)
    assert (f"cluster {CLUSTER} authenticates to Azure with service principal 9a8b7c6d-0000-4e8a-9c61-7f3b2a9d4e10 "
            "(servicePrincipalProfile.clientId), not a managed identity") in message
    assert "vnet-spoke/snet-gpu" in message
    assert f"az aks update -g {RG} -n {CLUSTER} --enable-managed-identity" in message
    assert [r for r in recording.resources if r.custom] == []


def test_a_service_principal_cluster_takes_pools_in_its_own_subnet(arm):
    serve_region(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, pools=own_pools())
    serve_existing_cluster(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, service_principal_cluster())
    arm.route(MOCK_EXISTING_SUBNET, StubResponse(200, arm_subnet(MOCK_EXISTING_SUBNET, "10.1.0.0/24", 3)))

    recording = live_program()  # t4ts only: the system pool's subnet, no role assignment

    assert recording.error is None, recording.error
    assert [p.inputs["agentPoolName"] for p in recording.by_type(AGENT_POOL)] == ["t4ts"]


def test_preview_refuses_a_pool_name_an_unmanaged_pool_holds(arm):
    taken = arm_agent_pool(MOCK_SUBSCRIPTION, RG, CLUSTER, "t4ts", vmSize="Standard_NC4as_T4_v3", count=2)
    serve_region(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, pools=own_pools(taken))
    serve_existing_cluster(arm, MOCK_SUBSCRIPTION, RG, CLUSTER)

    recording = live_program()

    assert isinstance(recording.error, pulumi.RunError)
    assert "pulumi import --stack existing --file import-t4ts.json" in str(recording.error)
    assert recording.by_type(AGENT_POOL) == []


def test_the_adoption_advice_lists_every_owner_setting_the_first_up_would_replace(arm):
    """After `pulumi import`, the first `up` sends the pool's labels, taints and tags whole and its scaling and OS:
    the owners' own go unless the stack lists them, and the message says which."""
    taken = arm_agent_pool(
        MOCK_SUBSCRIPTION, RG, CLUSTER, "t4ts", vmSize="Standard_NC4as_T4_v3", count=2, osSKU="AzureLinux",
        nodeLabels={"team": "vision", "gpushare.io/sharing": "none"},
        nodeTaints=["sku=gpu:NoSchedule"], tags={"costCenter": "1234"})
    serve_region(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, pools=own_pools(taken))
    serve_existing_cluster(arm, MOCK_SUBSCRIPTION, RG, CLUSTER)

    message = str(live_program().error)

    assert "The first `up` after adopting it sets the stack's settings over the pool's own:" in message
    assert "    - labels: removes team=vision (list them in the pool's `labels` to keep them)" in message
    assert "    - labels: changes gpushare.io/sharing none -> time-slicing-4" in message
    assert "    - taints: removes sku=gpu:NoSchedule (list them in the pool's `taints` to keep them)" in message
    assert "    - taints: adds nvidia.com/gpu=present:NoSchedule" in message
    assert "    - tags: removes costCenter=1234 (list them in the pool's `tags` to keep them)" in message
    assert "    - scaling: count 2 -> autoscale 1-3" in message
    assert "    - osSku: AzureLinux -> Ubuntu (AKS reimages every node of the pool)" in message


def test_preview_stops_on_a_deployer_already_granted_cluster_admin_by_hand(arm):
    serve_region(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, pools=own_pools())
    serve_existing_cluster(arm, MOCK_SUBSCRIPTION, RG, CLUSTER)
    cluster_id = managed_cluster_id(MOCK_SUBSCRIPTION, RG, CLUSTER)
    arm.route(role_assignments_path(cluster_id), StubResponse(200, {"value": [
        arm_role_assignment(cluster_id, DEPLOYER, "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b", "by-hand")]}))

    recording = live_program(access={"deployers": [{"objectId": DEPLOYER, "type": "ServicePrincipal"}]})

    assert isinstance(recording.error, pulumi.RunError)
    message = str(recording.error)
    assert f"role-assignment deployer {DEPLOYER} on managedClusters/{CLUSTER}: {DEPLOYER} already holds" in message
    assert f"az role assignment delete --ids {role_assignments_path(cluster_id)}/by-hand" in message
    assert recording.by_type(AGENT_POOL) == [] and recording.by_type(ROLE_ASSIGNMENT) == []


def test_a_user_assigned_control_plane_identity_gets_the_subnet_role(monkeypatch):
    uami = "/subscriptions/x/resourceGroups/rg-id/providers/Microsoft.ManagedIdentity/userAssignedIdentities/aks"
    monkeypatch.setattr(GpushareMocks, "existing_cluster", {"identity": {
        "type": "UserAssigned", "userAssignedIdentities": {uami: {"principalId": "1a2b3c4d-0000-4000-8000-000000000001",
                                                                  "clientId": "c"}}}})
    recording = run_program("existing", encode_engine_config(existing_stack()))
    (subnet,) = [r for r in recording.by_type(ROLE_ASSIGNMENT) if r.name.startswith("cluster-subnets")]
    assert subnet.inputs["principalId"] == "1a2b3c4d-0000-4000-8000-000000000001"


def test_a_pool_without_subnet_id_joins_the_system_pools_subnet_wherever_the_cluster_lists_it(monkeypatch):
    """`agentPoolProfiles` lists every pool of the cluster in no documented order: a user pool in a subnet of its own
    listed first must not become the GPU pools' subnet."""
    apps = MOCK_EXISTING_SUBNET.replace("snet-nodes", "snet-apps")
    monkeypatch.setattr(GpushareMocks, "existing_cluster", {"agentPoolProfiles": [
        {"name": "apps", "mode": "User", "vmSize": "Standard_D16ds_v5", "count": 5, "vnetSubnetID": apps},
        {"name": "system", "mode": "System", "vmSize": "Standard_D4ds_v5", "count": 3,
         "vnetSubnetID": MOCK_EXISTING_SUBNET}]})
    recording = run_program("existing", encode_engine_config(existing_stack()))
    t4ts = next(p for p in recording.by_type(AGENT_POOL) if p.inputs["agentPoolName"] == "t4ts")
    assert t4ts.inputs["vnetSubnetID"] == MOCK_EXISTING_SUBNET
