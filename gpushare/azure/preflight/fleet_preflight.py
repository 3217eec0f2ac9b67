"""A fleet's preflight (`gpushare fleet preflight`): every member's own checks (sizes, zones, GPUs, version, subnets,
role assignments, an existing cluster's baseline), with the vCPU quota checked once per subscription and region.

A region's quota belongs to a subscription, not to a cluster: two members in one region of one subscription, each
needing 48 A100 vCPUs where 48 are free, each pass their own preflight and together fail. So a member's own quota
rows are left out of its report, and each (subscription, region) gets one set of quota rows summing every member
there (`quota.shared_quota_checks`), each pool counted against its own cluster's current nodes."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpushare.azure.deployed import DeployedPool
from gpushare.azure.deployed_cluster import DeployedCluster
from gpushare.azure.preflight.preflight_report import (
    Check,
    PreflightFailedError,
    PreflightReport,
    Verdict,
    check_table,
    render_text,
)
from gpushare.azure.preflight.preflight_runs import preflight_nodes
from gpushare.azure.preflight.quota import shared_quota_checks
from gpushare.azure.region_offers import RegionOffers
from gpushare.model.stack import StackConfig

FLEET_PREFLIGHT_KIND = "gpushare-fleet-preflight"
FLEET_PREFLIGHT_VERSION = 1


@dataclass(frozen=True)
class MemberPreflight:
    """One member as read: its stack, its subscription, its region's offers, its cluster's pools (None: no
    cluster yet) and the managed cluster where read, and its own report (every check)."""

    stack: StackConfig
    subscription_id: str
    offers: RegionOffers
    deployed: Sequence[DeployedPool] | None
    cluster: DeployedCluster | None
    report: PreflightReport


@dataclass(frozen=True)
class SharedQuota:
    """The quota rows of one subscription's region, counted once over the members there."""

    subscription_id: str
    region: str
    members: tuple[str, ...]
    checks: tuple[Check, ...]

    def to_json(self) -> dict:
        return {"subscriptionId": self.subscription_id, "region": self.region, "members": list(self.members),
                "checks": [c.to_json() for c in self.checks]}


@dataclass(frozen=True)
class FleetPreflightReport:
    fleet: str
    source: str
    members: tuple[PreflightReport, ...]
    """Each member's report, its quota rows left out (they are in `quota`)."""
    quota: tuple[SharedQuota, ...]

    @property
    def failures(self) -> list[tuple[str, Check]]:
        """(where, check) for every failed row: a member's stack, or `subscription/region` for a quota row."""
        return ([(m.stack, c) for m in self.members for c in m.failures]
                + [(f"{q.region} (subscription {q.subscription_id})", c) for q in self.quota for c in q.checks
                   if c.verdict is Verdict.FAIL])

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_json(self) -> dict:
        return {"kind": FLEET_PREFLIGHT_KIND, "version": FLEET_PREFLIGHT_VERSION,
                "fleet": {"name": self.fleet, "file": self.source}, "passed": self.passed,
                "members": [m.to_json() for m in self.members], "quota": [q.to_json() for q in self.quota]}


def evaluate_fleet(fleet: str, source: str, members: Sequence[tuple[str, MemberPreflight]]) -> FleetPreflightReport:
    """`members`: (member stack name, what was read and its own report), in the fleet file's order."""
    groups: dict[tuple[str, str], list[tuple[str, MemberPreflight]]] = {}
    for name, member in members:
        groups.setdefault((member.subscription_id, member.stack.location), []).append((name, member))
    quota = []
    for (subscription_id, region), here in groups.items():
        counted = [(name, preflight_nodes(m.stack, m.cluster), _live(m.deployed)) for name, m in here
                   if _counted(m)]
        quota.append(SharedQuota(subscription_id, region, tuple(name for name, _ in here),
                                 tuple(shared_quota_checks(counted, here[0][1].offers, subscription_id))
                                 if counted else ()))
    reports = tuple(dataclasses.replace(m.report, checks=tuple(c for c in m.report.checks if c.check != "quota"))
                    for _, m in members)
    return FleetPreflightReport(fleet, source, reports, tuple(quota))


def _live(deployed: Sequence[DeployedPool] | None) -> Mapping[str, DeployedPool] | None:
    return {p.name: p for p in deployed} if deployed is not None else None


def _counted(member: MemberPreflight) -> bool:
    """Every member but an existing cluster Azure says is not there (its report fails on that alone)."""
    return not (member.stack.cluster.existing and member.cluster is None)


def raise_for_fleet_failures(report: FleetPreflightReport) -> None:
    """One `PreflightFailedError` naming every failed row (the table with the fixes was printed already)."""
    failures = report.failures
    if not failures:
        return
    names = "; ".join(f"{where}: {c.check} {c.subject}" for where, c in failures)
    raise PreflightFailedError(f"fleet preflight: {len(failures)} check{'s' if len(failures) != 1 else ''} failed "
                               f"for fleet {report.fleet}: {names} (see the fix for each in the output)")


def render_fleet_text(report: FleetPreflightReport) -> str:
    regions = {(q.subscription_id, q.region) for q in report.quota}
    lines = [f"Fleet preflight for {report.fleet} ({report.source}): {len(report.members)} members in "
             f"{len({region for _, region in regions})} regions; vCPU quota counted once per subscription and "
             "region, below", ""]
    for member in report.members:
        lines += [render_text(member, ending=False), ""]
    for quota in report.quota:
        who = (f"members {', '.join(quota.members)} counted together" if len(quota.members) > 1
               else f"member {quota.members[0]} alone")
        lines += [f"Quota in {quota.region}, subscription {quota.subscription_id}: {who}", ""]
        lines += check_table(quota.checks) or ["  (nothing to count: the cluster was not found)"]
        lines.append("")
    fixes = [c for q in report.quota for c in q.checks if c.fix and c.verdict is not Verdict.PASS]
    if fixes:
        lines += ["Quota fixes:"] + [f"  {c.check} {c.subject}: {c.fix}" for c in fixes] + [""]
    failed = len(report.failures)
    lines.append(f"{failed} check(s) failed" if failed else "All checks passed")
    return "\n".join(lines)
