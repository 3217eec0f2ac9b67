"""`prices STACK [--currency CODE]`: read the list prices a stack's VM sizes and cluster fee have in its region
from the Azure Retail Prices API, and print them as a saved answer for `plan --prices FILE` and `report --prices
FILE` (a fork's PR or an air-gapped machine can then still show costs). Exit 4 when the API cannot be read.
`--template` reads nothing and prints the same shape with every price empty, to fill in by hand."""

from __future__ import annotations

import argparse
import json
import os

from gpushare.azure.prices import CURRENCY_RULES, DEFAULT_CURRENCY, PriceReader, fill_in_template
from gpushare.cli.read_deadline import add_read_deadline_option, read_deadline
from gpushare.cli.stack_argument import add_stack_arguments, read_stack_argument
from gpushare.showback.cost import needs_cluster_fee, priced_meters, priced_vm_sizes
from gpushare.stackfile.config import parse_stack_file


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "prices", help="save the list prices of a stack's VM sizes (Azure Retail Prices API) for --prices FILE",
        description="Read pay-as-you-go list prices for the stack's VM sizes and the AKS Standard tier fee in its "
                    "region, and print them as JSON for `plan --prices FILE` and `report --prices FILE`.",
    )
    add_stack_arguments(parser)
    parser.add_argument("--currency", metavar="CODE", type=str.upper, default=DEFAULT_CURRENCY,
                        help=f"currency of the prices (default {DEFAULT_CURRENCY}): {CURRENCY_RULES}")
    parser.add_argument("--template", action="store_true",
                        help="read nothing: print a file to fill in by hand (the stack's sizes and meters, every "
                             "retailPrice and readAt empty) that `plan --prices FILE` reads once filled in")
    add_read_deadline_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    stack = parse_stack_file(read_stack_argument(args))
    if args.template:
        document = fill_in_template(stack.location, args.currency, priced_meters(stack), needs_cluster_fee(stack))
    else:
        reader = PriceReader(os.environ, deadline=read_deadline(args))
        document = reader.read(stack.location, priced_vm_sizes(stack), args.currency).to_json()
    print(json.dumps(document, indent=2))
    return 0
