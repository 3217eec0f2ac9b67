"""What the real program (`gpushare.components.program.program`, what `__main__.py` runs) wires together, read from its registrations, exports and warnings: the component
tests build their own wiring, so only running the program catches a value `__main__.py` passes wrongly."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from gpushare.cli import main
from gpushare.model.stack import DEVICE_PLUGIN_CONFIG_LABEL
from gpushare.render.mock_engine import Recording, run_program
from gpushare.stackfile.config import encode_engine_config, read_stack_file
from tests.stack_files import write_stack

AGENT_POOL = "azure-native:containerservice:AgentPool"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "device_plugin" / "by-pool-fleet.yaml"
UPDATE_GOLDEN = os.environ.get("GPUSHARE_UPDATE_GOLDEN") == "1"

# No MIG: `driver: operator` refuses MIG pools. Four pools, four shapes, and a recreate flag.
OPERATOR_FLEET = """\
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: fleet}
  gpushare:operator: {driver: operator}
  gpushare:pools:
    - {name: t4ts, vmSize: Standard_NC4as_T4_v3, sharing: {strategy: time-slicing, replicas: 4}, count: 2}
    - {name: t4mps, vmSize: Standard_NC8as_T4_v3, sharing: {strategy: mps, replicas: 4}, count: 1}
    - {name: a100, vmSize: Standard_NC24ads_A100_v4, autoscale: {min: 1, max: 3}, zones: ["3", "1"]}
    - {name: h100, vmSize: Standard_NC40ads_H100_v5, count: 1, recreate: true}
"""

# Every config shape at once, MIG included (AKS's driver): which config each pool's nodes load.
GOLDEN_FLEET = """\
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: fleet}
  gpushare:pools:
    - {name: a100mig, vmSize: Standard_ND96asr_v4, mig: MIG1g, sharing: {strategy: time-slicing, replicas: 2}}
    - {name: t4ts, vmSize: Standard_NC4as_T4_v3, sharing: {strategy: time-slicing, replicas: 4, renameByDefault: false}}
    - {name: t4mps, vmSize: Standard_NC64as_T4_v3, sharing: {strategy: mps, replicas: 8, failRequestsGreaterThanOne: false}}
    - {name: h100, vmSize: Standard_NC40ads_H100_v5}
    - {name: h100mig, vmSize: Standard_NC80adis_H100_v5, mig: MIG3g}
