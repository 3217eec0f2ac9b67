"""`gpushare.kubernetes.admission`: the tenants' admission policies judged
by the API server's own ValidatingAdmissionPolicy plugin (k8s.io/apiserver, `tools/vapcheck`), after the
defaulting and mutating admission the API server runs first (`tests/kubernetes/apiserver_admission.py`). Each table
is a class of requests and the verdict docs/tenants.md's isolation table states for it.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpushare.kubernetes.tenant_objects import tenant_manifests
from gpushare.kubernetes.tenants import pod_spec
from gpushare.stackfile.config import load_stack_file, parse_config
from tests.kubernetes.apiserver_admission import plugin_cluster

ROOT = Path(__file__).resolve().parents[3]
GPU_TAINT = "nvidia.com/gpu=present:NoSchedule"

STACK_YAML = """
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: shared, kubernetesVersion: "1.36"}
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
  gpushare:platform:
    namespaces:
      - {name: calico-system}
      - {name: monitoring, pools: [t4batch]}
"""
H100 = "nvidia.com/mig-1g.12gb"


@pytest.fixture(scope="module")
def stack():
    raw = yaml.safe_load(STACK_YAML)["config"]
    return parse_config(raw, source="stacks/Pulumi.shared.yaml", stack="shared")


@pytest.fixture(scope="module")
def cluster(stack, kubernetes):
    judged = plugin_cluster(tenant_manifests(stack), kubernetes)
    yield judged
    judged.close()


def example_stacks_with_tenants():
    stacks = [load_stack_file(path) for path in sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))]
    return [s for s in stacks if s.tenants]


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
TOLERATE_GPU = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
"""The form gpushare writes (and AKS's ExtendedResourceToleration adds); users may still write the `Equal` one."""
TOLERATE_GPU_EQUAL = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
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
    if kind in ("Job", "CronJob"):
        # A Job's pods may not restart Always (the API server refuses such a template before admission).
        template["spec"] = {"restartPolicy": "Never", **template["spec"]}
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


def node_name_elsewhere(node: str, shown: str) -> str:
    """The shared policy's refusal of a node name outside tenant namespaces; `shown`: what the name says of its pool."""
    return (f"spec.nodeName is {node}, {shown}: pods outside tenant namespaces may set spec.nodeName only to a node "
            "of a pool they may use or of one gpushare does not manage (the pool in the node's name, "
            "aks-<pool>-<id>-vmss<instance>): a pod created with a node name skips the scheduler and the pools' "
            "taints; remove spec.nodeName and select the pool with nodeSelector gpushare.io/pool")


A100_NODE = "aks-a100-12345678-vmss000000"
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
    "the GPU taint tolerated with operator Equal on its own pool": (
        pod(container(limits=gpu()), pool="h100mig", tolerations=[TOLERATE_GPU_EQUAL]), "vision"),
    "its own tenant taint": (
        pod(container(limits=gpu()), pool="h100mig", tolerations=[TOLERATE_GPU, tolerate_tenant("vision")]),
        "vision"),
    "its own tenant taint without operator (Kubernetes defaults it to Equal)": (
        pod(container(limits=gpu()), pool="h100mig",
            tolerations=[TOLERATE_GPU, {"key": "gpushare.io/tenant", "value": "vision", "effect": "NoSchedule"}]),
        "vision"),
    "a toleration of an unrelated taint is not judged": (
        pod(container(), tolerations=[{"key": "CriticalAddonsOnly", "operator": "Exists"}]), "vision"),
    "a sidecar that sets NVIDIA_VISIBLE_DEVICES=void": (
        pod(container(limits=gpu()), container("sidecar", env=VOID), pool="h100mig"), "vision"),
    "NVIDIA_VISIBLE_DEVICES=none on a non-GPU pod of its pool": (
        pod(container(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"}]), pool="t4ts",
            tolerations=[TOLERATE_GPU]), "vision"),
    "a GPU container's envFrom with a safe prefix": (
        pod(container(limits=gpu(), env_from=[{"prefix": "APP_", "configMapRef": {"name": "c"}}]), pool="h100mig"),
        "vision"),
    "a non-GPU container's envFrom without prefix (its env void wins)": (
        pod(container(limits=gpu()), container("s", env=VOID, env_from=[{"configMapRef": {"name": "c"}}]),
            pool="h100mig"), "vision"),
    "a CNI DaemonSet in a platform namespace tolerating everything": (
        workload("DaemonSet", pod(container(), tolerations=[TOLERATE_ALL])), "calico-system"),
    "a platform Deployment tolerating everything (calico-typha)": (
        workload("Deployment", pod(container(), tolerations=[TOLERATE_ALL])), "calico-system"),
    "a pod elsewhere on the shared pool, device-less": (
        pod(container(env=VOID), pool="t4batch", tolerations=[TOLERATE_GPU]), "team-x"),
}


@pytest.mark.parametrize(("obj", "namespace"), list(JUDGED_ADMITTED.values()), ids=list(JUDGED_ADMITTED))
def test_admits_pods_that_stay_on_their_pools(cluster, obj, namespace):
    decision = cluster.admit(obj, namespace)
    assert decision.allowed, decision.messages


ENV_RULE = ("containers must not set NVIDIA device variables (NVIDIA_VISIBLE_DEVICES, NVIDIA_MIG_CONFIG_DEVICES, "
            "NVIDIA_MIG_MONITOR_DEVICES, NVIDIA_IMEX_CHANNELS) in env to anything but void/none, nor NVIDIA_MOFED, "
            "NVIDIA_NVSWITCH, NVIDIA_GDS, NVIDIA_GDRCOPY to enabled: the NVIDIA container toolkit would give the "
            "container the GPUs or devices they name, past the device plugin; remove the variable (the device "
            "plugin sets it for the GPUs a container requests) or set it to void")
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
    "tolerates the GPU taint with operator Equal, selects no pool": (
        pod(container(env=VOID), tolerations=[TOLERATE_GPU_EQUAL]), "vision",
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
        pod(container(env=VOID), nodeName=A100_NODE), "team-x",
        [node_name_elsewhere(A100_NODE, "a node of pool a100"), reach("spec.nodeName is set", "team-x")]),
    "a tenant's own DaemonSet tolerating everything": (
        workload("DaemonSet", pod(container(env=VOID), pool="h100mig", tolerations=[TOLERATE_ALL])), "vision",
        ["DaemonSet pod template: spec.tolerations[0] tolerates every taint: " + FOREIGN]),
    "a pod elsewhere tolerating everything, not a DaemonSet's": (
        pod(container(env=VOID), tolerations=[TOLERATE_ALL]), "team-x",
        [reach("spec.tolerations[0] tolerates every taint", "team-x")]),
    "a DaemonSet outside the platform namespaces tolerating everything": (
        workload("DaemonSet", pod(container(env=VOID), tolerations=[TOLERATE_ALL])), "logging",
        ["DaemonSet pod template: " + reach("spec.tolerations[0] tolerates every taint", "logging")]),
    "a DaemonSet in default selecting a tenant's pool": (
        workload("DaemonSet", pod(container(env=VOID), tolerations=[TOLERATE_ALL], affinity=A100_AFFINITY)),
        "default", ["DaemonSet pod template: " + reach("spec.tolerations[0] tolerates every taint", "default")]),
    "a bare pod forging a DaemonSet owner, with a node name": (
        daemon_set_pod(container(env=VOID), tolerations=[TOLERATE_ALL], nodeName=A100_NODE),
        "logging", [node_name_elsewhere(A100_NODE, "a node of pool a100"),
                    reach("spec.tolerations[0] tolerates every taint", "logging")]),
    "a person's bare pod in a platform namespace": (
        pod(container(env=VOID), tolerations=[TOLERATE_ALL]), "calico-system",
        [reach("spec.tolerations[0] tolerates every taint", "calico-system")]),
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


def test_a_debug_container_is_judged_in_platform_and_other_namespaces(cluster):
    """A DaemonSet's pod outside the tenants, and a platform namespace's, get a debug container only device-less."""
    agent = daemon_set_pod(container(env=VOID), tolerations=[TOLERATE_ALL])
    for namespace in ("logging", "calico-system"):
        decision = cluster.admit(with_debug_container(agent, ALL_GPUS), namespace, operation="UPDATE", old=agent,
                                 subresource="ephemeralcontainers", user=DAEMON_SET_CONTROLLER)
        assert decision.messages == [
            f"spec.ephemeralContainers[0].env[0] sets NVIDIA_VISIBLE_DEVICES=all ({ENV_RULE})",
            "spec.ephemeralContainers[0] (debugger): " + ELSEWHERE_VOID], namespace


@pytest.mark.parametrize("namespace", ["kube-system", "gpu-operator"])
def test_a_debug_container_in_an_exempt_namespace_is_judged_by_its_environment_alone(cluster, namespace):
    """kube-system and the operator's namespace are never judged, except for debug containers: one added to a node
    agent's pod (which tolerates every taint) must not name devices and sets void."""
    agent = daemon_set_pod(container(env=DCGM), tolerations=[TOLERATE_ALL])

    def debug(env: list[dict[str, Any]] | None) -> list[str]:
        return cluster.admit(with_debug_container(agent, env), namespace, operation="UPDATE", old=agent,
                             subresource="ephemeralcontainers", user=CONTROLLER_MANAGER).messages
    where = "pods of kube-system and the GPU Operator's namespace that can run on GPU nodes"
    assert debug(ALL_GPUS) == [f"spec.ephemeralContainers[0].env[0] sets NVIDIA_VISIBLE_DEVICES=all ({ENV_RULE})",
                               "spec.ephemeralContainers[0] (debugger): " + void_rule(where)]
    assert debug(VOID) == []
    assert cluster.admit(agent, namespace).allowed, "the pod itself is not judged there"


# --- devices the device plugin did not allocate ------------------------------------------------------------------

ZERO_RULE = ("containers must not ask for 0 of a nvidia.com/ resource: the device plugin allocates nothing for it, "
             "so the image's own NVIDIA_VISIBLE_DEVICES (all, in nvidia/cuda images) would reach the NVIDIA runtime; "
             "ask for 1 or more, or remove the resource")
CDI_RULE = ("pods must not carry cdi.k8s.io/ annotations: the NVIDIA toolkit and containerd give a container the CDI "
            "devices they name before any other device list, past the device plugin; remove the annotation (the "
            "device plugin requests a GPU container's devices itself)")


def runtime_rule(where: str) -> str:
    return (f"{where} must not set spec.runtimeClassName to an NVIDIA runtime class: GPU pods get their devices from "
            "the device plugin without one, and with one the NVIDIA runtime would read the image's "
            "NVIDIA_VISIBLE_DEVICES; remove spec.runtimeClassName")


def annotated(obj: dict[str, Any], annotations: dict[str, str]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj["metadata"]["annotations"] = annotations
    return obj


def annotated_template(obj: dict[str, Any], annotations: dict[str, str]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    _template(obj)["metadata"]["annotations"] = annotations
    return obj


DEVICE_ATTACKS = {
    "a zero GPU request: the image's NVIDIA_VISIBLE_DEVICES would reach the runtime": (
        pod(container(limits={"nvidia.com/gpu": 0}), pool="t4ts"), "vision",
        [f"spec.containers[0] asks for 0 nvidia.com/gpu ({ZERO_RULE})", "spec.containers[0] (main): " + VISION_VOID]),
    "a zero MIG request in an init container, elsewhere": (
        pod(container(env=VOID), init=[container("i", limits={H100: "0"})], pool="t4batch"), "team-x",
        [f"spec.initContainers[0] asks for 0 {H100} ({ZERO_RULE})", "spec.initContainers[0] (i): " + ELSEWHERE_VOID]),
    "a zero request written 0m in a Deployment, with void": (
        workload("Deployment", pod(container(limits={"nvidia.com/gpu.shared": "0m"}, env=VOID), pool="t4ts")),
        "nlp", [f"Deployment pod template: spec.containers[0] asks for 0 nvidia.com/gpu.shared ({ZERO_RULE})"]),
    **{f"{variable}=enabled on a GPU container": (
        pod(container(limits=gpu(), env=[{"name": variable, "value": "enabled"}]), pool="h100mig"), "vision",
        [f"spec.containers[0].env[0] sets {variable}=enabled ({ENV_RULE})"])
       for variable in ("NVIDIA_MOFED", "NVIDIA_NVSWITCH", "NVIDIA_GDS", "NVIDIA_GDRCOPY")},
    "an optional-device variable from valueFrom": (
        pod(container(limits=gpu(), env=[{"name": "NVIDIA_GDS", "valueFrom": {
            "configMapKeyRef": {"name": "c", "key": "k"}}}]), pool="h100mig"), "vision",
        [f"spec.containers[0].env[0] sets NVIDIA_GDS from valueFrom ({ENV_RULE})"]),
    "a CDI annotation on a pod": (
        annotated(pod(container(limits=gpu()), pool="h100mig"), {"cdi.k8s.io/all": "nvidia.com/gpu=all"}),
        "vision", [f"metadata.annotations[cdi.k8s.io/all] is set: {CDI_RULE}"]),
    "a prefixed CDI annotation on a Job template": (
        annotated_template(workload("Job", pod(container(env=VOID))), {"nvidia.cdi.k8s.io/x": "nvidia.com/gpu=0"}),
        "team-x", [f"Job pod template: metadata.annotations[nvidia.cdi.k8s.io/x] is set: {CDI_RULE}"]),
    "an NVIDIA runtime class on a GPU pod": (
        pod(container(limits=gpu()), pool="h100mig", runtimeClassName="nvidia"), "vision",
        ["spec.runtimeClassName is nvidia: " + runtime_rule("namespace vision's pods that can run on GPU nodes")]),
    "the legacy runtime class on a device-less pod of the shared pool": (
        pod(container(env=VOID), pool="t4batch", tolerations=[TOLERATE_GPU], runtimeClassName="nvidia-legacy"),
        "team-x", ["spec.runtimeClassName is nvidia-legacy: " +
                   runtime_rule("pods outside tenant namespaces that can run on GPU nodes")]),
}


@pytest.mark.parametrize(("obj", "namespace", "messages"), list(DEVICE_ATTACKS.values()), ids=list(DEVICE_ATTACKS))
def test_refuses_every_way_to_devices_the_device_plugin_did_not_allocate(cluster, obj, namespace, messages):
    assert cluster.admit(obj, namespace).messages == messages


DEVICE_NEUTRAL = {
    "the variables every CUDA image sets": (
        pod(container(limits=gpu(), env=[{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
                                         {"name": "NVIDIA_REQUIRE_CUDA", "value": "cuda>=12.0"},
                                         {"name": "NVIDIA_DISABLE_REQUIRE", "value": "1"}]), pool="h100mig"),
        "vision"),
    "an optional-device variable that is not enabled": (
        pod(container(limits=gpu(), env=[{"name": "NVIDIA_MOFED", "value": "disabled"}]), pool="h100mig"), "vision"),
    "another runtime class (gVisor) on a CPU pod": (pod(container(), runtimeClassName="gvisor"), "vision"),
    "an unrelated annotation": (annotated(pod(container()), {"example.com/cdi": "x"}), "team-x"),
}


@pytest.mark.parametrize(("obj", "namespace"), list(DEVICE_NEUTRAL.values()), ids=list(DEVICE_NEUTRAL))
def test_admits_what_selects_no_device(cluster, obj, namespace):
    decision = cluster.admit(obj, namespace)
    assert decision.allowed, decision.messages


# --- who creates the pod: controllers, platform namespaces, pools gpushare does not manage -----------------------

DAEMON_SET_CONTROLLER = "system:serviceaccount:kube-system:daemon-set-controller"
REPLICA_SET_CONTROLLER = "system:serviceaccount:kube-system:replicaset-controller"
CONTROLLER_MANAGER = "system:kube-controller-manager"
DCGM = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
"""dcgm-exporter's pattern: a monitoring agent that sees every GPU of its node."""
T4BATCH_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "gpushare.io/pool", "operator": "In", "values": ["t4batch"]}]}]}}}


