"""Pay-as-you-go list prices from the Azure Retail Prices API: one read per VM size and region, a day's cache, and
the saved answer `gpushare prices STACK` writes for `plan --prices FILE`.

The API (https://prices.azure.com/api/retail/prices, public, no credentials; Microsoft Learn "Azure Retail Prices
overview") answers `{BillingCurrency, Items: [...], NextPageLink, Count}`, at most 100 items a page, the next page's
URL in `NextPageLink` (null on the last). gpushare asks, per size:
`$filter=serviceName eq 'Virtual Machines' and armRegionName eq '<region>' and armSkuName eq '<size>' and
priceType eq 'Consumption'` with `currencyCode='<currency>'`, and for the cluster fee
`serviceName eq 'Azure Kubernetes Service' and armRegionName eq '<region>' and priceType eq 'Consumption'`.

Which item is the price (`pick_vm_meter`, `pick_cluster_fee_meter`):
- a VM's Linux pay-as-you-go meter: `productName` not ending in "Windows", `skuName`/`meterName` not ending in
  "Low Priority" or "Spot", `unitOfMeasure` "1 Hour", `type` "Consumption"; a Spot pool takes the meter whose
  `skuName` ends in "Spot" instead;
- the Standard tier's cluster management fee: `productName` "Azure Kubernetes Service", `skuName` "Standard",
  `meterName` "Standard Uptime SLA" (the Free tier has no fee; Premium's "Long Term Support" meter is not it).
Of several matching items the newest `effectiveStartDate` wins. No matching item is "unknown", never zero.

A saved answer (`gpushare prices STACK > FILE`, or `prices STACK --template` filled in by hand; JSON Schema:
`PRICES_SCHEMA_FILE` beside this module, from `prices_file_schema()`) is `{kind: "gpushare-prices", version: 1,
region, currency, readAt, source, items: {<VM size> | "aks": [<API item>, ...]}}`: the API's items as it answered
them, per query; every `retailPrice` a number per hour in `currency`.

Read with the standard library (urllib): TLS trust is the system store, or the file `REQUESTS_CA_BUNDLE` or
`SSL_CERT_FILE` names (how a mirror or a test stub is trusted); `GPUSHARE_PRICES_ENDPOINT` replaces
`https://prices.azure.com` (scheme and host). A 429 or 5xx is retried a few times (honouring Retry-After, capped);
every read ends within the command's read deadline, a page is at most `MAX_PAGE_BYTES` and its JSON nests at most
`remote_read.MAX_JSON_DEPTH` deep (`gpushare.azure.remote_read`), and every item's `retailPrice` is a price
(`price_problem`). Answers are cached for a day under `$XDG_CACHE_HOME/gpushare/prices` (or
`~/.cache/gpushare/prices`), keyed by the request URL.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpushare.azure.remote_read import (
    ReadBoundError,
    ReadDeadline,
    check_nesting,
    read_body,
    retry_wait,
)
from gpushare.errors import GpushareError
from gpushare.model.environment_variables import PRICES_ENDPOINT_ENV

DEFAULT_PRICES_ENDPOINT = "https://prices.azure.com"
PRICES_PATH = "/api/retail/prices"
DEFAULT_CURRENCY = "USD"
DOCUMENTED_CURRENCIES = ("USD", "AUD", "BRL", "CAD", "CHF", "CNY", "DKK", "EUR", "GBP", "INR", "JPY", "KRW", "NOK",
                         "NZD", "RUB", "SEK", "TWD")
"""The currencies Microsoft Learn lists for the API ("Supported currencies", each an ISO 4217 code). Asking the API
for another is left to its answer (an answer in another currency than asked is refused); a saved answer must be in
one of these (`read_saved_answer`): every figure gpushare prints is this API's list price."""
MAX_HOURLY_PRICE = 1_000_000
"""The highest `retailPrice` accepted, per hour: the dearest VM sizes list at about USD 100 an hour, about KRW
140,000 in the API's weakest currency; a price above this is a typo or a corrupt answer, not a price."""
CACHE_SECONDS = 24 * 3600
TIMEOUT_SECONDS = 20
"""Silence allowed while connecting or waiting for an answer, within the read deadline."""
RETRIES = 3
MAX_PAGE_BYTES = 4 * 1024 * 1024
"""A page holds at most 100 items of about 600 bytes."""
MAX_PAGES = 50
"""A size in one region has a few dozen meters (Linux, Windows, Spot, Low Priority, DevTest): one page. More than
this many pages means the filter did not apply."""
SAVED_ANSWER_KIND = "gpushare-prices"
SAVED_ANSWER_VERSION = 1
CLUSTER_FEE_QUERY = "aks"
"""The key of the cluster fee's items in a saved answer (VM sizes are keyed by their ARM name)."""
LIST_PRICE_NOTE = ("pay-as-you-go list prices (Linux), from the Azure Retail Prices API: no reservations, savings "
                   "plans, Azure Hybrid Benefit or negotiated rates")
