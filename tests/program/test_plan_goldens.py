"""`plan --json` stays byte-identical on every example stack (and a generated ten-pool stack with tenants).

The goldens in tests/golden/plan/ were written by `plan --json` before gpushare was regrouped into packages; a
change of output that is meant (a new key) regenerates them with `python tests/program/test_plan_goldens.py`
and shows up as a reviewed diff of the goldens.
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_DIR = ROOT / "tests" / "golden" / "plan"
# golden name -> the STACK argument `plan` is given (stack names resolve in stacks/, paths as written).
CASES = {
    "dev": "dev",
    "prod": "prod",
    "contoso-prod": "contoso-prod",
    "bench10": "tests/golden/plan/Pulumi.bench10.yaml",
}


def plan_output(stack: str) -> str:
    result = subprocess.run([sys.executable, "-m", "gpushare", "plan", stack, "--json"], cwd=ROOT,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("case", sorted(CASES))
def test_plan_json_is_byte_identical_to_its_golden(case):
    assert plan_output(CASES[case]) == (GOLDEN_DIR / f"{case}.json").read_text(encoding="utf-8")


if __name__ == "__main__":
    for name, stack in CASES.items():
        (GOLDEN_DIR / f"{name}.json").write_text(plan_output(stack), encoding="utf-8")
