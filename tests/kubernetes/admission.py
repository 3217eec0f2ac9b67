"""A small model of kube-apiserver admission for the objects gpushare renders, evaluating the policies' CEL with a
real CEL implementation (Google's cel-expr-python, the C++ runtime).

What it models, in the API server's order:
1. decoding defaults a Pod container's missing requests from its limits (`pkg/apis/core/v1/defaults.go`
   `SetDefaults_Pod`); pod templates are not defaulted;
2. the LimitRanger plugin fills a Pod container's missing limits from the namespace's LimitRange `default` and
   missing requests from `defaultRequest` (`plugin/pkg/admission/limitranger`); Pods only;
3. every ValidatingAdmissionPolicyBinding whose namespaceSelector matches the namespace runs its policy when the
   request matches the policy's resourceRules and every one of its `matchConditions` is true (an error there fails
   the request): variables, then validations; an error fails the request (`failurePolicy: Fail`); a false
   validation rejects with its messageExpression, or `message` when that fails. On UPDATE `oldObject` is the stored
   object, on CREATE null.

Kubernetes' `quantity()` library (`k8s.io/apiserver/pkg/cel/library/quantity.go`) is provided here: cel-expr-python
cannot return opaque types from Python, so a quantity is carried as a map holding its exact value, and
`compareTo` compares values, as Kubernetes does. Optional types are Kubernetes' (`k8s.io/apiserver/pkg/cel/environment/
base.go`). Two functions are written here because cel-expr-python's strings extension declares `indexOf` for strings
only and a second declaration is refused: the strings extension's `<list>.join(<separator>)` (cel-go
`ext/strings.go`) and the lists library's `<list>.indexOf(<element>)` (`k8s.io/apiserver/pkg/cel/library/lists.go`:
the first index of an equal element, or -1), declared for the lists of objects the policies index.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_optional

_QUANTITY_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|n|u|m|k|M|G|T|P|E)?$")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
            "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
            "P": Fraction(10**15), "E": Fraction(10**18)}


def quantity_value(text: str) -> Fraction:
    """The exact value of a Kubernetes quantity string (`k8s.io/apimachinery/pkg/api/resource` grammar)."""
    match = _QUANTITY_RE.match(text)
    if not match:
        raise ValueError(f"quantities must match the regular expression, got {text!r}")
    number, suffix = Fraction(Decimal(match.group(1))), match.group(2) or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return number * Fraction(10) ** int(suffix[1:])
    return number * _DECIMAL[suffix]


_QUANTITY_TYPE = cel.Type.Map(cel.Type.STRING, cel.Type.STRING)


def _quantity(text: str) -> dict[str, str]:
    value = quantity_value(text)
    return {"numerator": str(value.numerator), "denominator": str(value.denominator)}


def _compare(a: dict[str, str], b: dict[str, str]) -> int:
    left = Fraction(int(a["numerator"]), int(a["denominator"]))
    right = Fraction(int(b["numerator"]), int(b["denominator"]))
    return (left > right) - (left < right)


QUANTITY_LIBRARY = [
    cel.FunctionDecl("quantity", [cel.Overload("string_to_quantity", _QUANTITY_TYPE, [cel.Type.STRING],
                                               impl=_quantity)]),
    cel.FunctionDecl("compareTo", [cel.Overload("quantity_compareTo_quantity", cel.Type.INT,
                                                [_QUANTITY_TYPE, _QUANTITY_TYPE], is_member=True, impl=_compare)]),
]

def _index_of(items: list[Any], element: Any) -> int:
    return next((index for index, item in enumerate(items) if item == element), -1)


LIST_AND_STRING_FUNCTIONS = [
    cel.FunctionDecl("indexOf", [cel.Overload("list_indexOf_map", cel.Type.INT,
                                              [cel.Type.List(cel.Type.DYN), cel.Type.Map(cel.Type.DYN, cel.Type.DYN)],
                                              is_member=True, impl=_index_of)]),
    cel.FunctionDecl("join", [cel.Overload("list_join_string", cel.Type.STRING,
                                           [cel.Type.List(cel.Type.STRING), cel.Type.STRING], is_member=True,
                                           impl=lambda items, separator: separator.join(items))]),
]

ENV = cel.NewEnv(
    variables={"object": cel.Type.DYN, "oldObject": cel.Type.DYN, "request": cel.Type.DYN,
               "variables": cel.Type.DYN},
    extensions=[ext_optional.ExtOptional()],
    functions=QUANTITY_LIBRARY + LIST_AND_STRING_FUNCTIONS,
)

KINDS = {
    "Pod": ("", "v1", "pods"),
    "Deployment": ("apps", "v1", "deployments"),
    "StatefulSet": ("apps", "v1", "statefulsets"),
    "DaemonSet": ("apps", "v1", "daemonsets"),
    "ReplicaSet": ("apps", "v1", "replicasets"),
    "Job": ("batch", "v1", "jobs"),
    "CronJob": ("batch", "v1", "cronjobs"),
    "Service": ("", "v1", "services"),
}


def compile_expression(expression: str):
    """Parse and type-check one policy expression; raises on a CEL error."""
    return ENV.compile(expression)


def _evaluate(expression: str, data: dict[str, Any]) -> Any:
    return compile_expression(expression).eval(data=data).plain_value()


def _canonical_resources(containers: list[dict[str, Any]]) -> None:
    """Quantities reach CEL as strings (the API server serialises `resource.Quantity`)."""
    for container in containers:
        for part in ("limits", "requests"):
            values = container.get("resources", {}).get(part)
            if values:
                container["resources"][part] = {k: str(v) for k, v in values.items()}


def _all_containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("containers", []), *spec.get("initContainers", [])]


def _pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj.get("spec", {})
    if obj["kind"] == "Pod":
        return [spec]
    if obj["kind"] == "CronJob":
        return [spec["jobTemplate"]["spec"]["template"]["spec"]]
    if "template" in spec:
        return [spec["template"]["spec"]]
    return []


def default_pod(pod: dict[str, Any], limit_range: dict[str, Any] | None) -> dict[str, Any]:
    """Steps 1 and 2: requests from limits, then the LimitRange's container defaults."""
    pod = copy.deepcopy(pod)
    item = next((i for i in (limit_range or {}).get("spec", {}).get("limits", []) if i["type"] == "Container"), {})
    for container in _all_containers(pod["spec"]):
        resources = container.setdefault("resources", {})
        limits, requests = resources.get("limits", {}), resources.get("requests", {})
        for name, value in limits.items():
            requests.setdefault(name, value)
        for name, value in item.get("default", {}).items():
            limits.setdefault(name, value)
        for name, value in item.get("defaultRequest", {}).items():
            requests.setdefault(name, value)
        if limits:
            resources["limits"] = limits
        if requests:
            resources["requests"] = requests
    return pod