CURRENCY_RULES = ("every figure is in one currency, never converted: the API's answer in the currency asked "
                  f"(--currency, default {DEFAULT_CURRENCY}); a saved answer in the one it records, which --currency "
                  "then only checks (a file in another is refused)")
"""The currency rules, stated once: the `--currency` help of `plan`, `report` and `prices`, and the refusal."""
PRICES_SCHEMA_FILE = Path(__file__).with_name("prices-file.schema.json")
TEMPLATE_SOURCE = "filled in by hand (gpushare prices --template)"
HOW_TO_PRICE = ("cost: not priced (no --prices given); `plan --prices` reads list prices from the Azure Retail "
                "Prices API, `plan --prices FILE` a saved answer (`gpushare prices STACK > prices.json`, or "
                "`--template` to fill in by hand)")


class PricesError(GpushareError):
    """Prices could not be read: exits like other Azure reads."""

    exit_code = 4

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class PricesFileError(PricesError):
    """A saved answer the user named is unreadable, invalid or does not fit the stack: a file to fix, like an invalid
    stack file (exit 2), whichever command was given it."""

    exit_code = 2


@dataclass(frozen=True)
class Meter:
    """The one API item that prices a VM size (or the cluster fee) per hour."""

    hourly: float
    """`retailPrice` per hour, in the answer's currency."""
    meter_name: str
    product_name: str
    sku_name: str
    effective: str
    """`effectiveStartDate`, the date the price holds from (`YYYY-MM-DD`)."""



@dataclass(frozen=True)
class PriceSheet:
    """What the API answered for one region and currency: the raw items per query (a VM size, or the cluster fee)."""

    region: str
    currency: str
    read_at: str
    """When the answer was read (ISO 8601, UTC): the price date every figure quotes."""
    source: str
    """The endpoint that answered, or the saved answer's file."""
    items: Mapping[str, tuple[Mapping[str, Any], ...]]

    def vm_meter(self, vm_size: str, spot: bool = False) -> Meter | None:
        return pick_vm_meter(self.items.get(vm_size, ()), spot=spot)

    def cluster_fee_meter(self) -> Meter | None:
        return pick_cluster_fee_meter(self.items.get(CLUSTER_FEE_QUERY, ()))

    def to_json(self) -> dict[str, Any]:
        return {"kind": SAVED_ANSWER_KIND, "version": SAVED_ANSWER_VERSION, "region": self.region,
                "currency": self.currency, "readAt": self.read_at, "source": self.source,
                "items": {query: list(items) for query, items in sorted(self.items.items())}}


# --- which item is the price ------------------------------------------------------------------------------------


def _is_hourly_consumption(item: Mapping[str, Any]) -> bool:
    return (item.get("unitOfMeasure") == "1 Hour" and item.get("type") == "Consumption"
            and isinstance(item.get("retailPrice"), int | float) and not isinstance(item.get("retailPrice"), bool))


