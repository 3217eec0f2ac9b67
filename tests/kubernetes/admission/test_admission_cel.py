"""`gpushare.kubernetes.admission.cel`: reading the policies' CEL from the package's YAML files and filling in a
policy's data. What the assembled policies do is tested through the API server's own plugin
(test_tenant_admission.py, test_tenant_policy_clauses.py beside this); this is what the files and the filling
promise."""

from __future__ import annotations

import re
from importlib.resources import files

import pytest

from gpushare.kubernetes.admission.cel import fill, joined, load
from gpushare.kubernetes.admission.policies import POLICIES
from gpushare.kubernetes.kueue_admission import (
    ADMISSION_GATE,
    KUEUE_CONTROLLER_USER,
    PODSET_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
)
from gpushare.model.stack import GPU_TAINT, POOL_LABEL, TENANT_LABEL

RULE_FILES = ("variables.yaml", "validations.yaml", "match_conditions.yaml", "fragments.yaml")


def test_a_value_inside_a_string_literal_is_escaped_for_that_literal():
    values = {"text": "it's \"x\"", "code": "[\"a\"]"}
    assert fill("'${text}' + \"${text}\" + ${code}", values) == "'it\\'s \"x\"' + \"it's \\\"x\\\"\" + [\"a\"]"
    assert fill("a message: ${text}", values, cel=False) == "a message: it's \"x\""


def test_a_name_nothing_defines_or_defined_twice_is_an_error():
    with pytest.raises(KeyError, match=r"\$\{tenat\}"):
        fill("variables.pool in ${tenat}", {"tenant": "vision"})
    with pytest.raises(KeyError, match=r"\$\{namespace\} is both"):
        fill("${namespace}", {"namespace": "'vision'"})


def test_fragments_are_filled_in_with_the_policys_data():
    assert fill("${perContainerField}", {"field": "containers", "condition": "true", "detail": "''"}) == (
        "variables.podSpec.?containers.orValue([]).filter(c, true).map(c, 'spec.containers[' + "
        "string(variables.podSpec.containers.indexOf(c)) + ']' + '')")


def test_a_string_spread_over_lines_is_joined_with_single_spaces():
    assert joined("a ||\n    b\n\n  || c\n") == "a || b || c"


def test_every_entry_names_known_policies_and_features():
    features = {"queues", "guaranteed", "sharedPools", "poolQuotas", "dra", "dispatched"}
    entries = [*load("variables.yaml"), *load("validations.yaml")["validations"],
               *(more for c in load("match_conditions.yaml") for more in c.get("orWhen", ())),
               *(case for e in [*load("variables.yaml"), *load("match_conditions.yaml")] for case in e.get("cases", ())),
               *(clause for v in load("validations.yaml")["validations"] for clause in v["allowWhen"]
                 if isinstance(clause, dict))]
    for entry in entries:
        assert set(entry.get("in", POLICIES)) <= set(POLICIES), entry
        assert {entry.get("if", "queues"), entry.get("unless", "queues")} <= features, entry


def test_the_rule_files_name_the_labels_and_users_gpushare_uses_elsewhere():
    """The CEL writes gpushare's labels and Kueue's names as literals, to be read as they are: each must still be the
    constant the nodes, taints and queues use."""
    text = "\n".join(files("gpushare.kubernetes.admission").joinpath(name).read_text(encoding="utf-8")
                     for name in RULE_FILES)
    known = {POOL_LABEL, TENANT_LABEL, GPU_TAINT.split("=")[0], QUEUE_NAME_LABEL, PRIORITY_CLASS_LABEL,
             ADMISSION_GATE, PODSET_LABEL}
    named = set(re.findall(r"(?:gpushare\.io|kueue\.x-k8s\.io)/[a-z-]+|nvidia\.com/gpu\b", text))
    assert named == known
    assert KUEUE_CONTROLLER_USER in text
    assert set(re.findall(r"system:serviceaccount:kueue-system:[a-z-]+", text)) == {KUEUE_CONTROLLER_USER}
