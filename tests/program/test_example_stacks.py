"""The real `__main__.py` under mocks, through `plan --json`, for every example stack users copy from."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpushare.cli import main
from gpushare.render.mock_engine import run_program
from gpushare.stackfile.config import encode_engine_config
from gpushare.stackfile.project import available_stacks
from tests.stack_files import MINIMAL_STACK_YAML, write_stack

AGENT_POOL = "azure-native:containerservice:AgentPool"


def plan_json(stack: str, capsys) -> dict:
    assert main(["plan", stack, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_examples_cover_every_mode():
    assert {"dev", "prod", "contoso-prod"} <= set(available_stacks())


# stack -> {pool: (resource, per node, min nodes, max nodes)}
EXPECTED = {
    "dev": {
        # t4ts autoscales, so every pool's shares are advertised as nvidia.com/gpu (the autoscaler counts a GPU
        # node without it unready).
        "t4ts": ("nvidia.com/gpu", 4, 1, 3),
        "t4mps": ("nvidia.com/gpu", 4, 1, 1),
    },
    "prod": {
        # No pool autoscales under `mixed`.
        "a100mig": ("nvidia.com/mig-1g.5gb", 56, 2, 2),
        "h100mig": ("nvidia.com/mig-3g.47gb.shared", 4, 2, 2),
        "t4batch": ("nvidia.com/gpu", 32, 2, 2),
    },
    "contoso-prod": {
        # A100 40GB x8, MIG1g, strategy single: every 1g.5gb instance is an nvidia.com/gpu.
        "a100mig": ("nvidia.com/gpu", 56, 1, 1),
    },
}


@pytest.mark.parametrize("stack", sorted(EXPECTED))
def test_plan_reports_what_each_pool_advertises(stack, capsys):
    document = plan_json(stack, capsys)
    assert document["stack"] == stack
    got = {p["name"]: (p["resource"], p["perNode"], p["minNodes"], p["maxNodes"]) for p in document["pools"]}
    assert got == EXPECTED[stack]


@pytest.mark.parametrize("stack", sorted(EXPECTED))
def test_gpu_pools_are_separate_protected_agent_pools_chained_in_file_order(stack, capsys):
    document = plan_json(stack, capsys)
    pools = [p["name"] for p in document["pools"]]
    agent_pools = [r for r in document["resources"] if r["type"] == AGENT_POOL]
    assert [r["inputs"]["agentPoolName"] for r in agent_pools] == pools
    assert all(r["protect"] for r in agent_pools)
    for earlier, later in zip(agent_pools, agent_pools[1:]):
        assert earlier["name"] in later["dependsOn"], f"{later['name']} must wait for {earlier['name']}"
    config_map = next(r for r in document["resources"] if r["type"] == "kubernetes:core/v1:ConfigMap")
    keys = {c["pool"]: c["key"] for c in document["devicePluginConfigs"]}
    for agent_pool in agent_pools:
        assert config_map["name"] in agent_pool["dependsOn"]
        label = agent_pool["inputs"]["nodeLabels"]["nvidia.com/device-plugin.config"]
        assert label == keys[agent_pool["inputs"]["agentPoolName"]] and label in config_map["inputs"]["data"]
    cluster = next(r for r in document["resources"] if r["type"] == "azure-native:containerservice:ManagedCluster")
    assert [p["name"] for p in cluster["inputs"]["agentPoolProfiles"]] == ["system"]


def test_plan_json_carries_the_documented_keys(capsys):
    document = plan_json("prod", capsys)
    assert {"stack", "pools", "resources", "warnings"} <= set(document)
    pool = document["pools"][0]
    assert {"name", "vmSize", "gpu", "gpusPerNode", "mig", "slice", "sharing", "replicas", "resource", "perNode",
            "minNodes", "maxNodes"} <= set(pool)
    assert pool["gpu"] == "NVIDIA A100 40GB" and pool["slice"] == "1g.5gb"
    resource = document["resources"][0]
    assert {"type", "name", "inputs", "protect", "dependsOn"} <= set(resource)


def test_plan_shows_layout_warnings(capsys):
    warnings = plan_json("prod", capsys)["warnings"]
    assert any("h100mig: MIG3g builds 2 x 3g.47gb per GPU, leaving 1/7" in w for w in warnings), warnings


def test_plan_text_shows_the_pool_table(capsys):
    assert main(["plan", "contoso-prod"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("POOL"))
    assert header.split() == ["POOL", "VM", "SIZE", "GPU", "MIG", "SLICE", "SHARING", "RESOURCE", "PER", "NODE",
                              "NODES", "TOTAL", "ZONES"]
    row = next(line for line in out.splitlines() if line.startswith("a100mig"))
    assert row.split() == ["a100mig", "Standard_ND96asr_v4", "8", "x", "A100", "40GB", "1g.5gb", "-",
                           "nvidia.com/gpu", "56", "1", "56", "none"]


def test_plan_text_shows_each_pools_zones_as_plan_json_has_them(tmp_path, capsys):
    """Zones are fixed when AKS creates a pool (the guard refuses a change): the text plan shows them (issue 39)."""
    path = write_stack(tmp_path, MINIMAL_STACK_YAML + "      zones: ['1', '3']\n")
    assert main(["plan", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pools"][0]["zones"] == ["1", "3"]
    assert main(["plan", str(path)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("t4 "))
    assert row.split()[-1] == "1,3"


def test_program_refuses_invalid_config_before_registering_anything(monkeypatch):
    """Under `pulumi preview` the program itself validates: one RunError, no resource constructed."""
    import pulumi

    from gpushare.components.aks_cluster import AksCluster

    def constructed(*_args, **_kwargs):
        raise AssertionError("a resource was constructed before the config validated")

    monkeypatch.setattr(AksCluster, "__init__", constructed)

    config = encode_engine_config({
        "azure-native:location": "westeurope",
        "gpushare:cluster": {"name": "c1"},
        "gpushare:pools": [{"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "mig": "MIG1g"}],
    })
    with pytest.raises(pulumi.RunError) as raised:
        run_program("broken", config)
    assert "stacks/Pulumi.broken.yaml" in str(raised.value)
    assert "gpushare:pools[0].mig" in str(raised.value)


def test_plan_json_is_the_same_on_every_run():
    """Plans are diffed in pull requests: the engine's concurrent registration must not reorder anything.
    Separate processes, as users run it: within one process the order happens to repeat."""
    root = Path(__file__).resolve().parents[2]
    outputs = {
        subprocess.run([sys.executable, "-m", "gpushare", "plan", "prod", "--json"], cwd=root, check=True,
                       capture_output=True).stdout
        for _ in range(3)
    }
    assert len(outputs) == 1


def test_resources_are_listed_after_what_they_wait_for(capsys):
    resources = plan_json("prod", capsys)["resources"]
    seen = set()
    for resource in resources:
        waits = set(resource["dependsOn"]) | ({resource["provider"]} if resource["provider"] else set())
        assert waits <= seen, resource["name"]
        seen.add(resource["name"])
    # Pools after the device-plugin ConfigMap: their node labels name its keys. The release does not wait for them.
    # (Tenants' objects, which wait only for the provider, are checked in test_tenants_in_program.py.)
    cluster_and_pools = [r for r in resources if not r["name"].startswith(("tenant-", "shared-gpu-pools"))]
    assert [r["name"] for r in cluster_and_pools] == [
        "cluster-rg", "cluster-aks", "cluster-node-os-window", "cluster-upgrade-window",
        "cluster-access-provider", "gpu-operator-namespace", "gpu-operator-configmap",
        "a100mig-agentpool", "h100mig-agentpool", "t4batch-agentpool", "gpu-operator-release"]
    release = cluster_and_pools[-1]
    assert not any(name.endswith("-agentpool") for name in release["dependsOn"])


def test_program_reads_config_the_way_the_pulumi_cli_passes_it(monkeypatch):
    """The real language host hands config over in PULUMI_CONFIG, not through the SDK's in-process setter."""
    from gpushare.stackfile.config import read_stack_file
    from gpushare.stackfile.project import resolve_stack_file

    raw = read_stack_file(resolve_stack_file("contoso-prod")).config
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps(encode_engine_config(raw)))
    recording = run_program("contoso-prod", {})
    (agent_pool,) = recording.by_type(AGENT_POOL)
    assert agent_pool.inputs["gpuInstanceProfile"] == "MIG1g"
    cluster = recording.get("azure-native:containerservice:ManagedCluster", "cluster-aks")
    assert cluster.inputs["dnsPrefix"] == "contoso-prod"


