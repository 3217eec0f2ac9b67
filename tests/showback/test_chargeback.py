"""Chargeback that adds up (issue 41, item 5): `chargeback.split_pool_cost` splits a pool's cost among its tenants'
guarantees, what namespaces borrow (credited to the tenants whose guarantee they took) and the pool's idle line, in
whole cents that sum to the pool's cost; `plan --prices` shows that split per pool, and each tenant's charge."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from gpushare.kubernetes.prometheus_api import Sample
from gpushare.showback.chargeback import largest_remainder, pool_guarantees, split_pool_cost
from gpushare.showback.cost import cost_lines, stack_cost
from gpushare.showback.rules import showback_pools
from gpushare.showback.usage import QUERIES, render_text, usage_document
from tests.showback.chargeback_stacks import PRICES, all_stacks, assert_adds_up, two_teams
from tests.showback.test_cost import sheet


def amounts(split) -> dict[str, Decimal]:
    return {**{name: c.amount for name, c in split.charges.items()}, "idle": split.idle}


def test_a_plan_charges_each_tenant_its_guarantee_and_the_rest_is_idle():
    # docs/cost.md's example: 8 T4 shares at $0.131500 a share-hour, $767.96 a month; vision 3, nlp 3, 2 to nobody.
    split = split_pool_cost(Decimal("767.96"), 8, {"vision": 3, "nlp": 3})
    assert amounts(split) == {"vision": Decimal("287.99"), "nlp": Decimal("287.98"), "idle": Decimal("191.99")}
    assert sum(amounts(split).values()) == Decimal("767.96")


def test_borrowed_use_is_charged_to_the_borrower_and_credited_to_the_lender():
    # A month of 8 x 730 share-hours: vision holds 5 shares throughout, nlp 1, batch (no tenant) 1.
    hours = 730
    split = split_pool_cost(Decimal("767.96"), 8 * hours, {"vision": 3 * hours, "nlp": 3 * hours},
                            {"vision": 5 * hours, "nlp": 1 * hours, "batch": 1 * hours})
    vision, nlp, batch = split.charges["vision"], split.charges["nlp"], split.charges["batch"]
    assert (vision.borrowed, nlp.lent, batch.borrowed) == (2 * hours, 2 * hours, 1 * hours)
    # nlp left 2 shares unused, and 3 were borrowed: its 2 are credited, the third came from the unguaranteed 2.
    assert (vision.units, nlp.units, batch.units, split.idle_units) == (5 * hours, 1 * hours, 1 * hours, 1 * hours)
    # 76,796 cents x 5/8 and 1/8: 47,997.5 and 9,599.5 each; the 2 cents left go to the first two half cents.
    assert amounts(split) == {"vision": Decimal("479.98"), "nlp": Decimal("96.00"), "batch": Decimal("95.99"),
                              "idle": Decimal("95.99")}
    assert sum(amounts(split).values()) == Decimal("767.96")


def test_lenders_are_credited_in_proportion_to_what_they_left_unused():
    split = split_pool_cost(Decimal("100.00"), 10, {"a": 4, "b": 4}, {"a": 0, "b": 2, "c": 3})
    # a left 4 unused, b 2: c's 3 borrowed are credited 2 to a and 1 to b.
    assert (split.charges["a"].lent, split.charges["b"].lent) == (2, 1)
    assert (split.charges["a"].units, split.charges["b"].units, split.charges["c"].units) == (2, 3, 3)
    assert split.idle_units == 2 and sum(amounts(split).values()) == Decimal("100.00")


def test_guarantees_above_the_pool_are_scaled_to_it_and_leave_no_idle():
    split = split_pool_cost(Decimal("100.00"), 4, {"a": 4, "b": 4})
    assert split.charges["a"].guaranteed == 2 and amounts(split) == {
        "a": Decimal("50.00"), "b": Decimal("50.00"), "idle": Decimal("0.00")}


def test_measured_holdings_above_the_pool_leave_no_negative_idle():
    split = split_pool_cost(Decimal("10.00"), 4, {}, {"a": 5})
    assert amounts(split) == {"a": Decimal("10.00"), "idle": Decimal("0.00")}


def test_the_cents_left_over_go_to_the_largest_remainders_and_the_parts_sum_exactly():
    assert largest_remainder(Decimal("100.00"), [1, 1, 1]) == [Decimal("33.34"), Decimal("33.33"), Decimal("33.33")]
    assert largest_remainder(Decimal("0.05"), [Fraction(1, 3), Fraction(2, 3)]) == [Decimal("0.02"), Decimal("0.03")]
    for total in ("0.01", "5358.20", "1234567.89"):
        parts = largest_remainder(Decimal(total), [Fraction(1, 7), Fraction(3, 7), Fraction(2, 7), Fraction(1, 7)])
        assert sum(parts) == Decimal(total)


def test_a_pool_without_capacity_is_all_idle():
    assert amounts(split_pool_cost(Decimal("0.00"), 0, {"a": 2})) == {"a": Decimal("0.00"), "idle": Decimal("0.00")}


# --- plan --prices ---------------------------------------------------------------------------------------------


def test_every_pools_split_in_the_plan_sums_to_its_cost_on_every_example_stack_and_the_adopters():
    for name, stack in all_stacks():
        cost = stack_cost(stack, sheet(PRICES))
        for pool in cost["pools"]:
            assert pool["chargeback"] is not None, (name, pool["name"])
            assert_adds_up(pool["chargeback"], pool["monthlyMax"])
        # Each tenant's charge is its parts of the pools: the tenants and idle lines together are the pools' cost.
        charged = sum(Decimal(str(t["charge"]["monthly"])) for t in cost["tenants"])
        idle = sum(Decimal(str(p["chargeback"]["idle"])) for p in cost["pools"])
        assert charged + idle == sum(Decimal(str(p["monthlyMax"])) for p in cost["pools"]), name


def test_two_teams_sharing_a_pool_are_charged_their_guarantees_not_the_pool_each():
    cost = stack_cost(two_teams(), sheet(PRICES))
    a100 = next(p for p in cost["pools"] if p["name"] == "a100mig")
    assert a100["monthlyMax"] == 5358.2
    assert {n: t["amount"] for n, t in a100["chargeback"]["tenants"].items()} == {"vision": 2679.1, "nlp": 2679.1}
    text = "\n".join(cost_lines(cost))
    assert "chargeback of a month at 2 node(s): vision $2,679.10 + nlp $2,679.10 + idle $0.00 = $5,358.20" in text
    # t4spot: 8 Spot shares at $0.1052 a node-hour / 4; each of the three tenants guaranteed 2, 2 guaranteed to nobody.
    assert ("chargeback of a month at 2 node(s): vision $38.40 + nlp $38.40 + speech $38.40 + idle $38.39 = $153.59"
            in text)
    assert ("tenant vision: charged $2,717.50/month (guaranteed 2 x nvidia.com/gpu on a100mig $2,679.10, "
            "2 x nvidia.com/gpu on t4spot $38.40)") in text
    assert "$5,402" not in text


def test_may_borrow_never_exceeds_what_the_pool_holds_beyond_the_guarantee_nor_what_the_quota_leaves():
    stack = two_teams()
    cost = stack_cost(stack, sheet(PRICES))
    pools = {p["name"]: p for p in cost["pools"]}
    for tenant in cost["tenants"]:
        guaranteed = {row["pool"]: row["units"] for row in tenant["charge"]["pools"]}
        for row in tenant["borrowable"]:
            pool = pools[row["pool"]]
            assert guaranteed[row["pool"]] + row["units"] <= pool["perNode"] * pool["maxNodes"], (tenant, row)
    vision = next(t for t in cost["tenants"] if t["name"] == "vision")
    # Its quota of 6 nvidia.com/gpu holds its guarantee of 4 (2 A100 slices, 2 T4 shares) and 2 more, borrowed or not.
    assert sum(row["units"] for row in vision["borrowable"]) == 2
    assert [(row["pool"], row["units"]) for row in vision["borrowable"]] == [("a100mig", 2)]


# --- usage -----------------------------------------------------------------------------------------------------


def _week_samples(stack, pools, held_by_pool):
    """The 9 figures `usage` folds over a week of 5-minute samples (2,016), for pools at their most nodes and pods
    holding `held_by_pool` (pool -> namespace -> slices) throughout."""
    steps = 7 * 24 * 12
    samples = {name: [] for name in QUERIES}
    for pool in pools:
        facts = next(p for p in stack.pools if p.name == pool.name)
        slices = pool.per_node * max(facts.max_nodes, 1)
        held = held_by_pool[pool.name]
        samples["allocatable"].append(Sample({"pool": pool.name}, slices * steps))
        samples["allocatablePeak"].append(Sample({"pool": pool.name}, slices))
        samples["allocatedPeak"].append(Sample({"pool": pool.name}, sum(held.values())))
        samples["namespaceAllocated"] += [Sample({"pool": pool.name, "namespace": ns}, units * steps)
                                          for ns, units in held.items()]
        samples["used"].append(Sample({"pool": pool.name}, 0.5 * sum(held.values()) / pool.replicas * steps))
    return samples


def test_every_pools_chargeback_in_usage_sums_to_its_cost_on_every_example_stack_and_the_adopters():
    for name, stack in all_stacks():
        cost = stack_cost(stack, sheet(PRICES))
        pools = showback_pools(stack, cost)
        guarantees = pool_guarantees(stack)
        held = {}
        for pool in pools:
            facts = next(p for p in stack.pools if p.name == pool.name)
            capacity, left = pool.per_node * max(facts.max_nodes, 1), {}
            # The first tenant holds its guarantee and 1 more, the others half theirs, batch (no tenant) 1.
            room = capacity
            for i, (tenant, units) in enumerate(guarantees[pool.name].items()):
                left[tenant] = min(room, units + 1 if i == 0 else units // 2)
                room -= left[tenant]
            left["batch"] = min(room, 1)
            held[pool.name] = {ns: units for ns, units in left.items() if units}
        document = usage_document(stack, pools, _week_samples(stack, pools, held), "7d", 0.0, 9, "USD", 10)
        for row in document["pools"]:
            assert_adds_up(row["chargeback"], row["cost"])
        charged = sum(Decimal(str(t["charge"])) for t in document["tenants"])
        others = sum(Decimal(str(o["amount"])) for row in document["pools"]
                     for o in row["chargeback"]["others"].values())
        idle = sum(Decimal(str(row["chargeback"]["idle"])) for row in document["pools"])
        assert charged + others + idle == sum(Decimal(str(row["cost"])) for row in document["pools"]), name


def test_in_usage_two_teams_on_one_pool_are_charged_their_guarantee_and_what_they_borrowed():
    stack = two_teams()
    pools = showback_pools(stack, stack_cost(stack, sheet(PRICES)))
    # a100mig (4 slices, 2 guaranteed to each): vision holds 3 all week, nlp 1; h100mig and t4spot unused.
    held = {"a100mig": {"vision": 3, "nlp": 1}, "h100mig": {}, "t4spot": {}}
    document = usage_document(stack, pools, _week_samples(stack, pools, held), "7d", 0.0, 9, "USD", 10)
    a100 = next(row for row in document["pools"] if row["pool"] == "a100mig")
    week = round(2 * 3.67 * 168, 2)  # $1,233.12
    assert a100["cost"] == week
    split = a100["chargeback"]
    assert (split["tenants"]["vision"]["borrowed"], split["tenants"]["nlp"]["lent"]) == (168.0, 168.0)
    assert (split["tenants"]["vision"]["amount"], split["tenants"]["nlp"]["amount"], split["idle"]) == (
        924.84, 308.28, 0.0)
    text = render_text(document)
    assert "a100mig  vision       336.0               504.0         168.0     0.0    $924.84" in text
