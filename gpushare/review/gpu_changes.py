"""What a change does to GPU capacity: the model `report` (a cloud preview) and `compare` (two offline plans) share.

Both reduce their input to `PoolTransition`s (a pool's AgentPool inputs and device-plugin config, before and after)
and an `OperatorTransition` (the GPU Operator release's chart version and values, and the ConfigMap's keys), and
render them with the same functions, so the two outputs cannot drift.

Capacity follows the values to where they take effect:
- GPUs per node from the AgentPool's `vmSize` (catalog), MIG instances per GPU from `gpuInstanceProfile` (AKS
  partitions each GPU into 7/3/2/1/1 instances for MIG1g..MIG7g);
- node counts from `count`, or `minCount`..`maxCount` when `enableAutoScaling` is on (the autoscaler owns `count`);
- the device-plugin config a pool's nodes read is the ConfigMap key in their `nvidia.com/device-plugin.config` node
  label (the plugin's config-manager sidecar reads that label; NVIDIA/k8s-device-plugin cmd/config-manager), or the
  pool name when the label is missing; its `sharing` section gives replicas and `renameByDefault` (`.shared`);
- a pool whose nodes carry `nvidia.com/gpu.deploy.device-plugin: "false"` is a DRA pool (`allocation: dra`): it
  advertises no extended resource, and its capacity is in devices of its DeviceClass (`capacity.pool_capacity`); a
  change of allocation on a live pool is flagged (`MOVES`);
- the MIG strategy is the release's `mig.strategy` (the chart passes it as env MIG_STRATEGY, which beats the file's
  `flags.migStrategy`), else the pool's `gpushare.io/mig-strategy` label, else the file's.
The count itself is `gpushare.sharing.capacity.pool_capacity`, the function `plan` uses.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import yaml

from gpushare.model.catalog import MigProfile, find_vm_size
from gpushare.model.stack import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    DEVICE_PLUGIN_DEPLOY_LABEL,
    MIG_STRATEGY_LABEL,
    POOL_LABEL,
    SHARING_LABEL,
    Allocation,
    GpuPool,
    MigStrategy,
    Sharing,
    SharingStrategy,
)
from gpushare.showback.cost import money, money_span, signed_money
from gpushare.review.markdown import code, table
from gpushare.review.tenant_churn import is_template_tag_change, is_tenant_taint_change, is_toleration_change
from gpushare.sharing.capacity import base_resource, device_unit, pool_capacity

AGENT_POOL_TYPE = "azure-native:containerservice:AgentPool"
CONFIG_MAP_TYPE = "kubernetes:core/v1:ConfigMap"
"""The device-plugin ConfigMap is the one named `operator_values.CONFIG_MAP_NAME`."""
RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
"""The GPU Operator release is the one whose chart is `operator_values.CHART_NAME` (or an OCI reference to it:
`operator_values.is_operator_chart`)."""

UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
"""What Pulumi prints for a value known only after apply (`UnknownStringValue`, pulumi sdk/go/common/resource/plugin/rpc.go)."""

DESTROYS = "destroys the pool's nodes and every pod on them"
RESTARTS = "device plugin restarts on these nodes"
RENAMES = "the GPU resource these nodes advertise is renamed"
"""A pod asks for a resource by name: after the plugin restarts with the new config the nodes' allocatable holds
only the new name (the plugin's `renameByDefault` advertises shares as `<resource>.shared` and nothing under the
plain name; k8s-device-plugin `api/config/v1` `ReplicatedResources`), so every pod, Job template and queue asking
for the old name stays Pending there."""
MOVES = "the pool moves between the device plugin and DRA"
"""AKS relabels the nodes in place, but the running workloads lose the resource they were given: the guard refuses
it on a deployed pool unless `recreate: true` (`gpushare.azure.guard.in_place.allocation_change`)."""
RESTARTS_EVERYWHERE = "device plugin restarts on every GPU node (its DaemonSet's pod template changes)"
DESTRUCTIVE = ("replace", "delete")
TENANT_TAINT_NOTE = "nodeTaints: tenant taint (see Tenants)"
TOLERATIONS_NOTE = "tolerations of the tenant taints (see Tenants)"

_SHARING_KEYS = (("mps", SharingStrategy.MPS), ("timeSlicing", SharingStrategy.TIME_SLICING))
"""`mps` first: with both sections the plugin uses MPS only."""


@dataclass(frozen=True)
class PoolSide:
    """One GPU pool before or after the change: its AgentPool inputs (wire names) and its device-plugin config."""

    name: str
    inputs: Mapping
    config: str | None
    """The config YAML its nodes read; None when the ConfigMap is not in the input."""
    mig_strategy: str | None = None
    """The release's `mig.strategy`, when known."""
    planned: tuple[str, int] | None = None
    """(resource, per node) as the plan itself computed them (`plan --json` pools[]), for a size the catalog lacks
    (`describedBy: stack`); None from a preview, which does not carry them."""

    @property
    def config_key(self) -> str:
        labels = self.inputs.get("nodeLabels")
        key = labels.get(DEVICE_PLUGIN_CONFIG_LABEL) if isinstance(labels, Mapping) else None
        return key if isinstance(key, str) and key != UNKNOWN else self.name


