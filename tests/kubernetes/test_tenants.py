"""Tenants' Kubernetes objects: valid against the cluster version's OpenAPI schema, and the admission policy's CEL
run by a real CEL runtime against pods and workloads after the API server's defaulting (tests/kubernetes/admission.py).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from gpushare.kubernetes.tenants import (
    container_defaults,
    pod_spec,
    shared_pool_policy,
    shared_pools,
    tenant_manifests,
    tenant_objects,
    tenant_plan,
)
from gpushare.sharing.operator_values import operator_plan, toleration
from gpushare.stackfile.config import load_stack_file, parse_config
from gpushare.stackfile.model import pool_node_taints
from tests.kubernetes.admission import Cluster, compile_expression, quantity_value

ROOT = Path(__file__).resolve().parents[2]
GPU_TAINT = "nvidia.com/gpu=present:NoSchedule"

STACK_YAML = """
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: shared, kubernetesVersion: "1.30"}
  gpushare:operator: {migStrategy: mixed}
  gpushare:pools:
    - {name: h100mig, vmSize: Standard_NC40ads_H100_v5, mig: MIG1g, count: 2}
    - {name: a100, vmSize: Standard_NC24ads_A100_v4, autoscale: {min: 0, max: 2}}
    - {name: t4ts, vmSize: Standard_NC4as_T4_v3, sharing: {strategy: time-slicing, replicas: 4}}
    - {name: t4batch, vmSize: Standard_NC64as_T4_v3}
  gpushare:tenants:
    - name: vision
      pools: [h100mig, t4ts]
      quota: {nvidia.com/mig-1g.12gb: 14}
      groups: [3f2504e0-4f89-41d3-9a0c-0305e82c3301, 9b2c1c7e-0000-4000-8000-000000000001]
    - name: nlp
      pools: [a100, t4ts]
      guaranteed: false