def _newest(items: list[Mapping[str, Any]]) -> Meter | None:
    if not items:
        return None
    item = max(items, key=lambda i: str(i.get("effectiveStartDate", "")))
    return Meter(hourly=float(item["retailPrice"]), meter_name=str(item.get("meterName", "")),
                 product_name=str(item.get("productName", "")), sku_name=str(item.get("skuName", "")),
                 effective=str(item.get("effectiveStartDate", ""))[:10])


def pick_vm_meter(items: Sequence[Mapping[str, Any]], spot: bool = False) -> Meter | None:
    """The Linux pay-as-you-go (or Spot) hourly meter of a VM size among the API's items."""
    def variant(item: Mapping[str, Any]) -> str:
        names = (str(item.get("skuName", "")), str(item.get("meterName", "")))
        if any(name.endswith("Low Priority") for name in names):
            return "low-priority"
        return "spot" if any(name.endswith("Spot") for name in names) else "regular"

    wanted = "spot" if spot else "regular"
    return _newest([item for item in items if _is_hourly_consumption(item)
                    and not str(item.get("productName", "")).endswith("Windows") and variant(item) == wanted])


def pick_cluster_fee_meter(items: Sequence[Mapping[str, Any]]) -> Meter | None:
    """The Standard tier's hourly cluster management fee ("Standard Uptime SLA")."""
    return _newest([item for item in items if _is_hourly_consumption(item)
                    and item.get("productName") == "Azure Kubernetes Service" and item.get("skuName") == "Standard"
                    and item.get("meterName") == "Standard Uptime SLA"])


# --- reading the API --------------------------------------------------------------------------------------------


def prices_endpoint(environ: Mapping[str, str]) -> str:
    endpoint = (environ.get(PRICES_ENDPOINT_ENV) or DEFAULT_PRICES_ENDPOINT).rstrip("/")
    parts = urllib.parse.urlsplit(endpoint)
    if parts.scheme not in ("https", "http") or not parts.netloc or parts.path not in ("", "/"):
        raise PricesError(f"{PRICES_ENDPOINT_ENV}={endpoint!r} is not a scheme and host such as "
                          f"{DEFAULT_PRICES_ENDPOINT}; unset it to read Microsoft's API")
    return endpoint


def _query_url(endpoint: str, filter_: str, currency: str) -> str:
    query = urllib.parse.urlencode({"currencyCode": f"'{currency}'", "$filter": filter_},
                                   quote_via=urllib.parse.quote)
    return f"{endpoint}{PRICES_PATH}?{query}"


def vm_filter(region: str, vm_size: str) -> str:
    return (f"serviceName eq 'Virtual Machines' and armRegionName eq '{region}' and armSkuName eq '{vm_size}' "
            f"and priceType eq 'Consumption'")


def cluster_fee_filter(region: str) -> str:
    return f"serviceName eq 'Azure Kubernetes Service' and armRegionName eq '{region}' and priceType eq 'Consumption'"


def _ssl_context(environ: Mapping[str, str]) -> ssl.SSLContext:
    cafile = environ.get("REQUESTS_CA_BUNDLE") or environ.get("SSL_CERT_FILE")
    return ssl.create_default_context(cafile=cafile or None)


def _cache_dir(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_CACHE_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".cache")
    return Path(base) / "gpushare" / "prices"


