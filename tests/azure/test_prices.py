"""The price reader against a local HTTPS stub of the Azure Retail Prices API: the real urllib code path, meter
choice among Windows, Spot and Low Priority meters, paging, retries, the day's cache, bad answers, saved answers."""

from __future__ import annotations

import json

import pytest

from gpushare.azure.prices import (
    CLUSTER_FEE_QUERY,
    PriceReader,
    PricesError,
    PriceSheet,
    pick_cluster_fee_meter,
    pick_vm_meter,
    read_saved_answer,
)
from gpushare.azure.remote_read import MAX_RETRY_WAIT_SECONDS
from tests.https_stub import StubResponse
from tests.prices_stub import (
    PricesStub,
    cluster_fee_items,
    fee_filter,
    meters_of,
    reach_prices,
    vm_filter,
    vm_item,
)

REGION = "westeurope"
T4 = "Standard_NC4as_T4_v3"


class Clock:
    def __init__(self):
        self.now = 1_790_000_000.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


@pytest.fixture
def stub(monkeypatch, tmp_path):
    with PricesStub() as server:
        reach_prices(monkeypatch, server, tmp_path / "cache")
        yield server


def reader(clock: Clock | None = None) -> PriceReader:
    import os
    clock = clock or Clock()
    return PriceReader(os.environ, sleep=clock.sleep, now=lambda: clock.now)


def test_the_linux_pay_as_you_go_meter_is_chosen_among_windows_spot_low_priority_and_devtest():
    items = meters_of(T4, REGION, 0.6)
    assert pick_vm_meter(items).hourly == 0.6
    assert pick_vm_meter(items).product_name == "Virtual Machines NCasT4_v3 Series"
    assert pick_vm_meter(items, spot=True).hourly == 0.12
    assert pick_vm_meter(items, spot=True).sku_name.endswith("Spot")


def test_the_newest_price_wins_and_a_missing_meter_is_unknown_not_zero():
    old = vm_item(T4, REGION, 0.5, effective="2025-01-01T00:00:00Z")
    new = vm_item(T4, REGION, 0.6, effective="2026-10-01T00:00:00Z")
    assert pick_vm_meter([new, old]).hourly == 0.6 and pick_vm_meter([new, old]).effective == "2026-10-01"
    assert pick_vm_meter([vm_item(T4, REGION, 1.0, "windows")]) is None
    assert pick_vm_meter([]) is None


def test_the_cluster_fee_is_the_standard_uptime_sla_meter_not_long_term_support():
    meter = pick_cluster_fee_meter(cluster_fee_items(REGION))
    assert meter.hourly == 0.10 and meter.meter_name == "Standard Uptime SLA"


def test_reads_follow_next_page_link_and_send_the_filter_and_currency(stub):
    # The Linux meter sits on the second page.
    meters = meters_of(T4, REGION, 0.6)
    stub.serve(vm_filter(REGION, T4), [meters[:3], meters[3:]])
    stub.serve(fee_filter(REGION), [cluster_fee_items(REGION)])
    sheet = reader().read(REGION, [T4])
    assert sheet.vm_meter(T4).hourly == 0.6
    assert sheet.cluster_fee_meter().hourly == 0.10
    assert stub.count(vm_filter(REGION, T4)) == 2 and stub.count(fee_filter(REGION)) == 1
    first = next(r for r in stub.requests if r.query.get("$filter") == [vm_filter(REGION, T4)])
    assert first.path == "/api/retail/prices" and first.query["currencyCode"] == ["'USD'"]


def test_answers_are_cached_for_a_day(stub):
    stub.serve_stack(REGION, {T4: 0.6})
    clock = Clock()
    reader(clock).read(REGION, [T4])
    assert len(stub.requests) == 2
    clock.now += 23 * 3600
    assert reader(clock).read(REGION, [T4]).vm_meter(T4).hourly == 0.6
    assert len(stub.requests) == 2, "a second read within a day comes from the cache"
    clock.now += 2 * 3600
    reader(clock).read(REGION, [T4])
    assert len(stub.requests) == 4, "after a day the API is read again"


def test_a_429_is_retried_after_its_retry_after(stub):
    stub.serve(vm_filter(REGION, T4), [meters_of(T4, REGION, 0.6)],
               first=[StubResponse(429, {"Error": {"Code": "TooManyRequests"}}, {"Retry-After": "3"})])
    stub.serve(fee_filter(REGION), [cluster_fee_items(REGION)],
               first=[StubResponse(503, "Service Unavailable")])
    clock = Clock()
    sheet = reader(clock).read(REGION, [T4])
    assert sheet.vm_meter(T4).hourly == 0.6 and sheet.cluster_fee_meter().hourly == 0.10
    assert clock.slept == [3.0, 1.0]
    assert stub.count(vm_filter(REGION, T4)) == 2


@pytest.mark.parametrize("retry_after", ["3600", "86400"])
def test_a_long_retry_after_is_capped_so_a_plan_never_hangs(stub, retry_after):
    """A throttled API may ask for an hour's wait; `plan` and `report` wait at most MAX_RETRY_WAIT_SECONDS each time,
    then try again (and give up with a message when the API keeps refusing)."""
    stub.serve(vm_filter(REGION, T4), [meters_of(T4, REGION, 0.6)],
               first=[StubResponse(429, {"Error": {"Code": "TooManyRequests"}}, {"Retry-After": retry_after})])
    stub.serve(fee_filter(REGION), [cluster_fee_items(REGION)])
    clock = Clock()
    assert reader(clock).read(REGION, [T4]).vm_meter(T4).hourly == 0.6
    assert clock.slept == [MAX_RETRY_WAIT_SECONDS] and MAX_RETRY_WAIT_SECONDS == 10


