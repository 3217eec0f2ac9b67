"""`gpushare verify`: compare what the plan promises each GPU pool with what the live cluster shows.

Pure functions over the Kubernetes API's JSON (nodes, the device-plugin ConfigMap, the operator's DaemonSets and
pods as plain dicts; `gpushare.kubernetes.cluster_read` fetches them). Every mismatch comes with its likely cause and the fix.
Nodes still joining (pool below its size, NotReady, operator pods starting) are pending, not failures.

How each expectation lands on a node (device plugin v0.20.0, GPU Operator v26.7.0):
- allocatable: the device plugin advertises `gpushare.sharing.capacity.pool_capacity(...).resource` x `per_node`, from the
  config its node label `nvidia.com/device-plugin.config` selects in the ConfigMap. A label naming a missing key
  makes the config-manager exit ("specified config <x> does not exist", `cmd/config-manager/main.go`); no label
  selects `devicePlugin.config.default` (whole GPUs). The operator does not watch the ConfigMap: a changed config
  reaches running plugins only through a pod restart (GPU Operator docs, `gpu-sharing.rst`).
- GFD labels (`internal/lm/resource.go`, `mig-strategy.go`): `<resource>.product` is the NVML name, plus `-MIG-<slice>`
  for MIG devices, plus `-SHARED` when shared and not renamed; `<resource>.replicas` is per device (1 when unshared)
  and `<resource>.sharing-strategy` none|time-slicing|mps, where `<resource>` is the resource before the `.shared`
  rename (`nvidia.com/gpu`, or `nvidia.com/mig-<slice>` under `mixed`). `nvidia.com/mig.strategy` is the chart's
  strategy; `nvidia.com/mps.capable=true` gates the MPS control daemon.
- Operator DaemonSets (`assets/*/0500_daemonset.yaml`): `nvidia-device-plugin-daemonset`, `gpu-feature-discovery`,
  `nvidia-device-plugin-mps-control-daemon` (MPS nodes only) and `nvidia-operator-validator`, whose pod turns Ready
  only after its init containers driver-, toolkit-, cuda- and plugin-validation succeed: its readiness is the
  validator's verdict for the node.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from enum import Enum

from gpushare.kubernetes.tenants import shared_pools
from gpushare.model.catalog import gpu_product_label
from gpushare.model.stack import (
    CUDA_CHECK_IMAGE,
    DEVICE_PLUGIN_CONFIG_LABEL,
    POOL_LABEL,
    GpuPool,
    SharingStrategy,
    StackConfig,
)
from gpushare.sharing.capacity import WHOLE_GPU_RESOURCE
from gpushare.sharing.device_plugin import DEFAULT_CONFIG_KEY
from gpushare.sharing.operator_values import CONFIG_MAP_NAME, NAMESPACE, RELEASE_NAME, operator_plan, toleration
from gpushare.sharing.pool_facts import stack_pool_facts
from gpushare.stackfile.autoscaler_readiness import (
    GPU_LABEL,
    MAX_TOTAL_UNREADY_PERCENTAGE,
    OK_TOTAL_UNREADY_COUNT,
    UPSTREAM_ISSUE,
    cluster_healthy,
    counted_unready,
    gpu_unready,
)

NVIDIA_PREFIX = "nvidia.com/"
DEVICE_PLUGIN_DS = "nvidia-device-plugin-daemonset"
GFD_DS = "gpu-feature-discovery"
MPS_DS = "nvidia-device-plugin-mps-control-daemon"
VALIDATOR_DS = "nvidia-operator-validator"
OPERATOR_DAEMONSETS = (DEVICE_PLUGIN_DS, GFD_DS, VALIDATOR_DS)
"""The operator's pods label themselves `app=<DaemonSet name>` for each of these and MPS_DS."""
NODE_SETTLE = timedelta(minutes=10)
"""How long after a node turns Ready a missing operator pod still counts as pending (the operator first waits for
NFD's labels, then schedules its DaemonSets)."""

_FAILING_REASONS = frozenset({
    "CrashLoopBackOff", "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError",
    "CreateContainerError", "RunContainerError", "Error", "OOMKilled",
})
_VALIDATION_CAUSES = {
    "driver-validation": "the NVIDIA driver is not ready on the node",
    "toolkit-validation": "the NVIDIA container toolkit is not ready on the node",
    "cuda-validation": "a CUDA workload could not run on the node",
    "plugin-validation": "the device plugin does not advertise the node's GPUs",
}
_RESTART_PLUGIN = f"kubectl rollout restart -n {NAMESPACE} daemonset/{DEVICE_PLUGIN_DS}"


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


@dataclass(frozen=True)
class ProductExpectation:
    """`<resource>.product`: the NVML name (from the catalog) and the suffix GFD appends."""

    key: str
    name: str | None
    suffix: str
    confirmed: bool
    """False: the catalog's name was only seen on clusters, not in NVIDIA's docs; check the suffix alone."""

    @property
    def value(self) -> str:
        return f"{self.name or '<GPU name>'}{self.suffix}"

    def matches(self, found: str) -> bool:
        if self.confirmed:
            return found == self.value
        if not found.endswith(self.suffix):
            return False
        base = found[: len(found) - len(self.suffix)]
        return bool(base) and "-MIG-" not in base and not base.endswith("-SHARED")


