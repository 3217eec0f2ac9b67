"""Faulty answers of the Azure Retail Prices API against `gpushare prices` (issue 39), through the local stub in the
API's shape: each ends in one message (exit 4) naming the API and what to do, within the command's read deadline.
The command runs in a child process bounded by a timeout, so a hang fails the test instead of stalling the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from email.utils import formatdate
from pathlib import Path

import pytest

from gpushare.azure.prices import MAX_PAGE_BYTES
from gpushare.azure.remote_read import MAX_JSON_DEPTH
from tests.https_stub import Fault, StubResponse
from tests.prices_stub import PricesStub, meters_of, vm_filter, vm_item
from tests.read_faults import CHILD_TIMEOUT, one_read_error

ROOT = Path(__file__).resolve().parents[2]
REGION = "westeurope"
T4 = "Standard_NC4as_T4_v3"
"""The dev stack's first size: its read is the command's first."""
DEV_PRICES = {T4: 0.6, "Standard_NC8as_T4_v3": 0.85, "Standard_D4ds_v5": 0.2}
DEADLINE = 4


@pytest.fixture
def stub():
    with PricesStub() as server:
        server.serve_stack(REGION, DEV_PRICES)
        yield server


def prices(stub: PricesStub, tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and k != "REQUESTS_CA_BUNDLE"}
    env.update(GPUSHARE_PRICES_ENDPOINT=stub.url, SSL_CERT_FILE=stub.ca_path, XDG_CACHE_HOME=str(tmp_path))
    return subprocess.run([sys.executable, "-m", "gpushare", "prices", "dev", *argv], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=CHILD_TIMEOUT)


def one_error(result: subprocess.CompletedProcess, stub: PricesStub, *fragments: str) -> str:
    return one_read_error(result, f"error: the Azure Retail Prices API at {stub.url}", *fragments)


def test_deeply_nested_json_is_one_error(stub, tmp_path):
    stub.serve(vm_filter(REGION, T4), [[]], first=[StubResponse(200, "[" * 5000 + "]" * 5000)])
    one_error(prices(stub, tmp_path), stub, f"nests JSON deeper than {MAX_JSON_DEPTH} levels")


@pytest.mark.parametrize("retry_after", ["3600", formatdate(2_000_000_000, usegmt=True), "1e400", "nan"])
def test_a_retry_after_past_the_deadline_is_not_waited_for(stub, tmp_path, retry_after):
    """Capped at 10 s (NaN: the backoff, 1, 2, 4 s), the wait would end past a 3 s deadline: the command stops then
    instead of waiting, and never raises on the header (NaN was a ValueError traceback)."""
    stub.serve(vm_filter(REGION, T4), [[]],
               first=[StubResponse(429, {"Error": {"Code": "TooManyRequests"}}, {"Retry-After": retry_after})] * 9)
    one_error(prices(stub, tmp_path, "--read-deadline", "3"), stub,
              "the server asked to retry later, after the read deadline of 3 s")


@pytest.mark.parametrize("fault", [Fault.SILENT, Fault.DRIP], ids=["never-answers", "drips-a-byte-a-second"])
def test_a_server_that_never_finishes_answering_ends_at_the_deadline(stub, tmp_path, fault):
    stub.serve(vm_filter(REGION, T4), [[]], first=[StubResponse(200, {"Items": [], "NextPageLink": None},
                                                                fault=fault)])
    one_error(prices(stub, tmp_path, "--read-deadline", str(DEADLINE)), stub,
              f"no complete answer within the read deadline of {DEADLINE} s (set by --read-deadline)",
              "hint: check the network, or use a saved answer: `plan --prices FILE`")


def test_a_body_cut_short_is_one_error(stub, tmp_path):
    stub.serve(vm_filter(REGION, T4), [[]], first=[StubResponse(200, {"Items": [], "NextPageLink": None},
                                                                fault=Fault.CUT_SHORT)])
    one_error(prices(stub, tmp_path), stub, "the answer was cut short after")


def test_a_body_larger_than_any_page_is_refused_as_it_arrives(stub, tmp_path):
    huge = b'{"Items": [], "NextPageLink": null, "x": "' + b"x" * MAX_PAGE_BYTES + b'"}'
    stub.serve(vm_filter(REGION, T4), [[]], first=[StubResponse(200, huge)])
    one_error(prices(stub, tmp_path), stub, "the answer is larger than 4 MiB")


@pytest.mark.parametrize("price, problem", [
    ("0.6", 'retailPrice "0.6" is not a number'), (float("nan"), "retailPrice nan is not a finite number"),
    (-0.6, "retailPrice -0.6 is negative"), (1e9, "retailPrice 1e+09 is above 1,000,000 USD an hour"),
    (None, "retailPrice is empty")], ids=["text", "nan", "negative", "absurd", "null"])
def test_an_item_that_is_not_a_price_is_refused_naming_it(stub, tmp_path, price, problem):
    items = meters_of(T4, REGION, 0.6)
    items[2] = {**items[2], "retailPrice": price}
    stub.serve(vm_filter(REGION, T4), [items])
    one_error(prices(stub, tmp_path), stub, f"answered an item that is not a price: Items[2] "
                                            f"({items[2]['meterName']}): {problem}")


def test_a_good_answer_still_reads(stub, tmp_path):
    stub.serve(vm_filter(REGION, T4), [[vm_item(T4, REGION, 0.6)]])
    result = prices(stub, tmp_path, "--read-deadline", str(DEADLINE))
    assert result.returncode == 0 and '"retailPrice": 0.6' in result.stdout, result.stderr
