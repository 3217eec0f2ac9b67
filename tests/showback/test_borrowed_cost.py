"""With queues on, each tenant's cost also says what its Kueue queue may borrow from its cohort at once, priced at
each pool's device-hour (`cost.tenants[].borrowable`), beside its own figure, which stays as without queues.

The stack is tests/kubernetes/test_queues.py's: vision owns h100mig and shares t4ts (12 time-sliced T4 shares) with
nlp, which owns a100 and shares t4spot (8 Spot T4s) with speech. Guarantees: vision 6 and nlp 6 on t4ts, nlp 4 and
speech 4 on t4spot; vision may borrow at most 2, nlp lends at most 4 of its t4ts share."""

from __future__ import annotations

import yaml

from gpushare.kubernetes.queues import borrowable
from gpushare.showback.cost import cost_lines, stack_cost
from gpushare.stackfile.config import parse_config
from tests.kubernetes.test_queues import QUEUE_STACK_YAML, TWO_POOLS_YAML, load
from tests.showback.test_cost import sheet

T4_NODE = 0.6  # Standard_NC4as_T4_v3, 1 T4: 4 time-sliced shares on t4ts
T4_SPOT_NODE = 4.0  # Standard_NC64as_T4_v3, 4 T4s; the stub's Spot meter is 0.2 of the Linux one
PRICES = {"Standard_NC40ads_H100_v5": 7.0, "Standard_NC24ads_A100_v4": 3.6, "Standard_NC4as_T4_v3": T4_NODE,
          "Standard_NC64as_T4_v3": T4_SPOT_NODE, "Standard_D4ds_v5": 0.2}
T4TS_SHARE_HOUR = T4_NODE / 4  # $0.15
T4SPOT_GPU_HOUR = T4_SPOT_NODE * 0.2 / 4  # $0.20


def tenants(cost) -> dict[str, dict]:
    return {t["name"]: t for t in cost["tenants"]}


def changed(edit) -> object:
    raw = yaml.safe_load(QUEUE_STACK_YAML)["config"]
    edit(raw["gpushare:tenants"])
    return parse_config(raw, source="stacks/Pulumi.queues.yaml", stack="queues")


def vision_units(stack) -> list[tuple[str, int]]:
    return [(r["pool"], r["units"]) for r in tenants(stack_cost(stack, sheet(PRICES)))["vision"]["borrowable"]]


def test_each_tenant_may_borrow_what_the_others_lend_on_its_shared_pools_at_that_pools_device_hour():
    cost = tenants(stack_cost(load(), sheet(PRICES)))
    # vision: its borrowingLimit, 2 shares of t4ts (nlp lends 4); never on its own h100mig.
    assert cost["vision"]["borrowable"] == [{"pool": "t4ts", "resource": "nvidia.com/gpu.shared", "units": 2,
                                             "deviceHourly": 0.15, "monthly": 219.0}]  # 2 x $0.15 x 730
    assert cost["vision"]["borrowableMonthlyMax"] == round(2 * T4TS_SHARE_HOUR * 730, 2)
    # nlp: no limit; speech lends its 4 T4s on t4spot, vision all its 6 shares of t4ts (12 - nlp's own 6).
    assert [(r["pool"], r["units"], r["deviceHourly"], r["monthly"]) for r in cost["nlp"]["borrowable"]] == [
        ("t4spot", 4, 0.2, 584.0), ("t4ts", 6, 0.15, 657.0)]
    assert cost["nlp"]["borrowableMonthlyMax"] == round((4 * T4SPOT_GPU_HOUR + 6 * T4TS_SHARE_HOUR) * 730, 2)
    # speech: nlp's 4 on t4spot.
    assert [(r["pool"], r["units"]) for r in cost["speech"]["borrowable"]] == [("t4spot", 4)]
    assert all(t["borrowableComplete"] for t in cost.values())


def test_a_borrowing_limit_above_what_the_others_lend_borrows_only_what_they_lend():
    def limit(units):
        return lambda ts: ts[0]["queue"].update(borrowingLimit={"nvidia.com/gpu.shared": units})

    assert vision_units(changed(limit(5))) == [("t4ts", 4)]  # nlp's lendingLimit
    assert vision_units(changed(limit(0))) == []

    def lends_all(ts):
        del ts[0]["queue"]["borrowingLimit"]
        del ts[1]["queue"]["lendingLimit"]

    assert vision_units(changed(lends_all)) == [("t4ts", 6)]  # nlp's whole share: what t4ts holds beyond vision's 6

    def over_guaranteed(ts):
        lends_all(ts)
        ts[1]["queue"] = {"nominal": {"nvidia.com/gpu.shared": 10}}

    # nlp guarantees itself 10 of t4ts's 12 and lends them all, but the pool holds only 6 beyond vision's own 6.
    assert vision_units(changed(over_guaranteed)) == [("t4ts", 6)]