class PriceReader:
    """Reads and caches one region's items per query; `sleep` and `now` are there for tests."""

    def __init__(self, environ: Mapping[str, str], *, deadline: ReadDeadline | None = None, sleep=time.sleep,
                 now=time.time) -> None:
        self.endpoint = prices_endpoint(environ)
        self._deadline = deadline or ReadDeadline.from_environ(environ)
        self._context = _ssl_context(environ)
        self._cache = _cache_dir(environ)
        self._sleep = sleep
        self._now = now

    def read(self, region: str, vm_sizes: Sequence[str], currency: str = DEFAULT_CURRENCY) -> PriceSheet:
        """Every item for each size and for the cluster fee, or `PricesError` naming what failed."""
        queries = {size: vm_filter(region, size) for size in dict.fromkeys(vm_sizes)}
        queries[CLUSTER_FEE_QUERY] = cluster_fee_filter(region)
        items = {query: tuple(self._items(_query_url(self.endpoint, filter_, currency), currency))
                 for query, filter_ in queries.items()}
        read_at = dt.datetime.fromtimestamp(self._now(), dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return PriceSheet(region=region, currency=currency, read_at=read_at, source=self.endpoint, items=items)

    def _items(self, url: str, currency: str) -> list[Mapping[str, Any]]:
        cached = self._cached(url)
        if cached is not None:
            return cached
        items: list[Mapping[str, Any]] = []
        next_url: str | None = url
        for _ in range(MAX_PAGES):
            page = self._page(next_url, currency)
            items += page["Items"]
            next_url = page.get("NextPageLink")
            if not next_url:
                self._store(url, items)
                return items
        raise PricesError(f"the Azure Retail Prices API at {self.endpoint} answered more than {MAX_PAGES} pages for "
                          f"one VM size; its filter did not apply")

    def _page(self, url: str, currency: str) -> Mapping[str, Any]:
        what = f"the Azure Retail Prices API at {self.endpoint}"
        for attempt in range(RETRIES + 1):
            request = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": "gpushare"})
            try:
                remaining = self._deadline.check(what)
                with urllib.request.urlopen(request, timeout=min(TIMEOUT_SECONDS, remaining),
                                            context=self._context) as response:
                    body = read_body(response, limit=MAX_PAGE_BYTES, deadline=self._deadline, what=what)
                break
            except ReadBoundError as exc:
                raise PricesError(str(exc), hint=SAVED_ANSWER_HINT) from None
            except urllib.error.HTTPError as exc:
                if (exc.code == 429 or exc.code >= 500) and attempt < RETRIES:
                    self._wait(retry_wait(exc.headers.get("Retry-After"), attempt), what)
                    continue
                detail = _error_detail(exc, self._deadline, what)
                if exc.code == 400 and "currency" in detail.lower():
                    raise _currency_error(currency, self.endpoint) from None
                raise PricesError(f"{what} answered HTTP {exc.code}: {detail or exc.reason}") from None
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                if self._deadline.remaining() <= 0:
                    raise PricesError(str(self._deadline.exceeded(what)),
                                      hint=SAVED_ANSWER_HINT) from None
                if attempt < RETRIES:
                    self._wait(retry_wait(None, attempt), what)
                    continue
                reason = getattr(exc, "reason", exc)
                raise PricesError(f"{what} cannot be reached: {reason}", hint=SAVED_ANSWER_HINT) from None
        return _checked_page(body, self.endpoint, currency)

    def _wait(self, seconds: float, what: str) -> None:
        """The wait before a retry, or `PricesError` when it would end past the deadline."""
        try:
            self._deadline.sleep(seconds, what, self._sleep)
        except ReadBoundError as exc:
            raise PricesError(str(exc), hint=SAVED_ANSWER_HINT) from None

    def _cached(self, url: str) -> list[Mapping[str, Any]] | None:
        path = self._cache / f"{hashlib.sha256(url.encode()).hexdigest()}.json"
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return None
        fresh = isinstance(entry, dict) and entry.get("url") == url and isinstance(entry.get("items"), list) \
            and self._now() - float(entry.get("storedAt", 0)) < CACHE_SECONDS
        return entry["items"] if fresh else None

    def _store(self, url: str, items: list[Mapping[str, Any]]) -> None:
        path = self._cache / f"{hashlib.sha256(url.encode()).hexdigest()}.json"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"url": url, "storedAt": self._now(), "items": items}), encoding="utf-8")
        except OSError:
            pass  # a read-only home only costs the next run a new read


SAVED_ANSWER_HINT = "check the network, or use a saved answer: `plan --prices FILE`"


