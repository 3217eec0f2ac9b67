"""Device-plugin config files, one per GPU pool, and a strict validator for them.

The GPU Operator's device plugin (k8s-device-plugin v0.20.0, the version chart v26.7.0 deploys) reads the file
named by each node's `nvidia.com/device-plugin.config` label from one ConfigMap. The plugin ignores unknown and
misspelled keys without a word, and checks some rules only on a node at start-up (MPS on MIG, MPS replica
limits), so a wrong file shows up as pods stuck in Pending. `validate_config` checks the plugin's v1 schema and
rules here instead, and `plugin_configs` refuses to return a file that fails it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import yaml

from gpushare.errors import ConfigError, ConfigProblem
from gpushare.model.catalog import MPS_MAX_CLIENTS_LEGACY
from gpushare.model.stack import Allocation, GpuPool, MigStrategy, SharingStrategy, StackConfig
from gpushare.sharing.capacity import WHOLE_GPU_RESOURCE, base_resource

DEVICE_PLUGIN_VERSION = "v0.20.0"
"""The plugin release whose config schema `validate_config` encodes (the default of GPU Operator chart v26.7.0)."""
CONFIG_VERSION = "v1"
DEFAULT_CONFIG_KEY = "default-whole-gpu"
"""Key of the whole-GPU config for GPU nodes without a pool label. Pool keys are `<pool>-<8 hex digits>`
(`config_key`); `whole-gpu` is not hex, so no pool key can ever collide with it."""
CONFIG_KEY_HASH_LENGTH = 8
MIN_REPLICAS = 2
"""The plugin rejects `replicas: 1` for time-slicing and MPS alike ("number of replicas must be >= 2")."""
MAX_RESOURCE_NAME_LENGTH = 63
RESOURCE_PREFIX = "nvidia.com/"
"""The plugin prefixes a bare name (`gpu`) with this before it checks the name."""

SAFE_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""PyYAML's safe dumper and loader, in C (libyaml) when PyYAML was built with it: six times faster on these files.
The text becomes a config key's hash, so both dumpers must write the same bytes for every config gpushare renders
(tests/sharing/test_device_plugin.py checks it)."""

_SHARING_KEYS = {SharingStrategy.TIME_SLICING: "timeSlicing", SharingStrategy.MPS: "mps"}
_PLUGIN_MIG_STRATEGIES = ("none", "single", "mixed")
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")
_DNS_SUBDOMAIN_MAX = 253


@dataclass(frozen=True)
class DeviceTarget:
    """What the nodes that select a config look like, for the rules the plugin only checks on a node."""

    mig_strategy: MigStrategy
    """The chart's `mig.strategy`: passed to the plugin as env MIG_STRATEGY, it beats the file's value."""
    resource: str
    """The resource the plugin advertises on these nodes before sharing (`capacity.base_resource`)."""
    mig_enabled: bool
    mps_max_clients: int
    """MPS replicas per GPU the device plugin's mps-control-daemon accepts (48 from compute capability 7.5, else 16;
    `catalog.MPS_MAX_CLIENTS_MODERN`)."""


@dataclass(frozen=True)
class PluginConfig:
    """One entry of the device-plugin ConfigMap."""

    key: str
    """ConfigMap key and the pool's `nvidia.com/device-plugin.config` node label: `config_key(pool, text)`, or
    DEFAULT_CONFIG_KEY."""
    pool: str | None
    """The pool this config serves; None for the default."""
    text: str
    """The config file, YAML."""


# --- the plugin's v1 schema -------------------------------------------------------------------------------

_Check = Callable[[object], "str | None"]


def _is_bool(value: object) -> str | None:
    return None if isinstance(value, bool) else f"must be true or false, got {value!r}"


def _is_str(value: object) -> str | None:
    return None if isinstance(value, str) else f"must be a string, got {value!r}"


def _is_int(value: object) -> str | None:
    return None if isinstance(value, int) and not isinstance(value, bool) else f"must be an integer, got {value!r}"


def _one_of(*allowed: str) -> _Check:
    def check(value: object) -> str | None:
        return None if value in allowed else f"got {value!r}; allowed: {', '.join(allowed)}"

    return check


_DEVICE_LIST_STRATEGIES = ("envvar", "volume-mounts", "cdi-annotations", "cdi-cri")


def _device_list_strategy(value: object) -> str | None:
    """A single strategy or a list of them."""
    items = value if isinstance(value, list) else [value]
    bad = [item for item in items if item not in _DEVICE_LIST_STRATEGIES]
    if not items or bad:
        return f"got {value!r}; allowed: one or a list of {', '.join(_DEVICE_LIST_STRATEGIES)}"
    return None


