"""Preflight's report: each check a row (check, subject, verdict, detail, fix), the error that stops a run on failed
rows, and the text table `gpushare preflight` prints."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from gpushare.errors import GpushareError


class Verdict(str, Enum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"


@dataclass(frozen=True)
class Check:
    check: str
    """`vm-size`, `zones`, `gpus`, `os-disk`, `quota` or `kubernetes-version`."""
    subject: str
    """What was checked: `pool t4ts`, `system pool`, `standardNCASv3_T4Family`, `cores`, `1.33`."""
    verdict: Verdict
    detail: str
    fix: str = ""

    def to_json(self) -> dict:
        return {"check": self.check, "subject": self.subject, "verdict": self.verdict.value, "detail": self.detail,
                "fix": self.fix}


@dataclass(frozen=True)
class PreflightReport:
    stack: str
    source: str
    region: str
    subscription_id: str
    cluster_exists: bool | None
    """None when the cluster could not be read (then every pool counts in full)."""
    checks: tuple[Check, ...] = ()
    warnings: tuple[str, ...] = ()
    """Azure being unreadable under `gpushare:guard: warn`."""

    @property
    def failures(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.verdict is Verdict.FAIL)

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_json(self) -> dict:
        return {
            "stack": self.stack,
            "stackFile": self.source,
            "region": self.region,
            "subscriptionId": self.subscription_id,
            "clusterExists": self.cluster_exists,
            "passed": self.passed,
            "checks": [c.to_json() for c in self.checks],
            "warnings": list(self.warnings),
        }


class PreflightFailedError(GpushareError):
    """A preflight check failed: the stack would fail at `pulumi up`."""

    exit_code = 1


def findings(report: PreflightReport, verdict: Verdict = Verdict.FAIL) -> list[str]:
    """One line per check with `verdict` (failed ones by default), with its fix."""
    return [f"{c.check} {c.subject}: {c.detail}" + (f"\n  fix: {c.fix}" if c.fix else "")
            for c in report.checks if c.verdict is verdict]


def raise_for_failures(report: PreflightReport, *, details: bool = True) -> None:
    """One `PreflightFailedError` for every failed check: each with detail and fix (the program's message), or
    only naming them when the table with the fixes was printed already (`details=False`, the CLI)."""
    if report.passed:
        return
    count = len(report.failures)
    header = (f"preflight: {count} check{'s' if count != 1 else ''} failed for stack {report.stack} in "
              f"{report.region} (subscription {report.subscription_id}); `pulumi up` would fail on "
              f"{'them' if count != 1 else 'it'}")
    if not details:
        names = ", ".join(f"{c.check} {c.subject}" for c in report.failures)
        raise PreflightFailedError(f"{header}: {names} (see the fix for each in the output)")
    raise PreflightFailedError("\n".join([f"{header}:", *(f"- {line}" for line in findings(report))]))


_COLUMNS = ("CHECK", "SUBJECT", "VERDICT", "DETAIL")


def check_table(checks: tuple[Check, ...] | list[Check]) -> list[str]:
    """The rows as a text table under CHECK, SUBJECT, VERDICT and DETAIL; no lines without rows."""
    rows = [[c.check, c.subject, c.verdict.value, c.detail] for c in checks]
    widths = [max(len(cell) for cell in column) for column in zip(_COLUMNS, *rows)] if rows else []
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
            for row in ([list(_COLUMNS), *rows] if rows else [])]


def render_text(report: PreflightReport, ending: bool = True) -> str:
    """`ending`: the last line saying how many checks failed (a fleet's preflight says it once, at its end)."""
    exists = {True: "exists", False: "does not exist yet", None: "could not be read"}[report.cluster_exists]
    lines = [f"Preflight for stack {report.stack} ({report.source}) in {report.region}, subscription "
             f"{report.subscription_id}; cluster {exists}", ""]
    lines += check_table(report.checks)
    fixes = [c for c in report.checks if c.fix and c.verdict is not Verdict.PASS]
    if fixes:
        lines += ["", "Fixes:"] + [f"  {c.check} {c.subject}: {c.fix}" for c in fixes]
    if report.warnings:
        lines += ["", "Warnings:"] + [f"  ! {w}" for w in report.warnings]
    if ending:
        failed = len(report.failures)
        lines += ["", f"{failed} check(s) failed" if failed else "All checks passed"]
    return "\n".join(lines)
