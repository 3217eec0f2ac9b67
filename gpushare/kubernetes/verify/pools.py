"""The checks of each pool's nodes: allocatable, the device plugin's config, GFD's labels and the operator's pods."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from gpushare.kubernetes.verify.api_json import (
    ClusterSnapshot,
    describe_resources,
    node_ready,
    nvidia_resources,
    object_labels,
    object_name,
    ready_since,
)
from gpushare.kubernetes.verify.expectations import (
    DEVICE_PLUGIN_DS,
    GFD_DS,
    MPS_DS,
    NODE_SETTLE,
    NVIDIA_PREFIX,
    RESTART_PLUGIN,
    SPOT_LABELS,
    VALIDATOR_DS,
    PoolExpectation,
)
from gpushare.kubernetes.verify.findings import Finding, Verdict, verdict_of
from gpushare.model.stack import DEVICE_PLUGIN_CONFIG_LABEL
from gpushare.sharing.capacity import WHOLE_GPU_RESOURCE
from gpushare.sharing.device_plugin import DEFAULT_CONFIG_KEY
from gpushare.sharing.operator_values import CONFIG_MAP_NAME, NAMESPACE

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
        return verdict_of(self.findings)

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
class _ConfigProblem:
    problem: str
    cause: str
    fix: str


def _config_problem(node: Mapping, expect: PoolExpectation, data: Mapping[str, str] | None) -> _ConfigProblem | None:
    """Why the device plugin on `node` would not run the pool's config, or None when it should."""
    config_map = f"ConfigMap {NAMESPACE}/{CONFIG_MAP_NAME}"
    label = object_labels(node).get(DEVICE_PLUGIN_CONFIG_LABEL)
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
            f"run `pulumi up` so the ConfigMap and the pool's labels agree, then `{RESTART_PLUGIN}`",
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
        f"`{RESTART_PLUGIN}`",
    )


def _checkobject_labels(node: Mapping, expect: PoolExpectation, where: str) -> list[Finding]:
    labels = object_labels(node)
    if expect.product.key not in labels:
        return [Finding(
            where, f"node {object_name(node)}: GPU Feature Discovery has not labelled it ({expect.product.key} is missing)",
            "GFD writes the labels after the device plugin's config is in place",
            f"check `kubectl logs -n {NAMESPACE} -l app={GFD_DS} --all-containers` for this node",
        )]
    findings = []
    product = labels[expect.product.key]
    if not expect.product.matches(product):
        checked = "" if expect.product.confirmed else " (the GPU name is unconfirmed: only the suffix is checked)"
        findings.append(Finding(
            where, f"node {object_name(node)} has {expect.product.key}={product}, expected {expect.product.value}{checked}",
            "GFD labels the node from the config the device plugin uses and the GPUs it finds",
            f"compare the node's config label with the plan; `{RESTART_PLUGIN}` after a ConfigMap change",
        ))
    for key, value in expect.labels.items():
        if labels.get(key) != value:
            findings.append(Finding(
                where, f"node {object_name(node)} has {key}={labels.get(key, '<missing>')}, expected {value}",
                "GFD labels the node from the config the device plugin uses and the chart's mig.strategy",
                f"run `pulumi up`, then `{RESTART_PLUGIN}`",
            ))
    return findings


def pod_state(pod: Mapping) -> tuple[bool, str | None, str]:
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
        since = ready_since(node)
        settling = since is None or now - since < NODE_SETTLE
        cause = (
            "the operator runs it only on nodes GFD labelled nvidia.com/mps.capable=true, which needs the pool's MPS "
            "config on the node" if ds == MPS_DS else
            "the operator schedules its pods once NFD and the operator have labelled the node "
            "(nvidia.com/gpu.present, nvidia.com/gpu.deploy.*)"
        )
        return Finding(
            where, f"node {object_name(node)} has no {ds} pod", cause,
            f"check `kubectl get node {object_name(node)} --show-labels` and the gpu-operator pod's log",
            pending=settling,
        )
    ready, container, reason = pod_state(pod)
    if ready:
        return None
    if container is None:
        return Finding(where, f"node {object_name(node)}: {ds} pod {object_name(pod)} is not Ready yet ({reason})",
                       "the pod is starting", "wait (`--wait SECONDS`)", pending=True)
    cause = f"container {container} fails"
    if ds == VALIDATOR_DS:
        cause = _VALIDATION_CAUSES.get(container, cause)
    return Finding(
        where, f"node {object_name(node)}: {ds} pod {object_name(pod)} is not Ready: {container} {reason}", cause,
        f"`kubectl logs -n {NAMESPACE} {object_name(pod)} -c {container}`",
    )


def _check_node(node: Mapping, expect: PoolExpectation, snapshot: ClusterSnapshot,
                pods: Mapping[tuple[str, str], Mapping], data: Mapping[str, str] | None) -> list[Finding]:
    name = object_name(node)
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
                where, f"node {name} advertises {describe_resources(found)}, expected {expect.resource}: {expect.per_node}",
                cause, fix,
            ))
    elif config:
        findings.append(Finding(where, f"node {name}: {config.problem}", config.cause, config.fix))
    if not findings and GFD_DS not in pod_findings:
        findings += _checkobject_labels(node, expect, where)
    if expect.spot and not any(object_labels(node).get(key) == "spot" for key in SPOT_LABELS):
        either = " or ".join(f"{key}=spot" for key in SPOT_LABELS)
        findings.append(Finding(
            where, f"node {name} carries neither of AKS's Spot labels ({either})",
            "the node pool is not a Spot pool (its scaleSetPriority is fixed when AKS creates it)",
            "check `az aks nodepool show --query scaleSetPriority`; recreate the pool as Spot, or drop `spot` from the "
            "stack",
        ))
    return findings + list(pod_findings.values())


def check_pool(expect: PoolExpectation, nodes: list[Mapping], snapshot: ClusterSnapshot,
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
                f"run `pulumi up`, then `{RESTART_PLUGIN}`",
            ))
        elif data[expect.config_key] != expect.config_text:
            findings.append(Finding(
                where, f"ConfigMap key {expect.config_key} holds another config than the plan",
                "the ConfigMap was edited or is from another version of gpushare",
                f"run `pulumi up`, then `{RESTART_PLUGIN}`",
            ))
    results = []
    for node in nodes:
        ready = node_ready(node)
        results.append(NodeResult(object_name(node), ready, nvidia_resources(node)))
        if not ready:
            findings.append(Finding(
                where, f"node {object_name(node)} is NotReady", "the node is joining or unhealthy",
                f"wait (`--wait SECONDS`); if it stays NotReady: `kubectl describe node {object_name(node)}`", pending=True,
            ))
            continue
        findings += _check_node(node, expect, snapshot, pods, data)
    return PoolResult(expect, results, findings)
