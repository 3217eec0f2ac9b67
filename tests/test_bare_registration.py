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