@pytest.mark.parametrize("user", [DAEMON_SET_CONTROLLER, CONTROLLER_MANAGER])
def test_a_platform_daemon_sets_pods_go_wherever_it_lands(cluster, user):
    """Both identities the controller may run as (with and without --use-service-account-credentials)."""
    agent = daemon_set_pod(container(env=DCGM), tolerations=[TOLERATE_ALL], affinity=A100_AFFINITY)
    decision = cluster.admit(agent, "calico-system", user=user)
    assert decision.allowed, decision.messages
    assert not cluster.admit(agent, "calico-system").allowed, "the same pod created by a person is judged"


def test_pods_of_a_tenants_workload_created_by_its_controller_are_admitted(cluster, stack):
    for tenant in stack.tenants:
        made = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w-1"}, "spec": pod_spec(stack, tenant)}
        decision = cluster.admit(made, tenant.name, user=REPLICA_SET_CONTROLLER)
        assert decision.allowed, (tenant.name, decision.messages)
    assert cluster.admit(pod(container(requests={"cpu": "100m"})), "vision", user=CONTROLLER_MANAGER).allowed


def test_a_platform_namespace_limited_to_pools_reaches_only_those(cluster):
    monitor = pod(container(env=DCGM), tolerations=[TOLERATE_ALL], affinity=T4BATCH_AFFINITY)
    assert cluster.admit(workload("DaemonSet", monitor), "monitoring").allowed
    assert cluster.admit(daemon_set_pod(container(env=DCGM), tolerations=[TOLERATE_ALL], affinity=T4BATCH_AFFINITY),
                         "monitoring", user=DAEMON_SET_CONTROLLER).allowed
    everywhere = workload("DaemonSet", pod(container(env=DCGM), tolerations=[TOLERATE_ALL]))
    assert cluster.admit(everywhere, "monitoring").messages == [
        "DaemonSet pod template: pods of platform namespace monitoring may run only on pools t4batch "
        "(spec.tolerations[0] tolerates every taint): workloads of platform namespaces "
        "(gpushare:platform.namespaces) may run only on the pools listed for their namespace: select them with "
        "nodeSelector gpushare.io/pool, or a required nodeAffinity term gpushare.io/pool In [...] of those pools, "
        "or list the pool for the namespace"]