"""


class _BlockDumper(yaml.SafeDumper):
    """Each config as a block, as `kubectl get configmap -o yaml` shows it."""


_BlockDumper.add_representer(
    str, lambda dumper, s: dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None))

FLEET = "Pulumi.fleet.yaml"


def program(path: Path) -> Recording:
    return run_program("fleet", encode_engine_config(read_stack_file(path).config), stack_file=path)


def agent_pools(recording: Recording) -> dict[str, dict]:
    return {r.inputs["agentPoolName"]: r.inputs for r in recording.by_type(AGENT_POOL)}


def test_operator_driver_reaches_every_pool_as_gpu_profile_none(tmp_path):
    pools = agent_pools(program(write_stack(tmp_path, OPERATOR_FLEET, FLEET)))

    assert {name: inputs.get("gpuProfile") for name, inputs in pools.items()} == {
        name: {"driver": "None"} for name in ("t4ts", "t4mps", "a100", "h100")}


def test_aks_driver_leaves_gpu_profile_unset_on_every_pool(tmp_path):
    aks_driver = OPERATOR_FLEET.replace("{driver: operator}", "{driver: aks}")
    pools = agent_pools(program(write_stack(tmp_path, aks_driver, FLEET)))

    assert {name: "gpuProfile" in inputs for name, inputs in pools.items()} == dict.fromkeys(pools, False)


def test_zones_reach_azure_sorted(tmp_path):
    # Written ["3", "1"]: sent as ["1", "3"], so a pool deployed with ["1", "3"] shows no diff (and no replace).
    assert agent_pools(program(write_stack(tmp_path, OPERATOR_FLEET, FLEET)))["a100"]["availabilityZones"] == ["1", "3"]


def test_program_exports_each_pools_capacity(tmp_path):
    exported = program(write_stack(tmp_path, OPERATOR_FLEET, FLEET)).exports["pools"]

    wanted = {
        # a100 autoscales, so the shares are advertised as nvidia.com/gpu (renameByDefault defaults to false).
        "t4ts": {"resource": "nvidia.com/gpu", "perNode": 4, "minNodes": 2, "maxNodes": 2},
        "t4mps": {"resource": "nvidia.com/gpu", "perNode": 4, "minNodes": 1, "maxNodes": 1},
        "a100": {"resource": "nvidia.com/gpu", "perNode": 1, "minNodes": 1, "maxNodes": 3},
        "h100": {"resource": "nvidia.com/gpu", "perNode": 1, "minNodes": 1, "maxNodes": 1},
    }
    assert set(exported) == set(wanted)
    for name, values in wanted.items():
        assert {key: exported[name][key] for key in values} == values, name


def test_plan_json_marks_only_the_recreate_pool_unprotected(tmp_path, capsys):
    assert main(["plan", str(write_stack(tmp_path, OPERATOR_FLEET, FLEET)), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)

    assert {p["name"]: p["protected"] for p in document["pools"]} == {
        "t4ts": True, "t4mps": True, "a100": True, "h100": False}
    protect = {r["inputs"]["agentPoolName"]: r["protect"] for r in document["resources"] if r["type"] == AGENT_POOL}
    assert protect == {p["name"]: p["protected"] for p in document["pools"]}


# The warnings README and docs/ promise, as the program logs them (`pulumi preview` shows these same lines).
PROMISED_WARNINGS = {
    "time-slicing-isolation": "pool t4ts: time-slicing gives 4 pods per GPU with no memory or fault isolation "
                              "between them; use MIG for multi-tenant work",
    "mps-one-user": "pool t4mps: MPS serves one Linux user at a time on each node: a pod whose CUDA processes run as "
                    "another UID than those already on the node's GPUs waits at CUDA start-up until they have all "
                    "exited; run every pod on this pool as the same user (securityContext.runAsUser)",
    "nc-a100-v4-capacity": "pool a100: Azure deploys no new NC_A100_v4 capacity; prefer NCads_H100_v5 for new pools",
    "one-resource-two-devices": "pools t4ts, t4mps, a100, h100 all advertise nvidia.com/gpu but for different devices "
                                "(A100 80GB; H100 NVL 94GB; T4 16GB mps x4; T4 16GB time-slicing x4)",
}


@pytest.mark.parametrize("warning", PROMISED_WARNINGS.values(), ids=PROMISED_WARNINGS.keys())
def test_program_logs_the_warnings_readme_promises(tmp_path, warning):
    warnings = program(write_stack(tmp_path, OPERATOR_FLEET, FLEET)).warnings

    assert any(w.startswith(warning) for w in warnings), "\n".join(warnings)


def test_plan_text_lists_every_warning_in_its_warnings_section(tmp_path, capsys):
    assert main(["plan", str(write_stack(tmp_path, OPERATOR_FLEET, FLEET))]) == 0
    out = capsys.readouterr().out

    section = out.split("\nWarnings:\n", 1)[1].splitlines()
    assert all(line.startswith("  ! ") for line in section), section
    for warning in PROMISED_WARNINGS.values():
        assert any(line.startswith(f"  ! {warning}") for line in section), (warning, section)
    # The offline plan cannot see what `recreate: true` recreates, so it warns about the flag itself.
    assert any(line.startswith("  ! stack fleet, cluster fleet, pool h100: `recreate: true` lifts the pool's "
                               "protection") for line in section), section


def test_each_pool_label_selects_its_own_config(tmp_path):
    """Multi-pool golden, through the program: each pool's `nvidia.com/device-plugin.config` label names a
    ConfigMap key, and that key holds this pool's config. Keyed by pool in the golden, so it holds whatever the
    keys are called (`GPUSHARE_UPDATE_GOLDEN=1` rewrites it; review the diff)."""
    recording = program(write_stack(tmp_path, GOLDEN_FLEET, FLEET))
    (config_map,) = recording.by_type(CONFIG_MAP)
    data = config_map.inputs["data"]

    by_pool = {name: data[inputs["nodeLabels"][DEVICE_PLUGIN_CONFIG_LABEL]]
               for name, inputs in agent_pools(recording).items()}
    if UPDATE_GOLDEN:
        GOLDEN.write_text(yaml.dump(by_pool, Dumper=_BlockDumper, sort_keys=False))
    assert by_pool == yaml.safe_load(GOLDEN.read_text())
    assert len(set(data)) == len(by_pool) + 1, "one key per pool plus the whole-GPU default"


def test_a_secret_gpushare_setting_is_refused_under_the_engine_too():
    """The engine hands the program secrets decrypted and lists their keys: validation refuses a secret gpushare
    key there as it does offline, instead of taking the plain value into inputs, state and plans."""
    import pulumi

    from gpushare.stackfile.config import read_stack_file
    from gpushare.stackfile.project import resolve_stack_file

    config = encode_engine_config(read_stack_file(resolve_stack_file("dev")).config)
    recording = run_program("dev", config, secret_keys=("gpushare:pools",), check=False)
    assert isinstance(recording.error, pulumi.RunError)
    assert "gpushare:pools: must not be a secret" in str(recording.error)
    assert recording.by_type("azure-native:containerservice:AgentPool") == []


def test_a_secret_subscription_reaches_the_program_as_a_secret():
    from gpushare.stackfile.config import read_stack_file
    from gpushare.stackfile.project import resolve_stack_file

    raw = read_stack_file(resolve_stack_file("dev")).config
    raw["azure-native:subscriptionId"] = "00000000-0000-0000-0000-000000000000"
    recording = run_program("dev", encode_engine_config(raw), secret_keys=("azure-native:subscriptionId",))
    assert recording.by_type("azure-native:containerservice:AgentPool"), "the program runs"


def test_an_unreadable_pulumi_yaml_stops_the_program_with_its_message(tmp_path, monkeypatch):
    import pulumi

    from gpushare.stackfile.config import read_stack_file
    from gpushare.stackfile.project import resolve_stack_file

    config = encode_engine_config(read_stack_file(resolve_stack_file("dev")).config)
    (tmp_path / "Pulumi.yaml").write_text("name: x\nstackConfigDir: [not, a, path]\n")
    monkeypatch.chdir(tmp_path)
    recording = run_program("dev", config, check=False)
    assert isinstance(recording.error, pulumi.RunError) and "Pulumi.yaml" in str(recording.error)
