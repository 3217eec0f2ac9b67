"""What the stack costs, from a price sheet: per pool, per device-hour, per tenant, in total; unknown never zero."""

from __future__ import annotations

import dataclasses

import pytest

from gpushare.azure.deployed import DeployedPool
from gpushare.azure.prices import CLUSTER_FEE_QUERY, PriceSheet
from gpushare.model.catalog import MigProfile
from gpushare.model.stack import Allocation, Autoscale, Tenant, Tier
from gpushare.showback.cost import HOURS_PER_MONTH, cost_lines, money, stack_cost
from tests.builders import mps, pool, stack, time_slicing
from tests.prices_stub import cluster_fee_items, meters_of

REGION = "westeurope"
PRICES = {"Standard_NC4as_T4_v3": 0.6, "Standard_ND96asr_v4": 30.0, "Standard_D4ds_v5": 0.2}


def sheet(prices=PRICES, fee=True) -> PriceSheet:
    items = {size: tuple(meters_of(size, REGION, price)) for size, price in prices.items()}
    items[CLUSTER_FEE_QUERY] = tuple(cluster_fee_items(REGION)) if fee else ()
    return PriceSheet(REGION, "USD", "2026-12-01T08:00:00Z", "https://prices.azure.com", items)


T4TS = pool("t4ts", "Standard_NC4as_T4_v3", sharing=time_slicing(4), count=None, autoscale=Autoscale(1, 3))
MIG = pool("a100mig", "Standard_ND96asr_v4", mig=MigProfile.MIG1G)


def by_pool(cost, name):
    return next(p for p in cost["pools"] if p["name"] == name)


def test_a_pool_costs_node_price_times_nodes_times_730_and_a_device_hour_is_node_price_per_device():
    cost = stack_cost(stack(T4TS, MIG), sheet())
    t4 = by_pool(cost, "t4ts")
    assert t4["nodeHourly"] == 0.6 and t4["monthlyMin"] == round(0.6 * 730, 2)
    assert t4["monthlyMax"] == round(0.6 * 3 * 730, 2)
    assert t4["deviceHourly"] == 0.15 and t4["resource"] == "nvidia.com/gpu.shared"
    assert "no memory or fault isolation" in t4["isolation"]
    mig = by_pool(cost, "a100mig")
    # 8 GPUs x 7 slices of 1g.5gb: one slice-hour is 1/56 of the node-hour.
    assert mig["deviceHourly"] == round(30.0 / 56, 4) and mig["perNode"] == 56
    assert "in hardware" in mig["isolation"]


def test_a_time_sliced_mig_pool_keeps_each_slices_hardware_isolation():
    shared_mig = pool("h100ts", "Standard_NC40ads_H100_v5", mig=MigProfile.MIG3G, sharing=time_slicing(2))
    assert by_pool(stack_cost(stack(shared_mig), sheet()), "h100ts")["isolation"] == (
        "time-sliced MIG slice: no memory or fault isolation between the pods sharing a slice; each slice isolated "
        "in hardware from the other slices")


def test_a_dra_pools_device_hour_is_the_node_price_per_device_of_its_class_whatever_its_sharing():
    # A claim takes a whole device (one pod's own): MPS among the pod's containers does not divide the price.
    dra_mig = dataclasses.replace(pool("a100dra", "Standard_ND96asr_v4", mig=MigProfile.MIG1G, sharing=mps(2)),
                                  allocation=Allocation.DRA)
    cost = by_pool(stack_cost(stack(dra_mig), sheet()), "a100dra")
    assert cost["deviceHourly"] == round(30.0 / 56, 4) and cost["perNode"] == 56
    assert cost["resource"] == "gpushare-a100-40gb-mig-1g.5gb.deviceclass.resource.k8s.io/devices"
    assert cost["isolation"] == "MIG slice claimed through DRA: one pod's own, its containers sharing it by mps"


def test_the_premium_tiers_fee_is_unknown_not_free():
    config = stack(T4TS)
    premium = dataclasses.replace(config, cluster=dataclasses.replace(config.cluster, tier=Tier.PREMIUM))
    cost = stack_cost(premium, sheet())
    assert cost["clusterFee"]["tier"] == "Premium" and cost["clusterFee"]["monthly"] is None
    assert "the Premium tier's cluster fee" in cost["unknown"]