@dataclass(frozen=True)
class Capacity:
    resource: str | None
    """None when it cannot be known (VM size not in the catalog, or the config not in the input)."""
    per_node: int | None
    min_nodes: int | None
    max_nodes: int | None

    def total(self) -> str:
        if self.per_node is None or self.min_nodes is None or self.max_nodes is None:
            return "?"
        return _range(self.per_node * self.min_nodes, self.per_node * self.max_nodes)

    def nodes(self) -> str:
        return "?" if self.min_nodes is None or self.max_nodes is None else _range(self.min_nodes, self.max_nodes)


@dataclass(frozen=True)
class SideCost:
    """What one side of a pool costs at list prices; None for what no meter prices."""

    monthly_min: float | None
    monthly_max: float | None
    slice_hourly: float | None
    """Node price per hour / devices advertised per node."""


@dataclass(frozen=True)
class StackCostChange:
    """The stack's monthly total at list prices before and after (0 for a side without the stack)."""

    currency: str
    price_date: str
    before_min: float
    before_max: float
    after_min: float
    after_max: float
    complete: bool
    """Every size on both sides had a price."""
    unknown: tuple[str, ...] = ()
    """What is left out of the totals (a size without a price, an existing cluster's own pools or tier), as said."""


@dataclass(frozen=True)
class PoolTransition:
    name: str
    op: str
    """create, update, replace, delete or same."""
    before: PoolSide | None
    after: PoolSide | None
    protected: bool = False
    cost_before: SideCost | None = None
    cost_after: SideCost | None = None


@dataclass(frozen=True)
class PoolChange:
    """One row of the GPU table."""

    name: str
    op: str
    note: str | None
    """What happens to the pool as a whole (`new pool: ...`, `pool removed`), instead of field changes."""
    changes: tuple[str, ...]
    """`path: old -> new` per changed AgentPool input, then `config: path: old -> new` per device-plugin setting."""
    before: Capacity | None
    after: Capacity | None
    flags: tuple[str, ...]
    cost_before: SideCost | None = None
    cost_after: SideCost | None = None


@dataclass(frozen=True)
class OperatorTransition:
    op: str
    before: Mapping | None
    """The release's inputs before (chart `version`, `values`); None when it did not exist or is not in the input."""
    after: Mapping | None
    config_keys_before: tuple[str, ...] = ()
    config_keys_after: tuple[str, ...] = ()
    config_changed: bool = False


# --- values -----------------------------------------------------------------------------------------------


