"""`gpushare verify` (its CLI entry point, `gpushare.cli.main`) against the real control plane of this tier: a healthy
cluster passes, and each fault verify reports, planted through the real API server, is named in its output.

What no component of this tier runs is played as an admin would, through the API:
- GFD's and the operator's node labels, written out per pool from their documented behaviour (GFD
  `internal/lm/resource.go`: `<resource>.product|replicas|sharing-strategy|count`; the operator labels each GPU node
  `nvidia.com/gpu.present` and `nvidia.com/gpu.deploy.<operand>=true`, which its DaemonSets select), not from verify's
  own expectations, so a wrong expectation fails here;
- the operator's DaemonSets (names and node selectors of GPU Operator v26.7.0's `assets/state-*/0500_daemonset.yaml`)
  with the tolerations the plan's Helm release gives them (`daemonsets.tolerations`): the real DaemonSet controller
  creates their pods, only on nodes whose taints they tolerate, and the real scheduler binds them;
- the kubelet: each bound pod's status is written through the `status` subresource (Ready, or a failing init
  container), in the shapes of tests/kube_stub.py's builders, and a pod the controllers delete is finished with a
  zero grace period, as a kubelet confirms a deletion.

Every fault is planted, checked and undone by one test, so the session's other tests see the cluster as applied.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from gpushare.cli import main
from gpushare.kubernetes import cluster_read
from gpushare.kubernetes.tenant_objects import tenant_manifests
from gpushare.kubernetes.verify.expectations import (
    DEVICE_PLUGIN_DS,
    GFD_DS,
    OPERATOR_DAEMONSETS,
    VALIDATOR_DS,
    pool_expectations,
)
from gpushare.kubernetes.verify.smoke import smoke_skips, smoke_targets
from gpushare.model.stack import DEVICE_PLUGIN_CONFIG_LABEL
from gpushare.sharing.operator_values import CONFIG_MAP_NAME, NAMESPACE
from tests import kube_stub
from tests.controlplane.controlplane import (
    ADMIN,
    HELM_RELEASE,
    READER,
    ApiError,
    ControlPlane,
    finish_deletion,
    group_user,
    resource_path,
)
from tests.kube_stub import StubResponse, object_list

MERGE_PATCH = "application/merge-patch+json"
GFD_LABELS: dict[str, dict[str, str]] = {
    # H100 NVL, MIG 1g.12gb under mixed: 7 slices of its one GPU, under their own resource's keys.
    "h100mig": {"nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.product": "NVIDIA-H100-NVL",
                "nvidia.com/mig-1g.12gb.product": "NVIDIA-H100-NVL-MIG-1g.12gb", "nvidia.com/mig-1g.12gb.count": "7",
                "nvidia.com/mig-1g.12gb.replicas": "1", "nvidia.com/mig-1g.12gb.sharing-strategy": "none"},
    "a100": {"nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.product": "NVIDIA-A100-80GB-PCIe",
             "nvidia.com/gpu.count": "1", "nvidia.com/gpu.replicas": "1", "nvidia.com/gpu.sharing-strategy": "none"},
    # Time-sliced, not renamed (the stack autoscales a pool, so renameByDefault defaults to false): GFD suffixes the
    # product -SHARED.
    "t4ts": {"nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.product": "Tesla-T4-SHARED",
             "nvidia.com/gpu.count": "1",
             "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"},
    "t4batch": {"nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.count": "4",
                "nvidia.com/gpu.replicas": "1", "nvidia.com/gpu.sharing-strategy": "none"},
}
DEPLOY_LABELS = {DEVICE_PLUGIN_DS: "nvidia.com/gpu.deploy.device-plugin",
                 GFD_DS: "nvidia.com/gpu.deploy.gpu-feature-discovery",
                 VALIDATOR_DS: "nvidia.com/gpu.deploy.operator-validator"}
OPERATOR_LABELS = {"nvidia.com/gpu.present": "true", **{label: "true" for label in DEPLOY_LABELS.values()}}
T4TS_NODE, T4BATCH_NODE, H100_NODE = ("aks-t4ts-12345678-vmss000000", "aks-t4batch-12345678-vmss000000",
                                    "aks-h100mig-12345678-vmss000000")
SETTLE_TIMEOUT = 60


# --- playing the operator and the kubelet ------------------------------------------------------------------------

def gpu_nodes(plane: ControlPlane) -> list[str]:
    return sorted(n for pool, names in plane.nodes.items() if pool != "system" for n in names)


def patch(plane: ControlPlane, path: str, body: dict[str, Any]) -> dict[str, Any]:
    return plane.request("PATCH", path, body, content_type=MERGE_PATCH)


def label_node(plane: ControlPlane, node: str, labels: dict[str, str | None]) -> None:
    patch(plane, f"/api/v1/nodes/{node}", {"metadata": {"labels": labels}})


VALIDATIONS = ("driver-validation", "toolkit-validation", "cuda-validation", "plugin-validation")
"""The validator's init containers (`assets/state-operator-validation/0500_daemonset.yaml`)."""