@dataclass(frozen=True)
class PoolExpectation:
    pool: str
    resource: str
    per_node: int
    gpus_per_node: int
    mig_slice: str | None
    config_key: str
    config_text: str
    min_nodes: int
    labels: Mapping[str, str]
    """GFD labels that must hold exactly."""
    product: ProductExpectation
    daemon_sets: tuple[str, ...]
    taints: tuple[str, ...]
    """Every taint the pool's nodes carry (the Spot taint AKS adds included): the smoke pod tolerates them."""
    autoscaled: bool = False
    """The pool autoscales: AKS runs the cluster autoscaler, which judges every node of the cluster."""


@dataclass(frozen=True)
class ClusterSnapshot:
    """What `gpushare.kubernetes.cluster_read` read, as the API's JSON."""

    nodes: list[dict]
    """Nodes labelled `gpushare.io/pool`."""
    config_map: dict | None
    daemon_sets: list[dict]
    pods: list[dict]
    """The operator's pods (device plugin, GFD, MPS daemon, validator) in the release namespace."""
    now: datetime
    other_nodes: list[dict] = field(default_factory=list)
    """The cluster's other nodes (system pool, pools gpushare does not own): the autoscaler counts them too."""


@dataclass(frozen=True)
class NodeResult:
    name: str
    ready: bool
    found: dict[str, int]


@dataclass(frozen=True)
class PoolResult:
    expectation: PoolExpectation
    nodes: list[NodeResult]
    findings: list[Finding]

    @property
    def verdict(self) -> Verdict:
        return _verdict(self.findings)

    def to_json(self) -> dict:
        e = self.expectation
        return {
            "pool": e.pool,
            "resource": e.resource,
            "perNode": e.per_node,
            "configKey": e.config_key,
            "nodesReady": sum(1 for n in self.nodes if n.ready),
            "nodesTotal": len(self.nodes),
            "nodes": [{"name": n.name, "ready": n.ready, "found": n.found} for n in self.nodes],
            "verdict": self.verdict.value,
            "findings": [f.to_json() for f in self.findings],
        }


@dataclass(frozen=True)
class AutoscalerView:
    """What the cluster autoscaler makes of the cluster's nodes as they are (`gpushare.stackfile.autoscaler_readiness`,
    the rule of cluster-autoscaler 1.35.2)."""

    runs: bool
    """A pool of the stack autoscales, so AKS runs the autoscaler (it may also run for an existing cluster's own
    pools, which gpushare does not read)."""
    gpu_unready: tuple[str, ...]
    """Nodes it marks unready: the GPU label and no `nvidia.com/gpu` (or other GPU) allocatable."""
    unready: tuple[str, ...]
    """Every node it counts unready cluster-wide (the above, and nodes NotReady for 15 minutes after creation)."""
    total: int

    @property
    def healthy(self) -> bool:
        return cluster_healthy(len(self.unready), self.total)

    def to_json(self) -> dict:
        return {"runs": self.runs, "gpuUnreadyNodes": list(self.gpu_unready), "unreadyNodes": list(self.unready),
                "nodes": self.total, "healthy": self.healthy, "okTotalUnreadyCount": OK_TOTAL_UNREADY_COUNT,
                "maxTotalUnreadyPercentage": MAX_TOTAL_UNREADY_PERCENTAGE}


def autoscaler_view(expectations: Iterable[PoolExpectation], snapshot: ClusterSnapshot) -> AutoscalerView:
    nodes = [*snapshot.nodes, *snapshot.other_nodes]
    return AutoscalerView(
        runs=any(e.autoscaled for e in expectations),
        gpu_unready=tuple(sorted(_name(n) for n in nodes if gpu_unready(n))),
        unready=tuple(sorted(_name(n) for n in nodes if counted_unready(n, snapshot.now))),
        total=len(nodes),
    )


def autoscaler_findings(view: AutoscalerView) -> list[Finding]:
    """A mismatch when the autoscaler runs and its cluster-wide threshold is crossed: it then scales no pool."""
    if not view.runs or view.healthy:
        return []
    gpu = [n for n in view.unready if n in view.gpu_unready]
    others = "the others are" if gpu else "they are"
    cause = (f"{len(gpu)} of them carry {GPU_LABEL} but advertise no nvidia.com/gpu ({', '.join(gpu[:5])}"
             f"{', ...' if len(gpu) > 5 else ''}; {UPSTREAM_ISSUE}); " if gpu else "")
    return [Finding(
        "autoscaler",
        f"the cluster autoscaler counts {len(view.unready)} of {view.total} nodes unready, more than "
        f"{OK_TOTAL_UNREADY_COUNT} and more than {MAX_TOTAL_UNREADY_PERCENTAGE:g}%: it stops scaling every pool "
        f"(ClusterStateRegistry.IsClusterHealthy)",
        f"{cause}{others} NotReady" if len(gpu) < len(view.unready) else cause.removesuffix("; "),
        "advertise nvidia.com/gpu on the GPU pools (leave sharing.renameByDefault out, migStrategy single) and "
        "`pulumi up`; `kubectl describe node` for NotReady ones",
    )]