def _range(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"


def _int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def show(value: object) -> str:
    """A value as a reviewer reads it: unknowns and absences spelled out, long values shortened."""
    if value is None:
        return "(none)"
    if value == UNKNOWN:
        return "(known after apply)"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    text = text.replace("\n", "\\n")
    return text if len(text) <= 80 else text[:77] + "..."


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else f'["{key}"]'


def flatten(value: object, prefix: str = "") -> dict[str, object]:
    """Leaf values by path: `upgradeSettings.maxSurge`, `nodeTaints[0]`, `nodeLabels["gpushare.io/pool"]`."""
    if isinstance(value, Mapping) and value:
        out: dict[str, object] = {}
        for key, item in value.items():
            name = _key(str(key))
            path = f"{prefix}{name}" if name.startswith("[") else f"{prefix}.{name}" if prefix else name
            out.update(flatten(item, path))
        return out
    if isinstance(value, list) and value:
        out = {}
        for index, item in enumerate(value):
            out.update(flatten(item, f"{prefix}[{index}]"))
        return out
    return {prefix: value}


def field_changes(old: object, new: object, prefix: str = "") -> list[tuple[str, object, object]]:
    """(path, old, new) for every leaf that differs, in the order the paths first appear."""
    before, after = flatten(old or {}), flatten(new or {})
    paths = list(dict.fromkeys([*before, *after]))
    return [(f"{prefix}{p}", before.get(p), after.get(p)) for p in paths if before.get(p) != after.get(p)]


def describe(changes: list[tuple[str, object, object]]) -> list[str]:
    return [f"{path}: {show(old)} -> {show(new)}" for path, old, new in changes]


# --- capacity ---------------------------------------------------------------------------------------------


def is_gpu_pool(inputs: Mapping) -> bool:
    """An AgentPool is a GPU pool when its size is in the catalog or it carries gpushare's or the plugin's labels."""
    labels = inputs.get("nodeLabels") if isinstance(inputs.get("nodeLabels"), Mapping) else {}
    return (
        find_vm_size(str(inputs.get("vmSize", ""))) is not None
        or bool(inputs.get("gpuInstanceProfile"))
        or POOL_LABEL in labels or DEVICE_PLUGIN_CONFIG_LABEL in labels
    )


def _parse_config(text: str | None) -> Mapping | None:
    if text is None:
        return None
    try:
        doc = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError):
        return None
    return doc if isinstance(doc, Mapping) else None


def _sharing_from_config(doc: Mapping, resource: str) -> Sharing | None:
    sharing = doc.get("sharing") if isinstance(doc.get("sharing"), Mapping) else {}
    for key, strategy in _SHARING_KEYS:
        block = sharing.get(key)
        if not isinstance(block, Mapping):
            continue
        for entry in block.get("resources") or []:
            name = entry.get("name") if isinstance(entry, Mapping) else None
            replicas = _int(entry.get("replicas")) if isinstance(entry, Mapping) else None
            if isinstance(name, str) and replicas and (name if "/" in name else f"nvidia.com/{name}") == resource:
                # The plugin's renameByDefault defaults to false.
                return Sharing(strategy, replicas, rename_by_default=block.get("renameByDefault") is True)
        return None  # a sharing section that names other resources shares nothing on these nodes
    return None


def _sharing_from_label(inputs: Mapping) -> Sharing | None:
    """`gpushare.io/sharing: time-slicing-4` when the config is not in the input; the rename is then unknown."""
    labels = inputs.get("nodeLabels") if isinstance(inputs.get("nodeLabels"), Mapping) else {}
    strategy, _, replicas = str(labels.get(SHARING_LABEL, "")).rpartition("-")
    try:
        return Sharing(SharingStrategy(strategy), int(replicas))
    except ValueError:
        return None


def side_allocation(inputs: Mapping) -> Allocation:
    """How the pool's nodes are served: DRA where the operator's device plugin is kept off them."""
    labels = inputs.get("nodeLabels") if isinstance(inputs.get("nodeLabels"), Mapping) else {}
    return Allocation.DRA if labels.get(DEVICE_PLUGIN_DEPLOY_LABEL) == "false" else Allocation.DEVICE_PLUGIN


