"""gpushare's model of the scheduler's toleration and node-affinity rules (`gpushare.sharing.node_selection`, used to
tell whether another device plugin reaches gpushare's pools) against the scheduler's own helpers,
k8s.io/component-helpers v0.36.3 (`tools/nodeselect`: `FindMatchingUntoleratedTaint`,
`GetRequiredNodeAffinity(...).Match`), on every combination below."""

from __future__ import annotations

import itertools
import json
import subprocess

import pytest

from gpushare.sharing.node_selection import parse_taint, selects, untolerated
from tests.go_tools import ROOT, built_or_skip

BUILD = ROOT / "tools" / "nodeselect" / "build"

TAINT_SETS = [
    [], ["nvidia.com/gpu=present:NoSchedule"], ["nvidia.com/gpu=present:NoSchedule",
                                                "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"],
    ["solo:NoExecute"], ["pref=x:PreferNoSchedule"], ["dedicated=vision:NoSchedule", "nvidia.com/gpu=present:NoSchedule"],
    ["gpu-memory=80:NoSchedule"],
]
TOLERATION_SETS = [
    [], [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"}],
    [{"key": "nvidia.com/gpu", "value": "other", "effect": "NoSchedule"}],
    [{"key": "nvidia.com/gpu"}],  # Equal by default, with an empty value
    [{"operator": "Exists"}], [{"operator": "Exists", "effect": "NoExecute"}],
    [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
    [{"key": "dedicated", "operator": "Exists"}, {"key": "nvidia.com/gpu", "operator": "Exists"}],
    [{"key": "solo", "operator": "Exists", "effect": "NoSchedule"}],
    # Kubernetes 1.35's comparison operators: with their gate off (alpha in 1.36) they tolerate nothing.
    [{"key": "gpu-memory", "operator": "Gt", "value": "40", "effect": "NoSchedule"}],
    [{"key": "gpu-memory", "operator": "Lt", "value": "100"}],
]
LABELS = {"gpushare.io/pool": "t4", "kubernetes.azure.com/accelerator": "nvidia", "size": "8"}


def term(*expressions: dict) -> dict:
    return {"matchExpressions": list(expressions)}


def affinity(*terms: dict) -> dict:
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}}


SELECTIONS = [
    {}, {"nodeSelector": {"gpushare.io/pool": "t4"}}, {"nodeSelector": {"gpushare.io/pool": "a100"}},
    {"nodeSelector": {"kubernetes.azure.com/accelerator": "nvidia", "absent": "x"}},
    affinity(term({"key": "gpushare.io/pool", "operator": "In", "values": ["t4", "l4"]})),
    affinity(term({"key": "gpushare.io/pool", "operator": "NotIn", "values": ["t4"]})),
    affinity(term({"key": "gpushare.io/pool", "operator": "DoesNotExist"})),
    affinity(term({"key": "absent", "operator": "DoesNotExist"}, {"key": "size", "operator": "Exists"})),
    affinity(term({"key": "size", "operator": "Gt", "values": ["4"]})),
    affinity(term({"key": "size", "operator": "Lt", "values": ["4"]})),
    affinity(term({"key": "absent", "operator": "In", "values": ["x"]}),
             term({"key": "kubernetes.azure.com/accelerator", "operator": "In", "values": ["nvidia"]})),
    affinity(term()),  # an empty term matches no node
    {**affinity(term({"key": "size", "operator": "Exists"})), "nodeSelector": {"gpushare.io/pool": "a100"}},
]


@pytest.fixture(scope="module")
def nodeselect():
    return built_or_skip(BUILD, "tests/sharing/test_node_selection.py", timeout=900)


def as_taint(taint: str) -> dict:
    key, value, effect = parse_taint(taint)
    return {"key": key, "value": value, "effect": effect}


def test_the_model_agrees_with_the_schedulers_helpers(nodeselect):
    cases = [(taints, tolerations, selection) for taints, tolerations, selection in
             itertools.product(TAINT_SETS, TOLERATION_SETS, SELECTIONS)]
    document = [{"pod": {"tolerations": tolerations, **selection, "containers": [{"name": "c"}]},
                 "node": {"labels": LABELS, "taints": [as_taint(t) for t in taints]}}
                for taints, tolerations, selection in cases]
    result = subprocess.run([str(nodeselect)], input=json.dumps(document), capture_output=True, text=True,
                            timeout=60, check=True)
    real = json.loads(result.stdout)
    assert len(real) == len(cases) == 1092
    disagreements = [
        (taints, tolerations, selection, verdict)
        for (taints, tolerations, selection), verdict in zip(cases, real)
        if (not untolerated(tolerations, taints), selects(selection, LABELS))
        != (verdict["tolerated"], verdict["selected"])]
    assert disagreements == []