def test_the_stack_total_holds_the_system_pool_and_the_standard_tier_fee():
    cost = stack_cost(stack(T4TS), sheet())
    fixed = 0.2 * 2 * HOURS_PER_MONTH + 0.10 * HOURS_PER_MONTH
    assert cost["systemPool"]["monthly"] == round(0.2 * 2 * 730, 2)
    assert cost["clusterFee"] == {"tier": "Standard", "meter": "Standard Uptime SLA", "hourly": 0.1, "monthly": 73.0,
                                  "source": "stack"}
    assert cost["total"]["monthlyMin"] == round(fixed + 0.6 * 730, 2)
    assert cost["total"]["monthlyMax"] == round(fixed + 0.6 * 3 * 730, 2)
    assert cost["total"]["complete"] and cost["currency"] == "USD" and cost["priceDate"] == "2026-12-01"
    assert "no reservations" in cost["note"]


def test_the_free_tier_has_no_cluster_fee():
    free = stack(T4TS)
    free = dataclasses.replace(free, cluster=dataclasses.replace(free.cluster, tier=Tier.FREE))
    cost = stack_cost(free, sheet(fee=False))
    assert cost["clusterFee"]["monthly"] == 0.0 and cost["total"]["complete"]


def test_a_size_without_a_meter_is_unknown_and_the_totals_say_they_are_partial():
    cost = stack_cost(stack(T4TS, MIG), sheet({"Standard_NC4as_T4_v3": 0.6, "Standard_D4ds_v5": 0.2}))
    mig = by_pool(cost, "a100mig")
    assert mig["nodeHourly"] is None and mig["monthlyMax"] is None and mig["deviceHourly"] is None
    assert not cost["total"]["complete"] and cost["unknown"] == ["Standard_ND96asr_v4 (pool a100mig)"]
    text = "\n".join(cost_lines(cost))
    assert "unknown" in text and "partial: no price for Standard_ND96asr_v4 (pool a100mig)" in text
    assert "$0/month" not in text


def test_tenants_pay_dedicated_pools_whole_and_shared_pools_by_quota():
    shared = pool("shared", "Standard_NC4as_T4_v3", sharing=time_slicing(4), count=2)
    config = stack(T4TS, shared, MIG)
    config = dataclasses.replace(config, tenants=(
        Tenant("vision", ("t4ts", "shared"), quota=(("nvidia.com/gpu.shared", 3),)),
        Tenant("nlp", ("shared", "a100mig")),
    ))
    cost = stack_cost(config, sheet())
    vision = next(t for t in cost["tenants"] if t["name"] == "vision")
    assert [d["pool"] for d in vision["dedicated"]] == ["t4ts"]
    # Its quota covers t4ts and shared alike; t4ts is dedicated, so the quota prices its share of `shared`.
    assert vision["shared"] == [{"pools": ["shared"], "resource": "nvidia.com/gpu.shared", "quota": 3,
                                 "pricedAt": "shared", "deviceHourly": 0.15, "monthly": round(3 * 0.15 * 730, 2),
                                 "units": 3, "complete": True, "byPool": [
                                     {"pool": "shared", "units": 3, "deviceHourly": 0.15,
                                      "monthly": round(3 * 0.15 * 730, 2)}]}]
    assert vision["monthlyMax"] == round(0.6 * 3 * 730 + 3 * 0.15 * 730, 2) and vision["complete"]
    nlp = next(t for t in cost["tenants"] if t["name"] == "nlp")
    assert [d["pool"] for d in nlp["dedicated"]] == ["a100mig"]
    assert nlp["unpriced"] == [{"pool": "shared", "resource": "nvidia.com/gpu.shared",
                                "reason": "no quota on nvidia.com/gpu.shared: nothing bounds the tenant's share"}]
    assert not nlp["complete"]