def _side_pool(side: PoolSide) -> tuple[GpuPool, MigStrategy, bool] | None:
    """The pool as `plan` models it (with its sharing), the MIG strategy, and whether its resource name is known;
    None when its size is not in the catalog or its MIG profile is not one."""
    inputs = side.inputs
    size = find_vm_size(str(inputs.get("vmSize", "")))
    if size is None:
        return None
    try:
        mig = MigProfile(inputs["gpuInstanceProfile"]) if inputs.get("gpuInstanceProfile") else None
    except ValueError:
        return None
    doc = _parse_config(side.config)
    flags = doc.get("flags") if doc and isinstance(doc.get("flags"), Mapping) else {}
    labels = inputs.get("nodeLabels") if isinstance(inputs.get("nodeLabels"), Mapping) else {}
    strategy_name = side.mig_strategy or labels.get(MIG_STRATEGY_LABEL) or flags.get("migStrategy")
    strategy = MigStrategy.MIXED if strategy_name == MigStrategy.MIXED.value else MigStrategy.SINGLE
    allocation = side_allocation(inputs)
    resource = base_resource(GpuPool(side.name, size, mig=mig, allocation=allocation), strategy)
    sharing = _sharing_from_config(doc, resource) if doc is not None else _sharing_from_label(inputs)
    # Without the config the replicas come from the label, but whether the plugin renames (`.shared`) is unknown;
    # a DRA pool has no config, and its sharing changes neither its resource nor its count.
    known = doc is not None or sharing is None or allocation is Allocation.DRA
    return GpuPool(side.name, size, mig=mig, sharing=sharing, allocation=allocation), strategy, known


def capacity(side: PoolSide) -> Capacity:
    inputs = side.inputs
    if inputs.get("enableAutoScaling") is True:
        min_nodes, max_nodes = _int(inputs.get("minCount")), _int(inputs.get("maxCount"))
    else:
        min_nodes = max_nodes = _int(inputs.get("count"))
    if find_vm_size(str(inputs.get("vmSize", ""))) is None:
        resource, per_node = side.planned or (None, None)
        return Capacity(resource, per_node, min_nodes, max_nodes)
    modelled = _side_pool(side)
    if modelled is None:
        return Capacity(None, None, min_nodes, max_nodes)
    pool, strategy, known = modelled
    shared = pool_capacity(pool, strategy)
    return Capacity(shared.resource if known else None, shared.per_node, min_nodes, max_nodes)


def side_unit(side: PoolSide | None) -> str | None:
    """What one unit of the pool's resource is, in the words `plan` uses for a tenant's promise
    (`sharing.capacity.device_unit`: a MIG slice of which profile, a share of which GPU); None when not known."""
    modelled = _side_pool(side) if side is not None else None
    if modelled is None:
        return None
    pool, strategy, _ = modelled
    return device_unit(pool, pool_capacity(pool, strategy))


# --- the GPU table ----------------------------------------------------------------------------------------