def test_the_autoscaled_shared_pool_tells_the_autoscaler_its_real_per_node_count(capsys):
    """From the real program: t4batch offers 32 x nvidia.com/gpu per node while its SKU has 4 GPUs; the scale-set
    tag gives the autoscaler's empty-pool template the 32, so there is no over-provisioning warning."""
    plan = plan_json("prod", capsys)
    (t4batch,) = [r for r in plan["resources"] if r["name"] == "t4batch-agentpool"]
    resources = {name: value for name, value in t4batch["inputs"]["tags"].items()
                 if name.startswith("k8s.io_cluster-autoscaler_node-template_resources_")}
    assert resources == {"k8s.io_cluster-autoscaler_node-template_resources_nvidia.com_gpu": "32"}
    assert not any("cluster autoscaler models a new" in w for w in plan["warnings"]), plan["warnings"]


@pytest.mark.parametrize("stack", sorted(EXPECTED))
def test_examples_pin_no_kubernetes_version(stack, capsys):
    """AKS picks its default supported minor; a pin goes stale (1.33 reached end of life in July 2026)."""
    document = plan_json(stack, capsys)
    assert document["cluster"]["kubernetesVersion"] is None
    assert not any("kubernetesVersion" in w for w in document["warnings"])


def test_plan_refuses_a_minor_aks_supports_only_under_long_term_support_on_the_standard_tier(tmp_path, capsys):
    """1.34's standard support ended in November 2026: `pulumi up` on the Standard tier would fail, so plan does."""
    stack_file = write_stack(tmp_path, MINIMAL_STACK_YAML.replace(
        "name: gpushare-test", 'name: gpushare-test\n    kubernetesVersion: "1.34"'), "Pulumi.old.yaml")
    assert main(["plan", str(stack_file), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "gpushare:cluster.kubernetesVersion" in captured.err and "only under long-term support" in captured.err
    assert "set tier: Premium and supportPlan: AKSLongTermSupport" in captured.err


def test_plan_accepts_that_minor_on_the_premium_tier_with_long_term_support(tmp_path, capsys):
    stack_file = write_stack(tmp_path, MINIMAL_STACK_YAML.replace(
        "name: gpushare-test", 'name: gpushare-test\n    kubernetesVersion: "1.34"\n    tier: Premium\n'
                               '    supportPlan: AKSLongTermSupport'), "Pulumi.lts.yaml")
    document = plan_json(str(stack_file), capsys)
    assert (document["cluster"]["tier"], document["cluster"]["supportPlan"]) == ("Premium", "AKSLongTermSupport")
    (cluster,) = [r for r in document["resources"] if r["type"] == "azure-native:containerservice:ManagedCluster"]
    assert cluster["inputs"]["supportPlan"] == "AKSLongTermSupport" and cluster["inputs"]["sku"]["tier"] == "Premium"


def test_plan_warns_when_the_pin_is_newer_than_the_gpu_operator_was_validated_on(tmp_path, capsys):
    stack_file = write_stack(tmp_path, MINIMAL_STACK_YAML.replace(
        "name: gpushare-test", 'name: gpushare-test\n    kubernetesVersion: "1.37"'), "Pulumi.new.yaml")
    (warning,) = [w for w in plan_json(str(stack_file), capsys)["warnings"] if "kubernetesVersion" in w]
    assert "'1.37' is newer than Kubernetes 1.36, the newest NVIDIA validated GPU Operator v26.7.0 on" in warning


def test_plan_json_says_what_an_upgrade_costs_per_pool(capsys):
    document = plan_json("dev", capsys)
    upgrades = {p["name"]: p["upgrade"] for p in document["pools"]}
    assert upgrades["t4mps"] == {
        "maxSurge": "0", "maxUnavailable": "1",
        "summary": "upgrade: 1 node at a time offline: the whole pool (4 x nvidia.com/gpu), no extra VM "
                   "(maxSurge 0, maxUnavailable 1)"}
    sent = {r["inputs"]["agentPoolName"]: r["inputs"]["upgradeSettings"] for r in document["resources"]
            if r["type"] == AGENT_POOL}
    assert sent == {"t4ts": {"maxSurge": "0", "maxUnavailable": "1"}, "t4mps": {"maxSurge": "0", "maxUnavailable": "1"}}


def test_a_pools_upgrade_settings_reach_its_agent_pool(tmp_path, capsys):
    stack_file = write_stack(tmp_path, MINIMAL_STACK_YAML + "      upgrade: {maxSurge: 1, maxUnavailable: 0}\n",
                             "Pulumi.surge.yaml")
    document = plan_json(str(stack_file), capsys)
    (agent_pool,) = [r for r in document["resources"] if r["type"] == AGENT_POOL]
    assert agent_pool["inputs"]["upgradeSettings"] == {"maxSurge": "1", "maxUnavailable": "0"}
    assert "1 extra Standard_NC4as_T4_v3 VM at a time" in document["pools"][0]["upgrade"]["summary"]
