"""`gpushare.kubernetes.tenant_objects` and the dedicated pools: each tenant's objects, valid against the cluster
version's OpenAPI schema (`kubernetes_validate`, strict), and the taints and tolerations a pool only one tenant lists
gets. The admission policies among the objects are judged in tests/kubernetes/admission/."""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest

from gpushare.kubernetes.admission.policies import shared_pool_policy
from gpushare.kubernetes.tenant_objects import tenant_manifests, tenant_objects, tenant_plan
from gpushare.kubernetes.tenants import container_defaults, pod_spec, shared_pools
from gpushare.model.stack import pool_node_taints
from gpushare.sharing.operator_values import operator_plan, toleration
from gpushare.stackfile.config import load_stack_file
from tests.kubernetes.admission.test_tenant_admission import (  # noqa: F401 (stack: the fixture)
    GPU_TAINT,
    H100,
    ROOT,
    example_stacks_with_tenants,
    stack,
)


def _schema_version(kubernetes_version: str | None) -> str:
    """The schema of the cluster's minor version; AKS's default (no version in the stack) is the newest."""
    if kubernetes_version is None:
        return kubernetes_validate.utils.latest_version()
    return ".".join(kubernetes_version.split(".")[:2]) + ".0"


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


def test_an_example_stack_uses_tenants():
    assert example_stacks_with_tenants()


@pytest.mark.parametrize("kubernetes_version", ["1.30", "1.33", None])
def test_every_object_and_pod_snippet_is_valid_for_the_clusters_kubernetes(stack, kubernetes_version):
    """Strict: an unknown or misplaced field fails, as `kubectl apply --validate=strict` would."""
    version = _schema_version(kubernetes_version)
    stacks = [stack, *example_stacks_with_tenants()]
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