"""
H100 = "nvidia.com/mig-1g.12gb"


@pytest.fixture(scope="module")
def stack():
    raw = yaml.safe_load(STACK_YAML)["config"]
    return parse_config(raw, source="stacks/Pulumi.shared.yaml", stack="shared")


@pytest.fixture(scope="module")
def cluster(stack):
    return Cluster(tenant_manifests(stack))


def pod(*containers: dict[str, Any], pool: str | None = None, init: list[dict[str, Any]] = (),
        tolerations: list[dict[str, Any]] = (), **spec_fields: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers), **spec_fields}
    if pool:
        spec["nodeSelector"] = {"gpushare.io/pool": pool}
    if init:
        spec["initContainers"] = list(init)
    if tolerations:
        spec["tolerations"] = list(tolerations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


VOID = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]
TOLERATE_GPU = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
TOLERATE_ALL = {"operator": "Exists"}


def tolerate_tenant(name: str, operator: str = "Equal") -> dict[str, Any]:
    value = {"value": name} if operator == "Equal" else {}
    return {"key": "gpushare.io/tenant", "operator": operator, **value, "effect": "NoSchedule"}


def container(name: str = "main", limits: dict | None = None, requests: dict | None = None,
              env: list[dict[str, Any]] | None = None, env_from: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    resources = {k: v for k, v in (("limits", limits), ("requests", requests)) if v is not None}
    fields = {"resources": resources, "env": env, "envFrom": env_from}
    return {"name": name, "image": "busybox", **{k: v for k, v in fields.items() if v}}


def workload(kind: str, template_pod: dict[str, Any]) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": "a"}}, "spec": template_pod["spec"]}
    group = "batch/v1" if kind in ("Job", "CronJob") else "apps/v1"
    if kind == "CronJob":
        spec = {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": template}}}
    elif kind == "Job":
        spec = {"template": template}
    else:
        spec = {"selector": {"matchLabels": {"app": "a"}}, "template": template}
    return {"apiVersion": group, "kind": kind, "metadata": {"name": "w"}, "spec": spec}


def gpu(resource: str = H100, **more: str) -> dict[str, Any]:
    return {resource: 1, **more}


POOL_MESSAGE = "GPU pods in namespace vision must set nodeSelector gpushare.io/pool to one of: h100mig, t4ts"
QOS_MESSAGE = ("GPU pods in namespace vision must be Guaranteed QoS: give every container CPU and memory requests "
               "equal to its limits, or set neither to take the namespace defaults (cpu 700m, memory 4Gi); "
               "not Guaranteed: ")


# --- the policy at admission ------------------------------------------------------------------------------------

def test_the_pod_snippet_of_every_tenant_is_admitted_in_its_namespace(stack, cluster):
    for tenant in stack.tenants:
        snippet = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec(stack, tenant)}
        assert cluster.admit(snippet, tenant.name).allowed, tenant.name


ADMITTED = {
    "compliant pod": (pod(container(limits=gpu(cpu="2", memory="8Gi"), requests={"cpu": "2", "memory": "8Gi"}),
                          pool="h100mig"), "vision"),
    "only a GPU limit: LimitRange makes it Guaranteed": (pod(container(limits=gpu()), pool="h100mig"), "vision"),
    "limits only: requests default to limits": (pod(container(limits=gpu(cpu="3", memory="2Gi")), pool="t4ts"),
                                                "vision"),
    "equal quantities written differently": (
        pod(container(limits=gpu(cpu="1000m", memory="1Gi"), requests={"cpu": "1", "memory": "1073741824"}),
            pool="h100mig"), "vision"),
    "pool shared by two tenants": (pod(container(limits=gpu("nvidia.com/gpu.shared")), pool="t4ts"), "nlp"),
    "guaranteed: false admits Burstable": (
        pod(container(limits=gpu("nvidia.com/gpu"), requests={"cpu": "100m"}), pool="a100"), "nlp"),
    "non-GPU pod in a tenant namespace": (pod(container(requests={"cpu": "100m"})), "vision"),
    "non-GPU pod elsewhere": (pod(container()), "default"),
    "GPU pod elsewhere on the pool no tenant lists": (pod(container(limits=gpu("nvidia.com/gpu")), pool="t4batch"),
                                                      "team-x"),
    "kube-system is exempt": (pod(container(limits=gpu())), "kube-system"),
    "the GPU Operator's namespace is exempt": (pod(container(limits=gpu())), "gpu-operator"),
    "Deployment template with only a GPU limit": (workload("Deployment", pod(container(limits=gpu()),
                                                                                pool="h100mig")), "vision"),
    "StatefulSet template with limits only: its pods' requests default to them": (
        workload("StatefulSet", pod(container(limits=gpu(cpu="3", memory="6Gi")), pool="t4ts")), "vision"),
    "template request equal to the namespace default": (
        workload("Job", pod(container(limits=gpu(), requests={"cpu": "0.7"}), pool="h100mig")), "vision"),
}


@pytest.mark.parametrize(("obj", "namespace"), list(ADMITTED.values()), ids=list(ADMITTED))
def test_admits(cluster, obj, namespace):
    decision = cluster.admit(obj, namespace)
    assert decision.allowed, decision.messages


REJECTED = {
    "no nodeSelector": (pod(container(limits=gpu())), "vision", POOL_MESSAGE),
    "another tenant's pool": (pod(container(limits=gpu("nvidia.com/gpu")), pool="a100"), "vision",
                              POOL_MESSAGE + "; got a100"),
    "a pool no tenant lists": (pod(container(limits=gpu("nvidia.com/gpu")), pool="t4batch"), "vision",
                               POOL_MESSAGE + "; got t4batch"),
    "Burstable: CPU request below limit": (
        pod(container(limits=gpu(cpu="2"), requests={"cpu": "1"}), pool="h100mig"), "vision", QOS_MESSAGE + "main"),
    "Burstable init container": (
        pod(container(limits=gpu()), pool="h100mig", init=[container("setup", requests={"memory": "1Gi"}, env=VOID)]),
        "vision", QOS_MESSAGE + "setup"),
    "GPU asked for by an init container only": (
        pod(container("app", env=VOID), init=[container("warmup", limits=gpu())]), "vision", POOL_MESSAGE),
    "a tenant's pool from another namespace": (
        pod(container(limits=gpu()), pool="h100mig"), "default",
        "GPU pods in namespace default must set nodeSelector gpushare.io/pool to one of: t4batch "
        "(the pools no tenant lists); got h100mig"),
    "no nodeSelector elsewhere": (
        pod(container(limits=gpu("nvidia.com/gpu"))), "team-x",
        "GPU pods in namespace team-x must set nodeSelector gpushare.io/pool to one of: t4batch "
        "(the pools no tenant lists)"),
    "Deployment template on another tenant's pool": (
        workload("Deployment", pod(container(limits=gpu("nvidia.com/gpu")), pool="a100")), "vision",
        "Deployment pod template: " + POOL_MESSAGE + "; got a100"),
    "Deployment template with a request but no limit": (
        workload("Deployment", pod(container(limits=gpu(), requests={"cpu": "2"}), pool="h100mig")), "vision",
        "Deployment pod template: " + QOS_MESSAGE + "main"),
}


@pytest.mark.parametrize(("obj", "namespace", "message"), list(REJECTED.values()), ids=list(REJECTED))
def test_rejects_with_a_message_naming_the_fix(cluster, obj, namespace, message):
    decision = cluster.admit(obj, namespace)
    assert decision.messages == [message]


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"])
def test_every_workload_kind_is_judged_by_its_template(cluster, kind):
    bad = workload(kind, pod(container(limits=gpu())))
    good = workload(kind, pod(container(limits=gpu()), pool="h100mig"))
    assert cluster.admit(bad, "vision").messages == [f"{kind} pod template: {POOL_MESSAGE}"]
    assert cluster.admit(bad, "vision", operation="UPDATE", old=good).messages == [
        f"{kind} pod template: {POOL_MESSAGE}"]
    assert cluster.admit(good, "vision").allowed
    assert cluster.admit(good, "vision", operation="UPDATE", old=bad).allowed


def test_a_pod_update_that_leaves_its_spec_passes(cluster):
    """Label, annotation and finalizer updates of a running pod pass, even one admitted before a policy tightened."""
    stale = pod(container(limits=gpu()))
    relabelled = copy.deepcopy(stale)
    relabelled["metadata"]["labels"] = {"app": "x"}
    assert cluster.admit(relabelled, "vision", operation="UPDATE", old=stale).allowed


AKS_POOL_SELECTOR = {"kubernetes.azure.com/agentpool": "a100"}
"""AKS's own pool label: selecting on it is not selecting a gpushare pool, so such a pod is not judged at CREATE."""


