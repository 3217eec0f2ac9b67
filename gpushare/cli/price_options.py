"""`--prices [FILE]` and `--currency CODE`, shared by `plan` and `report`: live list prices, or a saved answer."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from gpushare.azure.prices import CURRENCY_RULES, DEFAULT_CURRENCY, PriceReader, PriceSheet, read_saved_answer
from gpushare.cli.read_deadline import add_read_deadline_option, read_deadline

LIVE = "live"
"""`--prices` without a file: read the Azure Retail Prices API."""


def add_price_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--prices", metavar="FILE", nargs="?", const=LIVE, default=None,
        help="add list prices: read the Azure Retail Prices API (no credentials), or a saved answer FILE "
             "(`gpushare prices STACK > FILE`, or `prices STACK --template` filled in by hand)")
    parser.add_argument("--currency", metavar="CODE", type=str.upper, default=None,
                        help=f"currency of the prices (default {DEFAULT_CURRENCY}): {CURRENCY_RULES}")
    add_read_deadline_option(parser)


def price_sheet(args: argparse.Namespace, region: str, vm_sizes: Sequence[str]) -> PriceSheet | None:
    """None without `--prices`; raises `PricesError` when they cannot be had (`PricesFileError`, exit 2, for a FILE
    that is not a fitting prices file: the user named it, so it is fixed, not skipped)."""
    if args.prices is None:
        return None
    if args.prices == LIVE:
        reader = PriceReader(os.environ, deadline=read_deadline(args))
        return reader.read(region, vm_sizes, args.currency or DEFAULT_CURRENCY)
    return read_saved_answer(Path(args.prices), region, args.currency)