def test_a_tenant_on_two_pools_has_each_device_its_quota_allows_priced_once_on_a_pool_that_can_hold_it():
    """Its quota is one namespace-wide limit on the resource both pools advertise: 6 units are 6 devices in all, the
    4 the dearer pool has (1 A100 node x 4 replicas) and 2 on the T4s, not 6 on each pool nor 6 at the dearer's price."""
    a100 = pool("a100ts", "Standard_NC24ads_A100_v4", sharing=time_slicing(4), count=1)
    t4 = pool("t4ts", "Standard_NC4as_T4_v3", sharing=time_slicing(4), count=2)
    config = dataclasses.replace(stack(a100, t4), tenants=(
        Tenant("vision", ("a100ts", "t4ts"), quota=(("nvidia.com/gpu.shared", 6),)),
        Tenant("nlp", ("a100ts", "t4ts"), quota=(("nvidia.com/gpu.shared", 20),)),
    ))
    cost = stack_cost(config, sheet({**PRICES, "Standard_NC24ads_A100_v4": 4.0}))
    vision, nlp = cost["tenants"]
    (share,) = vision["shared"]
    assert share["units"] == 6 and share["byPool"] == [
        {"pool": "a100ts", "units": 4, "deviceHourly": 1.0, "monthly": round(4 * 1.0 * 730, 2)},
        {"pool": "t4ts", "units": 2, "deviceHourly": 0.15, "monthly": round(2 * 0.15 * 730, 2)}]
    assert vision["monthlyMax"] == round((4 * 1.0 + 2 * 0.15) * 730, 2) and vision["complete"]
    # A quota above what the pools advertise holds only what is there (4 + 8 devices), each priced once.
    assert nlp["shared"][0]["units"] == 12 and nlp["monthlyMax"] == round((4 * 1.0 + 8 * 0.15) * 730, 2)
    assert nlp["complete"]
    # What each is charged is its guarantee (an even split of each pool), not what its quota could hold.
    text = "\n".join(cost_lines(cost))
    assert ("tenant vision: charged $1,898.00/month (guaranteed 2 x nvidia.com/gpu.shared on a100ts $1,460.00, "
            "4 x nvidia.com/gpu.shared on t4ts $438.00)") in text


def test_a_quota_on_an_autoscaled_pool_is_priced_at_what_the_pool_holds_at_its_most_nodes():
    """a100ts autoscales 1-3 nodes of 4 shares: 12 at its most, though only 4 at its fewest. A quota of 10 is 10
    shares there at $1.00, not 4 there and 6 on the cheaper T4s."""
    a100 = pool("a100ts", "Standard_NC24ads_A100_v4", sharing=time_slicing(4), count=None, autoscale=Autoscale(1, 3))
    t4 = pool("t4ts", "Standard_NC4as_T4_v3", sharing=time_slicing(4), count=2)
    config = dataclasses.replace(stack(a100, t4), tenants=(
        Tenant("vision", ("a100ts", "t4ts"), quota=(("nvidia.com/gpu.shared", 10),)),
        Tenant("nlp", ("a100ts", "t4ts")),
    ))
    cost = stack_cost(config, sheet({**PRICES, "Standard_NC24ads_A100_v4": 4.0}))
    (share,) = next(t for t in cost["tenants"] if t["name"] == "vision")["shared"]
    assert share["byPool"] == [{"pool": "a100ts", "units": 10, "deviceHourly": 1.0, "monthly": round(10 * 730, 2)}]
    assert share["units"] == 10 and share["monthly"] == round(10 * 1.0 * 730, 2)


def test_a_tenant_total_with_an_unpriced_part_is_a_floor_or_unknown_never_a_plain_figure():
    shared = pool("shared", "Standard_NC8as_T4_v3", sharing=time_slicing(4), count=2)  # no price in the sheet
    config = dataclasses.replace(stack(T4TS, shared), tenants=(
        Tenant("vision", ("t4ts", "shared")), Tenant("nlp", ("shared",)),
    ))
    text = "\n".join(cost_lines(stack_cost(config, sheet())))
    assert "tenant vision: charged at least $1,314.00/month" in text
    assert "tenant nlp: charged unknown/month (guaranteed shared not priced)" in text
    assert "charged $0" not in text


@pytest.mark.parametrize("value, currency, places, text", [
    (4380.0, "USD", 0, "$4,380"), (-12.5, "USD", 2, "-$12.50"), (1234.5, "EUR", 0, "1,234 EUR"),
    (None, "USD", 0, "unknown"),
])
def test_money(value, currency, places, text):
    assert money(value, currency, places) == text