def pool_change(transition: PoolTransition) -> PoolChange:
    before, after = transition.before, transition.after
    op = transition.op
    note = None
    changes: list[str] = []
    flags: list[str] = []
    if op == "create" and after:
        note = "new pool: " + ", ".join(
            show(after.inputs[k]) for k in ("vmSize", "gpuInstanceProfile") if after.inputs.get(k))
    elif op == "delete":
        note = "pool removed"
    elif before and after:
        input_changes = field_changes(before.inputs, after.inputs)
        changes += describe([c for c in input_changes
                             if not is_tenant_taint_change(*c) and not is_template_tag_change(c[0])])
        if any(is_tenant_taint_change(*c) for c in input_changes):
            changes.append(TENANT_TAINT_NOTE)
        if before.config is not None and after.config is not None and before.config != after.config:
            old_doc, new_doc = _parse_config(before.config), _parse_config(after.config)
            changes += (describe(field_changes(old_doc, new_doc, "config: "))
                        if old_doc is not None and new_doc is not None else ["config: (text changed)"])
    if op in DESTRUCTIVE:
        protected = " (protected: `pulumi up` stops unless the stack sets `recreate: true`)" if transition.protected else ""
        flags.append(f"{op} {DESTROYS}{protected}")
    elif before and after and before.config is not None and after.config is not None \
            and (before.config != after.config or before.config_key != after.config_key):
        flags.append(RESTARTS)
    before_capacity, after_capacity = capacity(before) if before else None, capacity(after) if after else None
    moved = (side_allocation(before.inputs), side_allocation(after.inputs)) if before and after else None
    if op not in DESTRUCTIVE and moved and moved[0] is not moved[1]:
        flags.append(f"{MOVES}: allocation {moved[0].value} -> {moved[1].value}; AKS relabels the nodes in place, "
                     f"but the running workloads lose what they were given ({_show_resource(before_capacity)} -> "
                     f"{_show_resource(after_capacity)}) and must change with it (a guarded change: "
                     f"docs/dra-pools.md, \"Moving a pool from the device plugin to DRA\")")
    elif op not in DESTRUCTIVE and before_capacity and after_capacity and before_capacity.resource \
            and after_capacity.resource and before_capacity.resource != after_capacity.resource:
        flags.append(f"{RENAMES}: {before_capacity.resource} -> {after_capacity.resource}; pods and Job templates "
                     f"asking for {before_capacity.resource} stay Pending on this pool until they ask for "
                     f"{after_capacity.resource}")
    return PoolChange(
        name=transition.name, op=op, note=note, changes=tuple(changes),
        before=before_capacity, after=after_capacity, flags=tuple(flags),
        cost_before=transition.cost_before, cost_after=transition.cost_after,
    )


def _arrow(before: str | None, after: str | None) -> str:
    if before is None:
        return f"- -> {after}"
    if after is None:
        return f"{before} -> -"
    return before if before == after else f"{before} -> {after}"


def _show_resource(capacity_: Capacity | None) -> str | None:
    if capacity_ is None:
        return None
    return capacity_.resource or "?"


def gpu_rows(change: PoolChange) -> list[str]:
    per_node = _arrow(
        None if change.before is None else "?" if change.before.per_node is None else str(change.before.per_node),
        None if change.after is None else "?" if change.after.per_node is None else str(change.after.per_node),
    )
    return [
        f"**{change.name}**",
        f"**{change.op}**" if change.op in DESTRUCTIVE else change.op,
        change.note or "<br>".join(code(c) for c in change.changes) or "(no input changes)",
        _arrow(_show_resource(change.before), _show_resource(change.after)),
        per_node,
        _arrow(change.before.nodes() if change.before else None, change.after.nodes() if change.after else None),
        _arrow(change.before.total() if change.before else None, change.after.total() if change.after else None),
    ]


GPU_TABLE_HEADERS = ("Pool", "Operation", "What changes", "Resource", "Per node", "Nodes", "Total")
COST_HEADER = "Cost/month"


def _monthly(cost: SideCost | None, currency: str) -> str | None:
    return None if cost is None else money_span(cost.monthly_min, cost.monthly_max, currency)


def cost_cell(change: PoolChange, currency: str) -> str:
    """Monthly cost before -> after, and the price of one advertised device when it changes (a new MIG profile,
    other replicas, another size)."""
    cell = _arrow(_monthly(change.cost_before, currency), _monthly(change.cost_after, currency))
    before = change.cost_before.slice_hourly if change.cost_before else None
    after = change.cost_after.slice_hourly if change.cost_after else None
    if before is not None and after is not None and round(before, 4) != round(after, 4):
        cell += f"<br>{money(before, currency, 4)} -> {money(after, currency, 4)} per device-hour"
    return cell


def cost_summary(change: StackCostChange) -> str:
    """`+$4,380/month at max`: the change first, then what it rests on."""
    at_max = change.after_max - change.before_max
    at_min = change.after_min - change.before_min
    head = f"{signed_money(at_max, change.currency)}/month at max" if round(at_max) else "no cost change at max"
    if round(at_min) and round(at_min) != round(at_max):
        head += f" ({signed_money(at_min, change.currency)} at min)"
    partial = ("" if change.complete else
               f"; partial, without {', '.join(change.unknown)}" if change.unknown else
               "; partial: some sizes have no price")
    return (f"{head}: {money_span(change.before_min, change.before_max, change.currency)} -> "
            f"{money_span(change.after_min, change.after_max, change.currency)} a month, list prices of "
            f"{change.price_date}{partial}")


