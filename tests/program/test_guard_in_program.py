"""The guard end to end: `plan --deployed FILE`, and the real program stopping before any GPU pool registers."""

import json

import pulumi
import pytest
import yaml

from gpushare.cli import main
from gpushare.render.mock_engine import MOCK_SUBSCRIPTION, run_program
from gpushare.sharing.node_labels import pool_node_labels
from gpushare.stackfile.config import encode_engine_config, load_stack_file, read_stack_file
from gpushare.stackfile.project import resolve_stack_file
from tests.stack_files import write_stack

AGENT_POOL = "azure-native:containerservice:AgentPool"
STACK = "contoso-prod"  # one pool: a100mig, Standard_ND96asr_v4, MIG1g


def nodepool_list(**a100mig_overrides) -> list[dict]:
    """What `az aks nodepool list -o json` prints for the contoso-prod cluster as deployed (camelCase)."""
    stack = load_stack_file(resolve_stack_file(STACK))
    gpu = stack.pools[0]
    return [
        {"name": "system", "mode": "System", "vmSize": "Standard_D4ds_v5", "count": 2, "osSku": "Ubuntu",
         "availabilityZones": None, "nodeLabels": None, "gpuInstanceProfile": None, "gpuProfile": None},
        {"name": gpu.name, "mode": "User", "vmSize": gpu.vm_size.name, "count": 1, "osSku": "Ubuntu",
         "availabilityZones": None, "nodeLabels": pool_node_labels(stack, gpu), "nodeTaints": list(gpu.taints),
         "gpuInstanceProfile": gpu.mig.value, "gpuProfile": None, "enableAutoScaling": False,
         **a100mig_overrides},
    ]


@pytest.fixture
def deployed(tmp_path):
    def write(pools: list[dict]):
        path = tmp_path / "nodepools.json"
        path.write_text(json.dumps(pools))
        return path
    return write


def test_plan_passes_when_nothing_create_only_changes(deployed, capsys):
    assert main(["plan", STACK, "--json", "--deployed", str(deployed(nodepool_list(count=3)))]) == 0
    guard = json.loads(capsys.readouterr().out)["guard"]
    assert guard["violations"] == []
    assert guard["source"].endswith("nodepools.json")


def test_plan_exits_3_and_explains_a_mig_profile_change(deployed, capsys):
    code = main(["plan", STACK, "--json", "--deployed", str(deployed(nodepool_list(gpuInstanceProfile="MIG2g")))])
    out, err = capsys.readouterr()
    assert code == 3
    violations = json.loads(out)["guard"]["violations"]
    assert [(v["pool"], v["field"], v["deployed"], v["wanted"]) for v in violations] == [
        ("a100mig", "gpuInstanceProfile", "MIG2g", "MIG1g")]
    assert err.startswith("error: ")
    for words in ("a100mig", "MIG2g", "MIG1g", "recreate: true", "Traceback"):
        assert (words in err) == (words != "Traceback"), words


def test_plan_text_lists_the_violation(deployed, capsys):
    assert main(["plan", STACK, "--deployed", str(deployed(nodepool_list(vmSize="Standard_ND96amsr_A100_v4")))]) == 3
    out = capsys.readouterr().out
    assert "x a100mig: vmSize Standard_ND96amsr_A100_v4 -> Standard_ND96asr_v4" in out