@pytest.mark.parametrize("namespace", ["vision", "team-x"])
def test_tolerations_added_by_an_update_are_judged(cluster, namespace):
    """`ValidatePodUpdate` lets an update add tolerations: a pod created Pending on another tenant's pool (no GPU
    request, no toleration) must not be patched onto its nodes."""
    pending = pod(container(env=VOID), nodeSelector=AKS_POOL_SELECTOR)
    assert cluster.admit(pending, namespace).allowed
    patched = copy.deepcopy(pending)
    patched["spec"]["tolerations"] = [TOLERATE_ALL]
    decision = cluster.admit(patched, namespace, operation="UPDATE", old=pending)
    assert not decision.allowed
    assert any("must set nodeSelector gpushare.io/pool" in m for m in decision.messages), decision.messages


def test_scheduling_terms_given_to_a_gated_pod_are_judged(cluster):
    """KEP-3838: a pod with scheduling gates may gain nodeSelector terms; one selecting nlp's pool is refused."""
    stored = {"cpu": "1", "memory": "1Gi"}  # as the pod was defaulted at its creation
    gated = pod(container(limits=gpu("nvidia.com/gpu", **stored), requests=stored), tolerations=[TOLERATE_GPU],
                schedulingGates=[{"name": "example.com/queue"}], nodeSelector={"team": "vision"})
    released = copy.deepcopy(gated)
    released["spec"]["nodeSelector"] = {"gpushare.io/pool": "a100"}
    del released["spec"]["schedulingGates"]
    assert cluster.admit(released, "vision", operation="UPDATE", old=gated).messages == [f"{POOL_MESSAGE}; got a100"]


def test_a_bound_pod_can_change_its_image(cluster):
    """On a bound pod the scheduler set spec.nodeName: an update of a pod without GPUs is not judged for it."""
    bound = pod(container(), nodeName="aks-system-12345-vmss000000")
    upgraded = copy.deepcopy(bound)
    upgraded["spec"]["containers"][0]["image"] = "busybox:1.37"
    assert cluster.admit(upgraded, "vision", operation="UPDATE", old=bound).allowed
    assert not cluster.admit(bound, "vision").allowed, "at CREATE a node name skips the scheduler: refused"


# --- who is judged: every pod that could run on a GPU pool's node --------------------------------------------------

def reach(why: str, namespace: str = "vision") -> str:
    pools = "h100mig, t4ts" if namespace == "vision" else "t4batch (the pools no tenant lists)"
    return (f"Pods that can run on GPU nodes ({why}) in namespace {namespace} must set nodeSelector gpushare.io/pool "
            f"to one of: {pools}")


FOREIGN = ("pods in namespace vision may tolerate only nvidia.com/gpu and gpushare.io/tenant=vision (key, operator "
           "Equal, value): another tenant's taint would let them onto that tenant's nodes; remove the toleration or "
           "name this tenant's taint")
NODE_NAME = ("spec.nodeName is set: pods in namespace vision must not set spec.nodeName: a pod created with a node "
             "name skips the scheduler and the pools' taints; remove it and select the pool with nodeSelector "
             "gpushare.io/pool (one of: h100mig, t4ts)")
A100_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "gpushare.io/pool", "operator": "In", "values": ["a100"]}]}]}}}
DAEMON_SET_OWNER = {"name": "p", "ownerReferences": [
    {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "1", "controller": True}]}


def daemon_set_pod(*containers: dict[str, Any], **fields: Any) -> dict[str, Any]:
    obj = pod(*containers, **fields)
    obj["metadata"] = DAEMON_SET_OWNER
    return obj