@dataclass(frozen=True)
class VerifyReport:
    pools: list[PoolResult]
    operator: list[Finding]
    daemon_sets: dict[str, str]
    """Per expected DaemonSet: `ready/desired`, or `missing`."""
    extra: list[Finding] = field(default_factory=list)
    """Findings of the smoke pods."""
    tenant_objects: int = 0
    """How many rendered tenant objects were compared (0: the stack has no tenants)."""
    tenants: list[Finding] = field(default_factory=list)
    skipped: list[SkippedCheck] = field(default_factory=list)
    """Checks not made: the identity may not read the object (each names the role that would allow it)."""
    autoscaler: AutoscalerView | None = None

    @property
    def findings(self) -> list[Finding]:
        autoscaler = autoscaler_findings(self.autoscaler) if self.autoscaler else []
        return ([f for pool in self.pools for f in pool.findings] + self.operator + autoscaler + self.tenants
                + self.extra)

    @property
    def verdict(self) -> Verdict:
        return _verdict(self.findings)

    @property
    def settled(self) -> bool:
        """Nothing left that changes by waiting: every finding is a mismatch or waits for demand (`idle`)."""
        return not any(f.pending and not f.idle for f in self.findings) and self.verdict is not Verdict.MISMATCH

    @property
    def exit_code(self) -> int:
        return 1 if self.verdict is Verdict.MISMATCH else 0

    def to_json(self) -> dict:
        return {
            "verdict": self.verdict.value,
            "pools": [pool.to_json() for pool in self.pools],
            "operator": {
                "namespace": NAMESPACE,
                "daemonSets": self.daemon_sets,
                "findings": [f.to_json() for f in self.operator],
            },
            "tenants": {"objects": self.tenant_objects, "findings": [f.to_json() for f in self.tenants],
                        "skipped": [s.to_json() for s in self.skipped]},
            "other": [f.to_json() for f in self.extra],
            "autoscaler": {**self.autoscaler.to_json(),
                           "findings": [f.to_json() for f in autoscaler_findings(self.autoscaler)]}
            if self.autoscaler else None,
        }


def _verdict(findings: Iterable[Finding]) -> Verdict:
    findings = list(findings)
    if any(not f.pending for f in findings):
        return Verdict.MISMATCH
    return Verdict.PENDING if findings else Verdict.PASS


# --- expectations -----------------------------------------------------------------------------------------


def _product(pool: GpuPool, base_resource: str, slice_name: str | None) -> ProductExpectation:
    label = gpu_product_label(pool.vm_size)
    suffix = f"-MIG-{slice_name}" if slice_name else ""
    if pool.sharing and not pool.sharing.rename_by_default:
        suffix += "-SHARED"
    return ProductExpectation(
        key=f"{base_resource}.product", name=label.value if label else None, suffix=suffix,
        confirmed=bool(label and label.confirmed),
    )


def pool_expectations(stack: StackConfig) -> list[PoolExpectation]:
    """What each pool's Ready nodes must show, from the same functions `plan` uses."""
    strategy = stack.operator.mig_strategy
    operator_plan(stack)  # refuses a device-plugin config that fails validation, as the program does
    expectations = []
    for facts in stack_pool_facts(stack).values():
        pool, capacity, config = facts.pool, facts.capacity, facts.device_config
        labels = {
            "nvidia.com/mig.strategy": strategy.value,
            f"{capacity.base_resource}.replicas": str(pool.sharing.replicas if pool.sharing else 1),
            f"{capacity.base_resource}.sharing-strategy": pool.sharing.strategy.value if pool.sharing else "none",
        }
        if pool.sharing and pool.sharing.strategy is SharingStrategy.MPS:
            labels["nvidia.com/mps.capable"] = "true"
        daemon_sets = OPERATOR_DAEMONSETS
        if pool.sharing and pool.sharing.strategy is SharingStrategy.MPS:
            daemon_sets += (MPS_DS,)
        expectations.append(PoolExpectation(
            pool=pool.name,
            resource=capacity.resource,
            per_node=capacity.per_node,
            gpus_per_node=pool.vm_size.gpus,
            mig_slice=capacity.slice,
            config_key=config.key,
            config_text=config.text,
            min_nodes=pool.min_nodes,
            labels=labels,
            product=_product(pool, capacity.base_resource, capacity.slice),
            daemon_sets=daemon_sets,
            taints=facts.tolerated_taints,
            autoscaled=pool.autoscale is not None,
        ))
    return expectations


# --- reading the API's JSON -------------------------------------------------------------------------------


def _name(obj: Mapping) -> str:
    return obj.get("metadata", {}).get("name", "?")