def _error_detail(exc: urllib.error.HTTPError, deadline: ReadDeadline, what: str) -> str:
    """The first 300 characters of an error's body, read within the deadline ("" when it cannot be)."""
    try:
        body = read_body(exc.fp, limit=64 * 1024, deadline=deadline, what=what) if exc.fp else b""
    except ReadBoundError:
        body = b""
    return body.decode("utf-8", "replace")[:300]


def _currency_error(currency: str, endpoint: str) -> PricesError:
    return PricesError(f"the Azure Retail Prices API at {endpoint} does not serve prices in {currency!r}",
                       hint=f"use one of the currencies it documents: {', '.join(DOCUMENTED_CURRENCIES)}")


def _checked_page(body: bytes, endpoint: str, currency: str) -> Mapping[str, Any]:
    what = f"the Azure Retail Prices API at {endpoint}"
    try:
        check_nesting(body, what)
        page = json.loads(body)
    except ReadBoundError as exc:
        raise PricesError(str(exc)) from None
    except ValueError:
        raise PricesError(f"{what} answered something that is not JSON: {body[:120]!r}") from None
    if not isinstance(page, dict) or not isinstance(page.get("Items"), list) \
            or not all(isinstance(item, dict) for item in page["Items"]) \
            or not isinstance(page.get("NextPageLink"), str | None):
        raise PricesError(f"the Azure Retail Prices API at {endpoint} answered JSON without its `Items` list and "
                          f"`NextPageLink`: not a retail prices page")
    answered = {page.get("BillingCurrency"), *(item.get("currencyCode") for item in page["Items"])} - {None}
    if answered - {currency}:
        raise _currency_error(currency, endpoint)
    for index, item in enumerate(page["Items"]):
        if problem := price_problem(item.get("retailPrice"), currency):
            raise PricesError(f"{what} answered an item that is not a price: Items[{index}] ({_meter(item)}): "
                              f"retailPrice {problem}; retry, and report it if it persists",
                              hint=SAVED_ANSWER_HINT)
    return page


def price_problem(price: object, currency: str) -> str | None:
    """What is wrong with a `retailPrice` (None: a price per hour): a number, finite, at least 0 and at most
    `MAX_HOURLY_PRICE`. The API sends one in every item; JSON's decoder also takes NaN and Infinity."""
    if price is None:
        return "is empty"
    if not isinstance(price, int | float) or isinstance(price, bool):
        return f"{json.dumps(price)[:40]} is not a number"
    if not math.isfinite(price):
        return f"{price} is not a finite number"
    if price < 0:
        return f"{price} is negative: a list price is 0 or more"
    if price > MAX_HOURLY_PRICE:
        return (f"{price:g} is above {MAX_HOURLY_PRICE:,} {currency} an hour, more than any VM size lists at in any "
                "currency the API serves")
    return None


def _meter(item: Mapping[str, Any]) -> str:
    return str(item.get("meterName") or item.get("skuName") or "?")


# --- saved answers ----------------------------------------------------------------------------------------------