@pytest.mark.parametrize("retry_after, waited", [
    ("1e400", MAX_RETRY_WAIT_SECONDS), ("Wed, 18 May 2033 03:33:20 GMT", MAX_RETRY_WAIT_SECONDS), ("nan", 1.0),
    ("inf", MAX_RETRY_WAIT_SECONDS), ("-inf", 0.0), ("soon", 1.0)],
    ids=["overflow", "http-date", "nan", "inf", "minus-inf", "not-a-time"])
def test_any_retry_after_is_a_wait_from_0_to_the_cap(stub, retry_after, waited):
    """What float() makes of a header (inf, nan) and dates an hour or years ahead are all waits the cap bounds; one
    that is no time at all is the backoff's first step (1 s)."""
    stub.serve(vm_filter(REGION, T4), [meters_of(T4, REGION, 0.6)],
               first=[StubResponse(429, {"Error": {"Code": "TooManyRequests"}}, {"Retry-After": retry_after})])
    stub.serve(fee_filter(REGION), [cluster_fee_items(REGION)])
    clock = Clock()
    assert reader(clock).read(REGION, [T4]).vm_meter(T4).hourly == 0.6
    assert clock.slept == [waited]


def test_persistent_server_errors_give_up_with_one_message(stub):
    stub.serve(vm_filter(REGION, T4), [[]], first=[StubResponse(500, "boom")] * 5)
    with pytest.raises(PricesError, match="answered HTTP 500") as error:
        reader().read(REGION, [T4])
    assert error.value.exit_code == 4
    assert stub.count(vm_filter(REGION, T4)) == 4, "one try and three retries"


@pytest.mark.parametrize("body, expected", [
    ("<html>maintenance</html>", "not JSON"),
    ({"Items": "none", "NextPageLink": None}, "without its `Items` list"),
    ({"value": []}, "without its `Items` list"),
], ids=["html", "items-not-a-list", "other-shape"])
def test_a_malformed_page_is_refused(stub, body, expected):
    stub.serve(vm_filter(REGION, T4), [[]], first=[StubResponse(200, body)])
    with pytest.raises(PricesError, match=expected):
        reader().read(REGION, [T4])


def test_an_unknown_size_reads_as_no_meter(stub):
    stub.serve(vm_filter(REGION, "Standard_NV36ads_A10_v5"), [[]])
    stub.serve(fee_filter(REGION), [cluster_fee_items(REGION)])
    sheet = reader().read(REGION, ["Standard_NV36ads_A10_v5"])
    assert "Standard_NV36ads_A10_v5" in sheet.items and sheet.vm_meter("Standard_NV36ads_A10_v5") is None


def test_other_currencies_are_asked_for_and_an_answer_in_another_is_refused(stub):
    stub.serve_stack(REGION, {T4: 0.55}, currency="EUR")
    sheet = reader().read(REGION, [T4], "EUR")
    assert sheet.currency == "EUR" and sheet.vm_meter(T4).hourly == 0.55
    # An API that ignores the currency and answers in USD does not serve it.
    stub.serve(vm_filter(REGION, T4), [[vm_item(T4, REGION, 0.6)]], currency="XYZ")
    with pytest.raises(PricesError, match="does not serve prices in 'XYZ'") as error:
        reader().read(REGION, [T4], "XYZ")
    assert "EUR" in error.value.hint


def test_an_unreachable_api_says_so_and_names_the_saved_answer(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUSHARE_PRICES_ENDPOINT", "https://127.0.0.1:9")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(PricesError, match="cannot be reached") as error:
        reader().read(REGION, [T4])
    assert "--prices FILE" in error.value.hint


def test_the_endpoint_must_be_a_scheme_and_host(monkeypatch):
    monkeypatch.setenv("GPUSHARE_PRICES_ENDPOINT", "prices.example/api")
    with pytest.raises(PricesError, match="not a scheme and host"):
        reader()


def sheet() -> PriceSheet:
    return PriceSheet(REGION, "USD", "2026-12-01T08:00:00Z", "https://prices.azure.com",
                      {T4: tuple(meters_of(T4, REGION, 0.6)), CLUSTER_FEE_QUERY: tuple(cluster_fee_items(REGION))})


def test_a_saved_answer_reads_back_the_same_prices(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(sheet().to_json()))
    loaded = read_saved_answer(path, REGION, None)
    assert loaded.vm_meter(T4) == sheet().vm_meter(T4) and loaded.read_at == "2026-12-01T08:00:00Z"
    assert loaded.source == str(path)


@pytest.mark.parametrize("content, region, currency, expected", [
    ("not json", REGION, None, "not JSON"),
    (json.dumps({"pools": []}), REGION, None, "not a saved prices answer"),
    (None, "eastus", None, "holds prices for region 'westeurope', but the stack is in 'eastus'"),
    (None, REGION, "EUR", "holds prices in 'USD', not 'EUR'"),
], ids=["not-json", "not-an-answer", "other-region", "other-currency"])
def test_a_saved_answer_that_does_not_fit_is_refused(tmp_path, content, region, currency, expected):
    path = tmp_path / "prices.json"
    path.write_text(content if content is not None else json.dumps(sheet().to_json()))
    with pytest.raises(PricesError, match=expected) as error:
        read_saved_answer(path, region, currency)
    assert error.value.exit_code == 2, "a file the user named is fixed like a stack file"
