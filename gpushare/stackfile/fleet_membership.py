"""`gpushare:fleet`: a member stack names its fleet file, and gets the fleet-wide tenants that have pools in it, as
if its own `gpushare:tenants` listed them: in `plan`, `pulumi up` and every command that reads the stack. The
fleet's dispatch manager also learns which tenants are dispatched from its cluster (`StackConfig.fleet_manager`,
computed as the fleet plan computes its dispatch): its shared admission policy leaves their namespaces to the
fleet's dispatch policies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpushare.errors import ConfigError, ConfigProblem
from gpushare.model.keys import FLEET_KEY, TENANTS_KEY
from gpushare.model.stack import FleetManagerRole
from gpushare.stackfile.checks import is_secure_value, kind_of, show
from gpushare.stackfile.declarations import STRING, Field

FLEET = Field(FLEET_KEY, STRING, "The fleet file this stack is a member of, relative to the stack file (e.g. "
                                 "fleet.yaml beside it): the fleet's tenants with pools here are added to "
                                 "gpushare:tenants (docs/fleets.md).",
              default_text="not in a fleet", examples=("fleet.yaml",))


def fleet_file_path(value: str, source: str) -> Path:
    """`gpushare:fleet`'s file: relative to the stack file's directory (the current one for a library's config)."""
    path = Path(value)
    return path if path.is_absolute() else Path(source).parent / path


def with_fleet_tenants(raw: dict[str, Any], source: str, stack: str) \
        -> tuple[dict[str, Any], list[ConfigProblem], FleetManagerRole | None]:
    """`raw` with the fleet's tenants for `stack` appended to its `gpushare:tenants`, the problems found (the fleet
    file's own, each under `gpushare:fleet`, or a stack the fleet does not list), and the stack's role as the
    fleet's dispatch manager (None unless it dispatches tenants). Unchanged without the key."""
    value = raw.get(FLEET_KEY)
    if value is None or is_secure_value(value):
        return raw, [], None  # a secret is reported with every secret gpushare key
    if not isinstance(value, str) or not value.endswith((".yaml", ".yml")):
        return raw, [ConfigProblem(FLEET_KEY, f"expected the fleet file's path relative to this stack file, e.g. "
                                              f"fleet.yaml, got {kind_of(value)} {show(value)}")], None
    from gpushare.stackfile.fleet_config import load_fleet  # validates member stacks with parse_config: deferred

    path = fleet_file_path(value, source)
    try:
        fleet = load_fleet(path)
    except ConfigError as error:
        return raw, [ConfigProblem(f"{FLEET_KEY} ({error.source}) {p.path}", p.message) for p in error.problems], None
    members = [m.stack for m in fleet.config.members]
    if stack not in members:
        return raw, [ConfigProblem(FLEET_KEY, f"{path} does not list stack {stack!r} among its members "
                                              f"({', '.join(members)}); add it there or remove {FLEET_KEY} here")], None
    own = raw.get(TENANTS_KEY) if isinstance(raw.get(TENANTS_KEY), list) else []
    added = [tenant.entry(stack) for tenant in fleet.config.tenants if stack in tenant.members]
    # The manager's role, as load_fleet gave its member stack (the same fleet file, so the same dispatch).
    role = fleet.stacks[stack].fleet_manager if stack == fleet.config.manager else None
    return ({**raw, TENANTS_KEY: [*own, *added]} if added else raw), [], role