def _labels(obj: Mapping) -> Mapping[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def _ready_condition(node: Mapping) -> Mapping | None:
    for condition in node.get("status", {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition
    return None


def node_ready(node: Mapping) -> bool:
    condition = _ready_condition(node)
    return bool(condition and condition.get("status") == "True")


def _ready_since(node: Mapping) -> datetime | None:
    condition = _ready_condition(node)
    stamp = condition.get("lastTransitionTime") if condition else None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None


def _quantity(value: object) -> int:
    """Device-plugin resources are plain integers ("4"); anything else counts as 0."""
    try:
        return int(str(value))
    except ValueError:
        return 0


def nvidia_resources(node: Mapping) -> dict[str, int]:
    """The node's allocatable `nvidia.com/*` resources above 0."""
    allocatable = node.get("status", {}).get("allocatable") or {}
    found = {name: _quantity(value) for name, value in allocatable.items() if name.startswith(NVIDIA_PREFIX)}
    return {name: count for name, count in sorted(found.items()) if count > 0}


def _describe(resources: Mapping[str, int]) -> str:
    return ", ".join(f"{name}: {count}" for name, count in resources.items()) or "no nvidia.com resource"


# --- checks -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ConfigProblem:
    problem: str
    cause: str
    fix: str


def _config_problem(node: Mapping, expect: PoolExpectation, data: Mapping[str, str] | None) -> _ConfigProblem | None:
    """Why the device plugin on `node` would not run the pool's config, or None when it should."""
    config_map = f"ConfigMap {NAMESPACE}/{CONFIG_MAP_NAME}"
    label = _labels(node).get(DEVICE_PLUGIN_CONFIG_LABEL)
    if label is None:
        return _ConfigProblem(
            f"it has no {DEVICE_PLUGIN_CONFIG_LABEL} label",
            f"the device plugin falls back to the default config {DEFAULT_CONFIG_KEY} (whole GPUs, no sharing)",
            f"run `pulumi up`: the pool's node labels set {DEVICE_PLUGIN_CONFIG_LABEL}={expect.config_key}",
        )
    if data is None:
        return None  # reported once for the operator
    if label not in data:
        return _ConfigProblem(
            f"its config label {label} is not in {config_map}",
            f"the device plugin's config-manager stops with 'specified config {label} does not exist'",
            f"run `pulumi up` so the ConfigMap and the pool's labels agree, then `{_RESTART_PLUGIN}`",
        )
    if label != expect.config_key:
        return _ConfigProblem(
            f"its config label is {label}, the plan's config for pool {expect.pool} is {expect.config_key}",
            "the pool's node labels are from another deployment of the stack",
            f"run `pulumi up` to set {DEVICE_PLUGIN_CONFIG_LABEL}={expect.config_key} on the pool",
        )
    return None


def _resource_cause(found: Mapping[str, int], expect: PoolExpectation,
                    config: _ConfigProblem | None) -> tuple[str, str]:
    if config:
        return f"{config.problem}: {config.cause}", config.fix
    mig_found = [name for name in found if name.startswith(f"{NVIDIA_PREFIX}mig-")]
    if expect.mig_slice and mig_found and f"{NVIDIA_PREFIX}mig-{expect.mig_slice}" not in found:
        return (
            f"the GPUs are partitioned as {', '.join(n.removeprefix(NVIDIA_PREFIX + 'mig-') for n in mig_found)}, "
            f"the pool's profile gives {expect.mig_slice}: the node pool's gpuInstanceProfile differs from the stack",
            "the MIG profile is fixed when AKS creates a pool: set the pool's `mig` to the profile it was created "
            "with, or recreate the pool (`recreate: true` for one run)",
        )
    if not found:
        return (
            "the device plugin registered no GPU on this node (driver not ready, or the plugin fails at start-up)",
            f"`kubectl get pods -n {NAMESPACE} -o wide` shows the node's {DEVICE_PLUGIN_DS} pod; read its log",
        )
    if expect.mig_slice and found == {WHOLE_GPU_RESOURCE: expect.gpus_per_node}:
        return (
            "MIG is not enabled on the node's GPUs (AKS partitions them when it creates a MIG pool)",
            "check the pool's gpuInstanceProfile with `az aks nodepool show`; recreate the pool if it has none",
        )
    return (
        "the device plugin runs an older config: its config-manager reloads when the node's label changes, but "
        "not when the ConfigMap entry under the same key changes",
        f"`{_RESTART_PLUGIN}`",
    )


def _check_labels(node: Mapping, expect: PoolExpectation, where: str) -> list[Finding]:
    labels = _labels(node)
    if expect.product.key not in labels:
        return [Finding(
            where, f"node {_name(node)}: GPU Feature Discovery has not labelled it ({expect.product.key} is missing)",
            "GFD writes the labels after the device plugin's config is in place",
            f"check `kubectl logs -n {NAMESPACE} -l app={GFD_DS} --all-containers` for this node",
        )]
    findings = []
    product = labels[expect.product.key]
    if not expect.product.matches(product):
        checked = "" if expect.product.confirmed else " (the GPU name is unconfirmed: only the suffix is checked)"
        findings.append(Finding(
            where, f"node {_name(node)} has {expect.product.key}={product}, expected {expect.product.value}{checked}",
            "GFD labels the node from the config the device plugin uses and the GPUs it finds",
            f"compare the node's config label with the plan; `{_RESTART_PLUGIN}` after a ConfigMap change",
        ))
    for key, value in expect.labels.items():
        if labels.get(key) != value:
            findings.append(Finding(
                where, f"node {_name(node)} has {key}={labels.get(key, '<missing>')}, expected {value}",
                "GFD labels the node from the config the device plugin uses and the chart's mig.strategy",
                f"run `pulumi up`, then `{_RESTART_PLUGIN}`",
            ))
    return findings


def _pod_state(pod: Mapping) -> tuple[bool, str | None, str]:
    """(ready, failing container or None, reason) for one pod."""
    status = pod.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    if conditions.get("Ready") == "True":
        return True, None, "Ready"
    for kind in ("initContainerStatuses", "containerStatuses"):
        for container in status.get(kind) or []:
            state = container.get("state") or {}
            waiting, terminated = state.get("waiting") or {}, state.get("terminated") or {}
            last = (container.get("lastState") or {}).get("terminated") or {}
            if waiting.get("reason") in _FAILING_REASONS:
                return False, container.get("name"), waiting["reason"]
            if terminated and terminated.get("exitCode", 0) != 0:
                return False, container.get("name"), terminated.get("reason") or f"exit code {terminated['exitCode']}"
            if kind == "initContainerStatuses" and not container.get("ready") and last.get("exitCode", 0) != 0:
                return False, container.get("name"), f"restarting after exit code {last['exitCode']}"
            if waiting:
                return False, None, waiting.get("reason") or "waiting"
    return False, None, status.get("phase") or "starting"


def _check_pod(ds: str, pod: Mapping | None, node: Mapping, where: str, now: datetime) -> Finding | None:
    if pod is None:
        since = _ready_since(node)
        settling = since is None or now - since < NODE_SETTLE
        cause = (
            "the operator runs it only on nodes GFD labelled nvidia.com/mps.capable=true, which needs the pool's MPS "
            "config on the node" if ds == MPS_DS else
            "the operator schedules its pods once NFD and the operator have labelled the node "
            "(nvidia.com/gpu.present, nvidia.com/gpu.deploy.*)"
        )
        return Finding(
            where, f"node {_name(node)} has no {ds} pod", cause,
            f"check `kubectl get node {_name(node)} --show-labels` and the gpu-operator pod's log",
            pending=settling,
        )
    ready, container, reason = _pod_state(pod)
    if ready:
        return None
    if container is None:
        return Finding(where, f"node {_name(node)}: {ds} pod {_name(pod)} is not Ready yet ({reason})",
                       "the pod is starting", "wait (`--wait SECONDS`)", pending=True)
    cause = f"container {container} fails"
    if ds == VALIDATOR_DS:
        cause = _VALIDATION_CAUSES.get(container, cause)
    return Finding(
        where, f"node {_name(node)}: {ds} pod {_name(pod)} is not Ready: {container} {reason}", cause,
        f"`kubectl logs -n {NAMESPACE} {_name(pod)} -c {container}`",
    )


def _check_node(node: Mapping, expect: PoolExpectation, snapshot: ClusterSnapshot,
                pods: Mapping[tuple[str, str], Mapping], data: Mapping[str, str] | None) -> list[Finding]:
    name = _name(node)
    where = f"pool {expect.pool}"
    findings = []
    pod_findings = {
        ds: f for ds in expect.daemon_sets
        if (f := _check_pod(ds, pods.get((ds, name)), node, where, snapshot.now)) is not None
    }
    found = nvidia_resources(node)
    config = _config_problem(node, expect, data)
    plugin = pod_findings.get(DEVICE_PLUGIN_DS)
    if found != {expect.resource: expect.per_node}:
        # With nothing advertised while the device plugin starts, the pod finding says it all.
        if found or not (plugin and plugin.pending):
            cause, fix = _resource_cause(found, expect, config)
            findings.append(Finding(
                where, f"node {name} advertises {_describe(found)}, expected {expect.resource}: {expect.per_node}",
                cause, fix,
            ))
    elif config:
        findings.append(Finding(where, f"node {name}: {config.problem}", config.cause, config.fix))
    if not findings and GFD_DS not in pod_findings:
        findings += _check_labels(node, expect, where)
    return findings + list(pod_findings.values())


def _check_pool(expect: PoolExpectation, nodes: list[Mapping], snapshot: ClusterSnapshot,
                pods: Mapping[tuple[str, str], Mapping], data: Mapping[str, str] | None) -> PoolResult:
    where = f"pool {expect.pool}"
    findings = []
    if not nodes and expect.min_nodes == 0:
        findings.append(Finding(
            where, "no nodes yet", "the pool autoscales from 0 and no pod has asked for its GPUs",
            f"nothing to do: a pod requesting {expect.resource} scales it up (`--smoke` runs one)",
            pending=True, idle=True,
        ))
    elif len(nodes) < expect.min_nodes:
        findings.append(Finding(
            where, f"{len(nodes)} of {expect.min_nodes} nodes so far", "the pool is still scaling",
            "wait (`--wait SECONDS`); `az aks nodepool show` shows the pool's provisioning state", pending=True,
        ))
    if data is not None:
        if expect.config_key not in data:
            findings.append(Finding(
                where, f"ConfigMap {NAMESPACE}/{CONFIG_MAP_NAME} has no key {expect.config_key}",
                "the ConfigMap is from another deployment of the stack",
                f"run `pulumi up`, then `{_RESTART_PLUGIN}`",
            ))
        elif data[expect.config_key] != expect.config_text:
            findings.append(Finding(
                where, f"ConfigMap key {expect.config_key} holds another config than the plan",
                "the ConfigMap was edited or is from another version of gpushare",
                f"run `pulumi up`, then `{_RESTART_PLUGIN}`",
            ))
    results = []
    for node in nodes:
        ready = node_ready(node)
        results.append(NodeResult(_name(node), ready, nvidia_resources(node)))
        if not ready:
            findings.append(Finding(
                where, f"node {_name(node)} is NotReady", "the node is joining or unhealthy",
                f"wait (`--wait SECONDS`); if it stays NotReady: `kubectl describe node {_name(node)}`", pending=True,
            ))
            continue
        findings += _check_node(node, expect, snapshot, pods, data)
    return PoolResult(expect, results, findings)


def _daemon_set_summary(names: Iterable[str], daemon_sets: Mapping[str, Mapping]) -> dict[str, str]:
    summary = {}
    for name in names:
        ds = daemon_sets.get(name)
        if ds is None:
            summary[name] = "missing"
        else:
            status = ds.get("status") or {}
            summary[name] = f"{status.get('numberReady', 0)}/{status.get('desiredNumberScheduled', 0)}"
    return summary


def evaluate(expectations: list[PoolExpectation], snapshot: ClusterSnapshot) -> VerifyReport:
    """Compare every pool's expectation with the cluster."""
    operator: list[Finding] = []
    data = None
    if snapshot.config_map is None:
        operator.append(Finding(
            "operator", f"ConfigMap {NAMESPACE}/{CONFIG_MAP_NAME} not found",
            "the stack's GPU Operator resources are not deployed (or deployed to another namespace)",
            "run `pulumi up`",
        ))
    else:
        data = snapshot.config_map.get("data") or {}
    daemon_sets = {_name(ds): ds for ds in snapshot.daemon_sets}
    wanted = list(OPERATOR_DAEMONSETS) + ([MPS_DS] if any(MPS_DS in e.daemon_sets for e in expectations) else [])
    for name in wanted:
        if name not in daemon_sets:
            operator.append(Finding(
                "operator", f"DaemonSet {NAMESPACE}/{name} not found",
                "the GPU Operator has not deployed it: the release is missing or its ClusterPolicy is not ready",
                f"`helm status {RELEASE_NAME} -n {NAMESPACE}`; `kubectl get clusterpolicy -o yaml` shows the "
                "operator's state",
            ))
    pods = {}
    for pod in snapshot.pods:
        app, node = _labels(pod).get("app"), (pod.get("spec") or {}).get("nodeName")
        # During a rollout a node has two pods for a while: the Ready one decides.
        if app and node and not (pods.get((app, node)) and _pod_state(pods[(app, node)])[0]):
            pods[(app, node)] = pod
    missing = {n for n in wanted if n not in daemon_sets}
    by_pool: dict[str, list[Mapping]] = {}
    for node in snapshot.nodes:
        by_pool.setdefault(_labels(node).get(POOL_LABEL, ""), []).append(node)
    pools = []
    for expect in expectations:
        # A missing DaemonSet is one operator finding, not one per node.
        scoped = dataclasses.replace(expect, daemon_sets=tuple(d for d in expect.daemon_sets if d not in missing))
        result = _check_pool(scoped, sorted(by_pool.get(expect.pool, []), key=_name), snapshot, pods, data)
        pools.append(PoolResult(expect, result.nodes, result.findings))
    return VerifyReport(pools, operator, _daemon_set_summary(wanted, daemon_sets),
                        autoscaler=autoscaler_view(expectations, snapshot))


# --- rendered objects (tenants) ----------------------------------------------------------------------------

ObjectRef = tuple[str, str, str | None, str]
"""(apiVersion, kind, namespace or None, name)."""

RBAC_READER = "Azure Kubernetes Service RBAC Reader"
RBAC_ADMIN = "Azure Kubernetes Service RBAC Admin"
RBAC_CLUSTER_ADMIN = "Azure Kubernetes Service RBAC Cluster Admin"
_DATA_ACTION = "Microsoft.ContainerService/managedClusters"
READ_ROLES: Mapping[str, str] = {
    "Namespace": f"{RBAC_READER} on the cluster",
    "ResourceQuota": f"{RBAC_READER} on the namespace or the cluster",
    "LimitRange": f"{RBAC_READER} on the namespace or the cluster",
    "RoleBinding": (f"{RBAC_ADMIN} on the namespace, or {RBAC_CLUSTER_ADMIN} ({RBAC_READER} and Writer may not read "
                    "roles or role bindings)"),
    "ValidatingAdmissionPolicy": (f"{RBAC_CLUSTER_ADMIN}, or a custom role with "
                                  f"{_DATA_ACTION}/admissionregistration.k8s.io/validatingadmissionpolicies/read "
                                  "(cluster-scoped: no namespaced role covers it)"),
    "ValidatingAdmissionPolicyBinding": (f"{RBAC_CLUSTER_ADMIN}, or a custom role with {_DATA_ACTION}/"
                                         "admissionregistration.k8s.io/validatingadmissionpolicybindings/read"),
}
"""The Azure RBAC data role that lets an identity read each kind gpushare renders for tenants (AKS built-in roles,
learn.microsoft.com/azure/aks/manage-azure-rbac; RBAC Reader is Kubernetes' `view`: most objects of a namespace, no
roles or role bindings, nothing cluster-scoped but namespaces)."""


class Forbidden:
    """The identity may not read the object (403): its check is skipped, not failed."""

    def __repr__(self) -> str:
        return "FORBIDDEN"


FORBIDDEN = Forbidden()


@dataclass(frozen=True)
class SkippedCheck:
    """A comparison verify could not make because the identity may not read the object."""

    where: str
    object: str
    """`RoleBinding nlp/gpushare-edit-...`."""
    needs: str
    """The role that would allow the read."""

    def to_json(self) -> dict:
        return {"where": self.where, "object": self.object, "needs": self.needs}


def _label(ref: ObjectRef) -> str:
    _, kind, namespace, name = ref
    return f"{kind} {namespace + '/' if namespace else ''}{name}"


def skipped_checks(what: str, manifests: Iterable[Mapping],
                   live: Mapping[ObjectRef, Mapping | None | Forbidden]) -> list[SkippedCheck]:
    """The rendered objects the identity may not read, each with the role that would let it."""
    return [SkippedCheck(what, _label(ref), READ_ROLES.get(ref[1], RBAC_CLUSTER_ADMIN))
            for ref in map(object_ref, manifests) if live.get(ref) is FORBIDDEN]
_QUANTITY_SUFFIXES = {
    "m": Decimal("0.001"), "k": Decimal(10) ** 3, "M": Decimal(10) ** 6, "G": Decimal(10) ** 9, "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15, "E": Decimal(10) ** 18, "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30, "Ti": Decimal(2) ** 40, "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")


def object_ref(manifest: Mapping) -> ObjectRef:
    metadata = manifest.get("metadata") or {}
    return manifest["apiVersion"], manifest["kind"], metadata.get("namespace"), metadata["name"]


def _quantity_value(value: object) -> Decimal | None:
    match = _QUANTITY.match(str(value))
    if not match:
        return None
    try:
        return Decimal(match.group(1)) * _QUANTITY_SUFFIXES.get(match.group(2) or "", Decimal(1))
    except InvalidOperation:
        return None


def _same_scalar(rendered: object, live: object) -> bool:
    """Equal, or the same quantity: the API server rewrites quantities in its canonical form ("1024Mi" -> "1Gi")."""
    if rendered == live or str(rendered) == str(live):
        return True
    if isinstance(rendered, bool) or isinstance(live, bool):
        return False
    a, b = _quantity_value(rendered), _quantity_value(live)
    return a is not None and a == b


def _differences(rendered: object, live: object, path: str) -> list[str]:
    """Where `live` lacks or changes what `rendered` sets; fields the API server adds (defaults) are ignored."""
    if isinstance(rendered, Mapping):
        if not isinstance(live, Mapping):
            return [f"{path}: missing"]
        return [d for key, value in rendered.items()
                for d in _differences(value, live.get(key), f"{path}.{key}" if path else str(key))]
    if isinstance(rendered, list):
        if not isinstance(live, list) or len(live) != len(rendered):
            return [f"{path}: {len(rendered)} item(s) rendered, {len(live) if isinstance(live, list) else 0} live"]
        return [d for i, (a, b) in enumerate(zip(rendered, live)) for d in _differences(a, b, f"{path}[{i}]")]
    return [] if _same_scalar(rendered, live) else [f"{path}: {live!r} in the cluster, {rendered!r} rendered"]


def manifest_findings(what: str, manifests: Iterable[Mapping],
                      live: Mapping[ObjectRef, Mapping | None | Forbidden]) -> list[Finding]:
    """Each rendered object must exist and hold what gpushare rendered (labels and every field but metadata/status).
    One the identity may not read is no finding (`skipped_checks` names it)."""
    findings = []
    for manifest in manifests:
        ref = object_ref(manifest)
        label = _label(ref)
        obj = live.get(ref)
        if obj is FORBIDDEN:
            continue
        if obj is None:
            findings.append(Finding(what, f"{label} not found", f"the stack's {what} are not deployed",
                                    "run `pulumi up`"))
            continue
        rendered = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind", "metadata", "status")}
        rendered["labels"] = (manifest.get("metadata") or {}).get("labels") or {}
        current = {**obj, "labels": (obj.get("metadata") or {}).get("labels") or {}}
        differences = _differences(rendered, current, "")
        if differences:
            findings.append(Finding(
                what, f"{label} differs from the plan: {'; '.join(differences[:3])}"
                      + (f" (and {len(differences) - 3} more)" if len(differences) > 3 else ""),
                "it was changed outside gpushare, or deployed from another version of the stack",
                "run `pulumi up` (`pulumi refresh` first shows what changed)",
            ))
    return findings


# --- output -----------------------------------------------------------------------------------------------


def render_text(report: VerifyReport, smoke: Iterable[SmokeResult] = ()) -> str:
    """Per pool a line (nodes ready/total, expected vs found per node, verdict), the operator's DaemonSets, the smoke
    pods' output, then every finding with its cause and fix."""
    lines = []
    for pool in report.pools:
        e = pool.expectation
        ready = sum(1 for n in pool.nodes if n.ready)
        groups: dict[str, list[str]] = {}
        for n in pool.nodes:
            if n.ready:
                groups.setdefault(_describe(n.found), []).append(n.name)
        found = "; ".join(f"{desc} on {', '.join(names) if len(names) <= 3 else f'{len(names)} nodes'}"
                          for desc, names in groups.items()) or "-"
        lines.append(
            f"pool {e.pool}: nodes {ready}/{len(pool.nodes)} ready, expected {e.resource}: {e.per_node} per node, "
            f"found {found} -> {pool.verdict.value.upper()}"
        )
    ds = ", ".join(f"{name} {state}" for name, state in report.daemon_sets.items())
    lines.append(f"operator ({NAMESPACE}) DaemonSets ready/desired: {ds}")
    if report.autoscaler:
        lines.append(_autoscaler_line(report.autoscaler))
    if report.tenant_objects:
        checked = report.tenant_objects - len(report.skipped)
        state = f"{len(report.tenants)} missing or changed" if report.tenants else "all as rendered"
        state = f"{state} of {checked} checked, {len(report.skipped)} skipped" if report.skipped else state
        lines.append(f"tenants: {report.tenant_objects} objects (namespaces, quotas, policies, bindings), {state}")
        for skipped in report.skipped:
            lines.append(f"  skipped {skipped.object}: may not read it (403); needs {skipped.needs}")
    for result in smoke:
        if result.phase == "Skipped":
            lines.append(f"smoke {result.pool}: skipped ({result.detail})")
            continue
        where = f" on {result.node}" if result.node else ""
        lines.append(f"smoke {result.pool}: {result.phase}{where} -> {'PASS' if result.passed else 'MISMATCH'}")
        lines += [f"  | {line}" for line in result.log.splitlines()]
    findings = report.findings
    if findings:
        lines.append("")
    for finding in findings:
        tag = "pending" if finding.pending else "mismatch"
        lines.append(f"{tag}: {finding.where}: {finding.problem}")
        lines.append(f"  cause: {finding.cause}")
        lines.append(f"  fix:   {finding.fix}")
    lines.append("")
    lines.append(f"verdict: {report.verdict.value.upper()}")
    return "\n".join(lines)


def _autoscaler_line(view: AutoscalerView) -> str:
    gpu = (f"{len(view.gpu_unready)} GPU node(s) without nvidia.com/gpu it counts unready "
           f"({', '.join(view.gpu_unready)})" if view.gpu_unready else "every GPU node advertises nvidia.com/gpu")
    if view.runs:
        state = "acting" if view.healthy else "STOPPED"
    else:
        state = "no pool of the stack autoscales; this is what it would see"
    return (f"cluster autoscaler: {gpu}; {len(view.unready)} of {view.total} nodes unready, it stops above "
            f"{OK_TOTAL_UNREADY_COUNT} and {MAX_TOTAL_UNREADY_PERCENTAGE:g}% -> {state}")


# --- smoke pods -------------------------------------------------------------------------------------------

SMOKE_NAMESPACE_PREFIX = "gpushare-smoke-"


def smoke_pod(expect: PoolExpectation, namespace: str) -> dict:
    """One pod that asks for one unit of the pool's resource on the pool's nodes and lists the GPUs it got.

    Restricted pod security (non-root, no privilege escalation, no capabilities), so namespace policies allow it.
    """
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"smoke-{expect.pool}", "namespace": namespace,
                     "labels": {"app.kubernetes.io/managed-by": "gpushare-verify", POOL_LABEL: expect.pool}},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {POOL_LABEL: expect.pool},
            "tolerations": [toleration(taint) for taint in expect.taints],
            "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "nvidia-smi",
                "image": CUDA_CHECK_IMAGE,
                "command": ["nvidia-smi", "-L"],
                "resources": {"limits": {expect.resource: "1"}},
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            }],
        },
    }