JUDGED_ADMITTED = {
    "non-GPU pod on its own pool, tolerating the GPU taint, device-less": (
        pod(container(env=VOID), pool="t4ts", tolerations=[TOLERATE_GPU]), "vision"),
    "its own tenant taint": (
        pod(container(limits=gpu()), pool="h100mig", tolerations=[TOLERATE_GPU, tolerate_tenant("vision")]),
        "vision"),
    "a toleration of an unrelated taint is not judged": (
        pod(container(), tolerations=[{"key": "CriticalAddonsOnly", "operator": "Exists"}]), "vision"),
    "a sidecar that sets NVIDIA_VISIBLE_DEVICES=void": (
        pod(container(limits=gpu()), container("sidecar", env=VOID), pool="h100mig"), "vision"),
    "NVIDIA_VISIBLE_DEVICES=none on a non-GPU pod": (
        pod(container(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"}])), "vision"),
    "a GPU container's envFrom with a safe prefix": (
        pod(container(limits=gpu(), env_from=[{"prefix": "APP_", "configMapRef": {"name": "c"}}]), pool="h100mig"),
        "vision"),
    "a non-GPU container's envFrom without prefix (its env void wins)": (
        pod(container(limits=gpu()), container("s", env=VOID, env_from=[{"configMapRef": {"name": "c"}}]),
            pool="h100mig"), "vision"),
    "a node agent DaemonSet elsewhere tolerating everything": (
        workload("DaemonSet", pod(container(), tolerations=[TOLERATE_ALL])), "logging"),
    "a DaemonSet's pod elsewhere, wherever it lands": (
        daemon_set_pod(container(), tolerations=[TOLERATE_ALL], affinity=A100_AFFINITY), "logging"),
    "a pod elsewhere on the shared pool, device-less": (
        pod(container(env=VOID), pool="t4batch", tolerations=[TOLERATE_GPU]), "team-x"),
}


@pytest.mark.parametrize(("obj", "namespace"), list(JUDGED_ADMITTED.values()), ids=list(JUDGED_ADMITTED))
def test_admits_pods_that_stay_on_their_pools(cluster, obj, namespace):
    decision = cluster.admit(obj, namespace)
    assert decision.allowed, decision.messages


ENV_RULE = ("containers must not set NVIDIA device variables (NVIDIA_VISIBLE_DEVICES, NVIDIA_MIG_CONFIG_DEVICES, "
            "NVIDIA_MIG_MONITOR_DEVICES, NVIDIA_IMEX_CHANNELS) in env to anything but void/none: the NVIDIA "
            "container toolkit would give the container the GPUs they name, past the device plugin; remove the "
            "variable (the device plugin sets it for the GPUs a container requests) or set it to void")
ENV_FROM_RULE = ("GPU containers' envFrom must have a prefix that cannot spell an NVIDIA device variable: a key "
                 "NVIDIA_VISIBLE_DEVICES would override the GPUs the device plugin allocated; set envFrom[].prefix "
                 "(e.g. APP_) or list the keys in env")


def void_rule(where: str) -> str:
    return (f"containers that request no GPU in {where} must set env NVIDIA_VISIBLE_DEVICES=void: on AKS GPU nodes "
            "the NVIDIA runtime is containerd's default and gives a container the GPUs its image's "
            "NVIDIA_VISIBLE_DEVICES names (nvidia/cuda images set all); add {name: NVIDIA_VISIBLE_DEVICES, value: "
            "void} to its env")


VISION_VOID = void_rule("namespace vision's pods that can run on GPU nodes")
ELSEWHERE_VOID = void_rule("pods outside tenant namespaces that can run on GPU nodes")
ALL_GPUS = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]

JUDGED_REJECTED = {
    "tolerates the GPU taint, selects no pool": (
        pod(container(env=VOID), tolerations=[TOLERATE_GPU]), "vision",
        [reach("spec.tolerations[0] tolerates nvidia.com/gpu")]),
    "tolerates everything, selects another tenant's pool": (
        pod(container(env=VOID), pool="a100", tolerations=[TOLERATE_GPU, TOLERATE_ALL]), "vision",
        ["spec.tolerations[1] tolerates every taint: " + FOREIGN,
         reach("spec.tolerations[0] tolerates nvidia.com/gpu") + "; got a100"]),
    "another tenant's taint": (
        pod(container(env=VOID), pool="t4ts", tolerations=[TOLERATE_GPU, tolerate_tenant("nlp")]), "vision",
        ["spec.tolerations[1] tolerates gpushare.io/tenant=nlp: " + FOREIGN]),
    "every tenant's taint": (
        pod(container(env=VOID), pool="t4ts", tolerations=[tolerate_tenant("vision", "Exists")]), "vision",
        ["spec.tolerations[0] tolerates gpushare.io/tenant with any value: " + FOREIGN]),
    "a required nodeAffinity term on another tenant's pool": (
        pod(container(env=VOID), affinity=A100_AFFINITY), "vision",
        [reach("spec.affinity.nodeAffinity selects gpushare.io/pool")]),
    "spec.nodeName in a tenant namespace": (
        pod(container(env=VOID), nodeName="aks-a100-12345678-vmss000000"), "vision",
        [NODE_NAME, reach("spec.nodeName is set")]),
    "spec.nodeName elsewhere, off the shared pool": (
        pod(container(env=VOID), nodeName="aks-a100-12345678-vmss000000"), "team-x",
        [reach("spec.nodeName is set", "team-x")]),
    "a tenant's own DaemonSet tolerating everything": (
        workload("DaemonSet", pod(container(env=VOID), pool="h100mig", tolerations=[TOLERATE_ALL])), "vision",
        ["DaemonSet pod template: spec.tolerations[0] tolerates every taint: " + FOREIGN]),
    "a pod elsewhere tolerating everything, not a DaemonSet's": (
        pod(container(env=VOID), tolerations=[TOLERATE_ALL]), "team-x",
        [reach("spec.tolerations[0] tolerates every taint", "team-x")]),
    "a DaemonSet elsewhere asking for a tenant's GPUs": (
        workload("DaemonSet", pod(container(limits=gpu()), pool="h100mig", tolerations=[TOLERATE_ALL])), "team-x",
        ["DaemonSet pod template: GPU pods in namespace team-x must set nodeSelector gpushare.io/pool to one of: "
         "t4batch (the pools no tenant lists); got h100mig"]),
    # Devices: the pod's env wins over the device plugin's and the image's.
    "NVIDIA_VISIBLE_DEVICES=all in a GPU container's env": (
        pod(container(limits=gpu()), container("b", limits=gpu(), env=ALL_GPUS), pool="h100mig"), "vision",
        [f"spec.containers[1].env[0] sets NVIDIA_VISIBLE_DEVICES=all ({ENV_RULE})"]),
    "a MIG device variable in a plain pod elsewhere": (
        pod(container(env=[{"name": "A", "value": "1"}, {"name": "NVIDIA_MIG_MONITOR_DEVICES", "value": "all"}])),
        "default", [f"spec.containers[0].env[1] sets NVIDIA_MIG_MONITOR_DEVICES=all ({ENV_RULE})"]),
    "a device variable from valueFrom in an init container": (
        pod(container(), init=[container("i", env=[{"name": "NVIDIA_IMEX_CHANNELS", "valueFrom": {
            "configMapKeyRef": {"name": "c", "key": "k"}}}])]), "vision",
        [f"spec.initContainers[0].env[0] sets NVIDIA_IMEX_CHANNELS from valueFrom ({ENV_RULE})"]),
    "a Deployment's GPU container sets NVIDIA_VISIBLE_DEVICES": (
        workload("Deployment", pod(container(limits=gpu(), env=[*VOID, *ALL_GPUS]), pool="h100mig")), "vision",
        [f"Deployment pod template: spec.containers[0].env[1] sets NVIDIA_VISIBLE_DEVICES=all ({ENV_RULE})"]),
    "a sidecar without NVIDIA_VISIBLE_DEVICES=void next to a GPU container": (
        pod(container(limits=gpu()), container("sidecar"), pool="h100mig"), "vision",
        ["spec.containers[1] (sidecar): " + VISION_VOID]),
    "a non-GPU pod on the shared pool without void": (
        pod(container("agent"), pool="t4batch", tolerations=[TOLERATE_GPU]), "team-x",
        ["spec.containers[0] (agent): " + ELSEWHERE_VOID]),
    "a GPU container's envFrom without prefix": (
        pod(container(limits=gpu(), env_from=[{"configMapRef": {"name": "c"}}]), pool="h100mig"), "vision",
        [f"spec.containers[0].envFrom[0] has no safe prefix ({ENV_FROM_RULE})"]),
    "a GPU container's envFrom prefixed NVIDIA_": (
        pod(container(limits=gpu(), env_from=[{"prefix": "APP_", "secretRef": {"name": "s"}},
                                              {"prefix": "NVIDIA_", "configMapRef": {"name": "c"}}]),
            pool="h100mig"), "vision",
        [f"spec.containers[0].envFrom[1] has no safe prefix ({ENV_FROM_RULE})"]),
}


@pytest.mark.parametrize(("obj", "namespace", "messages"), list(JUDGED_REJECTED.values()), ids=list(JUDGED_REJECTED))
def test_rejects_pods_that_could_leave_their_pools_naming_the_field(cluster, obj, namespace, messages):
    assert cluster.admit(obj, namespace).messages == messages


# --- UPDATE: judged only when the pod template changes -----------------------------------------------------------

WORKLOAD_KINDS = ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"]


def _template(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["jobTemplate"]["spec"]["template"] if obj["kind"] == "CronJob" else obj["spec"]["template"]


def _updates(old: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The updates controllers and users make without touching the pod template."""
    scaled, labelled, finalized, deleting, status = (copy.deepcopy(old) for _ in range(5))
    scaled["spec"]["parallelism" if old["kind"] == "Job" else "suspend" if old["kind"] == "CronJob" else "replicas"] = \
        True if old["kind"] == "CronJob" else 3
    labelled["metadata"]["labels"] = {"team": "vision"}
    finalized["metadata"]["finalizers"] = ["foregroundDeletion"]
    deleting["metadata"].update(deletionTimestamp="2026-12-01T09:00:00Z", finalizers=[])
    status["status"] = {"observedGeneration": 2}
    return {"scaled": scaled, "labelled": labelled, "finalized": finalized, "deleting": deleting, "status": status}


@pytest.mark.parametrize("kind", WORKLOAD_KINDS)
def test_an_update_that_keeps_the_pod_template_is_never_refused(cluster, kind):
    """A workload admitted before a policy tightened (here: no nodeSelector) keeps scaling, relabelling and
    deleting; only a new template is judged."""
    stale = workload(kind, pod(container(limits=gpu())))
    for what, new in _updates(stale).items():
        decision = cluster.admit(new, "vision", operation="UPDATE", old=stale)
        assert decision.allowed, (what, decision.messages)
    changed = copy.deepcopy(stale)
    _template(changed)["metadata"]["annotations"] = {"kubectl.kubernetes.io/restartedAt": "2026-12-01T09:00:00Z"}
    assert cluster.admit(changed, "vision", operation="UPDATE", old=stale).messages == [
        f"{kind} pod template: {POOL_MESSAGE}"]
    being_deleted = copy.deepcopy(changed)
    being_deleted["metadata"]["deletionTimestamp"] = "2026-12-01T09:00:00Z"
    assert cluster.admit(being_deleted, "vision", operation="UPDATE", old=stale).allowed


TEMPLATE_CASES = {
    # name: (pod, namespace, the message's text after the kind prefix)
    "tolerates everything": (pod(container(env=VOID), pool="h100mig", tolerations=[TOLERATE_ALL]), "vision",
                             "spec.tolerations[0] tolerates every taint: " + FOREIGN),
    "tolerates the GPU taint elsewhere, off the shared pool": (
        pod(container(limits=gpu()), tolerations=[TOLERATE_GPU]), "team-x",
        "GPU pods in namespace team-x must set nodeSelector gpushare.io/pool to one of: t4batch (the pools no "
        "tenant lists)"),
    "spec.nodeName": (pod(container(env=VOID), pool="h100mig", nodeName="aks-h100mig-1-vmss000000"), "vision",
                      NODE_NAME),
    "a device variable": (pod(container(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "0,1"}])), "team-x",
                          f"spec.containers[0].env[0] sets NVIDIA_VISIBLE_DEVICES=0,1 ({ENV_RULE})"),
    "a sidecar without void": (pod(container(limits=gpu()), container("log"), pool="h100mig"), "vision",
                               "spec.containers[1] (log): " + VISION_VOID),
}


@pytest.mark.parametrize("kind", WORKLOAD_KINDS)
@pytest.mark.parametrize("case", list(TEMPLATE_CASES))
def test_every_workload_kind_is_held_to_the_pod_rules_on_create_and_on_a_new_template(cluster, kind, case):
    template, namespace, message = TEMPLATE_CASES[case]
    bad = workload(kind, template)
    expected = f"{kind} pod template: {message}"
    assert expected in cluster.admit(bad, namespace).messages
    before = workload(kind, pod(container(env=VOID)))
    assert expected in cluster.admit(bad, namespace, operation="UPDATE", old=before).messages


@pytest.mark.parametrize("namespace", ["vision", "team-x"])
def test_a_scaled_workload_with_a_stale_template_passes_in_every_namespace(cluster, namespace):
    stale = workload("Deployment", pod(container(limits=gpu()), tolerations=[TOLERATE_ALL]))
    scaled = copy.deepcopy(stale)
    scaled["spec"]["replicas"] = 0
    assert not cluster.admit(stale, namespace).allowed
    assert cluster.admit(scaled, namespace, operation="UPDATE", old=stale).allowed


def with_debug_container(obj: dict[str, Any], env: list[dict[str, Any]] | None) -> dict[str, Any]:
    """`kubectl debug`: the pod with an ephemeral container, sent to the pods/ephemeralcontainers subresource."""
    debugged = copy.deepcopy(obj)
    debugged["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": "nvcr.io/nvidia/cuda:12.1.0-base-ubi8",
                                                **({"env": env} if env else {})}]
    return debugged


def test_a_debug_container_is_judged_by_its_environment_only(cluster):
    running = pod(container(limits=gpu()), pool="h100mig")

    def debug(obj: dict[str, Any], env: list[dict[str, Any]] | None, namespace: str = "vision") -> list[str]:
        return cluster.admit(with_debug_container(obj, env), namespace, operation="UPDATE", old=obj,
                             subresource="ephemeralcontainers").messages
    assert debug(running, ALL_GPUS) == [
        f"spec.ephemeralContainers[0].env[0] sets NVIDIA_VISIBLE_DEVICES=all ({ENV_RULE})",
        "spec.ephemeralContainers[0] (debugger): " + VISION_VOID]
    assert debug(running, None) == ["spec.ephemeralContainers[0] (debugger): " + VISION_VOID]
    assert debug(running, VOID) == []
    # A pod admitted before a policy tightened (no nodeSelector, a sidecar without void) can still be debugged.
    stale = pod(container(limits=gpu()), container("sidecar"))
    assert debug(stale, VOID) == []
    # A pod that cannot reach a GPU node needs no void; device variables are refused everywhere.
    assert debug(pod(container()), None) == [] and debug(pod(container()), None, "team-x") == []
    assert debug(pod(container()), ALL_GPUS, "team-x") == [
        f"spec.ephemeralContainers[0].env[0] sets NVIDIA_VISIBLE_DEVICES=all ({ENV_RULE})"]


def test_the_plan_snippet_of_every_example_stack_is_admitted():
    for config in _example_stacks_with_tenants():
        example = Cluster(tenant_manifests(config))
        for tenant in config.tenants:
            snippet = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec(config, tenant)}
            decision = example.admit(snippet, tenant.name)
            assert decision.allowed, (config.stack, tenant.name, decision.messages)


def test_when_every_pool_belongs_to_a_tenant_gpu_pods_elsewhere_are_refused():
    raw = yaml.safe_load(STACK_YAML)["config"]
    raw["gpushare:pools"] = raw["gpushare:pools"][:3]
    stack = parse_config(raw, source="s", stack="shared")
    decision = Cluster(tenant_manifests(stack)).admit(pod(container(limits=gpu("nvidia.com/gpu")), pool="a100"),
                                                      "team-x")
    assert decision.messages == ["GPU pods in namespace team-x are not allowed: every GPU pool belongs to a tenant "
                                 "(vision: h100mig, t4ts; nlp: a100, t4ts)"]


def test_every_expression_compiles_in_a_real_cel_environment(stack):
    policies = [m for m in tenant_manifests(stack) if m["kind"] == "ValidatingAdmissionPolicy"]
    assert len(policies) == 3
    for policy in policies:
        for expression in [*policy["spec"]["variables"], *policy["spec"]["matchConditions"]]:
            compile_expression(expression["expression"])
        for validation in policy["spec"]["validations"]:
            compile_expression(validation["expression"])
            compile_expression(validation["messageExpression"])


@pytest.mark.parametrize(("text", "value"), [("1", 1), ("1000m", 1), ("1.5", 1.5), ("1Gi", 2**30),
                                             ("1073741824", 2**30), ("1e3", 1000), ("2k", 2000), ("100u", 0.0001)])
def test_the_quantity_library_reads_kubernetes_quantities(text, value):
    assert quantity_value(text) == pytest.approx(value)


# --- the objects -------------------------------------------------------------------------------------------------

def test_objects_per_tenant(stack):
    vision, nlp = stack.tenants
    kinds = [(m["kind"], m["metadata"]["name"]) for m in tenant_objects(stack, vision)]
    assert kinds == [
        ("Namespace", "vision"), ("ResourceQuota", "gpushare-gpu-quota"), ("LimitRange", "gpushare-container-defaults"),
        ("RoleBinding", "gpushare-edit-3f2504e0-4f89-41d3-9a0c-0305e82c3301"),
        ("RoleBinding", "gpushare-edit-9b2c1c7e-0000-4000-8000-000000000001"),
        ("ValidatingAdmissionPolicy", "gpushare-tenant-vision"),
        ("ValidatingAdmissionPolicyBinding", "gpushare-tenant-vision")]
    # No quota, no groups: neither a ResourceQuota nor RoleBindings.
    assert [m["kind"] for m in tenant_objects(stack, nlp)] == [
        "Namespace", "LimitRange", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]
    objects = {m["kind"]: m for m in tenant_objects(stack, vision)}
    assert objects["Namespace"]["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "gpushare", "gpushare.io/tenant": "vision",
        "pod-security.kubernetes.io/enforce": "baseline"}
    assert objects["ResourceQuota"]["spec"] == {"hard": {"requests.nvidia.com/mig-1g.12gb": "14"}}
    limits = objects["LimitRange"]["spec"]["limits"][0]
    assert limits["default"] == limits["defaultRequest"] == container_defaults(stack, vision)
    binding = next(m for m in tenant_objects(stack, vision) if m["kind"] == "RoleBinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                    "name": "3f2504e0-4f89-41d3-9a0c-0305e82c3301"}]


def test_the_shared_policy_excludes_tenants_and_exempt_namespaces(stack):
    policy, binding = shared_pool_policy(stack)
    assert binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"] == [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
         "values": ["gpu-operator", "kube-system", "nlp", "vision"]}]
    assert shared_pools(stack) == ["t4batch"]


def test_no_tenants_no_objects():
    stack = load_stack_file(ROOT / "stacks" / "Pulumi.dev.yaml")
    assert stack.tenants == () and tenant_manifests(stack) == [] and shared_pool_policy(stack) == []


def _schema_version(kubernetes_version: str | None) -> str:
    """The schema of the cluster's minor version; AKS's default (no version in the stack) is the newest."""
    if kubernetes_version is None:
        return kubernetes_validate.utils.latest_version()
    return ".".join(kubernetes_version.split(".")[:2]) + ".0"


def _example_stacks_with_tenants():
    stacks = [load_stack_file(path) for path in sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))]
    return [s for s in stacks if s.tenants]


def test_an_example_stack_uses_tenants():
    assert _example_stacks_with_tenants()


@pytest.mark.parametrize("kubernetes_version", ["1.30", "1.33", None])
def test_every_object_and_pod_snippet_is_valid_for_the_clusters_kubernetes(stack, kubernetes_version):
    """Strict: an unknown or misplaced field fails, as `kubectl apply --validate=strict` would."""
    version = _schema_version(kubernetes_version)
    stacks = [stack, *_example_stacks_with_tenants()]
    for config in stacks:
        for manifest in tenant_manifests(config):
            kubernetes_validate.validate(copy.deepcopy(manifest), version, strict=True)
        for tenant in tenant_plan(config):
            snippet = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": tenant["namespace"]},
                       "spec": tenant["podSpec"]}
            kubernetes_validate.validate(snippet, version, strict=True)


def test_the_schema_check_catches_a_misplaced_field(stack):
    """The validator is strict enough to matter: a field at the wrong level fails."""
    policy = copy.deepcopy(next(m for m in tenant_manifests(stack) if m["kind"] == "ValidatingAdmissionPolicy"))
    policy["spec"]["validationActions"] = ["Deny"]  # belongs to the binding
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(policy, "1.30.0", strict=True)


# --- dedicated pools ---------------------------------------------------------------------------------------------

def test_a_pool_only_one_tenant_lists_is_tainted_for_it(stack):
    taints = {pool.name: pool_node_taints(stack, pool) for pool in stack.pools}
    assert taints == {
        "h100mig": (GPU_TAINT, "gpushare.io/tenant=vision:NoSchedule"),
        "a100": (GPU_TAINT, "gpushare.io/tenant=nlp:NoSchedule"),
        "t4ts": (GPU_TAINT,),  # listed by both tenants
        "t4batch": (GPU_TAINT,),  # listed by none
    }


def test_the_operator_tolerates_the_tenant_taints(stack):
    values = operator_plan(stack).values
    for tolerations in (values["daemonsets"]["tolerations"], values["node-feature-discovery"]["worker"]["tolerations"]):
        assert toleration("gpushare.io/tenant=vision:NoSchedule") in tolerations
        assert toleration("gpushare.io/tenant=nlp:NoSchedule") in tolerations
        assert toleration(GPU_TAINT) in tolerations


def test_the_pod_snippet_tolerates_what_its_pools_carry(stack):
    vision, nlp = stack.tenants
    assert pod_spec(stack, vision)["tolerations"] == [toleration(GPU_TAINT),
                                                      toleration("gpushare.io/tenant=vision:NoSchedule")]
    assert pod_spec(stack, vision)["nodeSelector"] == {"gpushare.io/pool": "h100mig"}
    resources = pod_spec(stack, vision)["containers"][0]["resources"]
    # One H100 NVL (40 vCPU, 320 GiB) per node, 7 slices: 3/4 of the node over 7 pods, rounded down to 100m, 256Mi.
    assert resources == {"limits": {H100: 1, "cpu": "4200m", "memory": "35072Mi"},
                         "requests": {"cpu": "4200m", "memory": "35072Mi"}}
