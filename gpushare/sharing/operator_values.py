"""The GPU Operator Helm release gpushare installs: chart values derived from the stack, never written per cluster.

Everything the release needs comes from `operator_plan(stack)`: the device-plugin ConfigMap data and its hash, the
chart values, and a summary for `gpushare plan`. No value carries the hash: a changed pool config is a new
content-addressed key and node label (`device_plugin.config_key`), which the config-manager sidecars pick up on that
pool's nodes only; a hash in the DaemonSets' env would restart the device plugin on every GPU node instead. Every value
path set here must be in the verified path list of the stack's chart version (`chart_value_paths/<version>.txt`):
Helm accepts any value silently, so a misspelled path would simply not apply.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources

from gpushare.sharing.device_plugin import DEFAULT_CONFIG_KEY, PluginConfig, config_map_data, plugin_configs
from gpushare.sharing.pool_facts import stack_pool_facts
from gpushare.stackfile.model import DriverOwner, StackConfig

CHART_REPOSITORY = "https://helm.ngc.nvidia.com/nvidia"
CHART_NAME = "gpu-operator"
RELEASE_NAME = "gpu-operator"
NAMESPACE = "gpu-operator"
CONFIG_MAP_NAME = "gpushare-device-plugin-config"
"""Created by gpushare, not by the chart (`devicePlugin.config.create` stays false), so gpushare owns its data."""
AKS_RUNTIME_CLASS = "nvidia-container-runtime"
"""The runtime class AKS's preinstalled container toolkit registers (NVIDIA's AKS install instructions)."""
OPERATOR_RUNTIME_CLASS = "nvidia"
"""The chart default: the runtime class the operator's own toolkit registers."""

VERIFIED_CHART_VERSIONS = ("v26.7.0",)
"""Chart versions with a verified value-path list. Each deploys device plugin v0.20.0, whose config schema
`device_plugin` checks; a new version needs both a path list and a look at its plugin version."""
_VALUE_PATHS_DIR = "chart_value_paths"


@dataclass(frozen=True)
class OperatorPlan:
    """What gpushare installs for the GPU Operator, derived from one stack."""

    chart_version: str
    configs: tuple[PluginConfig, ...]
    """The default config first, then one per pool in stack order."""
    config_map_data: dict[str, str]
    config_hash: str
    """sha256 of the ConfigMap data (`config_hash`): `plan --json` operator.configHash, export deviceConfigHash."""
    values: dict
    """Helm values for the release."""
    summary: tuple[str, ...]
    """One line per decision, for `gpushare plan`."""


def verified_value_paths(chart_version: str) -> frozenset[str]:
    """The value paths gpushare may set in `chart_version`; raises KeyError for a version without a list."""
    if chart_version not in VERIFIED_CHART_VERSIONS:
        raise KeyError(f"no verified value paths for GPU Operator chart {chart_version}")
    text = resources.files("gpushare.sharing").joinpath(_VALUE_PATHS_DIR, f"{chart_version}.txt").read_text()
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return frozenset(line for line in lines if line)


def value_leaf_paths(values: Mapping, prefix: str = "") -> list[str]:
    """Dotted paths of every leaf: a scalar, a list (Helm replaces lists whole) or an empty mapping."""
    paths = []
    for key, value in values.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            paths += value_leaf_paths(value, path)
        else:
            paths.append(path)
    return sorted(paths)


def unknown_value_paths(values: Mapping, chart_version: str) -> list[str]:
    known = verified_value_paths(chart_version)
    return [path for path in value_leaf_paths(values) if path not in known]


def toleration(taint: str) -> dict[str, str]:
    """The toleration matching exactly one AKS node taint, `key=value:Effect` or `key:Effect`."""
    key_value, _, effect = taint.rpartition(":")
    key, has_value, value = key_value.partition("=")
    if has_value:
        return {"key": key, "operator": "Equal", "value": value, "effect": effect}
    return {"key": key, "operator": "Exists", "effect": effect}


def stack_pool_taints(stack: StackConfig) -> list[str]:
    """Every distinct node taint on the stack's GPU pools (tenant taints included), in a stable order."""
    return sorted({taint for facts in stack_pool_facts(stack).values() for taint in facts.node_taints})


