"""`report`'s GPU model in the cases an audit found unpinned (each once broke silently)."""

from __future__ import annotations

import json

from gpushare.review.gpu_changes import RESTARTS, PoolSide, PoolTransition, capacity, pool_change
from gpushare.review.preview_report.digest import parse_preview
from gpushare.review.preview_report.pr_comment import render_report
from gpushare.review.preview_report.transitions import pool_transitions
from tests.review import preview_builders as b

T4X4 = "Standard_NC64as_T4_v3"  # 4 x T4


def report(doc: dict) -> str:
    return render_report(parse_preview(json.dumps(doc), "preview.json"), None)


def test_a_replace_that_recreate_true_unprotected_does_not_say_protected():
    """`recreate: true` lifts protection for the run: old state protected, new state not; Pulumi then replaces."""
    doc = b.mig_profile_replace()
    pool = doc["steps"][1]
    pool["oldState"]["protect"], pool["newState"]["protect"] = True, False
    text = report(doc)
    flag = next(line for line in text.splitlines() if line.startswith("> - **a100mig**:"))
    assert flag == "> - **a100mig**: replace destroys the pool's nodes and every pod on them"
    assert "protected" not in flag


def test_the_restart_flag_fires_when_the_same_config_text_moves_to_a_new_key():
    """The plugin reloads when its node label names another key, even if the text under it is the same."""
    config = b.plugin_config(sharing="timeSlicing", replicas=4)
    before = b.pool_inputs("t4", T4X4, config_key="t4-11111111")
    after = b.pool_inputs("t4", T4X4, config_key="t4-22222222")
    change = pool_change(PoolTransition("t4", "update", PoolSide("t4", before, config, None),
                                        PoolSide("t4", after, config, None)))
    assert RESTARTS in change.flags


def test_a_config_without_rename_by_default_advertises_nvidia_com_gpu():
    """The device plugin's renameByDefault defaults to false: the shared devices keep the plain name."""
    config = ("version: v1\nflags:\n  migStrategy: single\nsharing:\n  timeSlicing:\n    resources:\n"
              "    - name: nvidia.com/gpu\n      replicas: 4\n")
    got = capacity(PoolSide("t4", b.pool_inputs("t4", T4X4), config, None))
    assert (got.resource, got.per_node) == ("nvidia.com/gpu", 16)


def test_one_pool_with_an_update_step_and_a_create_replacement_step_is_a_replace():
    old = b.pool_inputs("a100mig", "Standard_ND96asr_v4", mig="MIG1g")
    new = b.pool_inputs("a100mig", "Standard_ND96asr_v4", mig="MIG3g")
    doc = b.preview([b.pool_step("update", "a100mig", old, old, detailed={"count": {"kind": "update"}}),
                     b.pool_step("create-replacement", "a100mig", old, new, replace_reasons=["gpuInstanceProfile"])])
    (transition,) = pool_transitions(parse_preview(json.dumps(doc), "preview.json"))
    assert transition.op == "replace"
    assert "> - **a100mig**: replace destroys the pool's nodes and every pod on them" in report(doc)
