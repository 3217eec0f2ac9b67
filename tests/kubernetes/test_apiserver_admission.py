"""The harness that judges admission with the API server's own ValidatingAdmissionPolicy plugin
(tests/kubernetes/apiserver_admission.py, tools/vapcheck): it must see what a cluster sees. Each test here fails on a
harness that models the request instead of building it as the API server does. Skipped, with the reason, when Go is
not installed (never under CI=true)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from gpushare.model.stack import SupportPlan, Tier
from gpushare.stackfile.kubernetes_version import kubernetes_version_problem, version_support_problem
from tests.kubernetes.apiserver_admission import KUBERNETES_MINORS, ROOT, PluginCluster, \
    extended_resource_tolerations, is_extended_resource_name

CONTROL_PLANE_GO_MOD = ROOT / "tools" / "controlplane" / "go.mod"
POD_RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}


def policy(name: str, *validations: dict[str, str], rules: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {"matchConstraints": {"resourceRules": rules or [POD_RULE]}, "validations": list(validations)}}


def binding(policy_name: str, namespace_selector: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"policyName": policy_name, "validationActions": ["Deny"]}
    if namespace_selector is not None:
        spec["matchResources"] = {"namespaceSelector": namespace_selector}
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": policy_name}, "spec": spec}


def pod(resources: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    container = {"name": "app", "image": "nginx", **({"resources": resources} if resources else {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app"}, "spec": {"containers": [container], **spec}}


def test_a_plain_pod_create_has_no_subresource_key():
    """The API server leaves `subResource` out of a plain request's CEL `request`, so reading it without `?` is an
    evaluation error, and failurePolicy Fail (the default) denies."""
    manifests = [policy("sub", {"expression": "request.subResource == ''", "message": "not a subresource"}),
                 binding("sub")]
    with PluginCluster(manifests) as cluster:
        assert cluster.compile_errors == []
        result = cluster.request(pod(), "team-a")
    assert not result["allowed"]
    assert result["messages"] == []
    assert len(result["evalErrors"]) == 1 and "no such key: subResource" in result["evalErrors"][0], result
    assert "ValidatingAdmissionPolicy 'sub' with binding 'sub' denied request" in result["denial"]


def test_optional_syntax_reads_the_missing_subresource():
    debug_rule = {**POD_RULE, "resources": ["pods", "pods/ephemeralcontainers"]}
    manifests = [policy("sub", {"expression": "request.?subResource.orValue('') == ''", "message": "no"},
                        rules=[debug_rule]),
                 binding("sub")]
    with PluginCluster(manifests) as cluster:
        decision = cluster.admit(pod(), "team-a")
        assert decision.allowed, decision.messages
        debug = cluster.admit(pod(), "team-a", operation="UPDATE", subresource="ephemeralcontainers")
    assert not debug.allowed and debug.messages == ["no"], "with the subresource set, the same rule reads it"


def test_every_failing_validation_is_reported():
    """The plugin stops at the first denial; the harness lists all of them, in validation order, with each
    messageExpression evaluated by the API server (a quantity written as the number 1 reaches CEL as "1")."""
    manifests = [policy("two",
                        {"expression": "object.metadata.name == 'web'", "message": "the pod must be named web"},
                        {"expression": "true", "message": "never"},
                        {"expression": "object.spec.containers.all(c, c.resources.limits.cpu == '2')",
                         "messageExpression": "'cpu limit is ' + object.spec.containers[0].resources.limits.cpu"}),
                 binding("two")]
    with PluginCluster(manifests) as cluster:
        decision = cluster.admit(pod({"limits": {"cpu": 1, "memory": "1Gi"}}), "team-a")
    assert not decision.allowed
    assert decision.messages == ["the pod must be named web", "cpu limit is 1"]


def test_namespace_selector_matches_an_auto_created_namespace_by_its_name_label():
    """A namespace the manifests lack exists, labelled `kubernetes.io/metadata.name` as the API server labels every
    namespace; the binding selects it by that label, and namespaceObject is that namespace."""
    selector = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a"]}]}
    label = "namespaceObject.metadata.labels['kubernetes.io/metadata.name']"
    manifests = [policy("ns", {"expression": "namespaceObject.metadata.name != 'team-a'",
                               "messageExpression": f"'no pods in ' + {label}"}),
                 binding("ns", selector)]
    with PluginCluster(manifests) as cluster:
        selected = cluster.admit(pod(), "team-a")
        other = cluster.admit(pod(), "team-b")
    assert not selected.allowed and selected.messages == ["no pods in team-a"]
    assert other.allowed, other.messages


def test_extended_resource_toleration_is_added_for_a_gpu_requested_by_limits_only():
    """AKS enables ExtendedResourceToleration: a pod whose container has `nvidia.com/gpu` in its limits only gets the
    request defaulted from it, then `{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}`, before validating
    admission."""
    toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    manifests = [policy("gpu", {"expression": "object.spec.containers.all(c, !('nvidia.com/gpu' in "
                                              "c.resources.?requests.orValue({})) || "
                                              "object.spec.?tolerations.orValue([]).exists(t, "
                                              "t.key == 'nvidia.com/gpu' && t.operator == 'Exists' && "
                                              "t.effect == 'NoSchedule'))",
                                "message": "a GPU pod must tolerate the GPU taint"},
                        {"expression": "object.spec.containers[0].resources.?requests['nvidia.com/gpu'].orValue('') "
                                       "== '1'", "message": "the request is defaulted from the limit"}),
                 binding("gpu")]
    gpu_pod = pod({"limits": {"nvidia.com/gpu": 1}})
    with PluginCluster(manifests) as cluster:
        decision = cluster.admit(gpu_pod, "team-a")
        assert decision.allowed, decision.messages
        # ExtendedResourceToleration acts on UPDATE too (requests are not defaulted there: give them), and the stored
        # object (`old`) is left as it is.
        stored = pod({"limits": {"nvidia.com/gpu": 1}, "requests": {"nvidia.com/gpu": 1}})
        update = cluster.request(stored, "team-a", operation="UPDATE", old=stored)
        assert update["allowed"], update
        assert "tolerations" not in stored["spec"]
    mutated = extended_resource_tolerations({"spec": {"containers": [
        {"resources": {"requests": {"nvidia.com/gpu": "0", "cpu": "1"}}}],
        "tolerations": [{**toleration, "tolerationSeconds": 30}, {"key": "other", "operator": "Exists"}]}})
    assert mutated["spec"]["tolerations"] == [toleration, {"key": "other", "operator": "Exists"}], \
        "a zero request counts, and a matching toleration that differs is replaced in place"


@pytest.mark.parametrize(("name", "extended"), [
    ("nvidia.com/gpu", True), ("nvidia.com/mig-1g.12gb", True), ("cpu", False), ("hugepages-2Mi", False),
    ("kubernetes.io/foo", False), ("foo.kubernetes.io/bar", False), ("requests.example.com/x", False),
    ("example.com/a/b", False), ("Example.com/gpu", False),
])
def test_extended_resource_names(name, extended):
    assert is_extended_resource_name(name) is extended


def test_compile_errors_are_reported_as_creating_the_policy_would():
    manifests = [policy("broken", {"expression": "object.spec.containers.size( > 0", "message": "x"},
                        {"expression": "object.metadata.name == 'a'", "messageExpression": "1 + 1"}),
                 binding("broken")]
    with PluginCluster(manifests) as cluster:
        errors = cluster.compile_errors
    assert [e["policy"] for e in errors] == ["broken", "broken"]
    assert errors[0]["error"].startswith("spec.validations[0].expression: Invalid value")
    assert errors[1]["error"].startswith("spec.validations[1].messageExpression: Invalid value")


def test_vapcheck_builds_the_newest_minor_the_control_plane_runs_and_the_oldest_a_stack_may_pin():
    """The admission tests judge on `KUBERNETES_MINORS`: the control-plane tier's minor (tools/controlplane/go.mod)
    and the oldest minor a stack may pin (under long-term support, with tenants: the stack file's own checks), so a
    change of AKS's calendar or of the tier names the vapcheck go.mod to move."""
    control_plane = re.search(r"^require k8s\.io/kubernetes v1\.(\d+)\.", CONTROL_PLANE_GO_MOD.read_text(), re.M)
    pinnable = [f"1.{minor}" for minor in range(20, 60)
                if version_support_problem(f"1.{minor}", Tier.PREMIUM, SupportPlan.LONG_TERM_SUPPORT) is None
                and kubernetes_version_problem(f"1.{minor}") is None]
    assert KUBERNETES_MINORS == (f"1.{control_plane[1]}", pinnable[0])


def two_variable_comprehension_policy() -> list[dict[str, Any]]:
    return [policy("labels", {"expression": "!has(object.metadata.labels) || "
                                            "object.metadata.labels.all(key, value, value != '')",
                              "message": "a label without a value"}),
            binding("labels")]


@pytest.mark.parametrize("kubernetes", KUBERNETES_MINORS)
def test_each_minor_compiles_new_expressions_with_its_own_cel_libraries(kubernetes):
    """A two-variable comprehension (cel-go's ext.TwoVarComprehensions) joined the API server's base CEL environment
    at compatibility version 1.32 (k8s.io/apiserver pkg/cel/environment/base.go), and a policy being created compiles
    at the binary's minor less one: Kubernetes 1.36 accepts it, 1.32 refuses it as creating the policy would. A
    harness that ran one k8s.io/apiserver for both minors would accept it on both."""
    with PluginCluster(two_variable_comprehension_policy(), kubernetes) as cluster:
        errors = [error["error"] for error in cluster.compile_errors]
    if int(kubernetes.split(".")[1]) > 32:
        assert errors == []
    else:
        assert len(errors) == 1, errors
        assert errors[0].startswith("spec.validations[0].expression: Invalid value")
        assert "undeclared reference to 'all'" in errors[0], errors
