"""Costs through the CLI, as users run it: `prices STACK`, `plan --prices [FILE]`, `compare` of priced plans, and
`report --prices FILE`, against the local Retail Prices API stub (the real urllib reader)."""

from __future__ import annotations

import json

import pytest

from gpushare.cli import main
from tests.https_stub import StubResponse
from tests.prices_stub import PricesStub, reach_prices, vm_filter
from tests.stack_files import write_stack

REGION = "westeurope"
DEV_PRICES = {"Standard_NC4as_T4_v3": 0.6, "Standard_NC8as_T4_v3": 0.85, "Standard_D4ds_v5": 0.2}
STACK = """\
config:
  azure-native:location: westeurope
  gpushare:cluster:
    name: costs
  gpushare:pools:
    - name: h100
      vmSize: Standard_NC40ads_H100_v5
{scale}
"""


@pytest.fixture
def stub(monkeypatch, tmp_path):
    with PricesStub() as server:
        reach_prices(monkeypatch, server, tmp_path / "cache")
        yield server


def run(capsys, *args) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_prices_writes_a_saved_answer_that_plan_reads_offline(stub, capsys, tmp_path):
    stub.serve_stack(REGION, DEV_PRICES)
    code, out, _ = run(capsys, "prices", "dev")
    assert code == 0
    saved = tmp_path / "prices.json"
    saved.write_text(out)
    requests = len(stub.requests)
    code, out, _ = run(capsys, "plan", "dev", "--json", "--prices", str(saved))
    assert code == 0 and len(stub.requests) == requests, "a saved answer needs no read"
    cost = json.loads(out)["cost"]
    assert cost["currency"] == "USD" and cost["source"] == str(saved)
    t4ts = next(p for p in cost["pools"] if p["name"] == "t4ts")
    # dev's t4ts: time-slicing x4 on one T4, autoscaled 1-3 nodes.
    assert (t4ts["nodeHourly"], t4ts["deviceHourly"], t4ts["monthlyMin"], t4ts["monthlyMax"]) == (0.6, 0.15, 438.0,
                                                                                                   1314.0)
    # system pool 2 x 0.2, fee 0.10, t4ts 1-3 x 0.6, t4mps 1 x 0.85; 730 h.
    assert cost["total"] == {"monthlyMin": round((0.4 + 0.1 + 0.6 + 0.85) * 730, 2),
                             "monthlyMax": round((0.4 + 0.1 + 1.8 + 0.85) * 730, 2), "complete": True}


def test_plan_prices_reads_the_api_and_shows_the_cost_lines(stub, capsys):
    stub.serve_stack(REGION, DEV_PRICES)
    code, out, _ = run(capsys, "plan", "dev", "--prices")
    assert code == 0
    assert "Cost (pay-as-you-go list prices (Linux)" in out
    assert "t4ts: Standard_NC4as_T4_v3 $0.60/node-hour, $438-$1,314/month at 1-3 node(s); $0.1500 per " \
           "nvidia.com/gpu-hour (time-sliced: no memory or fault isolation)" in out
    assert "cluster fee (Standard tier): $73/month" in out


EXISTING_SYSTEM_POOL = [{
    "name": "sys", "vmSize": "Standard_D8ds_v5", "mode": "System", "count": 3, "osSku": "Ubuntu",
    "id": "/subscriptions/3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3/resourcegroups/rg-platform/providers/"
          "Microsoft.ContainerService/managedClusters/platform-aks/agentPools/sys", "resourceGroup": "rg-platform"}]