def smoke_skips(stack: StackConfig) -> dict[str, str]:
    """Pools that get no smoke pod, and why: with tenants, the shared-pool admission policy admits GPU pods outside
    tenant namespaces only on pools no tenant lists (`gpushare.kubernetes.tenants.shared_pool_policy`)."""
    if not stack.tenants:
        return {}
    shared = set(shared_pools(stack))
    return {
        pool.name: f"pool of tenant {', '.join(t.name for t in stack.tenants if pool.name in t.pools)}: the "
                   f"admission policy admits GPU pods on it only in its tenants' namespaces"
        for pool in stack.pools if pool.name not in shared
    }


@dataclass(frozen=True)
class SmokeResult:
    pool: str
    phase: str
    """Succeeded, Failed, or the phase it was still in when time ran out."""
    node: str | None
    log: str
    detail: str = ""
    """Why it did not finish (e.g. the scheduler's message), when it did not."""

    @property
    def passed(self) -> bool:
        return self.phase == "Succeeded" and "GPU " in self.log

    def finding(self) -> Finding | None:
        if self.passed or self.phase == "Skipped":
            return None
        if self.phase == "Rejected":
            return Finding(
                f"pool {self.pool}", f"the API server refused the smoke pod: {self.detail}",
                "an admission policy or a quota does not allow this pod in a namespace of its own",
                "allow GPU pods for this pool in namespaces named gpushare-smoke-*, or run without --smoke",
            )
        if self.phase == "Succeeded":
            problem = "the smoke pod ran but `nvidia-smi -L` listed no GPU"
        elif self.phase == "Failed":
            problem = "the smoke pod failed"
        else:
            detail = f": {self.detail}" if self.detail else ""
            problem = f"the smoke pod did not finish in time (still {self.phase}{detail})"
        return Finding(
            f"pool {self.pool}", problem,
            "a pod asking for the pool's resource did not get a working device",
            "read the pod's log above and the mismatches for this pool; `kubectl describe pod` while it runs",
        )

    def to_json(self) -> dict:
        return {"pool": self.pool, "phase": self.phase, "node": self.node, "log": self.log, "detail": self.detail,
                "passed": self.passed}
