"""The assembled admission policies of a test stack (test_tenant_admission.py's, with Kueue queues on and per-pool
quotas for nlp, so every rule is in one of them), one YAML file per policy in tests/golden/admission/: what the CEL in
gpushare/kubernetes/admission/*.yaml becomes, to read beside it. A change detector: the behaviour is tested by the
admission tests beside this (test_tenant_admission.py, test_tenant_policy_clauses.py), which judge these policies
with the API server's own plugin. A meant change regenerates them with `python tests/kubernetes/admission/
test_admission_policy_goldens.py`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from gpushare.kubernetes.tenant_objects import tenant_manifests  # noqa: E402
from gpushare.stackfile.config import parse_config  # noqa: E402
from tests.kubernetes.admission.test_tenant_admission import STACK_YAML  # noqa: E402

GOLDEN_DIR = ROOT / "tests" / "golden" / "admission"


def assembled() -> dict[str, str]:
    """Policy name -> the policy as YAML (long expressions folded by the dumper, as `kubectl get -o yaml` shows)."""
    raw = yaml.safe_load(STACK_YAML)["config"]
    raw["gpushare:tenants"][1]["quota"] = {"pools": {"a100": 1, "t4ts": 2}}
    stack = parse_config({**raw, "gpushare:queues": {"enabled": True}}, source="golden", stack="shared")
    return {m["metadata"]["name"]: yaml.safe_dump(m, sort_keys=False, width=120)
            for m in tenant_manifests(stack) if m["kind"] == "ValidatingAdmissionPolicy"}


@pytest.mark.parametrize("name", sorted(assembled()))
def test_the_assembled_policy_is_its_golden(name):
    assert assembled()[name] == (GOLDEN_DIR / f"{name}.yaml").read_text(encoding="utf-8")


def test_every_golden_is_a_policy_of_the_stack():
    assert sorted(p.stem for p in GOLDEN_DIR.glob("*.yaml")) == sorted(assembled())


if __name__ == "__main__":
    for old in GOLDEN_DIR.glob("*.yaml"):
        old.unlink()
    for policy, text in assembled().items():
        (GOLDEN_DIR / f"{policy}.yaml").write_text(text, encoding="utf-8")