def test_an_existing_cluster_is_priced_with_the_system_pool_it_has(stub, capsys, tmp_path):
    """The adopter's existing cluster runs 3 x D8ds_v5 as its system pool: `plan --deployed --prices` prices that,
    reads no price for gpushare's default system size, and says the tier fee is unknown instead of adding it."""
    stub.serve_stack(REGION, {"Standard_NC4as_T4_v3": 0.6, "Standard_NC24ads_A100_v4": 4.0, "Standard_D8ds_v5": 0.4})
    deployed = tmp_path / "pools.json"
    deployed.write_text(json.dumps(EXISTING_SYSTEM_POOL))
    code, out, _ = run(capsys, "plan", "existing", "--json", "--deployed", str(deployed), "--prices")
    assert code == 0
    cost = json.loads(out)["cost"]
    assert (cost["systemPool"]["vmSize"], cost["systemPool"]["count"]) == ("Standard_D8ds_v5", 3)
    assert cost["systemPool"]["monthly"] == round(0.4 * 3 * 730, 2)
    assert cost["clusterFee"]["monthly"] is None and not cost["total"]["complete"]
    filters = [(request.query.get("$filter") or [""])[0] for request in stub.requests]
    assert any("Standard_D8ds_v5" in f for f in filters) and not any("Standard_D4ds_v5" in f for f in filters)
    (tmp_path / "head.json").write_text(run(capsys, "plan", "existing", "--json", "--deployed", str(deployed),
                                            "--prices")[1])
    (tmp_path / "base.json").write_text(json.dumps(json.loads((tmp_path / "head.json").read_text())))
    code, out, _ = run(capsys, "compare", str(tmp_path / "base.json"), str(tmp_path / "head.json"))
    assert code == 0 and "partial, without the existing cluster's tier fee (its tier is not read offline)" in out, \
        "the PR's cost headline names what it leaves out"
    code, out, _ = run(capsys, "plan", "existing", "--prices")
    assert code == 0 and "system pool: unknown (the existing cluster's own" in out


def test_plan_without_prices_says_how_to_get_them_in_one_line(capsys):
    code, out, _ = run(capsys, "plan", "dev")
    assert code == 0
    lines = [line for line in out.splitlines() if line.startswith("cost:")]
    assert lines == ["cost: not priced (no --prices given); `plan --prices` reads list prices from the Azure Retail "
                     "Prices API, `plan --prices FILE` a saved answer (`gpushare prices STACK > prices.json`, or "
                     "`--template` to fill in by hand)"]


def test_plan_prices_with_the_api_down_still_plans_with_a_warning(stub, capsys):
    stub.serve(vm_filter(REGION, "Standard_NC4as_T4_v3"), [[]], first=[StubResponse(500, "down")] * 5)
    code, out, _ = run(capsys, "plan", "dev", "--json", "--prices")
    assert code == 0
    document = json.loads(out)
    assert document["cost"] is None
    assert any(w.startswith("prices: the Azure Retail Prices API at ") and "HTTP 500" in w
               for w in document["warnings"])


def test_prices_with_the_api_down_exits_4_with_one_message(stub, capsys):
    stub.serve(vm_filter(REGION, "Standard_NC4as_T4_v3"), [[]], first=[StubResponse(500, "down")] * 5)
    code, out, err = run(capsys, "prices", "dev")
    assert code == 4 and out == ""
    assert err.startswith("error: the Azure Retail Prices API at https://127.0.0.1:") and "Traceback" not in err


def test_prices_in_a_currency_the_api_does_not_serve_exits_4(stub, capsys):
    stub.serve(vm_filter(REGION, "Standard_NC4as_T4_v3"), [[]], currency="XYZ",
               first=[StubResponse(400, {"Error": {"Code": "BadRequest", "Message": "Invalid currency code"}})])
    code, _, err = run(capsys, "prices", "dev", "--currency", "xyz")
    assert code == 4
    assert "does not serve prices in 'XYZ'" in err and "hint: use one of the currencies it documents" in err


def test_a_saved_answer_for_another_region_is_refused_by_prices_consumers(stub, capsys, tmp_path):
    stub.serve_stack(REGION, DEV_PRICES)
    _, out, _ = run(capsys, "prices", "dev")
    saved = tmp_path / "prices.json"
    saved.write_text(out.replace('"region": "westeurope"', '"region": "eastus"'))
    code, out, err = run(capsys, "plan", "dev", "--json", "--prices", str(saved))
    assert (code, out) == (2, ""), "a file named on the command line that does not fit fails the plan, as in CI"
    assert err.startswith(f"error: {saved}: holds prices for region 'eastus', but the stack is in 'westeurope'")


