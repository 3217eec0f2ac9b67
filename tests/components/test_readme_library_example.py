"""README's "Use as a library" program, run as written under the mock engine: it registers exactly what gpushare's
own program registers for the same config, exports what it says, and a bad mapping stops it with gpushare's error."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from unittest import mock

import pulumi
import pytest
import yaml

import gpushare.components
from gpushare.model.environment_variables import OFFLINE_ENV
from gpushare.components import deploy
from gpushare.render.mock_engine import Recording, run_program, run_pulumi
from gpushare.stackfile.config import encode_engine_config
from tests.stack_files import write_stack, run_cli

README = Path(__file__).resolve().parents[2] / "README.md"
START, END = "<!-- library-example:start -->\n```python\n", "```\n<!-- library-example:end -->"


def readme_program() -> str:
    text = README.read_text()
    return text[text.index(START) + len(START):text.index(END)]


def run_readme_program() -> tuple[Recording, dict[str, Any]]:
    """The program as a user's `__main__.py`, offline (no Azure to guard against), and the mapping it passed."""
    passed: dict[str, Any] = {}

    def recording_deploy(config, **kwargs):
        passed.update(config)
        return deploy(config, **kwargs)

    with mock.patch.dict(os.environ, {OFFLINE_ENV: "1"}), \
            mock.patch.object(gpushare.components, "deploy", recording_deploy):
        recording = run_pulumi(lambda: exec(compile(readme_program(), "README.md", "exec"), {"__name__": "__main__"}),
                               stack="ml", preview=True)
    return recording, passed


def registrations(recording: Recording) -> list[dict[str, Any]]:
    """Every registration with its options; sorted, as the engine's order of registration varies between runs."""
    return sorted((r.to_json() for r in recording.resources), key=lambda r: (r["type"], r["name"]))


def test_readme_program_is_ten_lines():
    assert len(readme_program().splitlines()) <= 12, readme_program()


def test_readme_program_registers_what_gpushares_own_program_registers():
    recording, config = run_readme_program()

    assert config["gpushare:pools"][0]["name"] == "t4ts"
    own = run_program("ml", encode_engine_config(config))
    assert registrations(recording) == registrations(own)
    assert recording.warnings == own.warnings
    assert set(own.exports) == {"clusterName", "resourceGroupName", "oidcIssuerUrl", "kubeconfig", "deviceConfigHash",
                                "devicePluginConfigData", "pools"}
    assert recording.get("azure-native:containerservice:ManagedCluster", "cluster-aks").inputs["resourceName"] == \
        "ml-platform"
    (pool,) = recording.by_type("azure-native:containerservice:AgentPool")
    assert (pool.inputs["agentPoolName"], pool.inputs["vmSize"], pool.protect) == ("t4ts", "Standard_NC4as_T4_v3", True)
    assert recording.by_type("kubernetes:helm.sh/v3:Release"), "the GPU Operator"


def test_readme_program_exports_the_kubeconfig():
    recording, _ = run_readme_program()

    # deploy() exports the device-plugin configs it reads back next run (the kept keys of relabelled pools).
    assert list(recording.exports) == ["devicePluginConfigData", "kubeconfig"]
    assert "server: https://mock-dns.hcp.westeurope.azmk8s.invalid:443" in recording.exports["kubeconfig"]


def test_a_bad_mapping_stops_the_program_with_every_problem_and_registers_nothing():
    bad = {"azure-native:location": "westeurope", "gpushare:cluster": {"name": "ml-platform"},
           "gpushare:pools": [{"name": "t4ts", "vmSize": "Standard_NC4as_T4_v3", "count": 1,
                               "sharing": {"strategy": "time-slice", "replicas": 4}}],
           "gpushare:pool": []}

    with mock.patch.dict(os.environ, {OFFLINE_ENV: "1"}):
        recording = run_pulumi(lambda: deploy(bad), check=False)

    assert isinstance(recording.error, pulumi.RunError)
    message = str(recording.error)
    assert message.startswith("deploy(config): 2 configuration errors"), message
    assert "gpushare:pool: unknown key (did you mean 'gpushare:pools'?)" in message
    assert "gpushare:pools[0].sharing.strategy" in message
    assert recording.resources == []


def test_the_components_stay_importable_for_programs_that_compose_their_own():
    for name in ("AksCluster", "ClusterAccess", "GpuNodePool", "GpuOperator", "GpuTenant", "SharedGpuPools"):
        component = getattr(gpushare.components, name)
        assert issubclass(component, pulumi.ComponentResource), name
        assert hasattr(gpushare.components, f"{name}Args"), name



# --- plan --program DIR STACK: the user's own program, offline, with plan's report -------------------------------


