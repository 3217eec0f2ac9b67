"""The hardened cluster through the real program: Kubernetes access wiring, role assignments, no static credential."""

from __future__ import annotations

import json

import pytest
import yaml

from gpushare.render.mock_engine import (
    MOCK_DEPLOYER_OBJECT_ID,
    MOCK_KUBECONFIG,
    MOCK_SUBSCRIPTION,
    MOCK_USER_TOKEN,
    GpushareMocks,
    mock_jwt,
    run_program,
)
from gpushare.stackfile.config import encode_engine_config, read_stack_file
from gpushare.stackfile.project import resolve_stack_file
from tests.stack_files import write_stack

STACK = "contoso-prod"
PROVIDER = "pulumi:providers:kubernetes"
ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
GROUP = "0b5e7c1a-2f4d-4e8a-9c3b-6d1f2a7e5b90"
PERSON = MOCK_DEPLOYER_OBJECT_ID
CI = "3f9a1c2e-6b4d-4e7a-9d1f-8c2b5a7e0d13"
DEPLOYERS = [{"objectId": PERSON, "type": "User"}, {"objectId": CI, "type": "ServicePrincipal"}]
DEPLOYER_ACCESS = {f"cluster-deployer-{PERSON}", f"cluster-deployer-{CI}"}


def program(access=None, **cluster_changes):
    raw = read_stack_file(resolve_stack_file(STACK)).config
    raw["gpushare:cluster"].update(access={"deployers": DEPLOYERS} if access is None else access, **cluster_changes)
    return run_program(STACK, encode_engine_config(raw))


@pytest.fixture(scope="module")
def recording():
    return program()


def kubernetes_objects(recording):
    return [r for r in recording.resources if r.custom and r.type.startswith("kubernetes:")]


def test_every_kubernetes_object_uses_the_token_provider_and_waits_for_the_deployers_access(recording):
    objects = kubernetes_objects(recording)
    assert len(objects) >= 3
    for resource in objects:
        assert resource.provider == "cluster-access-provider", resource.name
        assert DEPLOYER_ACCESS <= set(resource.depends_on), resource.name


def test_provider_has_the_token_kubeconfig_and_the_clusters_id(recording):
    (provider,) = recording.by_type(PROVIDER)
    assert provider.inputs["clusterIdentifier"] == f"/subscriptions/{MOCK_SUBSCRIPTION}/mock/ManagedCluster/{STACK}"
    assert [u["user"] for u in yaml.safe_load(provider.inputs["kubeconfig"])["users"]] == [{"token": MOCK_USER_TOKEN}]
    assert "kubeconfig" in provider.secret_inputs


def test_moved_provider_keeps_its_identity(recording):
    """It was GpuOperator's child: without the alias every Kubernetes object would follow a new provider."""
    (provider,) = recording.by_type(PROVIDER)
    assert provider.aliases == [{
        "name": "gpu-operator-provider",
        "parentUrn": f"urn:pulumi:{STACK}::gpushare::gpushare:operator:GpuOperator::gpu-operator"}]


def test_kubeconfig_output_is_the_entra_kubeconfig_for_people(recording):
    assert recording.exports["kubeconfig"] == MOCK_KUBECONFIG


def test_no_static_credential_is_read_or_exported(recording):
    assert not [i for i in recording.invokes if "AdminCredentials" in i]
    everything = json.dumps([r.inputs for r in recording.resources]) + json.dumps(recording.exports)
    for static in ("client-certificate-data", "client-key-data", "client-certificate", "client-key", "password"):
        assert static not in everything, static
    (cluster,) = recording.by_type("azure-native:containerservice:ManagedCluster")
    assert cluster.inputs["disableLocalAccounts"] is True


def test_admin_groups_and_deployers_are_assigned(recording):
    assert {r.name for r in recording.by_type(ROLE_ASSIGNMENT)} == DEPLOYER_ACCESS
    with_group = program(access={"adminGroups": [GROUP], "deployers": DEPLOYERS})
    assert {r.name for r in with_group.by_type(ROLE_ASSIGNMENT)} == {f"cluster-admins-{GROUP}", *DEPLOYER_ACCESS}


def test_the_role_assignments_are_the_same_whoever_runs_the_program(monkeypatch):
    """A person locally, then CI's service principal, then the read-only preview identity: each run registers the
    very same assignments, so none is replaced (azure-native deletes before it re-creates) and no preview shows a
    change that is not one."""
    def assignments():
        recording = program()
        return {r.name: (r.inputs, r.depends_on, r.parent) for r in recording.by_type(ROLE_ASSIGNMENT)}

    as_person = assignments()
    monkeypatch.setattr(GpushareMocks, "client_object_id", "9e8d7c6b-5a49-4382-b1a0-f9e8d7c6b5a4")
    monkeypatch.setattr(GpushareMocks, "client_token", mock_jwt({"oid": "9e8d7c6b-5a49-4382-b1a0-f9e8d7c6b5a4",
                                                                 "idtyp": "app", "roles": []}))
    as_preview_identity = assignments()
    assert set(as_person) == DEPLOYER_ACCESS
    assert as_preview_identity == as_person


