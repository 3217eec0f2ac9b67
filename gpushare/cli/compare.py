"""`compare BASE_PLAN_JSON HEAD_PLAN_JSON`: the GPU table and flags of `report` from two `plan --json` files."""

from __future__ import annotations

import argparse
import sys

from gpushare.cli.inputs import read_input
from gpushare.review.plan_compare import parse_plan, render_compare


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "compare", help="Markdown GPU table from two `plan --json` outputs (base, head): no cloud needed",
        description="Compare two `python -m gpushare plan STACK --json` outputs and print the GPU pools' changes, "
                    "capacity before -> after and flags as GitHub Markdown. An empty file stands for no stack.",
    )
    parser.add_argument("base", metavar="BASE_PLAN_JSON", help="plan of the base commit (empty file: no stack yet)")
    parser.add_argument("head", metavar="HEAD_PLAN_JSON", help="plan of the head commit (empty file: stack removed)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    base = parse_plan(*read_input(args.base))
    head = parse_plan(*read_input(args.head))
    sys.stdout.write(render_compare(base, head))
    return 0