def _selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    for expression in selector.get("matchExpressions", []):
        present, value = expression["key"] in labels, labels.get(expression["key"])
        if expression["operator"] == "In" and not (present and value in expression["values"]):
            return False
        if expression["operator"] == "NotIn" and present and value in expression["values"]:
            return False
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def _rule_matches(rules: list[dict[str, Any]], kind: str, operation: str, subresource: str) -> bool:
    group, version, resource = KINDS[kind]
    resource = f"{resource}/{subresource}" if subresource else resource
    return any(group in r["apiGroups"] and version in r["apiVersions"] and resource in r["resources"]
               and operation in r["operations"] for r in rules)


@dataclass
class Decision:
    allowed: bool
    messages: list[str]


class Cluster:
    """The policies, bindings and LimitRanges of a set of manifests, as an API server would run them."""

    def __init__(self, manifests: list[dict[str, Any]]):
        self.policies = {m["metadata"]["name"]: m for m in manifests if m["kind"] == "ValidatingAdmissionPolicy"}
        self.bindings = [m for m in manifests if m["kind"] == "ValidatingAdmissionPolicyBinding"]
        self.limit_ranges = {m["metadata"]["namespace"]: m for m in manifests if m["kind"] == "LimitRange"}

    def admit(self, obj: dict[str, Any], namespace: str, operation: str = "CREATE",
              old: dict[str, Any] | None = None, subresource: str = "") -> Decision:
        """`old`: the stored object an UPDATE replaces (the object itself when not given); `subresource`: e.g.
        `ephemeralcontainers` (request.subResource), which rules name as `pods/ephemeralcontainers`."""
        obj = self._as_stored(obj, namespace, defaults=operation == "CREATE")
        old = self._as_stored(old if old is not None else obj, namespace, defaults=False) \
            if operation == "UPDATE" else None
        group, version, _ = KINDS[obj["kind"]]
        request = {"kind": {"group": group, "version": version, "kind": obj["kind"]}, "namespace": namespace,
                   "operation": operation, "subResource": subresource}
        labels = {"kubernetes.io/metadata.name": namespace}
        messages = []
        for binding in self.bindings:
            if not _selector_matches(binding["spec"]["matchResources"]["namespaceSelector"], labels):
                continue
            policy = self.policies[binding["spec"]["policyName"]]["spec"]
            if not _rule_matches(policy["matchConstraints"]["resourceRules"], obj["kind"], operation, subresource):
                continue
            messages += self._run(policy, obj, old, request)
        return Decision(allowed=not messages, messages=messages)

    def _as_stored(self, obj: dict[str, Any], namespace: str, defaults: bool) -> dict[str, Any]:
        """A new Pod is defaulted on its way in; a stored object already was."""
        obj = copy.deepcopy(obj)
        if obj["kind"] == "Pod" and defaults:
            obj = default_pod(obj, self.limit_ranges.get(namespace))
        for spec in _pod_specs(obj):
            _canonical_resources(_all_containers(spec))
        return obj

    @staticmethod
    def _run(policy: dict[str, Any], obj: dict[str, Any], old: dict[str, Any] | None,
             request: dict[str, Any]) -> list[str]:
        variables: dict[str, Any] = {}
        data = {"object": obj, "oldObject": old, "request": request, "variables": variables}
        for condition in policy.get("matchConditions", []):
            try:
                if _evaluate(condition["expression"], data) is not True:
                    return []
            except RuntimeError as error:
                return [f"matchCondition {condition['name']} error: {error}"]
        for variable in policy.get("variables", []):
            try:
                variables[variable["name"]] = _evaluate(variable["expression"], data)
            except RuntimeError:
                pass  # Kubernetes evaluates variables lazily: an error counts only where one is used.
        messages = []
        for validation in policy["validations"]:
            try:
                passed = _evaluate(validation["expression"], data)
            except RuntimeError as error:
                messages.append(f"expression error: {error}")
                continue
            if passed is True:
                continue
            try:
                message = _evaluate(validation["messageExpression"], data) if "messageExpression" in validation \
                    else validation["message"]
            except RuntimeError:
                message = validation["message"]
            messages.append(message or validation["message"])
        return messages
