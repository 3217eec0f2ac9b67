"""A fleet file (`stacks/fleet.yaml`): the member stacks, their update roles, the dispatching member, the update order
and the fleet-wide tenants, validated like a stack file (every problem at once, each with its key path, the value,
what is allowed and the fix), and each member's stack validated with the fleet's tenants merged in."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpushare.errors import ConfigError, ConfigProblem
from gpushare.model import regions
from gpushare.model.fleet import (
    AutoUpgrade,
    AutoUpgradeChannel,
    FleetConfig,
    FleetMember,
    FleetTenant,
    NodeImageSelection,
)
from gpushare.model.keys import FLEET_KEY, POOLS_KEY, TENANTS_KEY
from gpushare.model.stack import DispatchedTenant, FleetManagerRole, StackConfig
from gpushare.sharing.dispatch_choice import choose_dispatch
from gpushare.stackfile.checks import GUID_RE, did_you_mean, kind_of, show
from gpushare.stackfile.config import parse_config
from gpushare.stackfile.files import MAX_FILE_BYTES, StackFileShapeError, load_yaml, read_stack_file
from gpushare.stackfile.fleet_membership import fleet_file_path
from gpushare.stackfile.namespaces import namespace_problem

FLEET_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
"""A Fleet's, FleetMember's, group's and stage's name: 1-63 lowercase letters, digits or '-' (the Fleet API's
`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, maxLength 63; Azure/bicep-types-az generated/containerservice/
microsoft.containerservice/2023-06-15-preview/types.md)."""
TOP_KEYS = ("fleet", "members", "dispatch", "updates", "tenants")
FLEET_KEYS = ("name", "resourceGroup", "location", "resourceGroupExists")
MEMBER_KEYS = ("stack", "name", "group", "canary")
UPDATES_KEYS = ("canaryWaitSeconds", "autoUpgrade")
AUTO_UPGRADE_KEYS = ("channel", "nodeImageSelection")
TENANT_KEYS = ("name", "groups", "members")
MEMBER_TENANT_KEYS = ("pools", "quota", "queue", "guaranteed")
"""What a fleet tenant's entry per member may hold: a stack file tenant's keys but its name and groups, which the
fleet states once."""
DEFAULT_CANARY_WAIT_SECONDS = 3600
"""An hour between the canary stage and the rest: long enough for the GPU Operator to roll its driver and device
plugin onto the canary's new nodes and for a tenant's job to show a broken image."""
RESOURCE_GROUP_RE = re.compile(r"^[-\w._()]{0,89}[-\w_()]$")
"""ARM's resource group name (1-90 of letters, digits, `-_.()`, not ending in a dot)."""


@dataclass(frozen=True)
class Fleet:
    """A validated fleet: its description and each member's stack, the fleet's tenants merged in."""

    config: FleetConfig
    stacks: dict[str, StackConfig]
    """stack -> its validated StackConfig, in member order."""


class _Problems:
    def __init__(self) -> None:
        self.problems: list[ConfigProblem] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append(ConfigProblem(path, message))

    def mapping(self, value: Any, path: str, keys: tuple[str, ...], example: str) -> dict[str, Any]:
        """`value` as a mapping of known keys; each unknown key reported (the rest still read)."""
        if not isinstance(value, dict):
            self.add(path, f"expected a mapping, e.g. {example}, got {kind_of(value)} {show(value)}")
            return {}
        for key in value:
            if key not in keys:
                self.add(f"{path}.{key}" if path else str(key),
                         f"unknown key{did_you_mean(str(key), keys)}; allowed: {', '.join(keys)}")
        return value

    def name(self, value: Any, path: str, what: str) -> str | None:
        if not isinstance(value, str) or not FLEET_NAME_RE.match(value):
            fix = re.sub(r"[^a-z0-9-]", "-", str(value).lower()).strip("-")[:63] or "gpu-fleet"
            self.add(path, f"{what} must be 1-63 lowercase letters, digits or '-', starting and ending with a letter "
                           f"or digit (the Fleet API's name rule), got {show(value)}; write e.g. {fix!r}")
            return None
        return value

    def boolean(self, value: Any, path: str) -> bool:
        if not isinstance(value, bool):
            self.add(path, f"expected true or false, got {kind_of(value)} {show(value)}")
            return False
        return value


def read_fleet_file(path: Path) -> dict[str, Any]:
    """The fleet file's mapping, or ConfigError naming the file."""
    source = str(path)
    try:
        data = path.read_bytes()
        if len(data) > MAX_FILE_BYTES:
            raise ConfigError(source, [ConfigProblem("(file)", f"larger than {MAX_FILE_BYTES // 1024:,} KiB; a fleet "
                                                               "file is a few KiB, so this is not one")])
        document = load_yaml(data.decode("utf-8"))
    except FileNotFoundError:
        raise ConfigError(source, [ConfigProblem("(file)", f"no such fleet file ({path.resolve()}); fix the path "
                                                           "that names it or write the file (docs/fleets.md)")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, [ConfigProblem("(file)", f"cannot be read: {exc}")]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(file)"
        raise ConfigError(source, [ConfigProblem(where, f"not valid YAML: {getattr(exc, 'problem', None) or exc}")]) \
            from None
    except StackFileShapeError as exc:
        raise ConfigError(source, [ConfigProblem(exc.where, exc.problem)]) from None
    if not isinstance(document, dict):
        raise ConfigError(source, [ConfigProblem("(file)", "a fleet file is a YAML mapping with `fleet:`, `members:` "
                                                           "and optionally `dispatch:`, `updates:` and `tenants:`")])
    return document


def load_fleet(path: Path) -> Fleet:
    """Validate the fleet file at `path` and every member stack (with the fleet's tenants merged in), or raise one
    ConfigError naming the fleet file and listing every problem, the members' own under their stack files."""
    document = read_fleet_file(path)
    p = _Problems()
    p.mapping(document, "", TOP_KEYS, "fleet: {...}")
    fleet = p.mapping(document.get("fleet"), "fleet", FLEET_KEYS,
                      "{name: gpu-fleet, resourceGroup: rg-gpu-fleet, location: westeurope}")
    name = p.name(fleet.get("name"), "fleet.name", "the Fleet's name") if fleet else None
    resource_group = fleet.get("resourceGroup")
    if fleet and (not isinstance(resource_group, str) or not RESOURCE_GROUP_RE.match(resource_group)):
        p.add("fleet.resourceGroup", f"required: the resource group of the Fleet resource (1-90 letters, digits, "
                                     f"'-', '_', '.', '(' or ')'), got {show(resource_group)}; e.g. rg-gpu-fleet")
    location = fleet.get("location")
    if fleet and (not isinstance(location, str) or not regions.is_known_region(location)):
        close = regions.closest_regions(str(location)) if isinstance(location, str) else []
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        p.add("fleet.location", f"required: the Azure region of the Fleet resource (any region; members may be in "
                                f"others), got {show(location)}{hint}; e.g. westeurope")
    rg_exists = p.boolean(fleet["resourceGroupExists"], "fleet.resourceGroupExists") \
        if "resourceGroupExists" in fleet else False
    directory = path.parent
    members, raws = _members(p, document.get("members"), directory)
    manager = _manager(p, document.get("dispatch"), members)
    wait, auto_upgrade = _updates(p, document.get("updates", {}))
    tenants = _tenants(p, document.get("tenants", []), raws, path)
    stacks = _member_stacks(p, members, raws, tenants, directory)
    if manager in stacks and not p.problems:
        stacks[manager] = _as_manager(p, stacks, manager, str(path))
    if p.problems:
        raise ConfigError(str(path), p.problems)
    config = FleetConfig(source=str(path), directory=directory, name=name or "", resource_group=resource_group,
                         location=location, resource_group_exists=rg_exists, members=tuple(members),
                         manager=manager, canary_wait_seconds=wait, auto_upgrade=auto_upgrade,
                         tenants=tuple(tenants))
    return Fleet(config, stacks)


def _members(p: _Problems, value: Any, directory: Path) -> tuple[list[FleetMember], dict[str, dict[str, Any]]]:
    """The members, and each readable member's raw stack config (by stack)."""
    example = "[{stack: prod, canary: true}, {stack: eu-east}]"
    if not isinstance(value, list) or len(value) < 2:
        p.add("members", f"required: a list of at least two member stacks (a canary and the rest), e.g. {example}, "
                         f"got {kind_of(value)} {show(value)}")
        return [], {}
    members: list[FleetMember] = []
    raws: dict[str, dict[str, Any]] = {}
    available = sorted(f.name[len("Pulumi."):-len(".yaml")] for f in directory.glob("Pulumi.*.yaml"))
    for index, entry in enumerate(value):
        path = f"members[{index}]"
        entry = p.mapping(entry, path, MEMBER_KEYS, "{stack: prod, canary: true, group: canary}")
        stack = entry.get("stack")
        if not isinstance(stack, str) or not stack:
            p.add(f"{path}.stack", f"required: the member's stack name (Pulumi.STACK.yaml in {directory}), got "
                                   f"{show(stack)}; stacks here: {', '.join(available) or 'none'}")
            continue
        if stack in raws or any(m.stack == stack for m in members):
            p.add(f"{path}.stack", f"stack {stack!r} is listed twice; a cluster is one member of the fleet")
            continue
        stack_file = directory / f"Pulumi.{stack}.yaml"
        if not stack_file.is_file():
            p.add(f"{path}.stack", f"no stack file {stack_file}{did_you_mean(stack, available)}; the fleet's members "
                                   f"are stacks beside the fleet file: {', '.join(available) or 'none'}")
        else:
            try:
                raws[stack] = read_stack_file(stack_file).config
            except ConfigError as error:
                p.problems += [ConfigProblem(f"{path} ({stack_file}) {q.path}", q.message) for q in error.problems]
        member_name = p.name(entry.get("name", stack), f"{path}.name" if "name" in entry else f"{path}.stack",
                             "the FleetMember's name (the stack's unless `name:` is given)")
        canary = p.boolean(entry["canary"], f"{path}.canary") if "canary" in entry else False
        group = p.name(entry.get("group", member_name or "member"), f"{path}.group", "an update group's name")
        members.append(FleetMember(stack=stack, name=member_name or stack, group=group or stack, canary=canary))
    _check_roles(p, members)
    return members, raws


def _check_roles(p: _Problems, members: list[FleetMember]) -> None:
    """A canary first and something after it; a group is either a canary group or not."""
    if not members:
        return
    if not any(m.canary for m in members):
        p.add("members", "no canary: mark the member whose cluster takes GPU node-image and driver updates first with "
                         "`canary: true` (a cluster whose tenants can stand a bad image for the wait)")
    elif all(m.canary for m in members):
        p.add("members", "every member is a canary, so nothing waits for the canary; set `canary: false` on the "
                         "members updated after it")
    for group in dict.fromkeys(m.group for m in members):
        roles = {m.canary for m in members if m.group == group}
        if len(roles) > 1:
            stacks = ", ".join(m.stack for m in members if m.group == group)
            p.add("members", f"group {group!r} ({stacks}) holds canary and non-canary members, but a group updates in "
                             f"one stage; give the canary its own group")
    names = [m.name for m in members]
    for name in dict.fromkeys(n for n in names if names.count(n) > 1):
        p.add("members", f"FleetMember name {name!r} is used twice; give one `name:`")


def _manager(p: _Problems, value: Any, members: list[FleetMember]) -> str | None:
    if value is None:
        return None
    dispatch = p.mapping(value, "dispatch", ("manager",), "{manager: prod}")
    manager = dispatch.get("manager")
    stacks = [m.stack for m in members]
    if manager not in stacks:
        p.add("dispatch.manager", f"must be a member's stack (the cluster whose Kueue dispatches jobs to the others), "
                                  f"got {show(manager)}{did_you_mean(str(manager), stacks)}; members: "
                                  f"{', '.join(stacks)}")
        return None
    return manager


def _updates(p: _Problems, value: Any) -> tuple[int, AutoUpgrade | None]:
    updates = p.mapping(value, "updates", UPDATES_KEYS, "{canaryWaitSeconds: 3600, autoUpgrade: {channel: NodeImage}}")
    wait = updates.get("canaryWaitSeconds", DEFAULT_CANARY_WAIT_SECONDS)
    if isinstance(wait, bool) or not isinstance(wait, int) or wait < 0:
        p.add("updates.canaryWaitSeconds", f"expected whole seconds to wait after the canary stage (0 or more), got "
                                           f"{show(wait)}; e.g. 3600")
        wait = DEFAULT_CANARY_WAIT_SECONDS
    if "autoUpgrade" not in updates:
        return wait, None
    auto = p.mapping(updates["autoUpgrade"], "updates.autoUpgrade", AUTO_UPGRADE_KEYS, "{channel: NodeImage}")
    channel = _enum(p, auto.get("channel"), "updates.autoUpgrade.channel", AutoUpgradeChannel, required=True)
    selection = _enum(p, auto.get("nodeImageSelection", NodeImageSelection.LATEST.value),
                      "updates.autoUpgrade.nodeImageSelection", NodeImageSelection)
    return wait, AutoUpgrade(channel, selection or NodeImageSelection.LATEST) if channel else None


def _enum(p: _Problems, value: Any, path: str, kind, required: bool = False):
    allowed = [e.value for e in kind]
    if value in allowed:
        return kind(value)
    what = "required" if required and value is None else f"got {show(value)}"
    p.add(path, f"{what}{did_you_mean(str(value), allowed) if value is not None else ''}; allowed: "
                f"{', '.join(allowed)}")
    return None


def _raw_names(raw: dict[str, Any], key: str) -> list[str]:
    entries = raw.get(key)
    return [e["name"] for e in entries if isinstance(e, dict) and isinstance(e.get("name"), str)] \
        if isinstance(entries, list) else []


def _tenants(p: _Problems, value: Any, raws: dict[str, dict[str, Any]], fleet_file: Path) -> list[FleetTenant]:
    if not isinstance(value, list):
        p.add("tenants", f"expected a list of tenants, e.g. [{{name: vision, groups: [...], members: {{prod: "
                         f"{{pools: [a100mig]}}}}}}], got {kind_of(value)} {show(value)}")
        return []
    tenants: list[FleetTenant] = []
    for index, entry in enumerate(value):
        path = f"tenants[{index}]"
        entry = p.mapping(entry, path, TENANT_KEYS, "{name: vision, members: {prod: {pools: [a100mig]}}}")
        name = entry.get("name")
        problem = namespace_problem(name) if isinstance(name, str) else "required: the team's namespace, e.g. vision"
        if problem:
            p.add(f"{path}.name", problem)
        elif any(t.name == name for t in tenants):
            p.add(f"{path}.name", f"tenant {name!r} is declared twice; declare it once and list its members")
        groups = entry.get("groups", [])
        if not isinstance(groups, list) or not all(isinstance(g, str) and GUID_RE.match(g) for g in groups):
            p.add(f"{path}.groups", f"expected a list of Entra ID group object IDs (GUIDs), got {show(groups)}")
            groups = []
        members = _tenant_members(p, entry.get("members"), f"{path}.members", name, raws, fleet_file)
        if not problem:
            tenants.append(FleetTenant(name=name, groups=tuple(groups), members=members))
    return tenants


def _names_fleet(raw: dict[str, Any], stack_file: Path, fleet_file: Path) -> bool:
    value = raw.get(FLEET_KEY)
    return isinstance(value, str) and fleet_file_path(value, str(stack_file)).resolve() == fleet_file.resolve()


def _tenant_members(p: _Problems, value: Any, path: str, tenant: Any, raws: dict[str, dict[str, Any]],
                    fleet_file: Path) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict) or not value:
        p.add(path, f"required: the members where the tenant has pools, each with its pools there, e.g. "
                    f"{{prod: {{pools: [a100mig]}}}}, got {kind_of(value)} {show(value)}")
        return {}
    members = {}
    for stack, entry in value.items():
        member_path = f"{path}.{stack}"
        if stack not in raws:
            p.add(member_path, f"{stack!r} is not a member of the fleet{did_you_mean(str(stack), list(raws))}; "
                               f"members: {', '.join(raws)}")
            continue
        entry = p.mapping(entry, member_path, MEMBER_TENANT_KEYS, "{pools: [a100mig]}")
        pools, stack_pools = entry.get("pools"), _raw_names(raws[stack], POOLS_KEY)
        if not isinstance(pools, list) or not pools:
            p.add(f"{member_path}.pools", f"required: the member's pools the tenant's GPU pods may use, got "
                                          f"{show(pools)}; its pools: {', '.join(stack_pools)}")
            continue
        for i, pool in enumerate(pools):
            if pool not in stack_pools:
                p.add(f"{member_path}.pools[{i}]", f"member {stack} has no pool {show(pool)}"
                                                   f"{did_you_mean(str(pool), stack_pools)}; its pools: "
                                                   f"{', '.join(stack_pools)}")
        if not _names_fleet(raws[stack], fleet_file.parent / f"Pulumi.{stack}.yaml", fleet_file):
            p.add(member_path, f"member {stack}'s stack file does not name this fleet, so its own `pulumi up` would "
                               f"not create the tenant there; add `{FLEET_KEY}: {fleet_file.name}` to "
                               f"Pulumi.{stack}.yaml")
        if tenant in _raw_names(raws[stack], TENANTS_KEY):
            p.add(member_path, f"member {stack} declares a tenant {tenant!r} itself ({TENANTS_KEY} in its stack file);"
                               f" declare it in one place: remove it there, or remove {stack} here")
        members[stack] = dict(entry)
    return members


def _member_stacks(p: _Problems, members: list[FleetMember], raws: dict[str, dict[str, Any]],
                   tenants: list[FleetTenant], directory: Path) -> dict[str, StackConfig]:
    """Each member's stack validated with the fleet's tenants appended to its own; a problem in an appended tenant is
    reported at the fleet tenant's entry for that member."""
    stacks = {}
    if p.problems:
        return stacks  # a member stack merged with a fleet that is wrong would report the fleet's mistake twice
    for index, member in enumerate(members):
        # Its `gpushare:fleet` names this file (checked in _tenant_members): the members are validated here with
        # the fleet's tenants added, not again through it.
        raw = {key: value for key, value in raws[member.stack].items() if key != FLEET_KEY}
        own = raw.get(TENANTS_KEY) if isinstance(raw.get(TENANTS_KEY), list) else []
        added = [t for t in tenants if member.stack in t.members]
        merged = {**raw, TENANTS_KEY: [*own, *(t.entry(member.stack) for t in added)]} if added else raw
        stack_file = directory / f"Pulumi.{member.stack}.yaml"
        try:
            stacks[member.stack] = parse_config(merged, source=str(stack_file), stack=member.stack)
        except ConfigError as error:
            for problem in error.problems:
                p.problems.append(_fleet_problem(problem, index, stack_file, len(own), added, tenants, member.stack))
    return stacks


def _fleet_problem(problem: ConfigProblem, index: int, stack_file: Path, own: int, added: list[FleetTenant],
                   tenants: list[FleetTenant], stack: str) -> ConfigProblem:
    match = re.match(rf"^{re.escape(TENANTS_KEY)}\[(\d+)\](.*)$", problem.path)
    if match and int(match[1]) >= own:
        tenant = added[int(match[1]) - own]
        rest = match[2]
        return ConfigProblem(f"tenants[{tenants.index(tenant)}].members.{stack}{rest}", problem.message)
    return ConfigProblem(f"members[{index}] ({stack_file}) {problem.path}", problem.message)


def manager_role(stacks: dict[str, StackConfig], manager: str, fleet_file: str) -> FleetManagerRole | None:
    """What the manager member's stack learns of the dispatch (`choose_dispatch`, as the fleet plan's dispatch
    computes it): the tenants dispatched from its cluster, each with its workers; None when nothing is."""
    chosen = choose_dispatch(manager, stacks)
    if not chosen.tenants:
        return None
    return FleetManagerRole(fleet=fleet_file, tenants=tuple(
        DispatchedTenant(name, tuple(chosen.tenant_workers[name])) for name in chosen.tenants))


def _as_manager(p: _Problems, stacks: dict[str, StackConfig], manager: str, fleet_file: str) -> StackConfig:
    """The manager's stack with its role (`StackConfig.fleet_manager`), as its own `gpushare:fleet` gives it; a
    dispatched tenant named as one of the manager's platform namespaces is refused (the fleet stack would make
    that namespace a tenant's, and the manager's shared policy would leave it to the tenant's dispatch policies)."""
    own = stacks[manager]
    role = manager_role(stacks, manager, fleet_file)
    if role is None:
        return own
    platform = {ns.name for ns in own.platform}
    for tenant in role.tenants:
        if tenant.name in platform:
            p.add("dispatch.manager", f"tenant {tenant.name} is dispatched from {manager} (pools in "
                                      f"{', '.join(tenant.workers)}, none in {manager}), but {own.source} lists "
                                      f"{tenant.name} among its platform namespaces, which the tenant's namespace "
                                      f"on {manager} would be; rename the tenant or that platform namespace")
    return dataclasses.replace(own, fleet_manager=role)