def daemon_set(name: str, tolerations: list[dict[str, Any]]) -> dict[str, Any]:
    image = f"nvcr.io/nvidia/{name}:v26.7.0"
    init = [{"name": v, "image": image} for v in VALIDATIONS] if name == VALIDATOR_DS else []
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": NAMESPACE,
                                                                       "labels": {"app": name}},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"nodeSelector": {DEPLOY_LABELS[name]: "true"}, "tolerations": tolerations,
                         **({"initContainers": init} if init else {}),
                         "containers": [{"name": name, "image": image}]}}}}


def operator_pods(plane: ControlPlane, app: str | None = None) -> list[dict[str, Any]]:
    selector = f"app={app}" if app else f"app in ({','.join(OPERATOR_DAEMONSETS)})"
    return plane.list("v1", "Pod", NAMESPACE, selector=selector)


def pod_status(pod: dict[str, Any], **state: Any) -> dict[str, Any]:
    """The status kube_stub.pod() builds for the pod's DaemonSet (Ready unless `state` says otherwise)."""
    stub = kube_stub.pod(NAMESPACE, pod["metadata"]["labels"]["app"], pod["spec"]["nodeName"], **state)
    status = stub["status"]
    status["containerStatuses"] = [{**c, "name": pod["spec"]["containers"][0]["name"],
                                    "image": pod["spec"]["containers"][0]["image"]}
                                   for c in status["containerStatuses"]]
    return status


def set_pod_status(plane: ControlPlane, pod: dict[str, Any], status: dict[str, Any]) -> None:
    path = f"/api/v1/namespaces/{NAMESPACE}/pods/{pod['metadata']['name']}/status"
    patch(plane, path, {"status": status})


def operator_settled(plane: ControlPlane) -> None:
    """Until each DaemonSet has a bound pod on every GPU node, each such pod is Ready (written as the kubelet would)
    and the DaemonSet controller counts them all ready."""
    nodes = gpu_nodes(plane)

    def settled() -> bool:
        ready = True
        for pod in operator_pods(plane):
            if pod["metadata"].get("deletionTimestamp"):
                continue
            if not pod["spec"].get("nodeName"):
                ready = False
            elif not any(c["type"] == "Ready" and c["status"] == "True"
                         for c in pod.get("status", {}).get("conditions", [])):
                set_pod_status(plane, pod, pod_status(pod))
                ready = False
        sets = plane.list("apps/v1", "DaemonSet", NAMESPACE)
        return ready and len(sets) == len(OPERATOR_DAEMONSETS) and all(
            ds.get("status", {}).get("desiredNumberScheduled") == len(nodes)
            and ds["status"].get("numberReady") == len(nodes)
            and ds["status"].get("observedGeneration") == ds["metadata"]["generation"] for ds in sets)
    try:
        plane.wait_for("the operator's DaemonSets ready on every GPU node", settled, timeout=SETTLE_TIMEOUT)
    except AssertionError as error:
        placed = {(p["metadata"]["labels"]["app"], p["spec"].get("nodeName")) for p in operator_pods(plane)}
        missing = sorted((ds, node) for ds in OPERATOR_DAEMONSETS for node in nodes if (ds, node) not in placed)
        raise AssertionError(f"{error}; no pod (DaemonSet, node): {missing}") from None