def read_saved_answer(path: Path, region: str, currency: str | None) -> PriceSheet:
    """A file `gpushare prices STACK` wrote, for this region (and currency, when one is asked for); every way it
    does not fit is a `PricesFileError` (exit 2), every bad value in it named at once."""
    write = f"`gpushare prices STACK > {path.name}`"
    try:
        text = path.read_bytes()
        check_nesting(text, str(path))
        doc = json.loads(text)
    except OSError as exc:
        raise PricesFileError(f"{path}: cannot be read ({exc.strerror or exc})",
                              hint=f"write it with {write}, or name the file that has it") from None
    except (ValueError, ReadBoundError):
        raise PricesFileError(f"{path}: not JSON; expected what {write} writes") from None
    if not isinstance(doc, dict) or doc.get("kind") != SAVED_ANSWER_KIND or doc.get("version") != SAVED_ANSWER_VERSION \
            or not isinstance(doc.get("items"), dict) or not isinstance(doc.get("currency"), str) \
            or not all(isinstance(v, list) and all(isinstance(i, dict) for i in v) for v in doc["items"].values()):
        raise PricesFileError(f"{path}: not a saved prices answer (kind {SAVED_ANSWER_KIND!r}, version "
                              f"{SAVED_ANSWER_VERSION}); write one with {write}")
    if doc.get("region") != region:
        raise PricesFileError(f"{path}: holds prices for region {doc.get('region')!r}, but the stack is in "
                              f"{region!r}; write one for this stack with {write}")
    if doc["currency"] not in DOCUMENTED_CURRENCIES:
        raise PricesFileError(
            f"{path}: currency {doc['currency']!r} is not a currency the Azure Retail Prices API serves; a prices "
            f"file is in one of its ISO 4217 codes: {', '.join(DOCUMENTED_CURRENCIES)}",
            hint=f"write the code (EUR, not EURO or €), or save the API's answer with {write}")
    if currency is not None and doc["currency"] != currency:
        raise PricesFileError(f"{path}: holds prices in {doc['currency']!r}, not {currency!r} (--currency): "
                              f"{CURRENCY_RULES}",
                              hint=f"drop --currency to use the file's {doc['currency']}, or write one in "
                                   f"{currency} with `gpushare prices STACK --currency {currency} > {path.name}`")
    empty, wrong = _file_problems(doc)
    if wrong:
        listed = wrong + [f"{value} is not filled in" for value in empty]
        raise PricesFileError(f"{path}: {len(listed)} value(s) not prices in {doc['currency']}: {'; '.join(listed)}",
                              hint=f"each retailPrice is a number per hour from 0 to {MAX_HOURLY_PRICE:,}, every "
                                   f"currencyCode the file's {doc['currency']}; or save the API's answer with {write}")
    if empty:
        raise PricesFileError(f"{path}: {len(empty)} value(s) not filled in: {'; '.join(empty)}",
                              hint=f"fill each in (retailPrice: a number per hour in {doc['currency']}), or save "
                                   f"the API's answer with {write}")
    return PriceSheet(region=region, currency=doc["currency"], read_at=str(doc.get("readAt", "")),
                      source=str(path), items={q: tuple(items) for q, items in doc["items"].items()})