def test_compare_of_priced_plans_leads_with_the_monthly_change(stub, capsys, tmp_path):
    stub.serve_stack(REGION, {"Standard_NC40ads_H100_v5": 7.0, "Standard_D4ds_v5": 0.2})
    plans = []
    for side, scale in (("base", "      count: 2"), ("head", "      autoscale: {min: 1, max: 6}")):
        stack_file = write_stack(tmp_path, STACK.format(scale=scale), f"Pulumi.{side}.yaml")
        code, out, _ = run(capsys, "plan", str(stack_file), "--json", "--prices")
        assert code == 0
        plans.append(tmp_path / f"{side}.json")
        plans[-1].write_text(out)
    code, out, _ = run(capsys, "compare", str(plans[0]), str(plans[1]))
    assert code == 0
    # 2 -> 1-6 nodes at $7/h: +4 nodes x 7 x 730 = +$20,440 at max, -$5,110 at min.
    assert out.splitlines()[2].startswith("**Cost: +$20,440/month at max (-$5,110 at min): ")
    row = next(line for line in out.splitlines() if line.startswith("| **h100**"))
    assert row.endswith("| $10,220 -> $5,110-$30,660 |")


def test_compare_of_plans_without_prices_says_how_to_get_them(capsys, tmp_path):
    code, out, _ = run(capsys, "plan", "dev", "--json")
    plan = tmp_path / "plan.json"
    plan.write_text(out)
    code, out, _ = run(capsys, "compare", str(plan), str(plan))
    assert code == 0
    assert out.splitlines()[2].startswith("_Cost: not shown; make both plans with `gpushare plan STACK --json --prices`")


def test_the_readme_cost_block_is_what_plan_prints(capsys, tmp_path):
    from pathlib import Path

    from gpushare.azure.prices import CLUSTER_FEE_QUERY, PriceSheet
    from tests.prices_stub import cluster_fee_items, meters_of

    prices = {"Standard_NC4as_T4_v3": 0.60, "Standard_NC8as_T4_v3": 0.85, "Standard_D4ds_v5": 0.23}
    items = {size: tuple(meters_of(size, REGION, price)) for size, price in prices.items()}
    items[CLUSTER_FEE_QUERY] = tuple(cluster_fee_items(REGION))
    saved = tmp_path / "prices.json"
    saved.write_text(json.dumps(PriceSheet(REGION, "USD", "2026-12-01T08:00:00Z", "https://prices.azure.com",
                                           items).to_json()))
    assert main(["plan", "dev", "--prices", str(saved)]) == 0
    out = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(out) if line.startswith("Cost ("))
    printed = out[start:start + 7]
    cost = (Path(__file__).resolve().parents[2] / "docs" / "cost.md").read_text().splitlines()
    at = cost.index(printed[0])
    assert cost[at:at + 6] == printed[:6]


def test_plan_prices_warns_of_a_spot_cap_below_the_spot_price(stub, capsys, tmp_path):
    path = write_stack(tmp_path, STACK.format(scale="      count: 1").replace(
        "name: h100\n      vmSize: Standard_NC40ads_H100_v5",
        "name: t4\n      vmSize: Standard_NC4as_T4_v3\n      spot: {maxPrice: 0.05}"), "Pulumi.spot.yaml")
    stub.serve_stack(REGION, {"Standard_NC4as_T4_v3": 0.6, "Standard_D4ds_v5": 0.2})

    code, out, _ = run(capsys, "plan", str(path), "--json", "--prices")

    assert code == 0
    document = json.loads(out)
    (pool,) = document["cost"]["pools"]
    assert (pool["nodeHourly"], pool["spotMaxPrice"], pool["runsAtCurrentPrice"]) == (0.12, 0.05, False)
    assert any(w.startswith("cost: pool t4's spotMaxPrice $0.05/node-hour is not above the Spot price")
               for w in document["warnings"]), document["warnings"]


# --- prices without the network: a file to fill in by hand, its schema, one currency rule --------------------------

SPOT_STACK = STACK.format(scale="      count: 1\n    - name: t4\n      vmSize: Standard_NC4as_T4_v3\n"
                                "      spot: {maxPrice: 0.5}\n      count: 2")


def filled(template: dict, prices: dict[tuple[str, bool], float], read_at: str = "2026-11-30") -> dict:
    """The template with each meter's price filled in as a user would: (size, spot) -> price per hour."""
    document = json.loads(json.dumps(template))
    document["readAt"] = read_at
    for size, items in document["items"].items():
        for item in items:
            item["retailPrice"] = prices[(size, item["skuName"].endswith("Spot"))]
    return document