def _channel_ids(value: object) -> str | None:
    return None if value in ([], [0]) else f"must be [] or [0], got {value!r}"


@dataclass(frozen=True)
class _ListOf:
    item: Mapping[str, object]


@dataclass(frozen=True)
class _Ignored:
    """A key the plugin parses and then drops with a warning: accepted by the plugin, but a no-op."""

    why: str


_REPLICATED_RESOURCES = {
    "renameByDefault": _is_bool,
    "failRequestsGreaterThanOne": _is_bool,
    "resources": _ListOf({
        "name": _is_str,
        "replicas": _is_int,
        "rename": _Ignored("the plugin ignores per-resource renames; only renameByDefault renames"),
        "devices": _Ignored("the plugin ignores per-device selection; sharing covers every device"),
    }),
}

SCHEMA: Mapping[str, object] = {
    "version": _is_str,
    "flags": {
        "migStrategy": _one_of(*_PLUGIN_MIG_STRATEGIES),
        "failOnInitError": _is_bool,
        "mpsRoot": _is_str,
        "nvidiaDriverRoot": _is_str,
        "nvidiaDevRoot": _is_str,
        "gdrcopyEnabled": _is_bool,
        "gdsEnabled": _is_bool,
        "mofedEnabled": _is_bool,
        "useNodeFeatureAPI": _is_bool,
        "deviceDiscoveryStrategy": _one_of("auto", "nvml", "tegra"),
        "plugin": {
            "passDeviceSpecs": _is_bool,
            "deviceListStrategy": _device_list_strategy,
            "deviceIDStrategy": _one_of("uuid", "index"),
            "cdiAnnotationPrefix": _is_str,
            "nvidiaCTKPath": _is_str,
            "containerDriverRoot": _is_str,
            "sharedDevicesAllocationPolicy": _one_of("distributed", "packed"),
        },
        "gfd": {
            "oneshot": _is_bool,
            "noTimestamp": _is_bool,
            "sleepInterval": _is_str,
            "outputFile": _is_str,
            "machineTypeFile": _is_str,
        },
    },
    "resources": _Ignored("the plugin drops the top-level resources section"),
    "sharing": {"timeSlicing": _REPLICATED_RESOURCES, "mps": _REPLICATED_RESOURCES},
    "imex": {"channelIDs": _channel_ids, "required": _is_bool},
}
"""Every key device plugin v0.20.0 knows (`api/config/v1`), matched exactly: the plugin itself ignores the rest."""


def _schema_problems(value: object, schema: object, path: str) -> list[str]:
    if isinstance(schema, _Ignored):
        return [f"{path}: ignored by device plugin {DEVICE_PLUGIN_VERSION} ({schema.why})"]
    if isinstance(schema, _ListOf):
        if not isinstance(value, list):
            return [f"{path}: must be a list, got {value!r}"]
        return [p for i, item in enumerate(value) for p in _schema_problems(item, schema.item, f"{path}[{i}]")]
    if isinstance(schema, Mapping):
        if not isinstance(value, Mapping):
            return [f"{path or '(the file)'}: must be a mapping, got {value!r}"]
        problems = []
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if key not in schema:
                problems.append(f"{where}: unknown key; device plugin {DEVICE_PLUGIN_VERSION} would ignore it silently")
            else:
                problems += _schema_problems(item, schema[key], where)
        return problems
    problem = schema(value)
    return [f"{path}: {problem}"] if problem else []


# --- the plugin's rules ---------------------------------------------------------------------------------


def resource_name_problem(name: str) -> str | None:
    """The plugin's resource-name check (`NewResourceName`): `nvidia.com/` + a lowercase DNS subdomain, <= 63 chars."""
    full = _full_name(name)
    if len(full) > MAX_RESOURCE_NAME_LENGTH:
        return f"fully-qualified resource name must be {MAX_RESOURCE_NAME_LENGTH} characters or less: {full}"
    local = full[len(RESOURCE_PREFIX):]
    if len(local) > _DNS_SUBDOMAIN_MAX or not _DNS_SUBDOMAIN.fullmatch(local):
        return f"incorrect format for resource name {full!r}: must be a lowercase RFC 1123 subdomain"
    return None


def _full_name(name: str) -> str:
    return name if name.startswith(RESOURCE_PREFIX) else RESOURCE_PREFIX + name