def flag_lines(changes: list[PoolChange]) -> list[str]:
    """The loud part: GitHub alert blocks, one line per flagged pool."""
    destroy = [f"> - **{c.name}**: {flag}" for c in changes for flag in c.flags if DESTROYS in flag]
    restart = [f"> - **{c.name}**: {flag}" for c in changes for flag in c.flags if flag == RESTARTS]
    renamed = [f"> - **{c.name}**: {flag.removeprefix(RENAMES + ': ')}" for c in changes for flag in c.flags
               if flag.startswith(RENAMES)]
    lines = []
    if destroy:
        lines += ["> [!CAUTION]", "> GPU pools destroyed:", *destroy, ""]
    if renamed:
        lines += ["> [!CAUTION]", "> GPU resources renamed (running pods keep their GPUs; new ones must ask for the "
                  "new name):", *renamed, ""]
    if restart:
        lines += ["> [!WARNING]", "> Device-plugin config changes (running pods keep their GPUs; new pods wait for "
                  "the plugin to re-register):", *restart, ""]
    return lines


def gpu_section(transitions: list[PoolTransition], currency: str | None = None) -> list[str]:
    """`currency`: the transitions carry costs in it, shown as one more column."""
    changes = [pool_change(t) for t in transitions]
    if not changes:
        return ["#### GPU pools", "", "No GPU node pool in this change.", ""]
    lines = ["#### GPU pools", ""]
    lines += flag_lines(changes)
    rows = [gpu_rows(c) + ([cost_cell(c, currency)] if currency else []) for c in changes]
    lines += table((*GPU_TABLE_HEADERS, COST_HEADER) if currency else GPU_TABLE_HEADERS, rows)
    lines.append("")
    if any("?" in cell.split(" -> ") for row in rows for cell in row[3:7]):
        lines += ["`?`: not in this input. The VM size is not in gpushare's catalog, or the device-plugin ConfigMap "
                  "is unchanged and hidden: run `pulumi preview --json --show-sames`.", ""]
    return lines


def operator_section(transition: OperatorTransition | None) -> list[str]:
    if transition is None:
        return []
    lines = ["#### GPU Operator", ""]
    before, after = transition.before or {}, transition.after or {}
    if transition.op != "same" or before != after:
        version = _arrow(before.get("version") if transition.before else None,
                         after.get("version") if transition.after else None)
        lines.append(f"- release: **{transition.op}**, chart {code(version)}")
        all_value_changes = field_changes(before.get("values"), after.get("values"))
        value_changes = describe([c for c in all_value_changes if not is_toleration_change(c[0])])
        if transition.before and transition.after:
            lines += [f"  - {code(change)}" for change in value_changes]
            if len(value_changes) < len(all_value_changes):
                lines.append(f"  - {TOLERATIONS_NOTE}")
            # A new chart, the plugin's settings or the strategy it gets as env all change its DaemonSet's pods.
            if before.get("version") != after.get("version") or any(
                    change.startswith(("devicePlugin.", "mig.")) for change in value_changes):
                lines.append(f"  - **{RESTARTS_EVERYWHERE}**")
    old_keys, new_keys = set(transition.config_keys_before), set(transition.config_keys_after)
    added, removed = sorted(new_keys - old_keys), sorted(old_keys - new_keys)
    if added or removed or transition.config_changed:
        detail = [f"added {', '.join(map(code, added))}" if added else "",
                  f"removed {', '.join(map(code, removed))}" if removed else ""]
        detail = "; ".join(d for d in detail if d) or "configs changed"
        lines.append(f"- device-plugin ConfigMap: {detail}")
    if len(lines) == 2:
        lines.append("No change to the GPU Operator release or the device-plugin configs.")
    return [*lines, ""]

