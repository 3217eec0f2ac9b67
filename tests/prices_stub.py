"""A local HTTPS stand-in for the Azure Retail Prices API, serving its real response shape, for tests that drive
gpushare's real price reader (urllib) through `GPUSHARE_PRICES_ENDPOINT` and `SSL_CERT_FILE`.

A page is `{BillingCurrency, CustomerEntityId, CustomerEntityType, Items, NextPageLink, Count}`; items carry the
fields the API documents (`retailPrice`, `unitPrice`, `armSkuName`, `armRegionName`, `meterName`, `productName`,
`skuName`, `type`, `unitOfMeasure`, `currencyCode`, `effectiveStartDate`, ...). Routes are keyed by the request's
`$filter` and `$skip`, so `NextPageLink` paging is served as the API serves it.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from tests.https_stub import HttpsStub, StubResponse

PATH = "/api/retail/prices"
SERIES = {"Standard_NC4as_T4_v3": ("NCasT4_v3", "NC4as T4 v3"), "Standard_NC8as_T4_v3": ("NCasT4_v3", "NC8as T4 v3"),
          "Standard_ND96asr_v4": ("NDasr_A100_v4", "ND96asr A100 v4"), "Standard_D4ds_v5": ("Ddsv5", "D4ds v5"),
          "Standard_NC40ads_H100_v5": ("NCadsH100v5", "NC40ads H100 v5"),
          "Standard_ND96isr_H100_v5": ("NDisrH100v5", "ND96isr H100 v5")}


def vm_item(size: str, region: str, price: float, variant: str = "linux", currency: str = "USD",
            effective: str = "2026-10-01T00:00:00Z") -> dict[str, Any]:
    """One VM meter as the API lists it: `variant` linux, windows, spot or low-priority."""
    series, short = SERIES.get(size, (size.removeprefix("Standard_"), size.removeprefix("Standard_")))
    suffix = {"linux": "", "windows": "", "spot": " Spot", "low-priority": " Low Priority"}[variant]
    product = f"Virtual Machines {series} Series" + (" Windows" if variant == "windows" else "")
    return {
        "currencyCode": currency, "tierMinimumUnits": 0.0, "retailPrice": price, "unitPrice": price,
        "armRegionName": region, "location": "EU West", "effectiveStartDate": effective,
        "meterId": f"meter-{size}-{variant}", "meterName": f"{short}{suffix}", "productId": f"prod-{series}",
        "skuId": f"sku-{size}-{variant}", "productName": product, "skuName": f"{short}{suffix}",
        "serviceName": "Virtual Machines", "serviceId": "DZH313Z7MMC8", "serviceFamily": "Compute",
        "unitOfMeasure": "1 Hour", "type": "Consumption", "isPrimaryMeterRegion": True, "armSkuName": size,
    }


def meters_of(size: str, region: str, linux: float, currency: str = "USD") -> list[dict[str, Any]]:
    """A size's usual meters: Windows, Spot and Low Priority beside the Linux one (Linux last, so a reader that
    takes the first item is wrong)."""
    return [vm_item(size, region, round(linux * 1.4, 4), "windows", currency),
            vm_item(size, region, round(linux * 0.2, 4), "spot", currency),
            vm_item(size, region, round(linux * 0.2, 4), "low-priority", currency),
            {**vm_item(size, region, linux, "linux", currency), "type": "DevTestConsumption"},
            vm_item(size, region, linux, "linux", currency)]


def cluster_fee_items(region: str, hourly: float = 0.10, currency: str = "USD") -> list[dict[str, Any]]:
    base = {"currencyCode": currency, "tierMinimumUnits": 0.0, "armRegionName": region, "location": "EU West",
            "effectiveStartDate": "2024-04-01T00:00:00Z", "productName": "Azure Kubernetes Service",
            "serviceName": "Azure Kubernetes Service", "serviceFamily": "Compute", "unitOfMeasure": "1 Hour",
            "type": "Consumption", "armSkuName": "", "isPrimaryMeterRegion": True}
    return [{**base, "retailPrice": hourly, "unitPrice": hourly, "skuName": "Standard",
             "meterName": "Standard Uptime SLA", "meterId": "aks-standard", "skuId": "aks-standard"},
            {**base, "retailPrice": 0.6, "unitPrice": 0.6, "skuName": "Premium",
             "meterName": "Standard Long Term Support", "meterId": "aks-lts", "skuId": "aks-lts"}]


def vm_filter(region: str, size: str) -> str:
    return (f"serviceName eq 'Virtual Machines' and armRegionName eq '{region}' and armSkuName eq '{size}' "
            f"and priceType eq 'Consumption'")


def fee_filter(region: str) -> str:
    return f"serviceName eq 'Azure Kubernetes Service' and armRegionName eq '{region}' and priceType eq 'Consumption'"


class PricesStub(HttpsStub):
    def request_key(self, method: str, path: str, query: Mapping[str, list[str]]):
        return (path, (query.get("$filter") or [""])[0], int((query.get("$skip") or ["0"])[0]),
                (query.get("currencyCode") or ["'USD'"])[0].strip("'"))

    def no_route(self, method: str, path: str) -> StubResponse:
        return StubResponse(400, {"Error": {"Code": "BadRequest", "Message": f"no canned answer for {path}"}})

    def serve(self, filter_: str, pages: Sequence[Sequence[dict[str, Any]]], currency: str = "USD",
              first: Sequence[StubResponse] = ()) -> None:
        """`pages` of items answered in order through `NextPageLink`; `first` are answers (429s, 500s, malformed
        bodies) served before the first page."""
        for index, items in enumerate(pages):
            skip = index * 100
            next_link = None
            if index + 1 < len(pages):
                query = urllib.parse.urlencode({"currencyCode": f"'{currency}'", "$filter": filter_,
                                                "$skip": skip + 100}, quote_via=urllib.parse.quote)
                next_link = f"{self.url}{PATH}?{query}"
            page = StubResponse(200, {"BillingCurrency": currency, "CustomerEntityId": "Default",
                                      "CustomerEntityType": "Retail", "Items": list(items),
                                      "NextPageLink": next_link, "Count": len(items)})
            responses = (*first, page) if index == 0 else (page,)
            self._set_route((PATH, filter_, skip, currency), tuple(responses))

    def serve_stack(self, region: str, prices: Mapping[str, float], currency: str = "USD") -> None:
        for size, linux in prices.items():
            self.serve(vm_filter(region, size), [meters_of(size, region, linux, currency)], currency)
        self.serve(fee_filter(region), [cluster_fee_items(region, currency=currency)], currency)

    def count(self, filter_: str) -> int:
        return sum(1 for r in self.requests if (r.query.get("$filter") or [""])[0] == filter_)


def reach_prices(monkeypatch, stub: PricesStub, cache_dir) -> None:
    """Point gpushare's price reads at `stub` as a user's environment would, with its own cache directory."""
    monkeypatch.setenv("GPUSHARE_PRICES_ENDPOINT", stub.url)
    monkeypatch.setenv("SSL_CERT_FILE", stub.ca_path)
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_dir))
    for proxy in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