@pytest.fixture(scope="module")
def operator(control_plane, applied, plan_document):
    """The GPU nodes labelled by GFD and the operator, and the operator's DaemonSets, each with a Ready pod on every
    GPU node."""
    release = next(r for r in plan_document["resources"] if r["type"] == HELM_RELEASE)
    tolerations = release["inputs"]["values"]["daemonsets"]["tolerations"]
    for pool, names in control_plane.nodes.items():
        for node in names if pool != "system" else ():
            label_node(control_plane, node, {**GFD_LABELS[pool], **OPERATOR_LABELS})
    for name in OPERATOR_DAEMONSETS:
        control_plane.create(daemon_set(name, tolerations))
    operator_settled(control_plane)
    return tolerations


@pytest.fixture(scope="module")
def reader(control_plane, applied):
    """READER as AKS's RBAC Reader on the cluster (Kubernetes' `view`) plus the nodes read verify needs (a custom
    role with .../nodes/read)."""
    rbac = "rbac.authorization.k8s.io/v1"
    subject = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": READER}]
    control_plane.create({"apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": "node-reader"},
                          "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}]})
    for role in ("view", "node-reader"):
        control_plane.create({"apiVersion": rbac, "kind": "ClusterRoleBinding",
                              "metadata": {"name": f"reader-{role}"}, "subjects": subject,
                              "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                          "name": role}})
    control_plane.wait_for("the reader's RBAC", lambda: control_plane.can_i(READER, "list", "nodes"))
    return READER


def verify(plane: ControlPlane, stack_file, *extra: str, user: str = ADMIN,
           kubeconfig=None) -> tuple[int, str, str]:
    """`gpushare verify STACK --kubeconfig ...` in-process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["verify", str(stack_file), "--kubeconfig", str(kubeconfig or plane.kubeconfig(user)), *extra])
    return code, out.getvalue(), err.getvalue()


# --- a healthy cluster ----------------------------------------------------------------------------------------

def test_a_healthy_cluster_passes(control_plane, operator, stack_file, stack):
    code, out, err = verify(control_plane, stack_file)
    assert code == 0, out + err
    for pool, names in control_plane.nodes.items():
        if pool != "system":
            assert f"pool {pool}: nodes {len(names)}/{len(names)} ready" in out and "-> PASS" in out
    nodes = len(gpu_nodes(control_plane))
    assert (f"DaemonSets ready/desired: {DEVICE_PLUGIN_DS} {nodes}/{nodes}, {GFD_DS} {nodes}/{nodes}, "
            f"{VALIDATOR_DS} {nodes}/{nodes}") in out
    assert "objects (namespaces, quotas, policies, bindings), all as rendered" in out
    assert "mismatch" not in out and "pending" not in out and out.rstrip().endswith("verdict: PASS")

    code, out, _ = verify(control_plane, stack_file, "--json")
    document = json.loads(out)
    assert code == 0 and document["verdict"] == "pass"
    assert [(p["pool"], p["nodesReady"], p["verdict"]) for p in document["pools"]] == [
        (e.pool, len(control_plane.nodes[e.pool]), "pass") for e in pool_expectations(stack)]


def test_the_plans_operator_tolerations_put_a_daemonset_pod_on_every_gpu_node(control_plane, operator):
    """The real DaemonSet controller and scheduler: the chart's `daemonsets.tolerations` (gpushare's) cover every
    GPU pool's taints, tenants' included, so no GPU node lacks a device plugin."""
    for name in OPERATOR_DAEMONSETS:
        assert sorted(p["spec"]["nodeName"] for p in operator_pods(control_plane, name)) == gpu_nodes(control_plane)
    assert {"key": "gpushare.io/tenant", "operator": "Equal", "value": "vision", "effect": "NoSchedule"} in operator


# --- each fault verify reports -----------------------------------------------------------------------------------

Undo = Callable[[], None]


def node_label(plane, node: str, key: str, value: str | None) -> Undo:
    before = plane.get("v1", "Node", node)["metadata"]["labels"].get(key)
    label_node(plane, node, {key: value})
    return lambda: label_node(plane, node, {key: before})


def allocatable(plane, node: str, changes: dict[str, str | None]) -> Undo:
    """The node's allocatable changed as the device plugin would report it (None: the resource gone)."""
    live = plane.get("v1", "Node", node)["status"]["allocatable"]
    before = {resource: live.get(resource) for resource in changes}
    path = f"/api/v1/nodes/{node}/status"
    patch(plane, path, {"status": {"allocatable": changes}})
    return lambda: patch(plane, path, {"status": {"allocatable": before}})


def config_map_data(plane, change: Callable[[dict[str, str]], dict[str, str]]) -> Undo:
    path = f"/api/v1/namespaces/{NAMESPACE}/configmaps/{CONFIG_MAP_NAME}"
    live = plane.request("GET", path)
    before = live["data"]
    plane.request("PUT", path, {**live, "data": change(dict(before))})
    return lambda: plane.request("PUT", path, {**plane.request("GET", path), "data": before})


def crash_looping_validation() -> dict[str, Any]:
    """kube_stub.pod()'s arguments for a validator pod whose cuda-validation init container crash-loops."""
    return {"ready": False, "phase": "Pending", "init_containers": [
        kube_stub.container_status("driver-validation", exit_code=0),
        kube_stub.container_status("toolkit-validation", exit_code=0),
        kube_stub.container_status("cuda-validation", waiting="CrashLoopBackOff", restarts=3),
        kube_stub.container_status("plugin-validation", waiting="PodInitializing")],
        "containers": [kube_stub.container_status(VALIDATOR_DS, waiting="PodInitializing")]}


def failing_validator(plane, node: str) -> Undo:
    """The validator's cuda-validation init container crash-looping on `node`, in kube_stub's shapes."""
    (pod,) = [p for p in operator_pods(plane, VALIDATOR_DS) if p["spec"]["nodeName"] == node]
    set_pod_status(plane, pod, pod_status(pod, **crash_looping_validation()))
    plane.wait_for("the DaemonSet controller to count the pod not ready", lambda: plane.get(
        "apps/v1", "DaemonSet", VALIDATOR_DS, NAMESPACE)["status"].get("numberReady") == len(gpu_nodes(plane)) - 1)
    return lambda: operator_settled(plane)


def undeployed(plane, node: str, daemon: str) -> Undo:
    """The operator's deploy label for `daemon` off `node`: the DaemonSet controller deletes its pod there."""
    label = DEPLOY_LABELS[daemon]
    label_node(plane, node, {label: None})
    doomed = plane.wait_for(f"the {daemon} pod on {node} to be deleted", lambda: [
        p for p in operator_pods(plane, daemon) if p["spec"]["nodeName"] == node
        and p["metadata"].get("deletionTimestamp")])
    for pod in doomed:
        finish_deletion(plane, NAMESPACE, pod["metadata"]["name"])

    def undo() -> None:
        label_node(plane, node, {label: "true"})
        operator_settled(plane)
    return undo


def missing_daemon_set(plane, daemon: str, tolerations) -> Undo:
    plane.request("DELETE", f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets/{daemon}",
                  {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Orphan"})
    plane.wait_for(f"DaemonSet {daemon} gone", lambda: daemon not in [
        d["metadata"]["name"] for d in plane.list("apps/v1", "DaemonSet", NAMESPACE)])
    for pod in operator_pods(plane, daemon):
        finish_deletion(plane, NAMESPACE, pod["metadata"]["name"])

    def undo() -> None:
        plane.create(daemon_set(daemon, tolerations))
        operator_settled(plane)
    return undo


def changed(plane, api_version: str, kind: str, name: str, namespace: str | None,
            edit: Callable[[dict[str, Any]], None]) -> Undo:
    """An object of the plan edited outside gpushare (`edit` mutates it); undone by putting the old one back."""
    live = plane.get(api_version, kind, name, namespace)
    before = copy.deepcopy(live)
    edit(live)
    plane.request("PUT", resource_path(api_version, kind, namespace, name), live)

    def undo() -> None:
        current = plane.get(api_version, kind, name, namespace)
        restored = {**before, "metadata": {**before["metadata"],
                                           "resourceVersion": current["metadata"]["resourceVersion"]}}
        plane.request("PUT", resource_path(api_version, kind, namespace, name), restored)
    return undo


def _drop(mapping: dict[str, Any], key: str) -> None:
    del mapping[key]


def t4ts_key(stack) -> str:
    return next(e.config_key for e in pool_expectations(stack) if e.pool == "t4ts")


STALE_KEY = "t4ts-0ld0ld00"
FAULTS: dict[str, tuple[Callable[..., Undo], Callable[[Any], list[str]]]] = {
    "a node without its device-plugin config label": (
        lambda plane, stack, tolerations: node_label(plane, T4TS_NODE, DEVICE_PLUGIN_CONFIG_LABEL, None),
        lambda stack: [f"mismatch: pool t4ts: node {T4TS_NODE}: it has no {DEVICE_PLUGIN_CONFIG_LABEL} label\n"
                       "  cause: the device plugin falls back to the default config default-whole-gpu (whole GPUs, "
                       "no sharing)"]),
    "a node GFD has not labelled": (
        lambda plane, stack, tolerations: node_label(plane, T4BATCH_NODE, "nvidia.com/gpu.product", None),
        lambda stack: [f"mismatch: pool t4batch: node {T4BATCH_NODE}: GPU Feature Discovery has not labelled it "
                       "(nvidia.com/gpu.product is missing)"]),
    "a GFD label that disagrees with the plan": (
        lambda plane, stack, tolerations: node_label(plane, T4TS_NODE, "nvidia.com/gpu.replicas", "2"),
        lambda stack: [f"mismatch: pool t4ts: node {T4TS_NODE} has nvidia.com/gpu.replicas=2, expected 4"]),
    "a wrong allocatable": (
        lambda plane, stack, tolerations: allocatable(plane, T4TS_NODE, {"nvidia.com/gpu": "2"}),
        lambda stack: [f"mismatch: pool t4ts: node {T4TS_NODE} advertises nvidia.com/gpu: 2, expected "
                       "nvidia.com/gpu: 4\n  cause: the device plugin runs an older config"]),
    "a MIG pool partitioned with another profile": (
        lambda plane, stack, tolerations: allocatable(plane, H100_NODE, {"nvidia.com/mig-1g.12gb": None,
                                                                         "nvidia.com/mig-2g.24gb": "3"}),
        lambda stack: [f"mismatch: pool h100mig: node {H100_NODE} advertises nvidia.com/mig-2g.24gb: 3, expected "
                       "nvidia.com/mig-1g.12gb: 7\n  cause: the GPUs are partitioned as 2g.24gb, the pool's profile "
                       "gives 1g.12gb"]),
    "a stale device-plugin config key on the node": (
        lambda plane, stack, tolerations: _stale_label(plane),
        lambda stack: [f"mismatch: pool t4ts: node {T4TS_NODE}: its config label is {STALE_KEY}, the plan's config "
                       f"for pool t4ts is {t4ts_key(stack)}"]),
    "the pool's config key missing from the ConfigMap": (
        lambda plane, stack, tolerations: config_map_data(
            plane, lambda data: {k: v for k, v in data.items() if k != t4ts_key(stack)}),
        lambda stack: [f"mismatch: pool t4ts: ConfigMap {NAMESPACE}/{CONFIG_MAP_NAME} has no key {t4ts_key(stack)}",
                       f"mismatch: pool t4ts: node {T4TS_NODE}: its config label {t4ts_key(stack)} is not in ConfigMap "
                       f"{NAMESPACE}/{CONFIG_MAP_NAME}\n  cause: the device plugin's config-manager stops"]),
    "a ConfigMap entry edited": (
        lambda plane, stack, tolerations: config_map_data(
            plane, lambda data: {**data, t4ts_key(stack): "version: v1\n"}),
        lambda stack: [f"mismatch: pool t4ts: ConfigMap key {t4ts_key(stack)} holds another config than the plan"]),
    "a failing operator validator pod": (
        lambda plane, stack, tolerations: failing_validator(plane, T4TS_NODE),
        lambda stack: [f"mismatch: pool t4ts: node {T4TS_NODE}: {VALIDATOR_DS} pod ",
                       "is not Ready: cuda-validation CrashLoopBackOff\n  cause: a CUDA workload could not run on the "
                       "node", f"{VALIDATOR_DS} 5/6"]),
    "a node without an operator pod": (
        lambda plane, stack, tolerations: undeployed(plane, T4BATCH_NODE, GFD_DS),
        lambda stack: [f"mismatch: pool t4batch: node {T4BATCH_NODE} has no {GFD_DS} pod", f"{GFD_DS} 5/5"]),
    "a missing operator DaemonSet": (
        lambda plane, stack, tolerations: missing_daemon_set(plane, VALIDATOR_DS, tolerations),
        lambda stack: [f"mismatch: operator: DaemonSet {NAMESPACE}/{VALIDATOR_DS} not found",
                       f"{VALIDATOR_DS} missing"]),
    "a tenant's quota raised outside gpushare": (
        lambda plane, stack, tolerations: changed(
            plane, "v1", "ResourceQuota", "gpushare-gpu-quota", "vision",
            lambda quota: quota["spec"]["hard"].update({"requests.nvidia.com/mig-1g.12gb": "20"})),
        lambda stack: ["mismatch: tenants: ResourceQuota vision/gpushare-gpu-quota differs from the plan: "
                       "spec.hard.requests.nvidia.com/mig-1g.12gb: '20' in the cluster, '14' rendered"]),
    "a tenant namespace's Pod Security label removed": (
        lambda plane, stack, tolerations: changed(
            plane, "v1", "Namespace", "nlp", None,
            lambda namespace: _drop(namespace["metadata"]["labels"], "pod-security.kubernetes.io/enforce")),
        lambda stack: ["mismatch: tenants: Namespace nlp differs from the plan: "
                       "labels.pod-security.kubernetes.io/enforce: None in the cluster, 'baseline' rendered"]),
}


def _stale_label(plane) -> Undo:
    """The node names a key of an earlier deployment, which the ConfigMap still holds."""
    undo_data = config_map_data(plane, lambda data: {**data, STALE_KEY: "version: v1\n"})
    undo_label = node_label(plane, T4TS_NODE, DEVICE_PLUGIN_CONFIG_LABEL, STALE_KEY)

    def undo() -> None:
        undo_label()
        undo_data()
    return undo


@contextlib.contextmanager
def planted(plant: Callable[[], Undo]) -> Iterator[None]:
    undo = plant()
    try:
        yield
    finally:
        undo()


@pytest.mark.parametrize("fault", list(FAULTS))
def test_verify_names_each_planted_fault(control_plane, operator, stack_file, stack, fault):
    plant, expected = FAULTS[fault]
    with planted(lambda: plant(control_plane, stack, operator)):
        code, out, err = verify(control_plane, stack_file)
    assert code == 1, out + err
    for text in expected(stack):
        assert text in out, f"{text!r} not in:\n{out}"
    assert out.rstrip().endswith("verdict: MISMATCH")
    # The one fault and nothing else: every mismatch is in the one place the fault is.
    places = {line.split(": ")[1] for line in out.splitlines() if line.startswith("mismatch: ")}
    assert len(places) == 1, out


# --- who may read what ------------------------------------------------------------------------------------------

def test_a_reader_verifies_the_cluster_and_skips_what_it_may_not_read(control_plane, operator, reader, stack_file):
    """As AKS's RBAC Reader (plus nodes): the real API server answers 403 to role bindings and admission policies,
    and verify skips those checks, naming the role that would allow them."""
    code, out, err = verify(control_plane, stack_file, user=reader)
    assert code == 0, out + err
    assert "all as rendered of" in out and "skipped" in out
    skipped = [line for line in out.splitlines() if line.startswith("  skipped ")]
    assert {line.split()[1] for line in skipped} == {"RoleBinding", "ValidatingAdmissionPolicy",
                                                     "ValidatingAdmissionPolicyBinding"}
    assert all("may not read it (403)" in line for line in skipped)
    assert "mismatch" not in out and out.rstrip().endswith("verdict: PASS")


def test_a_tenant_may_not_list_nodes_and_verify_says_so(control_plane, applied, stack_file, stack):
    code, out, err = verify(control_plane, stack_file, user=group_user(stack.tenants[0].groups[0]))
    assert (code, out) == (4, "")
    assert f"error: the API server {control_plane.url} accepted the credentials but may not list nodes (403 " \
           "Forbidden)" in err
    assert "RBAC" in err and "Traceback" not in err


def test_an_unknown_token_is_refused_and_verify_names_the_credentials(control_plane, applied, stack_file, tmp_path):
    config = json.loads(control_plane.kubeconfig(ADMIN).read_text())
    config["users"][0]["user"]["token"] = "not-a-token"
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(config))
    code, out, err = verify(control_plane, stack_file, kubeconfig=path)
    assert (code, out) == (4, "")
    assert f"error: the API server {control_plane.url} refused the credentials (401 Unauthorized) to list nodes" in err


# --- smoke pods -------------------------------------------------------------------------------------------------

def test_smoke_pods_are_admitted_and_bound_on_shared_pools_and_their_namespace_deleted(control_plane, operator,
                                                                                       stack_file, stack):
    """No kubelet runs the pod, so it stays Pending on its node; what is real is the admission of the smoke pod by
    the shared-pool policy, the scheduler's placement, the tenants' pools skipped and the namespace deleted."""
    code, out, err = verify(control_plane, stack_file, "--smoke", "--smoke-timeout", "2", "--poll-interval", "0.5")
    assert code == 1, out + err
    for pool in smoke_skips(stack):
        assert f"smoke {pool}: skipped (pool of tenant" in out
    assert f"smoke t4batch: Pending on {T4BATCH_NODE} -> MISMATCH" in out
    namespace = re.search(r"pod\(s\) in namespace (gpushare-smoke-[0-9a-f]+),", err)[1]
    # Deleted: gone, or Terminating while its pod, which no kubelet confirms stopped, is deleted.
    try:
        assert control_plane.get("v1", "Namespace", namespace)["status"]["phase"] == "Terminating"
    except ApiError as error:
        assert error.status == 404


def test_a_smoke_pod_the_policies_refuse_is_a_finding_with_the_servers_message(control_plane, operator, stack):
    """verify's tell of an admission refusal from an RBAC one (`cluster_read._REJECTIONS`) against the real
    server's answer: a smoke pod on a tenant's pool, outside the tenant's namespace."""
    api, _ = cluster_read.api_client(control_plane.kubeconfig(ADMIN), None)
    h100 = next(t for t in smoke_targets(stack, pool_expectations(stack)) if t.pool == "h100mig")
    (result,) = cluster_read.run_smoke(api, [h100], timeout=1, poll_interval=0.2, progress=lambda _: None)
    assert result.phase == "Rejected", result
    assert "ValidatingAdmissionPolicy 'gpushare-shared-gpu-pools'" in result.detail
    assert "denied request" in result.detail
    assert result.finding().problem.startswith("the API server refused the smoke pod: ")


# --- the API stub agrees ------------------------------------------------------------------------------------------

def served_by_the_stub(kube, plane: ControlPlane, manifests, failing: str | None) -> None:
    """The cluster's state in tests/kube_stub.py's shapes (its node(), pod(), daemon_set(), config_map() builders, as
    tests/cli/test_verify_command.py serves them): each node's labels and nvidia.com allocatable, each operator pod's
    node and state (the validator on `failing` crash-looping), each DaemonSet's counts, the ConfigMap's data. The
    tenants' objects are served as the real server returned them: not what this compares."""
    nodes = []
    for node in plane.list("v1", "Node"):  # every node: the autoscaler's threshold is a share of all of them
        labels = {k: v for k, v in node["metadata"]["labels"].items() if k != "kubernetes.io/hostname"}
        gpus = {k: v for k, v in node["status"]["allocatable"].items() if k.startswith("nvidia.com/")}
        nodes.append(kube_stub.node(node["metadata"]["name"], labels, gpus))
    pods = []
    for pod in operator_pods(plane):
        app, node = pod["metadata"]["labels"]["app"], pod["spec"]["nodeName"]
        state = crash_looping_validation() if app == VALIDATOR_DS and node == failing else {}
        stub = kube_stub.pod(NAMESPACE, app, node, **state)
        stub["metadata"]["name"] = pod["metadata"]["name"]
        pods.append(stub)
    sets = [kube_stub.daemon_set(NAMESPACE, ds["metadata"]["name"], ds["status"]["desiredNumberScheduled"],
                                 ds["status"].get("numberReady", 0))
            for ds in plane.list("apps/v1", "DaemonSet", NAMESPACE)]
    data = plane.get("v1", "ConfigMap", CONFIG_MAP_NAME, NAMESPACE)["data"]
    kube.route("GET", "/api/v1/nodes", StubResponse(200, object_list("NodeList", *nodes)))
    kube.route("GET", resource_path("v1", "ConfigMap", NAMESPACE, CONFIG_MAP_NAME),
               StubResponse(200, kube_stub.config_map(NAMESPACE, CONFIG_MAP_NAME, data)))
    kube.route("GET", resource_path("apps/v1", "DaemonSet", NAMESPACE),
               StubResponse(200, object_list("DaemonSetList", *sets, api_version="apps/v1")))
    kube.route("GET", resource_path("v1", "Pod", NAMESPACE), StubResponse(200, object_list("PodList", *pods)))
    for manifest in manifests:
        meta = manifest["metadata"]
        path = resource_path(manifest["apiVersion"], manifest["kind"], meta.get("namespace"), meta["name"])
        kube.route("GET", path, StubResponse(200, plane.request("GET", path)))


@pytest.mark.parametrize("failing", [None, T4TS_NODE], ids=["healthy", "a failing validator"])
def test_the_kube_stub_and_the_real_api_server_give_the_same_report(control_plane, operator, stack, stack_file,
                                                                    tmp_path, failing):
    """tests/cli/test_verify_command.py and tests/kubernetes/test_verify*.py build the API's JSON with
    tests/kube_stub.py: the same cluster, read from the real server and served in the stub's shapes, is judged
    the same, to the last field of `verify --json`."""
    undo = failing_validator(control_plane, failing) if failing else (lambda: None)
    try:
        real_code, real_out, _ = verify(control_plane, stack_file, "--json")
        with kube_stub.KubeStub() as kube:
            served_by_the_stub(kube, control_plane, tenant_manifests(stack), failing)
            stub_code, stub_out, stub_err = verify(control_plane, stack_file, "--json",
                                                   kubeconfig=kube.kubeconfig(tmp_path))
    finally:
        undo()
    real, stubbed = json.loads(real_out), json.loads(stub_out or "{}")
    for document in (real, stubbed):
        del document["server"], document["context"]
    assert (stub_code, stubbed) == (real_code, real), stub_err
    assert real["verdict"] == ("mismatch" if failing else "pass")
