"""The harness that judges admission with the API server's own ValidatingAdmissionPolicy plugin
(tests/kubernetes/apiserver_admission.py, tools/vapcheck): it must see what a cluster sees. Each test here fails on a
harness that models the request instead of building it as the API server does. Skipped, with the reason, when Go is
not installed (never under CI=true)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.kubernetes.apiserver_admission import PluginCluster, extended_resource_tolerations, \
    is_extended_resource_name

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
