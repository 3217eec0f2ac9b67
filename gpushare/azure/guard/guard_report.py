"""The guard's report: the violations (create-only changes and removed pools), notes and warnings, and the one
error that stops a run on its violations."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from gpushare.azure.agent_pool_request import NOT_REPORTED
from gpushare.azure.deployed import DeployedPool
from gpushare.azure.deployed_cluster import DeployedCluster
from gpushare.azure.guard.create_only import settled_settings
from gpushare.errors import GuardViolationError
from gpushare.model.stack import GpuPool, StackConfig
from gpushare.sharing.pool_facts import PoolFactsByName


ALLOCATION_FIELD = "allocation"
"""A violation's field when the stack moves a live pool between the device plugin and DRA (`in_place`)."""


@dataclass(frozen=True)
class Violation:
    """One create-only setting (or a whole pool, `field == "pool"`) the stack would change on a live pool, or may
    change where the deployed pools do not report it, or a live pool's allocation (`ALLOCATION_FIELD`), which AKS
    changes in place under its running workloads."""

    pool: str
    field: str
    deployed: str
    wanted: str
    message: str

    @property
    def may_only(self) -> bool:
        """The deployed pools do not report the setting: the change replaces the pool unless Pulumi's state happens
        to hold the new value, which the guard cannot see."""
        return self.deployed == NOT_REPORTED[1]


def violation_count(violations: Iterable[Violation]) -> str:
    """How many changes would, or may, delete running GPU pools (or move them between the device plugin and DRA), as
    the headline and the error say it."""
    violations = list(violations)
    may = sum(v.may_only for v in violations)
    moves = sum(v.field == ALLOCATION_FIELD for v in violations)
    parts = [f"{count} change{'s' if count != 1 else ''} {verb} delete running GPU pools"
             for count, verb in ((len(violations) - may - moves, "would"), (may, "may")) if count]
    found = " and ".join(parts) + (" (a setting the deployed pools do not report)" if may else "")
    moved = (f"{moves} change{'s' if moves != 1 else ''} would move running GPU pools between the device plugin "
             f"and DRA") if moves else ""
    return " and ".join(part for part in (found, moved) if part)


@dataclass(frozen=True)
class GuardReport:
    source: str
    """Where the deployed pools came from: `azure:/subscriptions/.../managedClusters/<name>` or a file path."""
    violations: tuple[Violation, ...] = ()
    notes: tuple[str, ...] = ()
    """Changes AKS makes in place that still disturb running pods (sharing), and other facts worth reading."""
    warnings: tuple[str, ...] = ()
    """Accepted recreates (`recreate: true`), removed empty pools, a migStrategy change that renames MIG pools'
    resources, and Azure being unreadable under `gpushare:guard: warn`."""
    deployed: tuple[DeployedPool, ...] | None = field(default=None, compare=False)
    """The agent pools the guard compared against (its one read, shared with the program and preflight); None when
    the cluster does not exist yet or Azure could not be read. Input, not a finding: reports compare without it."""
    recreated: tuple[str, ...] = ()
    """Deployed pools this run deletes and recreates (`recreate: true` and a create-only setting changes)."""
    unprotected: tuple[str, ...] = ()
    """Pools whose protection `recreate: true` lifts for this run, recreated or not."""
    removed: tuple[str, ...] = ()
    """Empty gpushare pools the stack no longer lists: deleted if an earlier run lifted their protection."""
    compared: bool = True
    """False when nothing was compared (Azure unreadable under `gpushare:guard: warn`)."""
    cluster: DeployedCluster | None = field(default=None, compare=False)
    """The managed cluster as the cluster guard read it (None: not read, or not there yet): preflight's baseline
    findings for an existing cluster come from it. Input, like `deployed`."""

    @property
    def headline(self) -> str:
        """One line that agrees with the findings: what this run deletes, or that it deletes no GPU pool."""
        if not self.compared:
            return "not compared: the deployed pools could not be read; only pool protection stops a replace"
        parts = []
        if self.violations:
            parts.append(violation_count(self.violations))
        if self.recreated:
            parts.append(f"deletes and recreates {_pools(self.recreated)} (`recreate: true`)")
        if self.removed:
            parts.append(f"deletes empty {_pools(self.removed)} only if an earlier run applied `recreate: true` "
                         "on it, otherwise Pulumi stops on its protection")
        if not parts:
            parts.append("no change deletes a GPU pool")
        kept = [name for name in self.unprotected if name not in self.recreated]
        if kept:
            parts.append(f"protection lifted on {_pools(kept)} (`recreate: true`)")
        return "; ".join(parts)

    def settled(self, stack: StackConfig, pool: GpuPool, facts: PoolFactsByName | None = None) -> tuple[str, ...]:
        """The create-only settings (wire names) the stack sends only optionally and here sets to exactly what the
        deployed pool already has (see `settled_settings`); empty when the pool is not deployed or Azure unread."""
        live = next((p for p in self.deployed or () if p.name == pool.name), None)
        return settled_settings(stack, pool, live, self.deployed or (), facts) if live else ()

    def live_count(self, pool: str) -> int | None:
        """The deployed node count of `pool`; None when unknown (not deployed, cluster absent, Azure unread)."""
        return next((p.count for p in self.deployed or () if p.name == pool), None)

    def to_json(self) -> dict:
        return {
            "source": self.source,
            "headline": self.headline,
            "violations": [asdict(v) for v in self.violations],
            "notes": list(self.notes),
            "warnings": list(self.warnings),
        }


def _pools(names: Iterable[str]) -> str:
    names = list(names)
    return f"pool{'s' if len(names) != 1 else ''} {', '.join(names)}"


def raise_for_violations(report: GuardReport) -> None:
    """Raise one `GuardViolationError` listing every violation, if there is any."""
    if not report.violations:
        return
    lines = [f"{violation_count(report.violations)} (deployed pools read from {report.source}):"]
    for violation in report.violations:
        lines += ["", violation.message]
    raise GuardViolationError("\n".join(lines))
