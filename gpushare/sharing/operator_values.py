"""The GPU Operator Helm release gpushare installs: chart values derived from the stack, never written per cluster.

Everything the release needs comes from `operator_plan(stack)`: the device-plugin ConfigMap data and its hash, the
chart values, and a summary for `gpushare plan`. No value carries the hash: a changed pool config is a new
content-addressed key and node label (`device_plugin.config_key`), which the config-manager sidecars pick up on that
pool's nodes only; a hash in the DaemonSets' env would restart the device plugin on every GPU node instead. For a chart
version gpushare has verified, every value path set here must be in its path list (`chart_value_paths/<version>.txt`):
Helm accepts any value silently, so a misspelled path would simply not apply; another version is a warning naming
what was verified, and its paths are checked against the verified version's values (`operator_warnings`).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from gpushare.model.stack import (
    DEFAULT_CHART_REPOSITORY,
    DEFAULT_CHART_VERSION,
    DriverOwner,
    StackConfig,
)
from gpushare.sharing.device_plugin import (
    DEFAULT_CONFIG_KEY,
    RESOURCE_PREFIX,
    PluginConfig,
    config_map_data,
    plugin_configs,
)
from gpushare.sharing.pool_facts import PoolFactsByName, given_or_derived

CHART_NAME = "gpu-operator"
RELEASE_NAME = "gpu-operator"
NAMESPACE = "gpu-operator"
CONFIG_MAP_NAME = "gpushare-device-plugin-config"
"""Created by gpushare, not by the chart (`devicePlugin.config.create` stays false), so gpushare owns its data."""
AKS_RUNTIME_CLASS = "nvidia-container-runtime"
"""`operator.runtimeClass` with AKS's driver and toolkit (NVIDIA's AKS install instructions): the name of the
containerd runtime handler AKS registers on GPU nodes (Azure/AgentBaker's containerd template, `IsNSeriesSKU`:
`runtimes.nvidia-container-runtime`, also the default runtime). AKS registers only that handler, no RuntimeClass
object: the operator creates the RuntimeClass, named and handled after this value (gpu-operator v26.7.0
`assets/pre-requisites/0200_runtime_class.yaml`, `FILLED_BY_OPERATOR`, filled by `controllers/object_controls.go`
`transformRuntimeClass`), and runs its own pods under it."""
OPERATOR_RUNTIME_CLASS = "nvidia"
"""The chart default: the RuntimeClass the operator creates for the handler its own toolkit registers."""

VERIFIED_CHART_VERSIONS = ("v26.7.0",)
"""Chart versions with a verified value-path list. Each deploys device plugin v0.20.0, whose config schema
`device_plugin` checks; a new version needs both a path list and a look at its plugin version."""
_VALUE_PATHS_DIR = "chart_value_paths"
SUBCHARTS = ("node-feature-discovery",)
"""Subcharts whose own values the parent values.yaml lists only in part: paths under them are passed on unchecked."""
OCI_PREFIX = "oci://"

_DRIVER_KEY = "gpushare:operator.driver"
_TOLERATIONS = ("gpushare computes it from the taints of every GPU pool (tenant, Spot and your own), so the operator's "
                "DaemonSets and NFD run on each GPU node", "each pool's `taints` (they are tolerated automatically)")
OWNED_VALUE_PATHS: dict[str, tuple[str, str]] = {
    "driver.enabled": ("it follows who installs the NVIDIA driver, which each pool's gpuProfile depends on",
                       _DRIVER_KEY),
    "toolkit.enabled": ("it follows who installs the driver and container toolkit", _DRIVER_KEY),
    "operator.runtimeClass": ("it must name the runtime class of the toolkit in use (AKS's or the operator's)",
                              _DRIVER_KEY),
    "cdi.enabled": ("with AKS's toolkit gpushare keeps the device list in the variable AKS's default runtime "
                    "(nvidia-container-runtime) reads, and turns CDI on only with the operator's own toolkit",
                    _DRIVER_KEY),
    "mig.strategy": ("it decides the resource every MIG pool advertises, which the plan, tenants and quotas use",
                     "gpushare:operator.migStrategy"),
    "migManager.enabled": ("AKS partitions MIG pools at creation, and the MIG manager would undo it",
                           "each pool's `mig`"),
    "devicePlugin.config": ("it selects gpushare's device-plugin ConfigMap, one config per pool",
                            "each pool's `sharing`"),
    "devicePlugin.enabled": ("every GPU pool advertises its GPUs through the operator's device plugin",
                             "nothing: remove the value (a pool that should not share drops its `sharing`)"),
    "daemonsets.tolerations": _TOLERATIONS,
    "node-feature-discovery.worker.tolerations": _TOLERATIONS,
}
"""Chart value paths gpushare owns because a pool depends on them: (why, the gpushare key to use instead)."""


@dataclass(frozen=True)
class OperatorPlan:
    """What gpushare installs for the GPU Operator, derived from one stack."""

    chart_version: str
    chart: str
    """The chart reference: `gpu-operator`, or `oci://<registry>/gpu-operator`."""
    repository: str | None
    """The Helm repository URL; None for an OCI chart reference."""
    configs: tuple[PluginConfig, ...]
    """The default config first, then one per pool in stack order."""
    config_map_data: dict[str, str]
    config_hash: str
    """sha256 of the ConfigMap data (`config_hash`): `plan --json` operator.configHash, export deviceConfigHash."""
    values: dict
    """Helm values for the release."""
    changed_values: tuple[dict, ...]
    """`changed_values`: the leaves of `values` that differ from the chart's defaults."""
    summary: tuple[str, ...]
    """One line per decision, for `gpushare plan`."""


