"""`make bench`'s baseline: the bare replay registers exactly what the plan recorded (same types, names, parents,
providers and options), so plan/bare measures what gpushare adds on top of the registrations themselves."""

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
