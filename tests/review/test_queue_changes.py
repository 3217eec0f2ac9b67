"""`compare`'s queue section, from two plans' `queues`: queues turned on, a guarantee that shrinks, borrowing
opened or closed, a tenant's pool leaving its queue; nothing for plans without queues or without the key."""

from __future__ import annotations

import json

import yaml

from gpushare.kubernetes.queues import queue_plan
from gpushare.review.plan_compare import parse_plan, render_compare
from gpushare.review.queue_changes import queue_lines
from gpushare.stackfile.config import parse_config
from tests.kubernetes.test_queues import QUEUE_STACK_YAML


def plan_queues(edit=None) -> dict:
    raw = yaml.safe_load(QUEUE_STACK_YAML)["config"]
    if edit:
        edit(raw)
    return queue_plan(parse_config(raw, source="s", stack="queues"))


def off(raw):
    raw["gpushare:queues"] = {"enabled": False}


def test_turning_queues_on_lists_each_tenants_guarantee_and_borrowing():
    lines = queue_lines(plan_queues(off), plan_queues())
    assert lines[0] == "- Kueue queues are turned **on**: Kueue is installed and each tenant gets a queue"
    assert "- tenant `vision` on pool `t4ts`: guaranteed 6 `nvidia.com/gpu.shared`; may borrow up to 2, lends " \
           "all of it" in lines
    assert "- tenant `vision` on pool `h100mig`: guaranteed 14 `nvidia.com/mig-1g.12gb`; may borrow none, lends " \
           "none" in lines


def test_a_shrinking_guarantee_and_changed_limits_are_named():
    def edit(raw):
        raw["gpushare:tenants"][1]["queue"] = {"nominal": {"nvidia.com/gpu.shared": 2},
                                               "borrowingLimit": {"nvidia.com/gpu.shared": 1}}
        raw["gpushare:tenants"][2]["pools"] = ["t4ts"]  # speech moves from t4spot to t4ts

    lines = queue_lines(plan_queues(), plan_queues(edit))
    assert ("- tenant `nlp` on pool `t4ts`: guarantee **shrinks** 6 -> 2 `nvidia.com/gpu.shared`; may borrow no "
            "limit -> up to 1; lends up to 4 -> all of it") in lines
    assert "- tenant `speech` on pool `t4spot`: no longer in its queue (its guarantee of 4 `nvidia.com/gpu` goes)" \
        in lines
    # t4spot is nlp's alone now: dedicated, never lent; t4ts is split three ways.
    assert ("- tenant `nlp` on pool `t4spot`: guarantee grows 4 -> 8 `nvidia.com/gpu`; may borrow no limit -> none; "
            "lends all of it -> none") in lines
    assert "- tenant `vision` on pool `t4ts`: guarantee **shrinks** 6 -> 4 `nvidia.com/gpu.shared`" in lines


def test_a_guarantee_the_tenants_section_names_is_left_out_and_the_limits_stay():
    """`named`: the (tenant, pool) pairs whose promise the Tenants section names (in the pool's units); their guarantee
    is not repeated here, what only the queues say (borrowing, lending) is; a pool leaving a queue with its promise
    named says nothing more; the others are as before."""
    def edit(raw):
        raw["gpushare:tenants"][1]["queue"] = {"nominal": {"nvidia.com/gpu.shared": 2},
                                               "borrowingLimit": {"nvidia.com/gpu.shared": 1}}
        raw["gpushare:tenants"][2]["pools"] = ["t4ts"]

    named = {("nlp", "t4ts"), ("speech", "t4spot"), ("speech", "t4ts")}
    assert queue_lines(plan_queues(), plan_queues(edit), named) == [
        # Not named: still said here.
        "- tenant `vision` on pool `t4ts`: guarantee **shrinks** 6 -> 4 `nvidia.com/gpu.shared`",
        "- tenant `nlp` on pool `t4spot`: guarantee grows 4 -> 8 `nvidia.com/gpu`; may borrow no limit -> none; "
        "lends all of it -> none",
        "- tenant `nlp` on pool `t4ts`: may borrow no limit -> up to 1; lends up to 4 -> all of it",
        "- tenant `speech` on pool `t4ts`: may borrow no limit, lends all of it"]


def test_the_compare_report_has_a_queue_section_only_when_queues_change():
    def plan(queues) -> str:
        return json.dumps({"pools": [], "resources": [], "devicePluginConfigs": [], "queues": queues})

    same = render_compare(parse_plan(plan(plan_queues()), "b"), parse_plan(plan(plan_queues()), "h"))
    assert "#### Queues" not in same
    changed = render_compare(parse_plan(plan(plan_queues(off)), "b"), parse_plan(plan(plan_queues()), "h"))
    assert "#### Queues" in changed
    # A base plan from before `queues` existed: no section rather than every queue shown as new.
    older = render_compare(parse_plan(json.dumps({"pools": [], "resources": [], "devicePluginConfigs": []}), "b"),
                           parse_plan(plan(plan_queues()), "h"))
    assert "#### Queues" not in older


def test_plan_text_shows_each_tenants_terms_and_nothing_with_queues_off():
    from gpushare.review.queue_changes import queue_plan_lines

    lines = queue_plan_lines(plan_queues())
    assert lines[1].startswith("Queues (Kueue v0.19.2, chart oci://registry.k8s.io/kueue/charts/kueue 0.19.2 in "
                               "kueue-system; fair sharing off")
    assert "  vision: ClusterQueue vision, cohort gpushare-vision, priority 100" in lines
    assert "    pool t4ts: guaranteed 6 nvidia.com/gpu.shared, may borrow up to 2, lends all of it" in lines
    assert queue_plan_lines(plan_queues(off)) == []
