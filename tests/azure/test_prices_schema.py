"""The saved prices file's JSON Schema (package data): the shipped file is the generated one, the metaschema and
check-jsonschema accept it, and it accepts exactly what `read_saved_answer` reads (shape, not region or currency,
which depend on the stack and the command line)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import jsonschema
import pytest

from gpushare.azure.prices import (
    CLUSTER_FEE_QUERY,
    PRICES_SCHEMA_FILE,
    PriceSheet,
    PricesError,
    fill_in_template,
    prices_file_schema,
    read_saved_answer,
)
from tests.prices_stub import cluster_fee_items, meters_of

REGION = "westeurope"
T4 = "Standard_NC4as_T4_v3"


def answer() -> dict[str, Any]:
    """What `gpushare prices` writes: the API's items as it answered them."""
    return PriceSheet(REGION, "USD", "2026-12-01T08:00:00Z", "https://prices.azure.com",
                      {T4: tuple(meters_of(T4, REGION, 0.6)),
                       CLUSTER_FEE_QUERY: tuple(cluster_fee_items(REGION))}).to_json()


def template() -> dict[str, Any]:
    return fill_in_template(REGION, "USD", {T4: (True, True)}, cluster_fee=True)


def filled() -> dict[str, Any]:
    document = template()
    document["readAt"] = "2026-11-30"
    for items in document["items"].values():
        for item in items:
            item["retailPrice"] = 0.5
    return document


def edited(base: Callable[[], dict[str, Any]], change: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    document = copy.deepcopy(base())
    change(document)
    return document


DOCUMENTS = {
    "api answer": answer(),
    "filled template": filled(),
    "empty template": template(),
    "no readAt": edited(filled, lambda d: d.pop("readAt")),
    "one price left empty": edited(filled, lambda d: d["items"][T4][1].update(retailPrice=None)),
    "a price as text": edited(answer, lambda d: d["items"][T4][0].update(retailPrice="0.6")),
    "a negative price": edited(answer, lambda d: d["items"][T4][0].update(retailPrice=-1)),
    "an item without a price": edited(answer, lambda d: d["items"][T4][0].pop("retailPrice")),
    "another kind": edited(answer, lambda d: d.update(kind="prices")),
    "version 2": edited(answer, lambda d: d.update(version=2)),
    "items a list": edited(answer, lambda d: d.update(items=[])),
    "an item not an object": edited(answer, lambda d: d["items"][T4].append("x")),
    "no currency": edited(answer, lambda d: d.pop("currency")),
    "currency EURO": edited(answer, lambda d: d.update(currency="EURO")),
    "currency in lower case": edited(answer, lambda d: d.update(currency="usd")),
    "currency EUR throughout": edited(answer, lambda d: [d.update(currency="EUR")] + [
        item.update(currencyCode="EUR") for items in d["items"].values() for item in items]),
    "two currencies": edited(answer, lambda d: d["items"][T4][0].update(currencyCode="EUR")),
    "an absurd price": edited(answer, lambda d: d["items"][T4][0].update(retailPrice=1e9)),
    "the highest price": edited(answer, lambda d: d["items"][T4][0].update(retailPrice=1_000_000)),
    "extra keys kept": edited(answer, lambda d: d.update(comment="from the mirror")),
}


def reader_accepts(document: dict[str, Any], tmp_path: Path) -> bool:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(document))
    try:
        read_saved_answer(path, REGION, None)
    except PricesError:
        return False
    return True


def test_the_shipped_schema_is_the_generated_one():
    assert json.loads(PRICES_SCHEMA_FILE.read_text()) == prices_file_schema(), \
        "regenerate: python -m gpushare schema --prices > gpushare/azure/prices-file.schema.json"
    jsonschema.Draft202012Validator.check_schema(prices_file_schema())


@pytest.mark.parametrize("name", DOCUMENTS)
def test_the_schema_accepts_exactly_what_the_reader_reads(name, tmp_path):
    document = DOCUMENTS[name]
    schema_accepts = jsonschema.Draft202012Validator(prices_file_schema()).is_valid(document)
    assert schema_accepts == reader_accepts(document, tmp_path), name


def test_check_jsonschema_validates_saved_answers_with_the_shipped_schema(tmp_path):
    tool = Path(sys.executable).with_name("check-jsonschema")
    checked = subprocess.run([str(tool), "--check-metaschema", str(PRICES_SCHEMA_FILE)], capture_output=True,
                             text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    paths = {}
    for name in ("api answer", "filled template", "empty template"):
        paths[name] = tmp_path / f"{name.replace(' ', '-')}.json"
        paths[name].write_text(json.dumps(DOCUMENTS[name]))
    good = subprocess.run([str(tool), "--schemafile", str(PRICES_SCHEMA_FILE), str(paths["api answer"]),
                           str(paths["filled template"])], capture_output=True, text=True)
    assert good.returncode == 0, good.stdout + good.stderr
    empty = subprocess.run([str(tool), "--schemafile", str(PRICES_SCHEMA_FILE), str(paths["empty template"])],
                           capture_output=True, text=True)
    assert empty.returncode == 1 and "retailPrice" in empty.stdout + empty.stderr