UNMANAGED = {"kubernetes.azure.com/agentpool": "legacygpu"}
"""A GPU pool of the existing cluster that gpushare does not manage."""


@pytest.mark.parametrize("namespace", ["vision", "team-x"])
def test_pods_aimed_at_a_pool_gpushare_does_not_manage_are_admitted(cluster, namespace):
    aimed = pod(container(limits={"nvidia.com/gpu": 1}), nodeSelector=UNMANAGED,
                tolerations=[{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
                             TOLERATE_ALL])
    decision = cluster.admit(aimed, namespace)
    assert decision.allowed, decision.messages
    # Its device rules still hold, and naming a gpushare pool as well is judged as before.
    assert not cluster.admit(pod(container(limits={"nvidia.com/gpu": 1}, env=DCGM), nodeSelector=UNMANAGED),
                             namespace).allowed
    also_a100 = {**UNMANAGED, "agentpool": "a100"}
    assert not cluster.admit(pod(container(limits={"nvidia.com/gpu": 1}), nodeSelector=also_a100), namespace).allowed


def test_no_expression_reads_an_optional_request_field_without_optional_syntax(stack):
    """The API server leaves out every empty omitempty field of the AdmissionRequest (`subResource`, `namespace`,
    `name`, `userInfo.username`, `userInfo.groups`): a plain read fails the request. The plugin tests catch a read
    at run time; this names the expression."""
    bare = re.compile(r"request\.(subResource|namespace|name)\b|request\.userInfo\.(username|groups)\b")
    for policy in (m for m in tenant_manifests(stack) if m["kind"] == "ValidatingAdmissionPolicy"):
        spec = policy["spec"]
        for item in [*spec["variables"], *spec["matchConditions"], *spec["validations"]]:
            for key in ("expression", "messageExpression"):
                assert not bare.search(item.get(key, "")), (policy["metadata"]["name"], item.get("name"), key)


def test_the_plan_snippet_of_every_example_stack_is_admitted(kubernetes):
    for config in example_stacks_with_tenants():
        example = plugin_cluster(tenant_manifests(config), kubernetes)
        for tenant in config.tenants:
            snippet = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec(config, tenant)}
            decision = example.admit(snippet, tenant.name)
            assert decision.allowed, (config.stack, tenant.name, decision.messages)


