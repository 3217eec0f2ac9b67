"""`gpushare.model.quantity`: the one reader of Kubernetes quantities (verify's device counts and its comparison of
rendered with live objects). It must read a quantity as the API server does: the cases are judged by the API server's
own CEL `isQuantity`/`quantity` functions (k8s.io/apiserver `pkg/cel/library/quantity.go`, which call
apimachinery's ParseQuantity) through the ValidatingAdmissionPolicy plugin (`tools/vapcheck`)."""

from __future__ import annotations

from decimal import Decimal

from gpushare.model.quantity import parse_quantity
from tests.kubernetes.apiserver_admission import plugin_cluster

SAME = [("1", "1000m"), ("1Gi", "1073741824"), ("1024Mi", "1Gi"), ("1k", "1000"), ("1e3", "1k"), ("1E3", "1000"),
        ("0.5", "500m"), (".5", "0.5"), ("1.5Gi", "1536Mi"), ("+2", "2"), ("1E", "1e18"), ("4", "4.0"), ("2Ei", "2305843009213693952")]
DIFFERENT = [("1", "1001m"), ("1Gi", "1G"), ("1M", "1Mi"), ("1m", "1M"), ("-1", "1")]
INVALID = ["", "abc", "1.2.3", "1e", "1Ki ", " 1", "1KiB", "1.5.Gi", "1x", "--1"]


def test_reads_every_suffix_by_value():
    assert parse_quantity("1000m") == 1 and parse_quantity("1Gi") == 2 ** 30 and parse_quantity("1e3") == 1000
    assert parse_quantity("1E") == Decimal(10) ** 18 and parse_quantity("2Ei") == 2 * 2 ** 60
    assert parse_quantity(4) == 4, "YAML's number 4 is the quantity 4"
    assert parse_quantity(True) is None, "a bool is no quantity"
    assert all(parse_quantity(a) == parse_quantity(b) for a, b in SAME)
    assert all(parse_quantity(a) != parse_quantity(b) for a, b in DIFFERENT)
    assert all(parse_quantity(text) is None for text in INVALID)


def _policy() -> list[dict]:
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
    a, b = "object.metadata.annotations['a']", "object.metadata.annotations['b']"
    validations = [{"expression": f"isQuantity({a})", "message": "a is no quantity"},
                   {"expression": f"!isQuantity({a}) || !isQuantity({b}) || quantity({a}).compareTo(quantity({b})) == 0",
                    "message": "different"}]
    return [{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
             "metadata": {"name": "quantities"},
             "spec": {"matchConstraints": {"resourceRules": [rule]}, "validations": validations}},
            {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
             "metadata": {"name": "quantities"}, "spec": {"policyName": "quantities", "validationActions": ["Deny"]}}]


def test_agrees_with_the_api_servers_quantity_parser():
    cases = [*SAME, *DIFFERENT, *((text, "1") for text in INVALID)]
    with plugin_cluster(_policy()) as cluster:
        for a, b in cases:
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q", "annotations": {"a": a, "b": b}},
                   "spec": {"containers": [{"name": "app", "image": "nginx"}]}}
            decision = cluster.admit(pod, "team-a")
            server = ("invalid" if "a is no quantity" in decision.messages
                      else "different" if "different" in decision.messages else "same")
            ours = ("invalid" if parse_quantity(a) is None
                    else "same" if parse_quantity(a) == parse_quantity(b) else "different")
            assert ours == server, (a, b, decision.messages)