def test_plan_without_deployed_says_the_guard_did_not_run(capsys):
    assert main(["plan", STACK, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["guard"] is None


def test_plan_rejects_an_unreadable_deployed_file(tmp_path, capsys):
    bad = tmp_path / "nodepools.json"
    bad.write_text("{not json")
    assert main(["plan", STACK, "--deployed", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "Traceback" not in err


def program(deployed_file=None, preflight=None, **kwargs):
    raw = read_stack_file(resolve_stack_file(STACK)).config
    if preflight:
        raw["gpushare:preflight"] = preflight
    return run_program(STACK, encode_engine_config(raw), deployed=deployed_file, check=False, **kwargs)


def test_violating_stack_registers_no_gpu_pool_and_fails_the_preview(deployed):
    recording = program(deployed(nodepool_list(gpuInstanceProfile="MIG2g")))
    assert isinstance(recording.error, pulumi.RunError)
    assert "a100mig" in str(recording.error) and "gpuInstanceProfile" in str(recording.error)
    assert recording.by_type(AGENT_POOL) == []


def test_recreate_true_lifts_protection_and_warns(deployed, tmp_path):
    raw = read_stack_file(resolve_stack_file(STACK)).config
    raw["gpushare:pools"][0]["recreate"] = True
    recording = run_program(STACK, encode_engine_config(raw), check=False,
                            deployed=deployed(nodepool_list(gpuInstanceProfile="MIG2g")))
    assert recording.error is None
    (agent_pool,) = recording.by_type(AGENT_POOL)
    assert agent_pool.protect is False
    assert any("a100mig" in w and "recreate" in w for w in recording.warnings), recording.warnings


def test_removing_a_labelled_pool_is_stopped(deployed):
    extra = {**nodepool_list()[1], "name": "oldmig", "nodeLabels": {"gpushare.io/pool": "oldmig"}, "count": 2}
    recording = program(deployed([*nodepool_list(), extra]))
    assert isinstance(recording.error, pulumi.RunError)
    assert "oldmig" in str(recording.error)


def test_live_mode_reads_the_provider_subscription_once(monkeypatch):
    """Under `pulumi preview` (neither offline nor a file) the program asks Azure, for the provider's subscription:
    one node-pool list and one cluster read."""
    import gpushare.azure.guard.cluster
    import gpushare.azure.guard.guard_runs

    calls = []

    def fake_read(what):
        def read(subscription_id, resource_group, cluster, **kwargs):
            calls.append((what, subscription_id, resource_group, cluster))
            return None  # first deployment: nothing to guard
        return read

    monkeypatch.setattr(gpushare.azure.guard.guard_runs, "read_live", fake_read("pools"))
    monkeypatch.setattr(gpushare.azure.guard.cluster, "read_live_cluster", fake_read("cluster"))
    recording = program(live_guard=True, preflight="off")  # the guard alone; preflight: test_preflight_in_program
    assert recording.error is None
    assert calls == [("pools", MOCK_SUBSCRIPTION, "contoso-prod-rg", "contoso-prod"),
                     ("cluster", MOCK_SUBSCRIPTION, "contoso-prod-rg", "contoso-prod")]
    assert len(recording.by_type(AGENT_POOL)) == 1


def test_live_mode_strict_fails_when_azure_cannot_be_read(monkeypatch):
    import gpushare.azure.guard.guard_runs
    from gpushare.errors import AzureReadError

    def unreadable(*args, **kwargs):
        raise AzureReadError("could not read the node pools of AKS cluster contoso-prod: 403")

    monkeypatch.setattr(gpushare.azure.guard.guard_runs, "read_live", unreadable)
    recording = program(live_guard=True, preflight="off")
    assert isinstance(recording.error, pulumi.RunError)
    assert "gpushare:guard: warn" in str(recording.error)
    assert recording.by_type(AGENT_POOL) == []


def test_labelled_pool_with_unknown_node_count_is_never_taken_as_empty(deployed, capsys):
    """`count: null` may hide running nodes: removing the pool from the stack is refused, in `plan` and in the
    program alike, never deleted as an empty pool."""
    extra = {**nodepool_list()[1], "name": "oldmig", "nodeLabels": {"gpushare.io/pool": "oldmig"}, "count": None}
    saved = deployed([*nodepool_list(), extra])

    assert main(["plan", STACK, "--json", "--deployed", str(saved)]) == 3
    guard = json.loads(capsys.readouterr().out)["guard"]
    assert [(v["pool"], v["deployed"]) for v in guard["violations"]] == [("oldmig", "deployed, node count unknown")]
    assert guard["headline"] == "1 change would delete running GPU pools"
    recording = program(saved)
    assert isinstance(recording.error, pulumi.RunError) and "oldmig" in str(recording.error)


def test_plan_refuses_a_deployed_file_from_another_cluster(deployed, capsys):
    pools = nodepool_list()
    for pool in pools:
        pool["resourceGroup"] = "contoso-staging-rg"
        pool["id"] = ("/subscriptions/0/resourcegroups/contoso-staging-rg/providers/Microsoft.ContainerService/"
                      f"managedClusters/contoso-staging/agentPools/{pool['name']}")

    assert main(["plan", STACK, "--deployed", str(deployed(pools))]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "is from AKS cluster contoso-staging in resource group contoso-staging-rg" in err
    assert "stack contoso-prod deploys cluster contoso-prod in resource group contoso-prod-rg" in err
    assert "Traceback" not in err


def test_plan_text_headline_says_recreate_deletes_the_pool(deployed, tmp_path, capsys):
    raw = read_stack_file(resolve_stack_file(STACK)).config
    raw["gpushare:pools"][0]["recreate"] = True
    stack_file = write_stack(tmp_path, yaml.safe_dump({"config": raw}), "Pulumi.contoso-prod.yaml")

    assert main(["plan", str(stack_file), "--deployed", str(deployed(nodepool_list(gpuInstanceProfile="MIG2g")))]) == 0
    out = capsys.readouterr().out
    (headline,) = [line for line in out.splitlines() if line.startswith("Guard (")]
    assert headline.endswith(": deletes and recreates pool a100mig (`recreate: true`)"), headline
    assert "no change deletes a GPU pool" not in out
    assert "  ! will delete and recreate pool a100mig" in out


def test_plan_notes_an_os_change_without_refusing_it(deployed, capsys):
    assert main(["plan", STACK, "--json", "--deployed", str(deployed(nodepool_list(osSku="AzureLinux")))]) == 0
    guard = json.loads(capsys.readouterr().out)["guard"]
    assert guard["violations"] == []
    assert [note.split(".")[0] for note in guard["notes"]] == ["pool a100mig: osSKU AzureLinux -> Ubuntu"]


def test_plan_warns_when_mig_strategy_changes_under_a_deployed_mig_pool(deployed, capsys):
    pools = nodepool_list()
    pools[1]["nodeLabels"] = {**pools[1]["nodeLabels"], "gpushare.io/mig-strategy": "mixed"}

    assert main(["plan", STACK, "--json", "--deployed", str(deployed(pools))]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert any("a100mig nvidia.com/mig-1g.5gb -> nvidia.com/gpu (deployed with mixed)" in w for w in warnings), warnings


def test_program_logs_the_guard_headline_under_preview(deployed, caplog):
    import logging

    engine_log = logging.getLogger("gpushare.mock")  # the mock engine's log, which does not propagate
    caplog.set_level(logging.INFO, logger=engine_log.name)
    engine_log.addHandler(caplog.handler)
    saved = deployed(nodepool_list())
    try:
        recording = program(saved)
    finally:
        engine_log.removeHandler(caplog.handler)

    assert recording.error is None
    assert f"guard ({saved}): no change deletes a GPU pool" in caplog.messages
