"""`plan STACK [--json] [--deployed FILE]`: render a stack offline, running the real Pulumi program under the mock
engine, and with `--deployed` run the guard against saved `az aks nodepool list` output."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gpushare.azure.guard import check_file, raise_for_violations
from gpushare.azure.prices import PricesError
from gpushare.cli.price_options import add_price_options, price_sheet
from gpushare.cli.stack_argument import add_stack_arguments, read_stack_argument
from gpushare.kubernetes.run_length import with_long_run_warning
from gpushare.review.cost import priced_vm_sizes, spot_cap_warnings, stack_cost
from gpushare.review.plan_report import plan_document, render_text
from gpushare.stackfile.config import encode_engine_config, parse_stack_file


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "plan", help="show what a stack deploys: pools, advertised GPU resources, resources (offline)",
        description="Validate a stack file and run the Pulumi program under mocks: no Azure, no Pulumi CLI.",
    )
    add_stack_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.add_argument(
        "--deployed", metavar="FILE", type=Path,
        help="run the guard against deployed pools saved with "
             "`az aks nodepool list --resource-group RG --cluster-name NAME -o json > FILE` (exit 3 on a violation)",
    )
    add_price_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    stack_file = read_stack_argument(args)
    stack = parse_stack_file(stack_file)
    raw = stack_file.config

    # Imported here: the mock engine pulls in Pulumi and the providers' SDKs, which validation does not need.
    from gpushare.render.mock_engine import run_program

    guard = check_file(stack, args.deployed) if args.deployed else None
    # The guard ran above; the program renders offline so the plan shows what it would create.
    recording = run_program(stack.stack, encode_engine_config(raw), stack_file=stack_file.path)
    resources = [r.to_json() for r in recording.resources if r.custom]
    warnings = with_long_run_warning(recording.warnings, stack, guard) if guard else list(recording.warnings)
    cost = None
    try:
        deployed = guard.deployed if guard else None
        sheet = price_sheet(args, stack.location, priced_vm_sizes(stack, deployed))
        cost = stack_cost(stack, sheet, deployed) if sheet else None
        warnings += spot_cap_warnings(cost) if cost else []
    except PricesError as exc:
        # The plan stands without prices: say why there is no cost, and carry on.
        warnings.append(f"prices: {exc}" + (f"; {exc.hint}" if exc.hint else ""))
    document = plan_document(stack, resources, warnings, guard, cost)
    print(json.dumps(document, indent=2, sort_keys=False) if args.json else render_text(document))
    if guard:
        raise_for_violations(guard)
    return 0