def _file_problems(doc: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(every value a template leaves empty: a null `retailPrice`, an empty `readAt`; every value that is wrong: a
    price that is not one (`price_problem`), an item in another currency than the file's)."""
    dated = isinstance(doc.get("readAt"), str) and doc["readAt"]
    empty = [] if dated else ["readAt (the date the prices are from, e.g. 2026-12-01)"]
    wrong = []
    for query, items in doc["items"].items():
        for index, item in enumerate(items):
            where = f"items.{query}[{index}]"
            price = item.get("retailPrice")
            if price is None:
                empty.append(f"{where}.retailPrice ({_meter(item)}, per {item.get('unitOfMeasure', 'hour')})")
            elif problem := price_problem(price, doc["currency"]):
                wrong.append(f"{where}.retailPrice ({_meter(item)}): {problem}")
            if "currencyCode" in item and item["currencyCode"] != doc["currency"]:
                wrong.append(f"{where}.currencyCode {json.dumps(item['currencyCode'])[:40]} is not the file's "
                             f"currency {doc['currency']}: one file, one currency, never converted")
    return empty, wrong


# --- a file to fill in by hand ----------------------------------------------------------------------------------


def _template_item(region: str, currency: str, product: str, sku: str, meter: str, arm_sku: str) -> dict[str, Any]:
    """One meter as the API shapes it (the fields `pick_vm_meter`/`pick_cluster_fee_meter` read), price empty."""
    return {"armRegionName": region, "armSkuName": arm_sku, "productName": product, "skuName": sku,
            "meterName": meter, "unitOfMeasure": "1 Hour", "type": "Consumption", "currencyCode": currency,
            "effectiveStartDate": "", "retailPrice": None}


def fill_in_template(region: str, currency: str, vm_sizes: Mapping[str, tuple[bool, bool]],
                     cluster_fee: bool) -> dict[str, Any]:
    """A saved answer to fill in by hand: per VM size (`vm_sizes`: size -> (needs the pay-as-you-go meter, needs
    the Spot meter)) one item per meter the cost reads, and the Standard tier's fee when `cluster_fee`; every
    `retailPrice` and `readAt` empty, which `read_saved_answer` refuses until they are filled in."""
    items: dict[str, list[dict[str, Any]]] = {}
    for size, (regular, spot) in vm_sizes.items():
        short = size.removeprefix("Standard_").replace("_", " ")
        items[size] = ([_template_item(region, currency, "Virtual Machines", short, short, size)] if regular else [])
        items[size] += [_template_item(region, currency, "Virtual Machines", f"{short} Spot", f"{short} Spot", size)
                        ] if spot else []
    if cluster_fee:
        items[CLUSTER_FEE_QUERY] = [_template_item(region, currency, "Azure Kubernetes Service", "Standard",
                                                   "Standard Uptime SLA", "")]
    return {"kind": SAVED_ANSWER_KIND, "version": SAVED_ANSWER_VERSION, "region": region, "currency": currency,
            "readAt": "", "source": TEMPLATE_SOURCE, "items": items}


def prices_file_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a saved answer: what `read_saved_answer` accepts (a filled-in template
    too; an empty one fails it, as the reader refuses it). Written to `prices-file.schema.json` (package data) by
    `gpushare schema --prices > <that file>`; a test keeps the two equal and the schema agreeing with the reader."""
    price = {"type": "number", "minimum": 0, "maximum": MAX_HOURLY_PRICE,
             "description": "per unitOfMeasure (1 Hour), in the file's currency"}
    currency = {"enum": list(DOCUMENTED_CURRENCIES),
                "description": "an ISO 4217 code the Azure Retail Prices API serves; one per file"}
    item = {"type": "object", "required": ["retailPrice"],
            "properties": {"retailPrice": price,
                           "meterName": {"type": "string"}, "skuName": {"type": "string"},
                           "productName": {"type": "string"}, "unitOfMeasure": {"type": "string"},
                           "type": {"type": "string"}, "effectiveStartDate": {"type": "string"},
                           "currencyCode": currency}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://gpushare.invalid/prices-file.schema.json",
        "title": "gpushare saved prices answer",
        "description": "What `gpushare prices STACK` writes (the Azure Retail Prices API's items per query) or "
                       "`gpushare prices STACK --template` leaves to fill in; read by `plan --prices FILE` and "
                       f"`report --prices FILE`. Currency: {CURRENCY_RULES}.",
        "type": "object",
        "required": ["kind", "version", "region", "currency", "readAt", "items"],
        # One currency per file: each item's currencyCode, where it has one, is the file's (JSON Schema cannot
        # compare two values, so one branch per currency).
        "allOf": [{"if": {"properties": {"currency": {"const": code}}},
                   "then": {"properties": {"items": {"additionalProperties": {
                       "items": {"properties": {"currencyCode": {"const": code}}}}}}}}
                  for code in DOCUMENTED_CURRENCIES],
        "properties": {
            "kind": {"const": SAVED_ANSWER_KIND},
            "version": {"const": SAVED_ANSWER_VERSION},
            "region": {"type": "string", "description": "armRegionName: the stack's azure-native:location"},
            "currency": {**currency, "description": "the currency of every retailPrice: an ISO 4217 code the Azure "
                                                    "Retail Prices API serves"},
            "readAt": {"type": "string", "minLength": 1,
                       "description": "when the prices were read (ISO 8601): the price date every figure quotes"},
            "source": {"type": "string"},
            "items": {"type": "object", "description": f"per VM size (ARM name) and {CLUSTER_FEE_QUERY!r} (the "
                                                       "cluster fee): the API's items",
                      "additionalProperties": {"type": "array", "items": item}},
        },
    }