def test_prices_template_lists_the_stacks_meters_empty_and_plan_reads_it_once_filled_in(capsys, tmp_path):
    """No network at all (no stub): the template names every meter the cost reads (a Spot pool's Spot meter, the
    system pool, the Standard tier fee), plan refuses it while empty naming each value, and prices from it filled."""
    stack = write_stack(tmp_path, SPOT_STACK, "Pulumi.costs.yaml")
    code, out, err = run(capsys, "prices", str(stack), "--template")
    assert code == 0, err
    template = json.loads(out)
    assert {size: [i["skuName"] for i in items] for size, items in template["items"].items()} == {
        "Standard_NC40ads_H100_v5": ["NC40ads H100 v5"], "Standard_NC4as_T4_v3": ["NC4as T4 v3 Spot"],
        "Standard_D4ds_v5": ["D4ds v5"], "aks": ["Standard"]}
    empty = tmp_path / "prices.json"
    empty.write_text(out)
    code, out, err = run(capsys, "plan", str(stack), "--prices", str(empty))
    assert (code, out) == (2, "")
    (line, hint) = err.splitlines()
    assert line.startswith(f"error: {empty}: 5 value(s) not filled in: readAt (the date the prices are "
                           "from, e.g. 2026-12-01); items.Standard_NC40ads_H100_v5[0].retailPrice (NC40ads H100 v5")
    assert "items.aks[0].retailPrice (Standard Uptime SLA, per 1 Hour)" in line
    assert hint.startswith("hint: fill each in (retailPrice: a number per hour in USD)")

    prices = {("Standard_NC40ads_H100_v5", False): 7.0, ("Standard_NC4as_T4_v3", True): 0.1,
              ("Standard_D4ds_v5", False): 0.2, ("aks", False): 0.1}
    empty.write_text(json.dumps(filled(template, prices)))
    code, out, _ = run(capsys, "plan", str(stack), "--json", "--prices", str(empty))
    cost = json.loads(out)["cost"]
    assert code == 0 and cost["priceDate"] == "2026-11-30" and cost["total"]["complete"]
    assert [(p["name"], p["nodeHourly"], p["spot"]) for p in cost["pools"]] == [("h100", 7.0, False),
                                                                             ("t4", 0.1, True)]
    assert cost["total"]["monthlyMin"] == round((7.0 + 2 * 0.1 + 2 * 0.2 + 0.1) * 730, 2)


def test_the_currency_rule_is_stated_once_and_applied_as_stated(stub, capsys, tmp_path):
    """Help and refusal say the same rule: a saved answer is in its own currency, which --currency only checks."""
    from gpushare.azure.prices import CURRENCY_RULES

    for command in (["plan"], ["report"], ["prices"]):
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        assert " ".join(CURRENCY_RULES.split()) in " ".join(capsys.readouterr().out.split()), command
    stub.serve_stack(REGION, DEV_PRICES)
    _, out, _ = run(capsys, "prices", "dev")
    saved = tmp_path / "prices.json"
    saved.write_text(out)
    code, out, _ = run(capsys, "plan", "dev", "--json", "--prices", str(saved))
    assert json.loads(out)["cost"]["currency"] == "USD", "without --currency the file's own"
    code, out, err = run(capsys, "plan", "dev", "--json", "--prices", str(saved), "--currency", "eur")
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {saved}: holds prices in 'USD', not 'EUR' (--currency): {CURRENCY_RULES}")
    assert "hint: drop --currency to use the file's USD" in err


def test_plan_prices_unreachable_says_why_on_the_cost_line(stub, capsys):
    stub.serve(vm_filter(REGION, "Standard_NC4as_T4_v3"), [[]], first=[StubResponse(500, "down")] * 5)
    code, out, _ = run(capsys, "plan", "dev", "--prices")
    (line,) = [line for line in out.splitlines() if line.startswith("cost:")]
    assert code == 0 and line.startswith("cost: not priced: the Azure Retail Prices API at https://127.0.0.1:")
    assert "HTTP 500" in line and "(offline)" not in line
