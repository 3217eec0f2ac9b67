"""Long runs through the real program and `plan`: the token the program fetches at start lives 60-90 minutes, so
`plan` says when a run is likely to outlast it, and `kubernetesCredential: kubelogin-*` gives the Kubernetes provider
an exec kubeconfig that renews it."""

from __future__ import annotations

import json

import pytest
import yaml

from gpushare.cli import main
from gpushare.render.mock_engine import run_program
from gpushare.stackfile.config import encode_engine_config, read_stack_file
from gpushare.stackfile.project import resolve_stack_file
from tests.program.test_guard_in_program import nodepool_list
from tests.stack_files import write_stack

PROVIDER = "pulumi:providers:kubernetes"
LONG = "may outlast the Kubernetes token"


def four_pools(credential: str | None = None) -> dict:
    raw = read_stack_file(resolve_stack_file("dev")).config
    t4 = raw["gpushare:pools"][1]
    raw["gpushare:pools"] += [{**t4, "name": f"extra{i}"} for i in (1, 2)]
    if credential:
        raw["gpushare:cluster"]["access"] = {"kubernetesCredential": credential}
    return raw


def plan_warnings(tmp_path, capsys, raw: dict, *args: str) -> list[str]:
    path = write_stack(tmp_path, yaml.safe_dump({"config": raw}), "Pulumi.long.yaml")
    assert main(["plan", str(path), "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)["warnings"]


def test_plan_warns_when_a_run_creates_more_than_three_pools_and_names_the_option(tmp_path, capsys):
    warnings = [w for w in plan_warnings(tmp_path, capsys, four_pools()) if LONG in w]
    assert len(warnings) == 1, warnings
    assert "creates 4 GPU pools" in warnings[0]
    assert ("gpushare:cluster.access.kubernetesCredential: kubelogin-workloadidentity (on GitHub Actions: the job's "
            "OIDC token)") in warnings[0]
    assert "or kubelogin-azurecli" in warnings[0]


def test_three_pools_or_an_exec_credential_give_no_warning(tmp_path, capsys):
    raw = four_pools()
    raw["gpushare:pools"] = raw["gpushare:pools"][:3]
    assert not [w for w in plan_warnings(tmp_path, capsys, raw) if LONG in w]
    assert not [w for w in plan_warnings(tmp_path, capsys, four_pools("kubelogin-azurecli")) if LONG in w]


def test_a_replaced_or_reimaged_pool_is_a_long_run(tmp_path, capsys):
    raw = read_stack_file(resolve_stack_file("contoso-prod")).config
    deployed = tmp_path / "nodepools.json"
    deployed.write_text(json.dumps(nodepool_list(osSku="AzureLinux")))
    reimaged = [w for w in plan_warnings(tmp_path, capsys, raw, "--deployed", str(deployed)) if LONG in w]
    assert len(reimaged) == 1 and "reimages every node of a100mig" in reimaged[0], reimaged
    raw["gpushare:pools"][0].update(recreate=True, mig="MIG2g")
    deployed.write_text(json.dumps(nodepool_list()))
    replaced = [w for w in plan_warnings(tmp_path, capsys, raw, "--deployed", str(deployed)) if LONG in w]
    assert len(replaced) == 1 and "replaces a100mig" in replaced[0], replaced
    deployed.write_text(json.dumps(nodepool_list()))
    raw["gpushare:pools"][0].update(recreate=False, mig="MIG1g")
    assert not [w for w in plan_warnings(tmp_path, capsys, raw, "--deployed", str(deployed)) if LONG in w]


@pytest.mark.parametrize("credential, login", [("kubelogin-azurecli", "azurecli"),
                                                ("kubelogin-workloadidentity", "workloadidentity")])
def test_an_exec_credential_gives_the_provider_kubelogin_and_fetches_no_token(credential, login):
    recording = run_program("dev", encode_engine_config(four_pools(credential)))
    (provider,) = recording.by_type(PROVIDER)
    (user,) = yaml.safe_load(provider.inputs["kubeconfig"])["users"]
    assert user["user"]["exec"]["command"] == "kubelogin"
    assert user["user"]["exec"]["args"][:5] == ["get-token", "--login", login, "--server-id",
                                                "6dae42f8-4368-4678-94ff-3960e28e3630"]
    assert "azure-native:authorization:getClientToken" not in recording.invokes
    assert provider.inputs["clusterIdentifier"].endswith("/ManagedCluster/gpushare-dev")  # updated, not replaced