def test_no_deployers_leaves_access_to_assignments_made_out_of_band_and_says_so():
    without = program(access={"grantDeployer": False})
    assert without.by_type(ROLE_ASSIGNMENT) == []
    for resource in kubernetes_objects(without):
        assert resource.provider == "cluster-access-provider"
        assert not any(d.startswith("cluster-deployer") for d in resource.depends_on)
    assert any(w.startswith("gpushare:cluster.access.deployers is empty") for w in without.warnings)


def test_grant_deployer_true_is_refused_with_the_commands_that_find_the_ids(capsys, tmp_path):
    from gpushare.cli import main

    raw = read_stack_file(resolve_stack_file(STACK)).config
    raw["gpushare:cluster"]["access"] = {"grantDeployer": True}
    path = write_stack(tmp_path, yaml.safe_dump({"config": raw}), "Pulumi.granted.yaml")
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert "gpushare:cluster.access.grantDeployer" in err and "Traceback" not in err
    assert "az ad signed-in-user show --query id -o tsv" in err and "az ad sp show" in err


def test_live_guard_stops_a_cluster_create_only_change_before_anything_registers(monkeypatch):
    import gpushare.azure.guard.cluster
    import gpushare.azure.guard.guard_runs
    from gpushare.azure.deployed_cluster import DeployedCluster

    kubenet = DeployedCluster(name=STACK, dns_prefix=STACK, enable_rbac=True, network_plugin="kubenet",
                              pod_cidr="10.244.0.0/16", service_cidr="10.0.0.0/16", dns_service_ip="10.0.0.10")
    monkeypatch.setattr(gpushare.azure.guard.guard_runs, "read_live", lambda *args, **kwargs: None)
    monkeypatch.setattr(gpushare.azure.guard.cluster, "read_live_cluster", lambda *args, **kwargs: kubenet)
    raw = read_stack_file(resolve_stack_file(STACK)).config
    recording = run_program(STACK, encode_engine_config(raw), live_guard=True, check=False)
    assert "networkProfile.networkPlugin kubenet -> azure" in str(recording.error)
    assert "Traceback" not in str(recording.error)
    assert [r for r in recording.resources if r.custom] == []


def test_plan_shows_the_cluster_settings(tmp_path, capsys):
    from gpushare.cli import main

    raw = read_stack_file(resolve_stack_file(STACK)).config
    raw["gpushare:cluster"].update(tier="Free", access={"adminGroups": [GROUP], "deployers": DEPLOYERS[1:]},
                                   apiServer={"authorizedIpRanges": ["203.0.113.0/24"]})
    path = write_stack(tmp_path, yaml.safe_dump({"config": raw}), "Pulumi.hardened.yaml")
    assert main(["plan", str(path), "--json"]) == 0
    cluster = json.loads(capsys.readouterr().out)["cluster"]
    assert cluster["name"] == STACK  # the keys plan --json had are still there
    assert {k: cluster[k] for k in ("tier", "access", "upgrades", "apiServer")} == {
        "tier": "Free", "access": {"adminGroups": [GROUP], "grantDeployer": True,
                                   "deployers": [{"objectId": CI, "type": "ServicePrincipal"}],
                                   "kubernetesCredential": "token"},
        "upgrades": {"channel": "patch", "nodeOs": "NodeImage", "window": {"day": "Sunday", "start": "02:00",
                                                                           "hours": 4}},
        "apiServer": {"authorizedIpRanges": ["203.0.113.0/24"]}}
    assert main(["plan", str(path)]) == 0
    header = capsys.readouterr().out.splitlines()[1]
    assert "tier Free" in header and "API server from 1 CIDR;" in header and "1 admin group" in header
    assert "1 deployer granted" in header


def test_every_kubernetes_object_of_every_component_waits_for_the_deployers_access():
    """The prod stack has tenants too: their namespaces, quotas, RoleBindings and policies are Kubernetes objects."""
    raw = read_stack_file(resolve_stack_file("prod")).config
    raw["gpushare:cluster"]["access"] = {"deployers": DEPLOYERS}
    recording = run_program("prod", encode_engine_config(raw))
    objects = kubernetes_objects(recording)
    assert {r.type for r in objects} > {"kubernetes:core/v1:Namespace", "kubernetes:helm.sh/v3:Release",
                                        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"}
    for resource in objects:
        assert resource.provider == "cluster-access-provider", resource.name
        assert DEPLOYER_ACCESS <= set(resource.depends_on), resource.name