def test_a_spot_pool_is_priced_at_the_spot_meter():
    from gpushare.model.stack import Spot

    spot = dataclasses.replace(T4TS, spot=Spot())
    cost = stack_cost(stack(spot), sheet())
    t4 = by_pool(cost, "t4ts")
    assert t4["spot"] and t4["nodeHourly"] == 0.12 and t4["meter"].endswith("Spot")
    assert t4["deviceHourly"] == 0.03


def test_a_spot_cap_below_the_spot_price_is_flagged_and_warned():
    from gpushare.model.stack import Spot
    from gpushare.showback.cost import spot_cap_warnings

    # The stub's Spot meter is a fifth of the on-demand price: $0.12 for the T4 size.
    capped = dataclasses.replace(T4TS, spot=Spot(max_price=0.05))
    cost = stack_cost(stack(capped), sheet())
    t4 = by_pool(cost, "t4ts")
    assert (t4["spotMaxPrice"], t4["runsAtCurrentPrice"]) == (0.05, False)
    (warning,) = spot_cap_warnings(cost)
    assert warning.startswith("cost: pool t4ts's spotMaxPrice $0.05/node-hour is not above the Spot price of "
                              "Standard_NC4as_T4_v3 in the price sheet ($0.12/node-hour, prices of 2026-12-01)")
    assert "its nvidia.com/gpu.shared are not there" in warning and "set it to -1" in warning
    assert "(Spot, at most $0.05/node-hour: not above the Spot price, no nodes)" in "\n".join(cost_lines(cost))


def test_a_spot_cap_above_the_price_or_none_is_no_warning_and_another_currency_cannot_be_compared():
    from gpushare.model.stack import Spot
    from gpushare.showback.cost import spot_cap_warnings

    above = stack_cost(stack(dataclasses.replace(T4TS, spot=Spot(max_price=0.2))), sheet())
    market = stack_cost(stack(dataclasses.replace(T4TS, spot=Spot())), sheet())
    euro_sheet = dataclasses.replace(sheet(), currency="EUR")
    euros = stack_cost(stack(dataclasses.replace(T4TS, spot=Spot(max_price=0.05))), euro_sheet)
    assert [by_pool(c, "t4ts")["runsAtCurrentPrice"] for c in (above, market, euros)] == [True, None, None]
    assert by_pool(market, "t4ts")["spotMaxPrice"] is None
    assert spot_cap_warnings(above) == spot_cap_warnings(market) == spot_cap_warnings(euros) == []


def test_a_spot_cap_equal_to_the_spot_price_does_not_run():
    """Azure creates Spot nodes only "if the maxPrice is greater than the current Azure Spot price"."""
    from gpushare.model.stack import Spot

    cost = stack_cost(stack(dataclasses.replace(T4TS, spot=Spot(max_price=0.12))), sheet())
    assert by_pool(cost, "t4ts")["runsAtCurrentPrice"] is False


def existing_cluster(config):
    return dataclasses.replace(config, cluster=dataclasses.replace(config.cluster, existing=True))


SYSTEM_D8 = DeployedPool(name="sys", vm_size="Standard_D8ds_v5", mode="System", count=3)
APPS = DeployedPool(name="apps", vm_size="Standard_D4ds_v5", mode="User", count=5)


def test_an_existing_cluster_is_priced_from_its_deployed_system_pools_not_gpushares_defaults():
    """The adopter's cluster has a 3 x D8ds_v5 system pool: that is priced, not gpushare's 2 x D4ds_v5 default, and
    its user pools (not gpushare's) are not."""
    cost = stack_cost(existing_cluster(stack(T4TS)), sheet({**PRICES, "Standard_D8ds_v5": 0.4}),
                      deployed=[SYSTEM_D8, APPS])
    system = cost["systemPool"]
    assert (system["vmSize"], system["count"], system["source"]) == ("Standard_D8ds_v5", 3, "deployed")
    assert system["monthly"] == round(0.4 * 3 * HOURS_PER_MONTH, 2)
    assert [p["name"] for p in system["pools"]] == ["sys"]
    # Its tier is not in a deployed-pools file: unknown, so the total says it is partial.
    assert cost["clusterFee"]["monthly"] is None and cost["clusterFee"]["source"] == "unknown"
    assert cost["total"]["complete"] is False
    assert cost["unknown"] == ["the existing cluster's tier fee (its tier is not read offline)"]
    assert cost["total"]["monthlyMin"] == round((0.4 * 3 + 0.6) * HOURS_PER_MONTH, 2)
    lines = "\n".join(cost_lines(cost))
    assert "system pool: 3 x Standard_D8ds_v5 (as deployed)" in lines and "D4ds_v5" not in lines
    assert "cluster fee: unknown" in lines