def verified_value_paths(chart_version: str) -> frozenset[str]:
    """The value paths gpushare may set in `chart_version`; raises KeyError for a version without a list."""
    if chart_version not in VERIFIED_CHART_VERSIONS:
        raise KeyError(f"no verified value paths for GPU Operator chart {chart_version}")
    text = resources.files("gpushare.sharing").joinpath(_VALUE_PATHS_DIR, f"{chart_version}.txt").read_text()
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return frozenset(line for line in lines if line)


@cache
def chart_defaults(chart_version: str) -> dict[str, Any] | None:
    """Every value path of the chart version and its default (`chart_value_paths/<version>.defaults.tsv`), or None
    when gpushare has no index of that version."""
    source = resources.files("gpushare.sharing").joinpath(_VALUE_PATHS_DIR, f"{chart_version}.defaults.tsv")
    if not source.is_file():
        return None
    rows = (line.split("\t", 1) for line in source.read_text().splitlines() if line and not line.startswith("#"))
    return {path: json.loads(default) for path, default in rows}


def _owned(path: str) -> tuple[str, tuple[str, str]] | None:
    for owned, why in OWNED_VALUE_PATHS.items():
        if path == owned or path.startswith(f"{owned}.") or owned.startswith(f"{path}."):
            return owned, why
    return None


