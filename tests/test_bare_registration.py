"""`make bench`'s yardsticks: the bare and the typed replays register exactly what the plan recorded (same types,
names, parents, providers, options and inputs), so plan/bare measures what gpushare adds on top of the registrations
themselves, and plan/typed what it adds on top of the providers' typed SDK classes."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_bare_replay_registers_every_recorded_resource(tmp_path):
    recording = tmp_path / "dev.recording.json"
    for args in (["record", str(ROOT / "stacks" / "Pulumi.dev.yaml"), str(recording)], ["register", str(recording)]):
        result = subprocess.run([sys.executable, "-m", "benchmarks.bare_registration", *args], cwd=ROOT,
                                capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stderr
    # `register` exits non-zero when it registers fewer resources than were recorded.
    assert recording.stat().st_size > 1000


def test_the_typed_yardstick_finds_the_sdk_class_of_every_recorded_type(tmp_path):
    import json

    import pulumi

    from benchmarks.bare_registration import sdk_class

    recording = tmp_path / "dev.recording.json"
    subprocess.run([sys.executable, "-m", "benchmarks.bare_registration", "record",
                    str(ROOT / "stacks" / "Pulumi.dev.yaml"), str(recording)], cwd=ROOT, check=True)
    types = {r["type"] for r in json.loads(recording.read_text())["resources"] if r["custom"]}
    assert {"azure-native:containerservice:AgentPool", "kubernetes:helm.sh/v3:Release",
            "pulumi:providers:kubernetes"} <= types
    for type_token in types:
        cls = sdk_class(type_token)
        assert issubclass(cls, pulumi.CustomResource), type_token
        assert cls.__name__ == ("Provider" if type_token.startswith("pulumi:providers:") else type_token.split(":")[2])
    result = subprocess.run([sys.executable, "-m", "benchmarks.bare_registration", "register", str(recording),
                             "--typed"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_the_typed_replay_declares_each_resource_through_its_sdk_class():
    import pulumi

    from benchmarks.bare_registration import typed_constructor
    from gpushare.render.mock_engine import run_pulumi

    registered = []

    def program():
        # AgentPool's `resourceName` input is the class's `resource_name_` (its first argument is the Pulumi name).
        registered.append(typed_constructor("azure-native:containerservice:AgentPool")(
            "gpu", {"agentPoolName": "gpu", "resourceGroupName": "rg", "resourceName": "aks", "count": 2},
            pulumi.ResourceOptions()))
    recording = run_pulumi(program, stack="dev", preview=True)
    assert type(registered[0]).__name__ == "AgentPool"
    assert recording.resources[0].inputs == {"agentPoolName": "gpu", "resourceGroupName": "rg", "resourceName": "aks",
                                             "count": 2}


def test_a_typed_replay_that_registers_other_inputs_than_recorded_fails(tmp_path):
    import json

    recording = tmp_path / "dev.recording.json"
    subprocess.run([sys.executable, "-m", "benchmarks.bare_registration", "record",
                    str(ROOT / "stacks" / "Pulumi.dev.yaml"), str(recording)], cwd=ROOT, check=True)
    document = json.loads(recording.read_text())
    # The typed ConfigMap class sets its own `kind`, whatever the recording says: the replay must notice.
    config_map = next(r for r in document["resources"] if r["type"] == "kubernetes:core/v1:ConfigMap")
    config_map["inputs"]["kind"] = "NotAConfigMap"
    recording.write_text(json.dumps(document))
    result = subprocess.run([sys.executable, "-m", "benchmarks.bare_registration", "register", str(recording),
                             "--typed"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode != 0
    assert "other resources or inputs than the plan recorded" in result.stderr


def test_a_missing_recording_is_a_one_line_error(tmp_path):
    result = subprocess.run([sys.executable, "-m", "benchmarks.bare_registration", "register",
                             str(tmp_path / "none.json")], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(f"{tmp_path / 'none.json'}: not a recording")
