"""`report --prices`: the PR comment's cost column and its summary line, from a preview and a price sheet."""

from __future__ import annotations

import dataclasses
import json

from gpushare.azure.prices import CLUSTER_FEE_QUERY, PriceSheet
from gpushare.cli import main
from gpushare.review.preview_report.digest import parse_preview
from gpushare.review.preview_report.pricing import preview_region, preview_vm_sizes
from gpushare.review.preview_report.pr_comment import render_report
from tests.prices_stub import cluster_fee_items, meters_of
from tests.review import preview_builders as b

REGION = "westeurope"


def sheet(prices: dict[str, float]) -> PriceSheet:
    items = {size: tuple(meters_of(size, REGION, price)) for size, price in prices.items()}
    items[CLUSTER_FEE_QUERY] = tuple(cluster_fee_items(REGION))
    return PriceSheet(REGION, "USD", "2026-12-01T08:00:00Z", "https://prices.azure.com", items)


def cluster_step() -> dict:
    inputs = {"location": REGION, "sku": {"name": "Base", "tier": "Standard"},
              "agentPoolProfiles": [{"name": "system", "vmSize": "Standard_D4ds_v5", "count": 2, "mode": "System"}]}
    return b.step("same", "azure-native:containerservice:ManagedCluster", "cluster-aks", inputs, inputs)


def report(document: dict, prices: PriceSheet | None) -> str:
    return render_report(parse_preview(json.dumps(document), "preview.json"), None, prices=prices)


def test_an_autoscale_maximum_change_leads_the_summary_with_its_monthly_cost():
    document = b.autoscale_max()
    document["steps"].append(cluster_step())
    out = report(document, sheet({"Standard_NC4as_T4_v3": 0.6, "Standard_D4ds_v5": 0.2}))
    # t4ts 1-3 -> 1-6 nodes at $0.60: +3 x 0.6 x 730 = +$1,314 at max; fixed: system 2 x 0.2 + fee 0.10.
    lines = out.splitlines()
    summary = lines[lines.index("#### Changes") + 2]
    assert summary.startswith("**+$1,314/month at max: $803-$1,679 -> $803-$2,993 a month, list prices of 2026-12-01** · ")
    row = next(line for line in out.splitlines() if line.startswith("| **t4ts**"))
    assert row.endswith("| $438-$1,314 -> $438-$2,628 |")


def test_a_mig_profile_change_shows_the_slice_price_change():
    out = report(b.mig_profile_replace(), sheet({"Standard_ND96asr_v4": 28.0}))
    row = next(line for line in out.splitlines() if line.startswith("| **a100mig**"))
    # 8 GPUs: 56 slices of 1g.5gb -> 16 of 3g.20gb per node.
    assert "$0.5000 -> $1.7500 per device-hour" in row
    # No ManagedCluster step (an existing cluster): its own parts are unknown, and the headline names them.
    assert ("partial, without the cluster's system pools and tier fee (no ManagedCluster in the preview: an existing "
            "cluster's)** ·") in next(line for line in out.splitlines() if line.startswith("**"))


def test_the_region_comes_from_the_cluster_or_the_config():
    document = b.autoscale_max()
    assert preview_region(parse_preview(json.dumps(document), "p")) == REGION
    document["config"] = {}
    assert preview_region(parse_preview(json.dumps(document), "p")) is None
    document["steps"].append(cluster_step())
    preview = parse_preview(json.dumps(document), "p")
    assert preview_region(preview) == REGION
    assert preview_vm_sizes(preview) == ["Standard_NC4as_T4_v3", "Standard_D4ds_v5"]


def test_report_prices_file_through_the_cli(tmp_path, capsys):
    document = b.autoscale_max()
    (tmp_path / "preview.json").write_text(json.dumps(document))
    (tmp_path / "prices.json").write_text(json.dumps(sheet({"Standard_NC4as_T4_v3": 0.6}).to_json()))
    assert main(["report", str(tmp_path / "preview.json"), "--prices", str(tmp_path / "prices.json")]) == 0
    out = capsys.readouterr().out
    assert "| Cost/month |" in out and "+$1,314/month at max" in out
    # A saved answer of another region: the file named is wrong, an error to fix (exit 2), as in `plan`.
    (tmp_path / "prices.json").write_text(json.dumps(sheet({"Standard_NC4as_T4_v3": 0.6}).to_json())
                                          .replace('"westeurope"', '"eastus"'))
    assert main(["report", str(tmp_path / "preview.json"), "--prices", str(tmp_path / "prices.json")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "holds prices for region 'eastus'" in err


def test_without_prices_the_comment_is_unchanged():
    document = b.readme_example()
    assert report(document, None) == render_report(parse_preview(json.dumps(document), "preview.json"), None)
    assert "Cost" not in report(document, None)


def test_a_spot_cap_the_change_leaves_below_the_spot_price_is_said_in_the_comment():
    def spot_pool(cap: float) -> dict:
        old = b.pool_inputs("t4ts", "Standard_NC4as_T4_v3", sharing="time-slicing-4", autoscale=(1, 3))
        new = {**old, "maxCount": 6, "scaleSetPriority": "Spot", "spotMaxPrice": cap}
        return b.preview([b.pool_step("update", "t4ts", old, new, detailed={"spotMaxPrice": {"kind": "update"}})])

    prices = sheet({"Standard_NC4as_T4_v3": 0.6})  # its Spot meter: 0.12
    # No ConfigMap in this preview, so the pool's resource name is not known: "its GPUs".

    lines = [line for line in report(spot_pool(0.1), prices).splitlines() if "spotMaxPrice $" in line]

    assert lines == [
        "_cost: pool t4ts's spotMaxPrice $0.1/node-hour is not above the Spot price of Standard_NC4as_T4_v3 in the "
        "price sheet ($0.12/node-hour, prices of 2026-12-01): Azure refuses to create or scale its nodes "
        "(SpotPriceGreaterThanProvidedMaxPrice) and evicts those it has while the price stays there, so its "
        "GPUs are not there; raise its spot.maxPrice in gpushare:pools, or set it to -1 (pay up to "
        "the on-demand price, never evicted for price)_"]
    assert "spotMaxPrice $" not in report(spot_pool(0.2), prices)
    assert "spotMaxPrice $" not in report(spot_pool(-1), prices)
    assert "spotMaxPrice $" not in report(spot_pool(0.1), dataclasses.replace(prices, currency="EUR"))


def test_a_spot_pool_is_priced_at_the_spot_meter_in_the_comment():
    """A Spot pool's nodes bill at the Spot price (a fifth of the Linux one in the stub's sheet): pricing them on
    demand would overstate the change fivefold."""
    old = b.pool_inputs("t4ts", "Standard_NC4as_T4_v3", sharing="time-slicing-4", autoscale=(1, 3))
    new = b.pool_inputs("t4ts", "Standard_NC4as_T4_v3", sharing="time-slicing-4", autoscale=(1, 6))
    for inputs in (old, new):
        inputs.update(scaleSetPriority="Spot", scaleSetEvictionPolicy="Delete", spotMaxPrice=-1)
    document = b.preview([b.pool_step("update", "t4ts", old, new, detailed={"maxCount": {"kind": "update"}})])
    out = report(document, sheet({"Standard_NC4as_T4_v3": 0.6}))
    row = next(line for line in out.splitlines() if line.startswith("| **t4ts**"))
    # The Spot meter: $0.12 a node-hour; 1-3 -> 1-6 nodes x 730 h.
    assert row.endswith("| $88-$263 -> $88-$526 |"), row