def test_an_existing_cluster_planned_without_a_deployed_file_has_unknown_system_pools_never_zero():
    cost = stack_cost(existing_cluster(stack(T4TS)), sheet())
    assert cost["systemPool"]["monthly"] is None and cost["systemPool"]["source"] == "unknown"
    assert "the existing cluster's system pools (pass --deployed FILE, `az aks nodepool list -o json`)" in cost["unknown"]
    assert cost["total"]["complete"] is False
    assert cost["total"]["monthlyMin"] == round(0.6 * HOURS_PER_MONTH, 2), "only what is known is summed"
    assert "system pool: unknown" in "\n".join(cost_lines(cost))


def test_an_existing_clusters_read_tier_prices_its_fee():
    cost = stack_cost(existing_cluster(stack(T4TS)), sheet(), deployed=[SYSTEM_D8], tier=Tier.FREE)
    assert cost["clusterFee"]["monthly"] == 0.0 and cost["clusterFee"]["source"] == "deployed"


def test_a_system_pool_size_without_a_meter_leaves_the_stack_total_partial():
    """The system pool is part of the stack's total: without its price the total is a floor, and says so."""
    cost = stack_cost(stack(T4TS), sheet({"Standard_NC4as_T4_v3": 0.6}))
    assert cost["systemPool"]["monthly"] is None
    assert cost["total"]["complete"] is False
    assert cost["unknown"] == ["Standard_D4ds_v5 (system pool system)"]
    assert "partial: no price for Standard_D4ds_v5 (system pool system)" in "\n".join(cost_lines(cost))


def test_an_autoscaling_deployed_system_pool_has_no_node_count_to_price():
    autoscaled = dataclasses.replace(SYSTEM_D8, count=None)
    cost = stack_cost(existing_cluster(stack(T4TS)), sheet({**PRICES, "Standard_D8ds_v5": 0.4}),
                      deployed=[autoscaled], tier=Tier.FREE)
    assert cost["systemPool"]["monthly"] is None and cost["total"]["complete"] is False
    assert cost["unknown"] == ["Standard_D8ds_v5 (system pool sys, no node count)"]


def test_a_tenants_quota_on_a_resource_several_shared_pools_advertise_is_priced_at_the_dearest():
    """The tenant's pods may land on either pool: what its quota can cost is bounded by the dearer device-hour."""
    cheap = pool("t4four", "Standard_NC4as_T4_v3", sharing=time_slicing(4), count=1)  # $0.15 per replica-hour
    dear = pool("t4two", "Standard_NC4as_T4_v3", sharing=time_slicing(2), count=1)  # $0.30 per replica-hour
    config = dataclasses.replace(stack(cheap, dear), tenants=(
        Tenant("vision", ("t4four", "t4two"), quota=(("nvidia.com/gpu.shared", 2),)),
        Tenant("nlp", ("t4four", "t4two"))))
    vision = next(t for t in stack_cost(config, sheet())["tenants"] if t["name"] == "vision")
    (share,) = vision["shared"]
    assert {key: share[key] for key in ("pools", "resource", "quota", "pricedAt", "deviceHourly", "monthly")} == {
        "pools": ["t4four", "t4two"], "resource": "nvidia.com/gpu.shared", "quota": 2, "pricedAt": "t4two",
        "deviceHourly": 0.3, "monthly": round(2 * 0.3 * 730, 2)}
    assert share["byPool"] == [{"pool": "t4two", "units": 2, "deviceHourly": 0.3, "monthly": round(2 * 0.3 * 730, 2)}]
    assert vision["monthlyMin"] == vision["monthlyMax"] == round(2 * 0.3 * 730, 2)
