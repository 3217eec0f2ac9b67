"""What a prices file must be (issue 39; docs/cost.md, "What a prices file must be"): one ISO 4217 currency the
Azure Retail Prices API serves, every item in it; every retailPrice a number from 0 to MAX_HOURLY_PRICE. A file
given to `plan --prices FILE` (or `report`, `usage`) that breaks a rule fails the command (exit 2), as it does as
`gpushare:metrics.prices`, naming every bad value at once: a PR's CI must not show a cost from a file nobody can
trust."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpushare.azure.prices import CLUSTER_FEE_QUERY, MAX_HOURLY_PRICE, PriceSheet
from tests.prices_stub import cluster_fee_items, meters_of
from tests.review import preview_builders as b
from tests.showback.showback_scenario import STACK_FILE
from tests.stack_files import run_cli

REGION = "westeurope"
DEV_SIZES = {"Standard_NC4as_T4_v3": 0.6, "Standard_NC8as_T4_v3": 0.85, "Standard_D4ds_v5": 0.2}
T4 = "Standard_NC4as_T4_v3"


def saved(currency: str = "USD") -> dict:
    items = {size: tuple(meters_of(size, REGION, price, currency)) for size, price in DEV_SIZES.items()}
    items[CLUSTER_FEE_QUERY] = tuple(cluster_fee_items(REGION, currency=currency))
    return PriceSheet(REGION, currency, "2026-12-01T08:00:00Z", "https://prices.azure.com", items).to_json()


def write(tmp_path: Path, document: dict) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(document))
    return path


def plan_error(capsys, path: Path) -> str:
    code, out, err = run_cli(capsys, "plan", "dev", "--json", "--prices", str(path))
    assert (code, out) == (2, ""), err
    assert "Traceback" not in err
    return err


def test_a_good_file_prices_the_plan(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "plan", "dev", "--json", "--prices", str(write(tmp_path, saved("EUR"))))
    assert code == 0 and json.loads(out)["cost"]["currency"] == "EUR"


@pytest.mark.parametrize("currency", ["EURO", "eur", "€", "XYZ", "PLN"])
def test_a_currency_that_is_not_an_iso_code_the_api_serves_is_refused(capsys, tmp_path, currency):
    document = saved()
    document["currency"] = currency
    err = plan_error(capsys, write(tmp_path, document))
    assert err.startswith(f"error: {tmp_path / 'prices.json'}: currency {currency!r} is not a currency the Azure "
                          "Retail Prices API serves; a prices file is in one of its ISO 4217 codes: USD, AUD, ")
    assert "hint: write the code (EUR, not EURO or €)" in err


def test_two_currencies_in_one_file_are_refused_naming_each_stray_item(capsys, tmp_path):
    document = saved()
    document["items"][T4][0]["currencyCode"] = "EUR"
    document["items"][CLUSTER_FEE_QUERY][0]["currencyCode"] = "GBP"
    err = plan_error(capsys, write(tmp_path, document))
    assert f'items.{T4}[0].currencyCode "EUR" is not the file\'s currency USD: one file, one currency' in err
    assert 'items.aks[0].currencyCode "GBP" is not the file\'s currency USD' in err
    assert "2 value(s) not prices in USD" in err


@pytest.mark.parametrize("price, problem", [
    (-0.6, "-0.6 is negative: a list price is 0 or more"), (float("nan"), "nan is not a finite number"),
    ("0.6", '"0.6" is not a number'), (True, "true is not a number"),
    (1e9, f"1e+09 is above {MAX_HOURLY_PRICE:,} USD an hour")], ids=["negative", "nan", "text", "bool", "absurd"])
def test_a_price_that_is_not_one_is_refused_naming_the_item(capsys, tmp_path, price, problem):
    document = saved()
    document["items"][T4][1]["retailPrice"] = price
    meter = document["items"][T4][1]["meterName"]
    err = plan_error(capsys, write(tmp_path, document))
    assert f"items.{T4}[1].retailPrice ({meter}): {problem}" in err
    assert "not filled in" not in err, "a wrong value is not an empty one"


def test_every_bad_value_is_named_at_once_with_the_empty_ones(capsys, tmp_path):
    document = saved()
    document["readAt"] = ""
    document["items"][T4][0]["retailPrice"] = -1
    document["items"]["Standard_D4ds_v5"][0]["retailPrice"] = None
    err = plan_error(capsys, write(tmp_path, document))
    first = err.splitlines()[0]
    assert "3 value(s) not prices in USD" in first
    assert f"items.{T4}[0].retailPrice" in first and "readAt (the date the prices are from" in first
    assert "items.Standard_D4ds_v5[0].retailPrice (" in first and "is not filled in" in first


def test_report_and_usage_refuse_the_same_file(capsys, tmp_path):
    document = saved()
    document["currency"] = "EURO"
    path = write(tmp_path, document)
    preview = tmp_path / "preview.json"
    preview.write_text(json.dumps(b.autoscale_max()))
    refusal = "currency 'EURO' is not a currency the Azure Retail Prices API serves"
    code, out, err = run_cli(capsys, "report", str(preview), "--prices", str(path))
    assert (code, out) == (2, "") and refusal in err
    # usage: refused before Prometheus is read (nothing listens on port 9).
    code, out, err = run_cli(capsys, "usage", str(STACK_FILE), "--prices", str(path), "--prometheus",
                             "http://127.0.0.1:9")
    assert (code, out) == (2, "") and refusal in err


def test_the_same_rules_hold_for_gpushare_metrics_prices(capsys, tmp_path):
    document = saved()
    document["items"][T4][0]["retailPrice"] = -0.6
    write(tmp_path, document)
    stack = tmp_path / STACK_FILE.name
    stack.write_text(STACK_FILE.read_text().replace("  gpushare:metrics:\n", "  gpushare:metrics:\n"
                                                    "    prices: prices.json\n"))
    code, out, err = run_cli(capsys, "plan", str(stack))
    assert (code, out) == (2, "")
    assert "gpushare:metrics.prices" in err and f"items.{T4}[0].retailPrice" in err and "is negative" in err
