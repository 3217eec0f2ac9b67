"""A tenant's objects by role: each named field holds its object, so `GpuTenant` needs no guessing from `kind`, list
position or a RoleBinding's subjects; `manifests()` is the list `plan` shows and `verify` looks for."""

from __future__ import annotations

import yaml

from gpushare.kubernetes.tenant_objects import tenant_objects, tenant_objects_by_role
from gpushare.stackfile.config import parse_config

GROUPS = ["3f2504e0-4f89-41d3-9a0c-0305e82c3301", "0b0e4f0e-9c1a-4e57-8d0b-6a1e2f3c4d5e"]
STACK = parse_config(yaml.safe_load(f"""
azure-native:location: westeurope
gpushare:cluster: {{name: shared}}
gpushare:pools:
  - {{name: t4a, vmSize: Standard_NC4as_T4_v3}}
gpushare:tenants:
  - {{name: vision, pools: [t4a], quota: {{nvidia.com/gpu: 2}}, groups: {GROUPS}}}
  - {{name: nlp, pools: [t4a]}}
"""), source="s", stack="dev")
VISION, NLP = STACK.tenants


def test_each_role_holds_its_object():
    objects = tenant_objects_by_role(STACK, VISION)
    assert (objects.namespace["kind"], objects.namespace["metadata"]["name"]) == ("Namespace", "vision")
    assert objects.quota is not None and objects.quota["kind"] == "ResourceQuota"
    assert objects.quota["spec"]["hard"] == {"requests.nvidia.com/gpu": "2"}
    assert objects.limit_range["kind"] == "LimitRange"
    assert objects.policy["kind"] == "ValidatingAdmissionPolicy"
    assert objects.policy_binding["kind"] == "ValidatingAdmissionPolicyBinding"
    assert objects.policy_binding["spec"]["policyName"] == objects.policy["metadata"]["name"]


def test_edit_bindings_are_keyed_by_the_group_they_bind_in_stack_order():
    bindings = tenant_objects_by_role(STACK, VISION).edit_bindings
    assert list(bindings) == GROUPS
    for group, binding in bindings.items():
        assert binding["kind"] == "RoleBinding" and binding["subjects"][0]["name"] == group


def test_a_tenant_without_quota_or_groups_has_neither():
    objects = tenant_objects_by_role(STACK, NLP)
    assert objects.quota is None and dict(objects.edit_bindings) == {}
    assert [m["kind"] for m in objects.in_namespace()] == ["LimitRange"]


def test_manifests_keep_the_order_plan_shows():
    """Namespace first, then what lives in it, then the policy and, last, its binding."""
    objects = tenant_objects_by_role(STACK, VISION)
    assert [m["kind"] for m in objects.manifests()] == [
        "Namespace", "ResourceQuota", "LimitRange", "RoleBinding", "RoleBinding", "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding"]
    assert objects.manifests() == tenant_objects(STACK, VISION)
