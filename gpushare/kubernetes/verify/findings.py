"""What verify found: a finding per mismatch or pending state, with its likely cause and the fix."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum


class Verdict(str, Enum):
    PASS = "pass"
    PENDING = "pending"
    MISMATCH = "mismatch"


@dataclass(frozen=True)
class Finding:
    where: str
    """`pool t4ts`, `operator` or `tenants`; a node's finding names the node in `problem`."""
    problem: str
    cause: str
    fix: str
    pending: bool = False
    """The cluster is still getting there (scaling, node NotReady, pods starting): not a failure."""
    idle: bool = False
    """Pending until a pod asks for the pool's GPUs (autoscaled from 0): `--wait` does not wait for it."""

    def to_json(self) -> dict:
        return {"where": self.where, "problem": self.problem, "cause": self.cause, "fix": self.fix,
                "pending": self.pending, "idle": self.idle}



def verdict_of(findings: Iterable[Finding]) -> Verdict:
    findings = list(findings)
    if any(not f.pending for f in findings):
        return Verdict.MISMATCH
    return Verdict.PENDING if findings else Verdict.PASS