def _sharing_problems(block: Mapping, path: str, mps: bool, target: DeviceTarget | None) -> list[str]:
    resources = block.get("resources")
    if not isinstance(resources, list) or not resources:
        return [f"{path}.resources: no resources specified"]
    problems = []
    for i, resource in enumerate(resources):
        where = f"{path}.resources[{i}]"
        if not isinstance(resource, Mapping):
            continue  # reported by the schema check
        name, replicas = resource.get("name"), resource.get("replicas")
        if name is None:
            problems.append(f"{where}.name: no resource name specified")
        elif isinstance(name, str):
            if problem := resource_name_problem(name):
                problems.append(f"{where}.name: {problem}")
            elif mps and _full_name(name) != WHOLE_GPU_RESOURCE:
                problems.append(f"{where}.name: MPS shares only whole GPUs ({WHOLE_GPU_RESOURCE}), got {name}")
            elif target and _full_name(name) != target.resource:
                problems.append(
                    f"{where}.name: these nodes advertise {target.resource}, got {name}; the plugin would share nothing"
                )
        if replicas is None:
            problems.append(f"{where}.replicas: no replicas specified")
        elif _is_int(replicas) is None:
            if replicas < MIN_REPLICAS:
                problems.append(f"{where}.replicas: number of replicas must be >= {MIN_REPLICAS}, got {replicas}")
            elif mps and target and replicas > target.mps_max_clients:
                problems.append(
                    f"{where}.replicas: the device plugin's MPS control daemon accepts at most "
                    f"{target.mps_max_clients} replicas per GPU on these nodes, got {replicas}"
                )
    return problems


def validate_config(doc: object, target: DeviceTarget | None = None) -> list[str]:
    """Every problem in one device-plugin config file (already parsed), as `<path>: <what is wrong>`.

    Unknown keys, keys the plugin ignores, wrong types, and the plugin's rules: `version: v1`, replicas >= 2,
    resource-name format, MPS only on whole GPUs and never with `migStrategy: mixed`, time-slicing and MPS not
    both. With `target`, also what only shows on a node: the file must state the strategy the chart imposes,
    name the resource the nodes advertise, not use MPS on MIG, and stay within the MPS client limit.
    """
    problems = _schema_problems(doc, SCHEMA, "")
    if not isinstance(doc, Mapping):
        return problems
    if doc.get("version") != CONFIG_VERSION:
        problems.append(f"version: must be {CONFIG_VERSION}, got {doc.get('version')!r}")
    flags = doc.get("flags") if isinstance(doc.get("flags"), Mapping) else {}
    strategy = flags.get("migStrategy")
    if target and strategy != target.mig_strategy.value:
        problems.append(
            f"flags.migStrategy: the chart's mig.strategy sets MIG_STRATEGY={target.mig_strategy.value} on every "
            f"node and overrides this file, got {strategy!r}"
        )
    sharing = doc.get("sharing") if isinstance(doc.get("sharing"), Mapping) else {}
    if "timeSlicing" in sharing and "mps" in sharing:
        problems.append("sharing: both timeSlicing and mps are set; the plugin silently uses mps only")
    for key, block in sharing.items():
        if key in _SHARING_KEYS.values() and isinstance(block, Mapping):
            problems += _sharing_problems(block, f"sharing.{key}", key == "mps", target)
    if "mps" in sharing:
        if strategy == MigStrategy.MIXED.value:
            problems.append("sharing.mps: MPS is not supported with migStrategy mixed (the plugin fails at start-up)")
        if target and target.mig_enabled:
            problems.append("sharing.mps: MPS is not supported on MIG devices (the plugin fails at start-up)")
    return problems


# --- generation -------------------------------------------------------------------------------------------


def device_target(pool: GpuPool | None, mig_strategy: MigStrategy) -> DeviceTarget:
    """The nodes a config serves. For the default (pool None) that is any GPU node without a pool label, so the
    MPS limit is the lower one; the default never shares, so it does not bind."""
    if pool is None:
        return DeviceTarget(mig_strategy, WHOLE_GPU_RESOURCE, mig_enabled=False, mps_max_clients=MPS_MAX_CLIENTS_LEGACY)
    return DeviceTarget(
        mig_strategy=mig_strategy,
        resource=base_resource(pool, mig_strategy),
        mig_enabled=pool.mig is not None,
        mps_max_clients=pool.vm_size.gpu.mps_max_clients,
    )


