"""`compare`'s chargeback section, from two plans' `cost.pools[].chargeback` (`plan --prices`): per pool whose split
changes, each tenant's charge, the idle line and the pool's cost before -> after, each side summing to its pool's
cost; nothing when no split changes or a plan is unpriced (issue 41, item 5)."""

from __future__ import annotations

import json
from decimal import Decimal

import yaml

from gpushare.review.plan_compare import EMPTY, parse_plan, render_compare
from gpushare.showback.cost import stack_cost
from gpushare.stackfile.config import parse_config
from tests.showback.chargeback_stacks import PRICES, TWO_TEAMS_YAML, all_stacks
from tests.showback.test_cost import sheet


def plan(edit=None, priced: bool = True) -> str:
    raw = yaml.safe_load(TWO_TEAMS_YAML)["config"]
    if edit:
        edit(raw)
    stack = parse_config(raw, source="s", stack="adopter")
    return json.dumps({"stack": "adopter", "pools": [], "resources": [], "devicePluginConfigs": [],
                       "cost": stack_cost(stack, sheet(PRICES)) if priced else None})


def nlp_leaves_the_a100s(raw):
    raw["gpushare:tenants"][1]["pools"] = ["t4spot"]


def rows(text: str) -> list[list[str]]:
    section = text[text.index("#### Chargeback"):].split("\n\n")[2]
    return [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()[2:]]


def test_a_pool_that_becomes_one_tenants_moves_the_others_charge_to_it_and_each_side_sums_to_the_pool():
    text = render_compare(parse_plan(plan(), "base"), parse_plan(plan(nlp_leaves_the_a100s), "head"))
    # a100mig (4 slices, $5,358.20 a month) was split 2 and 2; now vision's alone, whole. t4spot keeps its split.
    assert rows(text) == [
        ["`a100mig`", "`vision`", "$2,679.10", "$5,358.20", "+$2,679.10"],
        ["`a100mig`", "`nlp`", "$2,679.10", "-", "-$2,679.10"],
        ["`a100mig`", "idle", "$0.00", "$0.00", "-"],
        ["`a100mig`", "= pool cost", "$5,358.20", "$5,358.20", "-"],
    ]
    for side in (2, 3):
        parts = [Decimal(r[side].strip("$").replace(",", "")) for r in rows(text)[:-1] if r[side] != "-"]
        assert sum(parts) == Decimal(rows(text)[-1][side].strip("$").replace(",", ""))


def test_no_section_when_no_split_changes_or_a_plan_is_unpriced():
    assert "#### Chargeback" not in render_compare(parse_plan(plan(), "b"), parse_plan(plan(), "h"))
    assert "#### Chargeback" not in render_compare(parse_plan(plan(priced=False), "b"),
                                                    parse_plan(plan(nlp_leaves_the_a100s), "h"))


def test_a_new_stack_shows_every_pools_split_summing_to_its_cost_on_every_example_stack_and_the_adopters():
    for name, stack in all_stacks():
        head = json.dumps({"stack": stack.stack, "pools": [], "resources": [], "devicePluginConfigs": [],
                           "cost": stack_cost(stack, sheet(PRICES))})
        found = rows(render_compare(EMPTY, parse_plan(head, "head")))
        assert {r[0].strip("`") for r in found} == {p.name for p in stack.pools}, name
        for pool in {r[0] for r in found}:
            *parts, total = [Decimal(r[3].strip("$").replace(",", "")) for r in found if r[0] == pool]
            assert [r[1] for r in found if r[0] == pool][-1] == "= pool cost"
            assert sum(parts) == total, (name, pool)
            assert all(r[2] == "-" for r in found if r[0] == pool)
