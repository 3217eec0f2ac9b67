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


def pod(*containers: dict[str, Any], pool: str | None = None, init: list[dict[str, Any]] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if pool:
        spec["nodeSelector"] = {"gpushare.io/pool": pool}
    if init:
        spec["initContainers"] = list(init)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def container(name: str = "main", limits: dict | None = None, requests: dict | None = None) -> dict[str, Any]:
    resources = {k: v for k, v in (("limits", limits), ("requests", requests)) if v is not None}
    return {"name": name, "image": "busybox", **({"resources": resources} if resources else {})}


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
        pod(container(limits=gpu()), pool="h100mig", init=[container("setup", requests={"memory": "1Gi"})]),
        "vision", QOS_MESSAGE + "setup"),
    "GPU asked for by an init container only": (
        pod(container("app"), init=[container("warmup", limits=gpu())]), "vision", POOL_MESSAGE),
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
    assert cluster.admit(bad, "vision").messages == [f"{kind} pod template: {POOL_MESSAGE}"]
    assert cluster.admit(bad, "vision", operation="UPDATE").messages == [f"{kind} pod template: {POOL_MESSAGE}"]
    good = workload(kind, pod(container(limits=gpu()), pool="h100mig"))
    assert cluster.admit(good, "vision").allowed


def test_pods_are_judged_at_create_only(cluster):
    """Pod specs cannot change their nodeSelector or resources on update; label updates of running pods pass."""
    assert cluster.admit(pod(container(limits=gpu())), "vision", operation="UPDATE").allowed


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
        for variable in policy["spec"]["variables"]:
            compile_expression(variable["expression"])
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