def program_dir(tmp_path: Path, source: str) -> Path:
    directory = tmp_path / "ml-infra"
    directory.mkdir()
    (directory / "Pulumi.yaml").write_text("name: ml-infra\nruntime: python\n")
    (directory / "__main__.py").write_text(source)
    return directory


def test_plan_program_plans_the_readme_program_offline_with_the_report_plan_gives_its_mapping(capsys, tmp_path,
                                                                                              monkeypatch):
    """No cloud, no Pulumi CLI: guard and preflight at their defaults (enforce, on) read nothing, and the report is
    the one `plan` gives for a stack file holding the mapping the program passes."""
    monkeypatch.delenv(OFFLINE_ENV, raising=False)
    directory = program_dir(tmp_path, readme_program())
    code, out, err = run_cli(capsys, "plan", "--program", str(directory), "ml", "--json")
    assert code == 0, err
    from_program = json.loads(out)

    _, config = run_readme_program()
    stack_file = write_stack(tmp_path, yaml.safe_dump({"config": config}), "Pulumi.ml.yaml")
    code, out, err = run_cli(capsys, "plan", str(stack_file), "--json")
    assert code == 0, err
    from_stack_file = json.loads(out)

    assert from_program["stackFile"] == "deploy(config)" and from_program["stack"] == "ml"
    for key in ("stackFile",):
        from_program.pop(key), from_stack_file.pop(key)
    assert from_program == from_stack_file
    code, out, _ = run_cli(capsys, "plan", "--program", str(directory), "ml")
    assert code == 0 and out.startswith("Stack ml (deploy(config)): cluster ml-platform in westeurope")


def test_plan_program_passes_the_stack_config_beside_the_program(capsys, tmp_path):
    """As under the Pulumi CLI, the program reads its own config from Pulumi.STACK.yaml."""
    source = readme_program().replace('"westeurope"', 'pulumi.Config("ml").require("location")')
    directory = program_dir(tmp_path, source)
    (directory / "Pulumi.prod.yaml").write_text("config:\n  ml:location: swedencentral\n")
    code, out, err = run_cli(capsys, "plan", "--program", str(directory), "prod", "--json")
    assert code == 0, err
    assert json.loads(out)["location"] == "swedencentral"


@pytest.mark.parametrize("layout, message", [
    ("missing", "--program {dir}: no such directory"),
    ("file", "--program {dir}: not a directory"),
    ("empty", "--program {dir}: no __main__.py there"),
    ("raise", "{dir}/__main__.py, line 3: the program failed: KeyError: 'region'"),
    ("exit", "{dir}/__main__.py, line 2: the program called sys.exit(3)"),
    ("bad mapping", "{dir}/__main__.py: the program stopped: deploy(config): 2 configuration errors"),
    ("no deploy", "{dir}/__main__.py: the program called gpushare.components.deploy() 0 times"),
])
def test_plan_program_refuses_what_it_cannot_plan_with_one_message_and_no_traceback(capsys, tmp_path, layout,
                                                                                   message):
    directory = tmp_path / "ml-infra"
    sources = {
        "raise": "import pulumi\nsettings = {}\nsettings['region']\n",
        "exit": "import sys\nsys.exit(3)\n",
        "bad mapping": "from gpushare.components import deploy\ndeploy({'gpushare:cluster': {'name': 'x'}})\n",
        "no deploy": "import pulumi\npulumi.export('x', 1)\n",
    }
    if layout == "file":
        directory.write_text("")
    elif layout != "missing":
        directory.mkdir()
    if layout in sources:
        (directory / "__main__.py").write_text(sources[layout])
    code, out, err = run_cli(capsys, "plan", "--program", str(directory), "ml")
    assert code == 2 and out == ""
    assert message.format(dir=directory) in err, err
    assert "Traceback" not in err


def test_plan_program_takes_a_directory_relative_to_the_current_one(capsys, tmp_path, monkeypatch):
    """`plan --program ml-infra prod`, as typed beside the program: its config and its program are found, and an
    error in the program names the file as given."""
    source = readme_program().replace('"westeurope"', 'pulumi.Config("ml").require("location")')
    program_dir(tmp_path, source)
    (tmp_path / "ml-infra" / "Pulumi.prod.yaml").write_text("config:\n  ml:location: swedencentral\n")
    monkeypatch.chdir(tmp_path)

    code, out, err = run_cli(capsys, "plan", "--program", "ml-infra", "prod", "--json")
    assert code == 0, err
    assert json.loads(out)["location"] == "swedencentral"
    (tmp_path / "ml-infra" / "__main__.py").write_text("import pulumi\nsettings = {}\nsettings['region']\n")
    code, _, err = run_cli(capsys, "plan", "--program", "ml-infra", "prod")
    assert code == 2 and err.startswith("error: ml-infra/__main__.py, line 3: the program failed: KeyError: 'region'")