def test_a_quota_caps_what_a_tenant_borrows_beyond_its_guarantee():
    # vision's quota of 1 share: its guarantee is 1, and its ResourceQuota refuses a second pod, borrowed or not.
    stack = changed(lambda ts: ts[0]["quota"].update({"nvidia.com/gpu.shared": 1}))
    assert vision_units(stack) == []
    # A quota of 7: its guarantee of 6 shares (half of t4ts) leaves 1 to borrow, below its borrowingLimit of 2.
    assert vision_units(changed(lambda ts: ts[0]["quota"].update({"nvidia.com/gpu.shared": 7}))) == [("t4ts", 1)]


def test_guaranteed_capacity_is_attributed_as_without_queues():
    on = tenants(stack_cost(load(), sheet(PRICES)))
    off = tenants(stack_cost(load(**{"gpushare:queues": {"enabled": False}}), sheet(PRICES)))
    for name, tenant in off.items():
        assert {k: v for k, v in on[name].items() if not k.startswith("borrowable")} == tenant
        assert "borrowable" not in tenant
    assert on["vision"]["monthlyMax"] == 2 * 7.0 * 730  # its whole h100mig, nothing borrowed in it
    assert "may borrow" not in "\n".join(cost_lines(stack_cost(load(**{"gpushare:queues": {"enabled": False}}),
                                                               sheet(PRICES))))


def test_a_missing_price_is_unknown_never_zero():
    prices = {k: v for k, v in PRICES.items() if k != "Standard_NC64as_T4_v3"}
    cost = stack_cost(load(), sheet(prices))
    nlp, speech = tenants(cost)["nlp"], tenants(cost)["speech"]
    assert nlp["borrowable"][0] == {"pool": "t4spot", "resource": "nvidia.com/gpu", "units": 4,
                                    "deviceHourly": None, "monthly": None}
    assert nlp["borrowableMonthlyMax"] == 657.0 and not nlp["borrowableComplete"]
    assert speech["borrowableMonthlyMax"] is None and not speech["borrowableComplete"]
    text = "\n".join(cost_lines(cost))
    assert ("tenant nlp: charged at least $5,913.00/month (guaranteed 2 x nvidia.com/gpu on a100 $5,256.00, "
            "6 x nvidia.com/gpu.shared on t4ts $657.00, t4spot not priced); may borrow up to at least $657/month "
            "more (4 x nvidia.com/gpu on t4spot unknown, 6 x nvidia.com/gpu.shared on t4ts $657)") in text
    assert "may borrow up to unknown/month more (4 x nvidia.com/gpu on t4spot unknown)" in text
    assert "$0/month" not in text


def test_the_text_plan_says_what_each_tenant_may_borrow_and_a_tenant_without_cohort_borrows_nothing():
    text = "\n".join(cost_lines(stack_cost(load(), sheet(PRICES))))
    assert ("tenant vision: charged $10,877.00/month (guaranteed 14 x nvidia.com/mig-1g.12gb on h100mig $10,220.00, "
            "6 x nvidia.com/gpu.shared on t4ts $657.00); may borrow up to $219/month more "
            "(2 x nvidia.com/gpu.shared on t4ts $219)") in text
    alone = changed(lambda ts: ts[2].update(pools=["idle"], queue={}))  # speech shares nothing: no cohort
    cost = stack_cost(alone, sheet(PRICES))
    assert tenants(cost)["speech"]["borrowable"] == [] and tenants(cost)["speech"]["borrowableMonthlyMax"] == 0.0
    assert ("tenant speech: charged $438.00/month (guaranteed 1 x nvidia.com/gpu on idle $438.00); borrows nothing"
            in "\n".join(cost_lines(cost)))
    # nlp no longer borrows on t4spot, now its own.
    assert [r["pool"] for r in tenants(cost)["nlp"]["borrowable"]] == ["t4ts"]


def test_borrowing_spread_over_two_pools_of_one_resource_never_exceeds_what_the_quota_leaves():
    stack = load(TWO_POOLS_YAML)
    # On t4b nlp lends its 4 and the cohort the 2 no guarantee covers (8 - vision's 2 - nlp's 4).
    assert {b.pool: b.units for b in borrowable(stack, stack.tenants[0])} == {"t4a": 4, "t4b": 6}
    vision = tenants(stack_cost(stack, sheet(PRICES)))["vision"]
    # Its ResourceQuota's 6 are its guarantee (4 on t4a, 2 on t4b): no pod beyond them, so nothing more, not 4 + 4.
    assert vision["borrowable"] == [] and vision["borrowableMonthlyMax"] == 0.0
    roomy = load(TWO_POOLS_YAML.replace("nvidia.com/gpu.shared: 6", "nvidia.com/gpu.shared: 9"))
    vision = tenants(stack_cost(roomy, sheet(PRICES)))["vision"]
    assert sum(r["units"] for r in vision["borrowable"]) == 1  # a guarantee of 8 (4 + 4, what the pools split) and 1
