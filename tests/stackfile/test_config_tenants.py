"""`gpushare:tenants` validation: every "Bad input" item of the tenants issue, asserted on the error the user sees."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpushare.errors import ConfigError
from gpushare.kubernetes.admission.policies import shared_pool_policy
from gpushare.kubernetes.tenant_objects import tenant_manifests
from gpushare.kubernetes.tenants import promise_plan, tenant_warnings
from gpushare.model.stack import Tenant
from gpushare.stackfile.config import parse_config

GROUP = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
TENANTS = "gpushare:tenants"

BASE: dict[str, Any] = {
    "azure-native:location": "westeurope",
    "gpushare:cluster": {"name": "shared", "kubernetesVersion": "1.36"},
    "gpushare:operator": {"migStrategy": "mixed"},
    "gpushare:pools": [
        # 1 x H100 NVL per node, MIG1g: 7 x nvidia.com/mig-1g.12gb per node.
        {"name": "h100mig", "vmSize": "Standard_NC40ads_H100_v5", "mig": "MIG1g", "count": 2},
        # 1 x T4 per node, time-sliced 4 ways: nvidia.com/gpu.shared (no pool autoscales), 4 x 3 nodes.
        {"name": "t4ts", "vmSize": "Standard_NC4as_T4_v3", "sharing": {"strategy": "time-slicing", "replicas": 4},
         "count": 3},
    ],
    TENANTS: [{"name": "vision", "pools": ["h100mig", "t4ts"],
               "quota": {"nvidia.com/mig-1g.12gb": 14, "nvidia.com/gpu.shared": 8}, "groups": [GROUP]}],
}


def raw_with(**tenant_changes: Any) -> dict[str, Any]:
    raw = copy.deepcopy(BASE)
    raw[TENANTS][0].update(tenant_changes)
    return raw


def problems(raw: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, source="stacks/Pulumi.test.yaml", stack="test")
    return {p.path: p.message for p in caught.value.problems}


def test_a_valid_tenant_parses_with_its_defaults():
    stack = parse_config(copy.deepcopy(BASE), source="s", stack="test")
    assert stack.tenants == (Tenant(name="vision", pools=("h100mig", "t4ts"),
                                    quota=(("nvidia.com/mig-1g.12gb", 14), ("nvidia.com/gpu.shared", 8)),
                                    groups=(GROUP,), guaranteed=True),)


def test_stacks_without_tenants_have_none():
    raw = copy.deepcopy(BASE)
    del raw[TENANTS]
    assert parse_config(raw, source="s", stack="test").tenants == ()


CASES = {
    "unknown pool lists the pools": (
        {"pools": ["h100mig", "t4tss"]}, f"{TENANTS}[0].pools[1]", ["'t4tss'", "did you mean 't4ts'", "h100mig, t4ts"]),
    "pools missing": ({"pools": None}, f"{TENANTS}[0].pools", ["required", "h100mig, t4ts"]),
    "pools not a list": ({"pools": "t4ts"}, f"{TENANTS}[0].pools", ["a string 't4ts'"]),
    "invalid namespace name": ({"name": "Vision_Team"}, f"{TENANTS}[0].name", ["DNS-1123", "'Vision_Team'"]),
    "reserved default": ({"name": "default"}, f"{TENANTS}[0].name", ["'default' is reserved"]),
    "reserved kube-": ({"name": "kube-public"}, f"{TENANTS}[0].name", ["'kube-public' is reserved"]),
    "reserved operator namespace": ({"name": "gpu-operator"}, f"{TENANTS}[0].name", ["'gpu-operator' is reserved"]),
    "quota key no pool advertises": (
        {"quota": {"nvidia.com/gpu": 2}}, f"{TENANTS}[0].quota.nvidia.com/gpu",
        ["none of this tenant's pools advertises nvidia.com/gpu",
         "nvidia.com/gpu.shared (t4ts), nvidia.com/mig-1g.12gb (h100mig)"]),
    "quota key with requests. prefix": (
        {"quota": {"requests.nvidia.com/gpu.shared": 2}}, f"{TENANTS}[0].quota.requests.nvidia.com/gpu.shared",
        ["write 'nvidia.com/gpu.shared'"]),
    "quota of 0": ({"quota": {"nvidia.com/gpu.shared": 0}}, f"{TENANTS}[0].quota.nvidia.com/gpu.shared",
                   ["must be 1 or more", "got 0"]),
    "quota below 0": ({"quota": {"nvidia.com/gpu.shared": -3}}, f"{TENANTS}[0].quota.nvidia.com/gpu.shared",
                      ["must be 1 or more", "got -3"]),
    "group not a GUID": ({"groups": ["vision-admins"]}, f"{TENANTS}[0].groups[0]",
                         ["Entra ID group object ID", "'vision-admins'", "az ad group show"]),
    "guaranteed not a boolean": ({"guaranteed": "yes"}, f"{TENANTS}[0].guaranteed", ["true or false"]),
    "unknown key": ({"pool": ["t4ts"]}, f"{TENANTS}[0].pool", ["did you mean 'pools'"]),
}


@pytest.mark.parametrize(("changes", "path", "words"), list(CASES.values()), ids=list(CASES))
def test_rejects_bad_tenant(changes, path, words):
    found = problems(raw_with(**changes))
    assert path in found, found
    for word in words:
        assert word in found[path], found[path]


def test_rejects_a_duplicate_tenant():
    raw = copy.deepcopy(BASE)
    raw[TENANTS].append({"name": "vision", "pools": ["t4ts"]})
    found = problems(raw)
    assert found == {f"{TENANTS}[1].name": "tenant 'vision' is already defined by gpushare:tenants[0]; "
                                           "each namespace belongs to one tenant"}


def test_rejects_a_kubernetes_version_without_validating_admission_policy_v1():
    raw = copy.deepcopy(BASE)
    raw["gpushare:cluster"]["kubernetesVersion"] = "1.29"
    found = problems(raw)
    assert list(found) == ["gpushare:cluster.kubernetesVersion"]
    assert "1.30 or newer" in found["gpushare:cluster.kubernetesVersion"]
    assert "'1.29'" in found["gpushare:cluster.kubernetesVersion"]


def test_an_old_kubernetes_version_without_tenants_is_refused_for_aks_alone():
    raw = copy.deepcopy(BASE)
    raw["gpushare:cluster"]["kubernetesVersion"] = "1.29"
    del raw[TENANTS]
    (message,) = problems(raw).values()
    assert "older than every minor AKS supports" in message and "tenants need" not in message


def test_every_problem_is_reported_at_once():
    raw = raw_with(name="default", pools=["nope"], groups=["x"])
    raw["gpushare:cluster"]["kubernetesVersion"] = "1.28"
    assert set(problems(raw)) == {f"{TENANTS}[0].name", f"{TENANTS}[0].pools[0]", f"{TENANTS}[0].groups[0]",
                                  "gpushare:cluster.kubernetesVersion"}


def test_a_pool_with_its_own_error_is_not_reported_again_as_unknown():
    raw = copy.deepcopy(BASE)
    raw["gpushare:pools"][1]["vmSize"] = "Standard_Nope"
    assert not any(path.startswith(TENANTS) for path in problems(raw))


def test_quota_above_what_the_pools_can_ever_advertise_is_a_warning():
    raw = raw_with(quota={"nvidia.com/mig-1g.12gb": 15, "nvidia.com/gpu.shared": 12})
    stack = parse_config(raw, source="s", stack="test")
    # h100mig: 7 per node x 2 nodes = 14; t4ts: 4 per node x 3 nodes = 12.
    assert tenant_warnings(stack) == [
        "tenant vision: quota nvidia.com/mig-1g.12gb: 15 is more than its pools can ever advertise "
        "(14; h100mig: 14 at 2 node(s)), so it never binds; lower it or raise the pools' max", NO_POOL_LEFT]


NO_POOL_LEFT = ("every GPU pool is listed by a tenant, so every namespace but the tenants' (vision) and kube-system, "
                "gpu-operator has no GPU pool: GPU pods there are refused; leave a pool out of every tenant's pools "
                "to give them one")


def two_tenants(vision_quota: dict[str, int], nlp_quota: dict[str, int] | None) -> dict[str, Any]:
    """h100mig at one node: 7 MIG slices; both tenants list it; t4ts stays for other namespaces."""
    raw = raw_with(pools=["h100mig"], quota=vision_quota)
    raw["gpushare:pools"][0]["count"] = 1
    raw[TENANTS].append({"name": "nlp", "pools": ["h100mig"], **({"quota": nlp_quota} if nlp_quota else {})})
    return raw


def test_quotas_that_promise_more_of_a_shared_pool_than_it_has_are_a_warning_naming_the_tenants():
    stack = parse_config(two_tenants({"nvidia.com/mig-1g.12gb": 6}, {"nvidia.com/mig-1g.12gb": 5}), source="s",
                         stack="test")
    assert tenant_warnings(stack) == [
        "pool h100mig: the quotas of tenants vision, nlp promise 11 nvidia.com/mig-1g.12gb but the pool advertises "
        "at most 7 (1 node(s)); vision 6, nlp 5: once the others use theirs a tenant cannot use its quota; lower "
        "the quotas or raise the pool's max"]
    assert promise_plan(stack) == [{"pool": "h100mig", "resource": "nvidia.com/mig-1g.12gb", "capacity": 7,
                                    "maxNodes": 1, "quotas": {"vision": 6, "nlp": 5}, "promised": 11,
                                    "exceeds": True}]


def test_quotas_that_fit_a_shared_pool_and_tenants_without_quota_are_shown_not_warned():
    stack = parse_config(two_tenants({"nvidia.com/mig-1g.12gb": 4}, None), source="s", stack="test")
    assert tenant_warnings(stack) == []
    assert promise_plan(stack)[0]["quotas"] == {"vision": 4, "nlp": None}
    assert promise_plan(stack)[0]["promised"] == 4 and not promise_plan(stack)[0]["exceeds"]
    # A quota larger than the pool counts up to the pool: the tenant's other pools may serve the rest.
    raw = two_tenants({"nvidia.com/mig-1g.12gb": 14}, None)
    raw[TENANTS][0]["pools"] = ["h100mig", "t4ts"]
    raw["gpushare:pools"].append({"name": "spare", "vmSize": "Standard_NC4as_T4_v3"})
    assert promise_plan(parse_config(raw, source="s", stack="test"))[0]["promised"] == 7


def test_a_stack_whose_tenants_leave_other_namespaces_no_pool_still_plans_with_a_warning():
    stack = parse_config(copy.deepcopy(BASE), source="s", stack="test")
    assert tenant_warnings(stack) == [NO_POOL_LEFT]
    assert [m["kind"] for m in shared_pool_policy(stack)] == ["ValidatingAdmissionPolicy",
                                                              "ValidatingAdmissionPolicyBinding"]
    assert tenant_manifests(stack)


@pytest.mark.parametrize(("strategy", "key"), [("single", "nvidia.com/gpu"), ("mixed", "nvidia.com/mig-1g.12gb")])
def test_quota_keys_follow_the_mig_strategy(strategy, key):
    """Single advertises MIG slices as nvidia.com/gpu, mixed by slice name: the quota key must match."""
    raw = raw_with(pools=["h100mig"], quota={key: 7})
    raw["gpushare:operator"]["migStrategy"] = strategy
    assert parse_config(raw, source="s", stack="test").tenants[0].quota == ((key, 7),)
    other = "nvidia.com/mig-1g.12gb" if strategy == "single" else "nvidia.com/gpu"
    assert f"{TENANTS}[0].quota.{other}" in problems(raw_with(pools=["h100mig"], quota={other: 7}) | {
        "gpushare:operator": {"migStrategy": strategy}})
