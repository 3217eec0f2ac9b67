"""Preflight's `role-assignment` check, read through the real azure-mgmt-containerservice client's pipeline against
the local ARM stub: a deployer or the cluster's identity that already holds the role at the very scope under another
name makes `pulumi up` fail with RoleAssignmentExists, and preflight says so first, with the way out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpushare.azure.cluster_baseline import (
    NETWORK_CONTRIBUTOR_ROLE,
    RBAC_CLUSTER_ADMIN_ROLE,
    cluster_scope,
    resource_group_scope,
    role_assignment_name,
)
from gpushare.cli import main
from gpushare.render.mock_engine import MOCK_SUBSCRIPTION, run_program
from gpushare.stackfile.config import encode_engine_config, read_stack_file
from tests.azure.preflight_region import T4, serve_region
from tests.azure_stub import (
    CLUSTER_IDENTITY,
    ArmStub,
    StubResponse,
    arm_agent_pool,
    arm_error,
    arm_existing_cluster,
    arm_role_assignment,
    reached_arm,
    role_assignments_path,
    serve_existing_cluster,
)
from tests.stack_files import write_stack

SUB = "3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3"
CLUSTER, RG = "platform-aks", "rg-platform"
DEPLOYER = "0b5e7c1a-2f4d-4e8a-9c3b-6d1f2a7e5b90"
VNET = f"/subscriptions/{SUB}/resourceGroups/rg-network/providers/Microsoft.Network/virtualNetworks/vnet-spoke"
GPU_SUBNET = f"{VNET}/subnets/snet-gpu"
CLUSTER_ID = cluster_scope(SUB, RG, CLUSTER)
BY_HAND = "7d0c6e52-1b3a-4f9e-8a27-c5d4e3b2a190"
OWN_POOLS = StubResponse(200, {"value": [
    arm_agent_pool(SUB, RG, CLUSTER, "system", vmSize="Standard_D8ds_v5", count=3, mode="System")]})


@pytest.fixture
def arm(monkeypatch):
    with reached_arm(monkeypatch, SUB) as stub:
        yield stub


def stack(tmp_path, *, existing: bool = True, subnet: bool = False, admins: str = "") -> str:
    path = write_stack(tmp_path, 
        f"config:\n  azure-native:location: westeurope\n  gpushare:cluster:\n    name: {CLUSTER}\n"
        f"    resourceGroup: {RG}\n" + ("    existing: true\n" if existing else "")
        + f"    access:\n      deployers: [{{objectId: {DEPLOYER}, type: ServicePrincipal}}]\n"
        + (f"      adminGroups: [{admins}]\n" if admins else "")
        + f"  gpushare:pools:\n    - {{name: t4ts, vmSize: {T4}, autoscale: {{min: 0, max: 2}}"
        + (f", subnetId: {GPU_SUBNET}" if subnet else "") + "}\n", "Pulumi.team.yaml")
    return str(path)


def serve_existing(arm: ArmStub) -> None:
    serve_region(arm, SUB, RG, CLUSTER, pools=OWN_POOLS)
    serve_existing_cluster(arm, SUB, RG, CLUSTER, arm_existing_cluster(SUB, RG, CLUSTER))


def role_rows(out: str) -> dict[str, dict]:
    return {c["subject"]: c for c in json.loads(out)["checks"] if c["check"] == "role-assignment"}


def test_a_deployer_granted_cluster_admin_by_hand_fails_with_both_ways_out(arm, tmp_path, capsys):
    serve_existing(arm)
    arm.route(role_assignments_path(CLUSTER_ID), StubResponse(200, {"value": [
        arm_role_assignment(CLUSTER_ID, DEPLOYER, RBAC_CLUSTER_ADMIN_ROLE, BY_HAND)]}))

    assert main(["preflight", stack(tmp_path), "--json"]) == 1

    row = role_rows(capsys.readouterr().out)[f"deployer {DEPLOYER} on managedClusters/{CLUSTER}"]
    assert row["verdict"] == "fail"
    assert row["detail"] == (
        f"{DEPLOYER} already holds Azure Kubernetes Service RBAC Cluster Admin on {CLUSTER_ID} through role "
        f"assignment {BY_HAND}, made outside gpushare: creating gpushare's "
        f"({role_assignment_name(CLUSTER_ID, DEPLOYER)}) fails with RoleAssignmentExists (Azure keeps one per "
        "principal, role and scope)")
    assert row["fix"] == (
        f"remove {DEPLOYER} from gpushare:cluster.access.deployers (it has the access), or delete that assignment "
        f"so gpushare owns the grant: az role assignment delete --ids {role_assignments_path(CLUSTER_ID)}/{BY_HAND}")
    (request,) = [r for r in arm.requests if r.path == role_assignments_path(CLUSTER_ID)]
    assert request.query == {"api-version": ["2022-04-01"], "$filter": [f"principalId eq '{DEPLOYER}'"]}


def test_gpushares_own_assignment_from_an_earlier_up_passes(arm, tmp_path, capsys):
    serve_existing(arm)
    arm.route(role_assignments_path(CLUSTER_ID), StubResponse(200, {"value": [
        arm_role_assignment(CLUSTER_ID, DEPLOYER, RBAC_CLUSTER_ADMIN_ROLE, role_assignment_name(CLUSTER_ID, DEPLOYER))]}))

    assert main(["preflight", stack(tmp_path), "--json"]) == 0

    (row,) = role_rows(capsys.readouterr().out).values()
    assert row["verdict"] == "pass" and "exists under gpushare's name" in row["detail"]


def test_grants_at_another_scope_or_of_another_role_do_not_collide(arm, tmp_path, capsys):
    """`principalId eq` lists the principal's assignments above and below the scope too: only the very scope and
    role collide."""
    serve_existing(arm)
    group = resource_group_scope(SUB, RG)
    arm.route(role_assignments_path(CLUSTER_ID), StubResponse(200, {"value": [
        arm_role_assignment(group, DEPLOYER, RBAC_CLUSTER_ADMIN_ROLE, BY_HAND),
        arm_role_assignment(CLUSTER_ID, DEPLOYER, "acdd72a7-3385-48ef-bd42-f606fba81ae7", "reader-by-hand")]}))

    assert main(["preflight", stack(tmp_path), "--json"]) == 0

    (row,) = role_rows(capsys.readouterr().out).values()
    assert (row["verdict"], row["detail"]) == (
        "pass", f"Azure Kubernetes Service RBAC Cluster Admin on {CLUSTER_ID}: none yet, `pulumi up` creates it")


def test_the_clusters_identity_granted_network_contributor_on_its_subnet_fails(arm, tmp_path, capsys):
    serve_existing(arm)
    arm.route(GPU_SUBNET, StubResponse(200, {"id": GPU_SUBNET, "properties": {"addressPrefix": "10.1.1.0/24"}}))
    arm.route(role_assignments_path(CLUSTER_ID), StubResponse(200, {"value": []}))
    arm.route(role_assignments_path(GPU_SUBNET), StubResponse(200, {"value": [
        arm_role_assignment(GPU_SUBNET, CLUSTER_IDENTITY, NETWORK_CONTRIBUTOR_ROLE, BY_HAND)]}))

    assert main(["preflight", stack(tmp_path, subnet=True), "--json"]) == 1

    rows = role_rows(capsys.readouterr().out)
    row = rows[f"the cluster's identity {CLUSTER_IDENTITY} on subnets/snet-gpu"]
    assert row["verdict"] == "fail"
    assert row["detail"].startswith(f"{CLUSTER_IDENTITY} already holds Network Contributor on {GPU_SUBNET} through "
                                    f"role assignment {BY_HAND}")
    assert row["fix"] == (
        f"grant it on the VNet first, then delete the subnet's: az role assignment create --assignee-object-id "
        f"{CLUSTER_IDENTITY} --assignee-principal-type ServicePrincipal --role \"Network Contributor\" --scope {VNET}"
        f" && az role assignment delete --ids {role_assignments_path(GPU_SUBNET)}/{BY_HAND}")
    assert rows[f"deployer {DEPLOYER} on managedClusters/{CLUSTER}"]["verdict"] == "pass"


def test_a_resource_group_gpushare_creates_has_no_assignments_yet(arm, tmp_path, capsys):
    serve_region(arm, SUB, RG, CLUSTER)  # nothing exists yet
    missing = StubResponse(404, arm_error("ResourceGroupNotFound", f"Resource group '{RG}' could not be found."))
    arm.route(role_assignments_path(resource_group_scope(SUB, RG)), missing)

    main(["preflight", stack(tmp_path, existing=False), "--json"])

    (row,) = role_rows(capsys.readouterr().out).values()
    assert (row["subject"], row["verdict"]) == (f"deployer {DEPLOYER} on resourceGroups/{RG}", "pass")
    assert arm.count(role_assignments_path(resource_group_scope(SUB, RG))) == 1


ADMINS = "4c8d2e6f-9a1b-4c3d-8e7f-0a1b2c3d4e5f"


def test_an_admin_group_granted_on_a_cluster_gpushare_made_is_checked_once_the_cluster_exists(arm, tmp_path,
                                                                                              capsys):
    serve_region(arm, SUB, RG, CLUSTER, pools=OWN_POOLS)
    arm.route(CLUSTER_ID, StubResponse(200, arm_existing_cluster(SUB, RG, CLUSTER)))
    arm.route(role_assignments_path(resource_group_scope(SUB, RG)), StubResponse(200, {"value": []}))
    arm.route(role_assignments_path(CLUSTER_ID), StubResponse(200, {"value": [
        arm_role_assignment(CLUSTER_ID, ADMINS, RBAC_CLUSTER_ADMIN_ROLE, BY_HAND)]}))

    assert main(["preflight", stack(tmp_path, existing=False, admins=ADMINS), "--json"]) == 1

    rows = role_rows(capsys.readouterr().out)
    admins = rows[f"admin group {ADMINS} on managedClusters/{CLUSTER}"]
    assert admins["verdict"] == "fail"
    assert admins["fix"].startswith(f"remove {ADMINS} from gpushare:cluster.access.adminGroups (it has the access)")
    assert rows[f"deployer {DEPLOYER} on resourceGroups/{RG}"]["verdict"] == "pass"


def test_before_the_cluster_exists_its_admin_groups_are_not_looked_up(arm, tmp_path, capsys):
    serve_region(arm, SUB, RG, CLUSTER)
    arm.route(role_assignments_path(resource_group_scope(SUB, RG)), StubResponse(200, {"value": []}))

    assert main(["preflight", stack(tmp_path, existing=False, admins=ADMINS), "--json"]) == 0

    assert list(role_rows(capsys.readouterr().out)) == [f"deployer {DEPLOYER} on resourceGroups/{RG}"]
    assert arm.count(role_assignments_path(CLUSTER_ID)) == 0


def test_no_permission_to_list_assignments_names_the_role(arm, tmp_path, capsys):
    serve_existing(arm)
    arm.route(role_assignments_path(CLUSTER_ID),
              StubResponse(403, arm_error("AuthorizationFailed", "no Microsoft.Authorization/roleAssignments/read")))

    assert main(["preflight", stack(tmp_path)]) == 4

    err = capsys.readouterr().err
    assert err.startswith(f"error: could not list the role assignments of {DEPLOYER} on {CLUSTER_ID}: permission "
                          "denied (HTTP 403 AuthorizationFailed")
    assert "'Microsoft.Authorization/roleAssignments/read', which the built-in Reader role has" in err
    assert "Traceback" not in err


def test_the_subnet_role_the_program_creates_is_recognised_by_the_next_preflight_as_gpushares(monkeypatch, tmp_path,
                                                                                              capsys):
    """After the first `up` Azure holds the Network Contributor assignment under the name the program gave it
    (`SubnetAccess`). Preflight must derive the same name (`planned_assignments`): with another, every later preview
    would stop on it as "made outside gpushare", and with no assignment yet, preflight would pass where `up` then fails
    with RoleAssignmentExists."""
    path = stack(tmp_path, subnet=True)
    program = run_program("team", encode_engine_config(read_stack_file(Path(path)).config))
    (created,) = [r for r in program.by_type("azure-native:authorization:RoleAssignment")
                  if r.inputs["scope"] == GPU_SUBNET]
    cluster_id = cluster_scope(MOCK_SUBSCRIPTION, RG, CLUSTER)
    with reached_arm(monkeypatch, MOCK_SUBSCRIPTION) as arm:
        serve_region(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, pools=StubResponse(200, {"value": [arm_agent_pool(
            MOCK_SUBSCRIPTION, RG, CLUSTER, "system", vmSize="Standard_D8ds_v5", count=3, mode="System")]}))
        serve_existing_cluster(arm, MOCK_SUBSCRIPTION, RG, CLUSTER, arm_existing_cluster(
            MOCK_SUBSCRIPTION, RG, CLUSTER, subnet_id=f"{VNET}/subnets/snet-system"))
        arm.route(GPU_SUBNET, StubResponse(200, {"id": GPU_SUBNET, "properties": {"addressPrefix": "10.1.1.0/24"}}))
        arm.route(role_assignments_path(cluster_id), StubResponse(200, {"value": []}))
        arm.route(role_assignments_path(GPU_SUBNET), StubResponse(200, {"value": [arm_role_assignment(
            GPU_SUBNET, CLUSTER_IDENTITY, NETWORK_CONTRIBUTOR_ROLE, created.inputs["roleAssignmentName"])]}))

        assert main(["preflight", path, "--json"]) == 0

    row = role_rows(capsys.readouterr().out)[f"the cluster's identity {CLUSTER_IDENTITY} on subnets/snet-gpu"]
    assert row["verdict"] == "pass"
    assert row["detail"].startswith(f"Network Contributor on {GPU_SUBNET} exists under gpushare's name "
                                    f"{created.inputs['roleAssignmentName']} (from an earlier `up`")


def test_a_user_assigned_control_plane_identity_granted_its_subnet_by_hand_fails_like_a_system_assigned_one(
        arm, tmp_path, capsys):
    """Clusters built for a network of your own often run with a user-assigned control-plane identity: it has no
    `identity.principalId`, its object ID is under `userAssignedIdentities`, and its grant on the subnet collides the
    same way."""
    uami = f"/subscriptions/{SUB}/resourceGroups/rg-id/providers/Microsoft.ManagedIdentity/userAssignedIdentities/aks"
    principal = "1a2b3c4d-0000-4000-8000-000000000001"
    document = arm_existing_cluster(SUB, RG, CLUSTER, subnet_id=f"{VNET}/subnets/snet-system")
    document["identity"] = {"type": "UserAssigned",
                            "userAssignedIdentities": {uami: {"principalId": principal, "clientId": "c"}}}
    serve_region(arm, SUB, RG, CLUSTER, pools=OWN_POOLS)
    serve_existing_cluster(arm, SUB, RG, CLUSTER, document)
    arm.route(GPU_SUBNET, StubResponse(200, {"id": GPU_SUBNET, "properties": {"addressPrefix": "10.1.1.0/24"}}))
    arm.route(role_assignments_path(CLUSTER_ID), StubResponse(200, {"value": []}))
    arm.route(role_assignments_path(GPU_SUBNET), StubResponse(200, {"value": [
        arm_role_assignment(GPU_SUBNET, principal, NETWORK_CONTRIBUTOR_ROLE, BY_HAND)]}))

    assert main(["preflight", stack(tmp_path, subnet=True), "--json"]) == 1

    row = role_rows(capsys.readouterr().out)[f"the cluster's identity {principal} on subnets/snet-gpu"]
    assert row["verdict"] == "fail"
    assert row["detail"].startswith(f"{principal} already holds Network Contributor on {GPU_SUBNET}")