def pool_tolerations(stack: StackConfig) -> list[dict[str, str]]:
    """One toleration per distinct taint on the GPU pools: the operator's DaemonSets must run on every GPU node,
    dedicated ones included, or a pool's nodes get no device plugin."""
    return [toleration(taint) for taint in stack_pool_taints(stack)]


def config_hash(data: Mapping[str, str]) -> str:
    """sha256 of the ConfigMap data as canonical JSON (sorted keys): changes exactly when a key or a config does."""
    canonical = json.dumps(dict(data), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def chart_values(stack: StackConfig) -> dict:
    """Helm values for the stack. Each path is in the chart version's verified list."""
    aks_driver = stack.operator.driver is DriverOwner.AKS
    tolerations = pool_tolerations(stack)
    return {
        # AKS's preinstalled driver and toolkit, or the operator's own (then pools skip AKS's driver).
        "driver": {"enabled": not aks_driver},
        "toolkit": {"enabled": not aks_driver},
        "operator": {"runtimeClass": AKS_RUNTIME_CLASS if aks_driver else OPERATOR_RUNTIME_CLASS},
        # Chart v26.7.0 turns CDI on (values.yaml L15-16): the device plugin then hands pods CDI device names, which
        # only work if containerd has CDI enabled. The operator's toolkit configures that; AKS's own toolkit does not
        # (no AKS source says its node images enable CDI in containerd; Azure/AgentBaker#6014, open since 2025-03,
        # adds `enable_cdi` to containerd only for GPU configs that require it, e.g. DRA). So off with AKS's driver.
        "cdi": {"enabled": not aks_driver},
        "mig": {"strategy": stack.operator.mig_strategy.value},
        # AKS partitions MIG pools at creation; the MIG manager would label them all-disabled and undo it.
        "migManager": {"enabled": False},
        "devicePlugin": {"config": {"name": CONFIG_MAP_NAME, "default": DEFAULT_CONFIG_KEY}},
        "daemonsets": {"tolerations": tolerations},
        "node-feature-discovery": {"worker": {"tolerations": tolerations}},
    }


def _summary(stack: StackConfig, data_hash: str) -> tuple[str, ...]:
    operator = stack.operator
    if operator.driver is DriverOwner.AKS:
        driver = (f"driver: AKS's preinstalled driver and toolkit (driver.enabled=false, toolkit.enabled=false, "
                  f"operator.runtimeClass={AKS_RUNTIME_CLASS}, cdi.enabled=false: AKS's containerd has no CDI)")
    else:
        driver = ("driver: installed by the operator (driver.enabled=true, toolkit.enabled=true); "
                  "GPU pools skip AKS's driver (gpuProfile.driver=None)")
    taints = ", ".join(stack_pool_taints(stack)) or "none"
    return (
        f"chart: {CHART_NAME} {operator.chart_version} from {CHART_REPOSITORY}, release {RELEASE_NAME} "
        f"in namespace {NAMESPACE}",
        driver,
        f"mig.strategy={operator.mig_strategy.value} (overrides flags.migStrategy in every device-plugin config); "
        f"migManager.enabled=false (AKS partitions MIG pools)",
        f"device-plugin configs: ConfigMap {CONFIG_MAP_NAME} (data sha256 {data_hash[:12]}), default key "
        f"{DEFAULT_CONFIG_KEY}; each pool's key is <pool>-<sha256 of its config, 8 hex>, so a changed config "
        f"relabels that pool's nodes only and their device plugin, GFD and MPS daemon reload it",
        f"tolerated by operator DaemonSets and the NFD worker: {taints}",
    )


def operator_plan(stack: StackConfig) -> OperatorPlan:
    """Everything the GPU Operator release needs, for a stack `gpushare.stackfile.config` validated."""
    configs = plugin_configs(stack)
    data = config_map_data(configs)
    data_hash = config_hash(data)
    values = chart_values(stack)
    unknown = unknown_value_paths(values, stack.operator.chart_version)
    if unknown:
        raise AssertionError(f"gpushare sets chart values missing from chart {stack.operator.chart_version}: {unknown}")
    return OperatorPlan(
        chart_version=stack.operator.chart_version,
        configs=configs,
        config_map_data=data,
        config_hash=data_hash,
        values=values,
        summary=_summary(stack, data_hash),
    )
