"""Whether a pod template lands on a node: its tolerations against the node's taints, its node selector and required
node affinity against the node's labels. Used to tell whether another device plugin, or gpushare's GPU Operator, would
run on a node it should not.

The rules are the scheduler's (Kubernetes v1.36 `k8s.io/api/core/v1` `Toleration.ToleratesTaint` and
`k8s.io/component-helpers/scheduling/corev1/nodeaffinity`): a toleration with an empty key and `Exists` tolerates every
taint; otherwise the keys must match, `Exists` ignores the value, `Equal` (the default operator) needs it equal, and an
empty effect matches every effect; `Lt` and `Gt` tolerate nothing (their TaintTolerationComparisonOperators gate is
alpha and off in 1.36, as on AKS). Only NoSchedule and NoExecute taints keep a pod off a node (PreferNoSchedule is a
preference). A node selector needs every pair; required node affinity needs one term whose every expression holds
(`In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`); `matchFields` are not modelled and count as matching.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

REPELLING_EFFECTS = ("NoSchedule", "NoExecute")


def parse_taint(taint: str) -> tuple[str, str, str]:
    """(key, value, effect) of an AKS taint string `key=value:Effect` or `key:Effect`."""
    key_value, _, effect = taint.rpartition(":")
    key, _, value = key_value.partition("=")
    return key, value, effect


def tolerates(tolerations: Iterable[Mapping[str, Any]], taint: str) -> bool:
    key, value, effect = parse_taint(taint)
    for toleration in tolerations:
        if toleration.get("effect") and toleration["effect"] != effect:
            continue
        operator = toleration.get("operator") or "Equal"
        if not toleration.get("key"):
            if operator == "Exists":
                return True
            continue
        if toleration["key"] != key:
            continue
        if operator == "Exists" or (operator == "Equal" and (toleration.get("value") or "") == value):
            return True
    return False


def untolerated(tolerations: Iterable[Mapping[str, Any]], taints: Iterable[str]) -> list[str]:
    """The taints that keep a pod with these tolerations off a node."""
    tolerations = list(tolerations)
    return [t for t in taints if parse_taint(t)[2] in REPELLING_EFFECTS and not tolerates(tolerations, t)]


def _expression_holds(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = expression.get("key"), expression.get("operator")
    values = [str(v) for v in expression.get("values") or []]
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and values:
        try:
            found, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return found > bound if operator == "Gt" else found < bound
    return False


def selects(pod_spec: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether the pod spec's node selector and required node affinity admit a node with these labels."""
    selector = pod_spec.get("nodeSelector") or {}
    if any(labels.get(key) != value for key, value in selector.items()):
        return False
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    return any(_term_holds(term, labels) for term in terms)


def _term_holds(term: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    expressions = term.get("matchExpressions") or []
    if not expressions:
        return bool(term.get("matchFields"))  # an empty term matches no node; fields are not modelled
    return all(_expression_holds(e, labels) for e in expressions)