def config_document(pool: GpuPool | None, mig_strategy: MigStrategy) -> dict:
    """The config for a pool's nodes (whole GPUs, no sharing, when `pool` is None), keys in the plugin docs' order.

    `flags.migStrategy` is the stack's strategy in every file, MIG pool or not: the chart's `mig.strategy` (which
    gpushare sets to the stack's strategy) reaches the plugin as env MIG_STRATEGY and overrides the file, so a
    file saying `none` would state something that never applies. On GPUs without MIG, `single` and `mixed` both
    advertise whole GPUs as `nvidia.com/gpu`, which is what `none` would do.
    """
    doc: dict = {"version": CONFIG_VERSION, "flags": {"migStrategy": mig_strategy.value}}
    if pool is not None and pool.sharing is not None:
        doc["sharing"] = {
            _SHARING_KEYS[pool.sharing.strategy]: {
                "renameByDefault": pool.sharing.rename_by_default,
                "failRequestsGreaterThanOne": pool.sharing.fail_requests_greater_than_one,
                "resources": [{"name": base_resource(pool, mig_strategy), "replicas": pool.sharing.replicas}],
            }
        }
    return doc


def render_config(doc: Mapping) -> str:
    return yaml.dump(dict(doc), Dumper=SAFE_DUMPER, sort_keys=False, default_flow_style=False)


def config_key(pool_name: str, text: str) -> str:
    """`<pool>-<first 8 hex of sha256(text)>`: content-addressed, so a changed config is a new key.

    Why: the device plugin, GFD and the MPS control daemon load their config only when the node label changes.
    In each of their DaemonSets (gpu-operator v26.7.0 `assets/state-device-plugin/0500_daemonset.yaml`,
    `assets/gpu-feature-discovery/0500_daemonset.yaml`, `assets/state-mps-control-daemon/0400_daemonset.yaml`) a
    `config-manager` sidecar watches the node's `nvidia.com/device-plugin.config` label; on a change it links the
    named ConfigMap file to /config/config.yaml and sends SIGHUP (k8s-device-plugin v0.20.0
    `cmd/config-manager/main.go`: `continuouslySyncConfigChanges` reacts only to a changed label value,
    `updateConfig` -> `signalProcess`), and `mps-control-daemon` restarts its daemons with the new file on SIGHUP
    (`cmd/mps-control-daemon/main.go` `start`: "On SIGHUP, restart this loop"). A new config under the same key
    would reach none of them; a new key changes the label of that pool's nodes only (AKS updates node labels in
    place), so only those nodes reload. A label naming a key the ConfigMap lacks fails the sidecar ("specified
    config %v does not exist", `updateConfigName`), hence pools wait for the ConfigMap.
    """
    return f"{pool_name}-{hashlib.sha256(text.encode()).hexdigest()[:CONFIG_KEY_HASH_LENGTH]}"


def pool_plugin_configs(stack: StackConfig) -> Mapping[str, PluginConfig]:
    """Each device-plugin pool's config by pool name: its key is what the pool's nodes' `nvidia.com/device-plugin.
    config` label says (`gpushare.sharing.pool_facts` holds it). A DRA pool has none: the device plugin is kept off
    its nodes, and its sharing is in its claims' opaque config (`gpushare.sharing.dra`)."""
    strategy = stack.operator.mig_strategy
    configs = {}
    for pool in stack.pools:
        if pool.allocation is Allocation.DRA:
            continue
        text = render_config(config_document(pool, strategy))
        configs[pool.name] = PluginConfig(key=config_key(pool.name, text), pool=pool.name, text=text)
    return MappingProxyType(configs)


def plugin_configs(stack: StackConfig, by_pool: Mapping[str, PluginConfig] | None = None
                   ) -> tuple[PluginConfig, ...]:
    """The default config, then each device-plugin pool's (`by_pool`, as its facts hold it; rendered here when not
    given) in stack order, each checked by `validate_config` as rendered. DRA pools have no entry.

    Raises ConfigError naming the pool when a pool's config would be wrong: stack validation should have caught it,
    and deploying it would leave the pool's GPUs unshared or its device plugin crashing.
    """
    strategy = stack.operator.mig_strategy
    default = PluginConfig(key=DEFAULT_CONFIG_KEY, pool=None, text=render_config(config_document(None, strategy)))
    by_pool = pool_plugin_configs(stack) if by_pool is None else by_pool
    targets: list[tuple[GpuPool | None, str, PluginConfig]] = [(None, "gpushare:operator", default)]
    targets += [(pool, f"gpushare:pools[{i}]", by_pool[pool.name]) for i, pool in enumerate(stack.pools)
                if pool.allocation is not Allocation.DRA]
    configs, problems = [], []
    for pool, where, config in targets:
        problems += [
            ConfigProblem(where, f"device-plugin config {pool.name if pool else config.key!r}: {problem}")
            for problem in validate_config(yaml.load(config.text, Loader=SAFE_LOADER), device_target(pool, strategy))
        ]
        configs.append(config)
    if problems:
        raise ConfigError(stack.source, problems)
    return tuple(configs)


def config_map_data(configs: tuple[PluginConfig, ...]) -> dict[str, str]:
    return {config.key: config.text for config in configs}