def test_when_every_pool_belongs_to_a_tenant_gpu_pods_elsewhere_are_refused(kubernetes):
    raw = yaml.safe_load(STACK_YAML)["config"]
    raw["gpushare:pools"] = raw["gpushare:pools"][:3]
    del raw["gpushare:platform"]
    stack = parse_config(raw, source="s", stack="shared")
    decision = plugin_cluster(tenant_manifests(stack), kubernetes).admit(
        pod(container(limits=gpu("nvidia.com/gpu")), pool="a100"), "team-x")
    assert decision.messages == ["GPU pods in namespace team-x are not allowed: every GPU pool belongs to a tenant "
                                 "(vision: h100mig, t4ts; nlp: a100, t4ts)"]


def test_every_expression_compiles_in_the_api_servers_cel_environment(kubernetes):
    """What creating the policies would refuse: the plugin's CEL compilers over the base environment of each minor
    (a CEL library newer than the oldest minor a stack may pin is refused there)."""
    for config in example_stacks_with_tenants():
        assert plugin_cluster(tenant_manifests(config), kubernetes).compile_errors == [], config.stack


def test_a_pod_status_or_finalizer_update_is_never_refused(cluster):
    """The kubelet's status updates (pods/status, not matched) and a finalizer on a stale pod pass."""
    stale = pod(container(limits=gpu()), tolerations=[TOLERATE_ALL])
    assert cluster.admit(stale, "vision", operation="UPDATE", old=stale, subresource="status").allowed
    finalized = copy.deepcopy(stale)
    finalized["metadata"]["finalizers"] = ["example.com/cleanup"]
    assert cluster.admit(finalized, "vision", operation="UPDATE", old=stale).allowed