def _path_problem(path: str, defaults: Mapping[str, Any], version: str) -> str | None:
    """Why `path` (a leaf of the user's values) is not a value of the chart, or None."""
    if path in defaults:
        return None
    if any(known.startswith(f"{path}.") for known in defaults):
        return (f"is a mapping in chart {version}, not a single value: set the keys under it "
                f"(e.g. {path}.{next(k for k in defaults if k.startswith(path + '.'))[len(path) + 1:]})")
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        parent = ".".join(parts[:cut])
        if parent in defaults:
            if defaults[parent] in ({}, None):
                return None  # a free-form mapping (labels, resources, annotations): any key under it
            return f"{parent} is {_kind(defaults[parent])} in chart {version}, with no keys under it"
    close = difflib.get_close_matches(path, list(defaults), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return (f"is not a value of GPU Operator chart {version} (its values.yaml has no such path){hint}; allowed: the "
            f"paths of `helm show values gpu-operator --repo {DEFAULT_CHART_REPOSITORY} --version {version}`")


def _kind(value: Any) -> str:
    kinds = {list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return f"{kinds.get(type(value), 'a value')} ({json.dumps(value)})"


@dataclass(frozen=True)
class ValuesFindings:
    problems: tuple[tuple[str, str], ...] = ()
    """(dotted value path, why) for every path gpushare refuses."""
    warnings: tuple[str, ...] = ()


def check_user_values(values: Mapping, chart_version: str) -> ValuesFindings:
    """`gpushare:operator.values` against gpushare's owned paths and the chart's values: owned paths are refused; a
    path the chart does not have is refused when gpushare has that version's values, and a warning (checked against
    the pinned version's) otherwise; paths under a subchart are passed on with a warning."""
    defaults = chart_defaults(chart_version)
    checked_against = chart_version if defaults is not None else DEFAULT_CHART_VERSION
    known = defaults if defaults is not None else chart_defaults(DEFAULT_CHART_VERSION) or {}
    problems, warnings, unchecked = [], [], []
    for path in value_leaf_paths(values):
        if owned := _owned(path):
            name, (why, instead) = owned
            problems.append((path, f"{name} is gpushare's: {why}; use {instead} instead"))
            continue
        problem = _path_problem(path, known, checked_against)
        if problem and path.split(".", 1)[0] in SUBCHARTS:
            unchecked.append(path)
        elif problem and defaults is None:
            warnings.append(f"{path} {problem}; chart {chart_version} itself was not checked")
        elif problem:
            problems.append((path, problem))
    if unchecked:
        warnings.append(f"operator values {', '.join(unchecked)} are passed to the "
                        f"{', '.join(SUBCHARTS)} subchart unchecked: the GPU Operator's values.yaml lists only part "
                        "of its values")
    return ValuesFindings(tuple(problems), tuple(warnings))


def merge_values(base: Mapping, override: Mapping) -> dict:
    """`override` deep-merged over `base`, as Helm merges values: mappings key by key, anything else (lists
    included) replaced whole."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge_values(merged[key], value)
        else:
            merged[key] = value
    return merged


def changed_values(values: Mapping, user_values: Mapping, chart_version: str) -> list[dict[str, Any]]:
    """Every leaf of the release's values that differs from the chart's default, and who set it. Defaults come from
    the chart version's index, or the pinned version's when gpushare has none for it."""
    defaults = chart_defaults(chart_version) or chart_defaults(DEFAULT_CHART_VERSION) or {}
    mine = set(value_leaf_paths(user_values))
    flat = _leaves(values)
    return [{"path": path, "value": value, "default": defaults.get(path), "inChart": path in defaults,
             "setBy": "stack" if path in mine else "gpushare"}
            for path, value in sorted(flat.items()) if path not in defaults or defaults[path] != value]


def _leaves(values: Mapping, prefix: str = "") -> dict[str, Any]:
    leaves: dict[str, Any] = {}
    for key, value in values.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            leaves.update(_leaves(value, path))
        else:
            leaves[path] = value
    return leaves


def operator_warnings(stack: StackConfig) -> list[str]:
    """What `plan` and `pulumi preview` say about the operator settings: an unverified chart version, values
    passed on unchecked."""
    operator = stack.operator
    warnings = []
    if operator.chart_version not in VERIFIED_CHART_VERSIONS:
        warnings.append(
            f"gpushare:operator.chartVersion {operator.chart_version} is not one gpushare has verified "
            f"(verified: {', '.join(VERIFIED_CHART_VERSIONS)}): the value paths gpushare sets and "
            f"gpushare:operator.values were checked against {DEFAULT_CHART_VERSION}'s values, and Helm ignores a path "
            f"a chart does not have, silently; compare with `helm show values {_show_values_target(operator.repository)} "
            f"--version {operator.chart_version}` before deploying"
        )
    warnings += check_user_values(operator.values, operator.chart_version).warnings
    warnings += _inert_value_warnings(stack)
    if scrapes_with_pod_monitor(stack) and _user_value(operator.values, SERVICE_MONITOR_PATH) is True:
        warnings.append(
            f"gpushare:operator.values {SERVICE_MONITOR_PATH}: true keeps the GPU Operator's dcgm-exporter "
            "ServiceMonitor beside the PodMonitor gpushare deploys for gpushare:metrics.operator, so the Prometheus "
            "Operator scrapes the exporter twice, and the ServiceMonitor's copy (honorLabels false) labels every "
            "GPU with namespace gpu-operator, which the showback rules then count as a GPU user; drop the value "
            "(gpushare turns it off)")
    return warnings


def _user_value(values: Mapping, path: str) -> Any:
    node: Any = values
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


AKS_DRIVER_INERT = ("driver.", "toolkit.")
"""Chart value paths whose component `operator.driver: aks` turns off (driver.enabled and toolkit.enabled false:
AKS installs both on its GPU nodes), so a value set under them takes no effect."""


def _inert_value_warnings(stack: StackConfig) -> list[str]:
    """User values under a component the driver mode turns off: accepted (Helm renders nothing from them), and
    named, since the user meant them to act."""
    if stack.operator.driver is not DriverOwner.AKS:
        return []
    inert = [path for path in value_leaf_paths(stack.operator.values) if path.startswith(AKS_DRIVER_INERT)]
    if not inert:
        return []
    return [f"gpushare:operator.values {', '.join(inert)} take no effect with gpushare:operator.driver aks: AKS "
            f"installs the NVIDIA driver and container toolkit itself, so gpushare sets driver.enabled and "
            f"toolkit.enabled false and the chart renders neither; drop them, or set gpushare:operator.driver: "
            f"operator to have the operator install its own"]


def chart_reference(repository: str) -> tuple[str, str | None]:
    """(chart, repository URL) as a Helm release takes them: an `oci://` registry is part of the chart reference
    (Helm >= 3.8; pulumi-kubernetes Release supports it, pulumi/pulumi-kubernetes#1892), a classic repository is
    passed as the repository URL."""
    if repository.startswith(OCI_PREFIX):
        return f"{repository.rstrip('/')}/{CHART_NAME}", None
    return CHART_NAME, repository


def _show_values_target(repository: str) -> str:
    """What `helm show values` takes for the chart: an OCI reference, or the chart name and `--repo`."""
    chart, url = chart_reference(repository)
    return f"{chart} --repo {url}" if url else chart


def is_operator_chart(chart: object) -> bool:
    """Whether a Helm release's `chart` input is the GPU Operator: `gpu-operator`, or an OCI reference to it."""
    return isinstance(chart, str) and (chart == CHART_NAME or chart.endswith(f"/{CHART_NAME}"))


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
    """gpushare's own value paths missing from the verified list of `chart_version` (one gpushare verified)."""
    known = verified_value_paths(chart_version)
    return [path for path in value_leaf_paths(values) if path not in known]


def toleration(taint: str) -> dict[str, str]:
    """The toleration of one AKS node taint, `key=value:Effect` or `key:Effect`, in the form no admission plugin
    rewrites after the pod is created: `Equal` with the value, but `Exists` for a NoSchedule taint keyed by an NVIDIA
    resource name (the GPU taint `nvidia.com/gpu=present:NoSchedule`)."""
    key_value, _, effect = taint.rpartition(":")
    key, has_value, value = key_value.partition("=")
    # A pod that requests an extended resource gets `{key: <resource>, operator: Exists, effect: NoSchedule}` at
    # creation (ExtendedResourceToleration, on in AKS: kubernetes/kubernetes v1.34.4
    # plugin/pkg/admission/extendedresourcetoleration/admission.go), after PodTolerationRestriction's merge
    # (pkg/kubeapiserver/options/plugins.go orders it second). On every later update of a pod that is not BestEffort,
    # PodTolerationRestriction merges the tolerations again (plugin/pkg/admission/podtolerationrestriction `Admit`),
    # and MergeTolerations drops one that another covers (pkg/util/tolerations `isSuperset`): an `Equal` toleration
    # of that key vanishes and update validation refuses the changed list (pkg/apis/core/validation
    # `validateOnlyAddedTolerations`: "existing toleration can not be modified"), so the pod could never be updated
    # again (no label, no finalizer removed, no Job completed). Written as that plugin writes it, nothing is dropped.
    # Every resource the NVIDIA device plugin advertises is under `nvidia.com/`; other keys (the tenant and Spot
    # taints) stay `Equal`: nothing covers them, and a tenant's isolation rests on the value.
    if has_value and not (effect == "NoSchedule" and key.startswith(RESOURCE_PREFIX)):
        return {"key": key, "operator": "Equal", "value": value, "effect": effect}
    return {"key": key, "operator": "Exists", "effect": effect}


def stack_pool_taints(stack: StackConfig, facts: PoolFactsByName | None = None) -> list[str]:
    """Every distinct node taint on the stack's GPU pools (tenant taints, the user's own and the Spot taint AKS
    adds included), in a stable order."""
    return sorted({taint for pool in given_or_derived(stack, facts).values() for taint in pool.tolerated_taints})


def pool_tolerations(stack: StackConfig, facts: PoolFactsByName | None = None) -> list[dict[str, str]]:
    """One toleration per distinct taint on the GPU pools: the operator's DaemonSets must run on every GPU node,
    dedicated ones included, or a pool's nodes get no device plugin."""
    return [toleration(taint) for taint in stack_pool_taints(stack, facts)]


def config_hash(data: Mapping[str, str]) -> str:
    """sha256 of the ConfigMap data as canonical JSON (sorted keys): changes exactly when a key or a config does."""
    canonical = json.dumps(dict(data), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def chart_values(stack: StackConfig, facts: PoolFactsByName | None = None) -> dict:
    """Helm values for the stack: gpushare's (`gpushare_values`) with `gpushare:operator.values` merged over them."""
    return merge_values(gpushare_values(stack, facts), stack.operator.values)


SERVICE_MONITOR_PATH = "dcgmExporter.serviceMonitor.enabled"


def scrapes_with_pod_monitor(stack: StackConfig) -> bool:
    """Whether the program deploys its own monitoring.coreos.com PodMonitor of dcgm-exporter (`gpushare:metrics`
    with a Prometheus URL and `operator: true`), the scrape the chart's ServiceMonitor would duplicate.

    The chart (v26.7.0 values.yaml L326-327, on by default) hands `dcgmExporter.serviceMonitor` to the ClusterPolicy
    (templates/clusterpolicy.yaml L565-566), and the operator creates a monitoring.coreos.com ServiceMonitor of the
    exporter wherever that CRD exists (controllers/object_controls.go `ServiceMonitor`), with `honorLabels: false`
    and no `node` label. The same Prometheus Operator then scrapes each series twice, and the ServiceMonitor's copy
    carries the exporter pod's own namespace (gpu-operator): the showback rules would count that namespace as a
    GPU user. With `prometheus: managed` the PodMonitor is azmonitoring.coreos.com, read by ama-metrics only, so an
    in-cluster Prometheus Operator's ServiceMonitor scrapes into another Prometheus and is left as it is."""
    metrics = stack.metrics
    return metrics is not None and not metrics.managed and metrics.operator


def gpushare_values(stack: StackConfig, facts: PoolFactsByName | None = None) -> dict:
    """The values gpushare sets. Each path is in the chart version's verified list."""
    aks_driver = stack.operator.driver is DriverOwner.AKS
    tolerations = pool_tolerations(stack, facts)
    # One scrape of dcgm-exporter: gpushare's PodMonitor, not also the chart's ServiceMonitor.
    scrape = {"dcgmExporter": {"serviceMonitor": {"enabled": False}}} if scrapes_with_pod_monitor(stack) else {}
    return {
        **scrape,
        # AKS's preinstalled driver and toolkit, or the operator's own (then pools skip AKS's driver).
        "driver": {"enabled": not aks_driver},
        "toolkit": {"enabled": not aks_driver},
        "operator": {"runtimeClass": AKS_RUNTIME_CLASS if aks_driver else OPERATOR_RUNTIME_CLASS},
        # Chart v26.7.0 turns CDI on (values.yaml L15-16): the device plugin then hands pods CDI device names and
        # writes its own CDI spec (cmd/nvidia-device-plugin/plugin-manager.go, `CreateSpecFile`), whose hooks call
        # the nvidia-cdi-hook at the path the operator gives it. AKS's containerd does enable CDI (AgentBaker
        # pkg/agent/baker.go, `enable_cdi = true` since Azure/AgentBaker#6726, 2025-08), but that spec's hook path
        # with the operator's toolkit disabled is unverified here. With AKS's driver gpushare keeps the path AKS
        # itself runs: nvidia-container-runtime is containerd's default runtime on N-series nodes (same template,
        # `IsNSeriesSKU`) and reads NVIDIA_VISIBLE_DEVICES, which the device plugin's default envvar list sets.
        "cdi": {"enabled": not aks_driver},
        "mig": {"strategy": stack.operator.mig_strategy.value},
        # AKS partitions MIG pools at creation; the MIG manager would label them all-disabled and undo it.
        "migManager": {"enabled": False},
        "devicePlugin": {"config": {"name": CONFIG_MAP_NAME, "default": DEFAULT_CONFIG_KEY}},
        "daemonsets": {"tolerations": tolerations},
        "node-feature-discovery": {"worker": {"tolerations": tolerations}},
    }


def _summary(stack: StackConfig, data_hash: str, facts: PoolFactsByName) -> tuple[str, ...]:
    operator = stack.operator
    if operator.driver is DriverOwner.AKS:
        driver = (f"driver: AKS's preinstalled driver and toolkit (driver.enabled=false, toolkit.enabled=false, "
                  f"operator.runtimeClass={AKS_RUNTIME_CLASS}, cdi.enabled=false: the device list goes in "
                  "NVIDIA_VISIBLE_DEVICES, which AKS's default runtime reads)")
        # The kubelet puts the device plugin's Allocate env first and the pod's own after it (pkg/kubelet/
        # kubelet_pods.go GenerateRunContainerOptions), so the tenant policies' device rules are what keeps a
        # container to its allocation; AKS owns the toolkit's config.toml, so no node setting can back them.
        devices = ("devices: a GPU container gets the device plugin's NVIDIA_VISIBLE_DEVICES; AKS's default runtime "
                   "reads every container's, so the tenant policies' device rules are the one layer that keeps a pod "
                   "to its allocation (AKS owns the toolkit's config)")
    else:
        driver = ("driver: installed by the operator (driver.enabled=true, toolkit.enabled=true); "
                  "GPU pools skip AKS's driver (gpuProfile.driver=None)")
        # gpu-operator v26.7.0 controllers/object_controls.go: with CDI on, transformToolkitCtrForCDI sets
        # NVIDIA_RUNTIME_SET_AS_DEFAULT=false and the device plugin DEVICE_LIST_STRATEGY=cdi-annotations,cdi-cri, so
        # containerd injects a container's allocated devices itself and the NVIDIA runtime runs only pods that name
        # its runtime class, which the tenant policies refuse. The operator's own management containers get every
        # GPU through that class and NVIDIA_VISIBLE_DEVICES (the same function's comment), so the toolkit's
        # accept-nvidia-visible-devices-envvar-when-unprivileged stays at its default.
        devices = ("devices: the device plugin hands a GPU container its devices by CDI (cdi-annotations,cdi-cri) "
                   "and containerd injects them; runc is the default runtime, so an image's NVIDIA_VISIBLE_DEVICES "
                   "is read only under an NVIDIA runtime class, which the tenant policies refuse: two layers")
    taints = ", ".join(stack_pool_taints(stack, facts)) or "none"
    user = len(value_leaf_paths(operator.values))
    return (
        f"chart: {CHART_NAME} {operator.chart_version} from {operator.repository}, release {RELEASE_NAME} "
        f"in namespace {NAMESPACE}",
        driver,
        devices,
        f"mig.strategy={operator.mig_strategy.value} (overrides flags.migStrategy in every device-plugin config); "
        f"migManager.enabled=false (AKS partitions MIG pools)",
        f"device-plugin configs: ConfigMap {CONFIG_MAP_NAME} (data sha256 {data_hash[:12]}), default key "
        f"{DEFAULT_CONFIG_KEY}; each pool's key is <pool>-<sha256 of its config, 8 hex>, so a changed config "
        f"relabels that pool's nodes only and their device plugin, GFD and MPS daemon reload it",
        f"tolerated by operator DaemonSets and the NFD worker: {taints}",
        *((f"{SERVICE_MONITOR_PATH}=false: gpushare's PodMonitor (gpushare:metrics.operator) scrapes dcgm-exporter "
           "with its pods' labels and node; the chart's ServiceMonitor would scrape it a second time",)
          if scrapes_with_pod_monitor(stack) else ()),
        *((f"gpushare:operator.values: {user} value{'s' if user != 1 else ''} merged over gpushare's "
           f"({', '.join(value_leaf_paths(operator.values))})",) if user else ()),
    )


def operator_plan(stack: StackConfig, facts: PoolFactsByName | None = None) -> OperatorPlan:
    """Everything the GPU Operator release needs, for a stack `gpushare.stackfile.config` validated, from its pools'
    facts (`gpushare.plan` passes the ones it derived)."""
    facts = given_or_derived(stack, facts)
    configs = plugin_configs(stack, {name: pool.device_config for name, pool in facts.items() if pool.device_config})
    data = config_map_data(configs)
    data_hash = config_hash(data)
    own_values = gpushare_values(stack, facts)
    values = merge_values(own_values, stack.operator.values)
    verified = stack.operator.chart_version in VERIFIED_CHART_VERSIONS
    unknown = unknown_value_paths(own_values, stack.operator.chart_version) if verified else []
    if unknown:
        raise AssertionError(f"gpushare sets chart values missing from chart {stack.operator.chart_version}: {unknown}")
    chart, repository = chart_reference(stack.operator.repository)
    return OperatorPlan(
        chart_version=stack.operator.chart_version,
        chart=chart,
        repository=repository,
        configs=configs,
        config_map_data=data,
        config_hash=data_hash,
        values=values,
        changed_values=tuple(changed_values(values, stack.operator.values, stack.operator.chart_version)),
        summary=_summary(stack, data_hash, facts),
    )
