"""`fleet plan FLEET_FILE [--json] [--prices [FILE|DIR]]`: a fleet of this project's stacks, offline: per region and
member cluster the pools, capacity per kind of device, the tenants' promises, the cost, and the update order.
`fleet compare BASE HEAD`: a change's fleet-wide delta from two `fleet plan --json` outputs.
`fleet preflight FLEET_FILE [--json]`: preflight for every member, quota counted once per subscription and region.
`fleet file STACK`: the fleet file a member stack names (for the preview workflow)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

from gpushare.azure.arm import AzureReads, AzureSettingsError, SharedCredential, arm_target
from gpushare.azure.preflight.fleet_preflight import (
    MemberPreflight,
    evaluate_fleet,
    raise_for_fleet_failures,
)
from gpushare.azure.preflight.fleet_preflight import render_fleet_text as render_fleet_preflight
from gpushare.azure.prices import PricesError, PricesFileError
from gpushare.azure.region_offers import RegionOffers
from gpushare.cli.inputs import read_input
from gpushare.cli.preflight import read_stack
from gpushare.cli.price_options import LIVE, add_price_options, price_sheet
from gpushare.cli.read_deadline import add_read_deadline_option, read_deadline
from gpushare.cli.stack_argument import add_stack_arguments, read_stack_argument
from gpushare.plan.fleet_plan import FleetPlan, build_fleet_plan
from gpushare.review.fleet_compare import parse_fleet_plan, render_fleet_compare
from gpushare.review.fleet_report import fleet_document, render_fleet_text
from gpushare.showback.cost import priced_vm_sizes, stack_cost
from gpushare.kubernetes.gpu_software import NOT_READ
from gpushare.model.keys import FLEET_KEY
from gpushare.stackfile.files import StackFile
from gpushare.stackfile.fleet_config import load_fleet
from gpushare.stackfile.fleet_membership import fleet_file_path


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("fleet", help="a fleet of stacks across regions: plan (offline), compare, preflight",
                                 description="Fleets of this project's stacks (docs/fleets.md).")
    actions = parser.add_subparsers(dest="fleet_command", required=True, metavar="ACTION")
    plan = actions.add_parser(
        "plan", help="per region and member: pools, capacity, tenants' promises, cost, update order (offline)",
        description="Validate a fleet file and its member stacks and show the fleet, as `plan` shows a stack.")
    plan.add_argument("fleet_file", metavar="FLEET_FILE", type=Path,
                      help="the fleet file (e.g. stacks/fleet.yaml), beside its member stacks' files")
    plan.add_argument("--json", action="store_true", help="print one JSON object (keys in docs/fleets.md)")
    add_price_options(plan)
    plan.epilog = ("--prices FILE: a saved answer for one region; with members in several regions, a directory "
                   "holding REGION.json for each (`gpushare prices STACK > DIR/REGION.json`).")
    plan.set_defaults(run=run)
    compare = actions.add_parser(
        "compare", help="Markdown: a change's fleet-wide delta from two `fleet plan --json` outputs (offline)",
        description="Capacity and cost per region before -> after, and the members a change touches with their "
                    "update stage. An empty file stands for no fleet.")
    compare.add_argument("base", metavar="BASE_FLEET_JSON", help="fleet plan of the base commit (empty: no fleet)")
    compare.add_argument("head", metavar="HEAD_FLEET_JSON", help="fleet plan of the head commit (empty: no fleet)")
    compare.set_defaults(run=run_compare)
    preflight = actions.add_parser(
        "preflight", help="preflight every member in Azure, each region's vCPU quota counted once across the members",
        description="Run `gpushare preflight` for every member stack of the fleet (sizes, zones, GPUs, Kubernetes "
                    "version, subnets, role assignments, an existing cluster's baseline), with the vCPU quota of "
                    "each subscription's region checked once for all the members there. Exit 1 when a check fails, "
                    "2 for an invalid fleet or no subscription, 4 when Azure cannot be read.")
    preflight.add_argument("fleet_file", metavar="FLEET_FILE", type=Path, help="the fleet file")
    preflight.add_argument("--json", action="store_true", help="print one JSON object (keys in docs/fleets.md)")
    add_read_deadline_option(preflight)
    preflight.set_defaults(run=run_preflight)
    file = actions.add_parser(
        "file", help="print the fleet file a stack names (gpushare:fleet), or nothing: for a workflow",
        description="Print the path of the fleet file STACK's stack file names in gpushare:fleet (relative to the "
                    "current directory when inside it), or nothing when the stack is in no fleet.")
    add_stack_arguments(file)
    file.set_defaults(run=run_file)


def region_prices(args: argparse.Namespace, region: str) -> argparse.Namespace:
    """`args` with `--prices` pointing at the region's saved answer when it names a directory (`fleet plan`, and
    `report`, whose fleet section prices every member's region)."""
    if args.prices in (None, LIVE) or not Path(args.prices).is_dir():
        return args
    return argparse.Namespace(**{**vars(args), "prices": str(Path(args.prices) / f"{region}.json")})


def member_costs(args: argparse.Namespace, fleet: FleetPlan,
                 strict: bool = True) -> tuple[dict[str, Any], dict[str, str]]:
    """Per member its `stack_cost` (None without prices), and per region why its prices could not be read.
    `strict`: a `--prices` FILE that does not fit a region is an error (`fleet plan`); else that region is
    unpriced (`report`, whose FILE is for its own stack's region)."""
    costs: dict[str, Any] = {}
    unpriced: dict[str, str] = {}
    for member in fleet.members:
        stack, region = member.plan.stack, member.region
        if region in unpriced:
            costs[member.member.stack] = None
            continue
        try:
            sheet = price_sheet(region_prices(args, region), region, priced_vm_sizes(stack))
        except PricesFileError:
            if strict:
                raise  # a file the user named that does not fit: fixed like the fleet file, not skipped
            unpriced[region] = "the --prices file is for another region"
            costs[member.member.stack] = None
            continue
        except PricesError as exc:
            unpriced[region] = f"{exc}" + (f"; {exc.hint}" if exc.hint else "")
            costs[member.member.stack] = None
            continue
        costs[member.member.stack] = stack_cost(stack, sheet, facts=member.plan.pool_facts) if sheet else None
    return costs, unpriced


def member_fleet_file(stack_file: StackFile) -> Path | None:
    """The fleet file a stack file names (`gpushare:fleet`, relative to it), or None: not a fleet member."""
    value = stack_file.config.get(FLEET_KEY)
    return fleet_file_path(value, str(stack_file.path)) if isinstance(value, str) else None


def fleet_plan_document(args: argparse.Namespace, fleet_file: Path, strict: bool = True) -> dict[str, Any]:
    """`fleet plan --json`'s document for `fleet_file`, priced as `args.prices` says."""
    fleet = build_fleet_plan(load_fleet(fleet_file))
    costs, unpriced = member_costs(args, fleet, strict)
    return fleet_document(fleet, costs, unpriced)


def run(args: argparse.Namespace) -> int:
    document = fleet_plan_document(args, args.fleet_file)
    print(json.dumps(document, indent=2) if args.json else render_fleet_text(document))
    return 0


def run_compare(args: argparse.Namespace) -> int:
    base = parse_fleet_plan(*read_input(args.base))
    head = parse_fleet_plan(*read_input(args.head))
    sys.stdout.write(render_fleet_compare(base, head))
    return 0


def run_file(args: argparse.Namespace) -> int:
    path = member_fleet_file(read_stack_argument(args))
    if path is not None:
        print(path.as_posix())
    return 0


def run_preflight(args: argparse.Namespace) -> int:
    fleet = load_fleet(args.fleet_file)
    targets, problems = {}, []
    for member in fleet.config.members:  # every member's subscription first: all problems at once, nothing sent
        try:
            targets[member.stack] = arm_target(fleet.stacks[member.stack], os.environ)
        except AzureSettingsError as error:
            problems.append(f"member {member.stack}: {error}")
    if problems:
        raise AzureSettingsError("\n".join(problems))
    deadline = read_deadline(args)
    members: list[tuple[str, MemberPreflight]] = []
    offers: dict[tuple[object, str, str], RegionOffers] = {}
    with contextlib.ExitStack() as open_credentials:
        credentials: dict[object, SharedCredential] = {}
        for member in fleet.config.members:
            stack, target = fleet.stacks[member.stack], targets[member.stack]
            environment = stack.azure.environment
            if environment not in credentials:
                credentials[environment] = open_credentials.enter_context(SharedCredential(environment, os.environ))
            region = (environment, target.subscription_id, stack.location)
            read = read_stack(stack, AzureReads(target, credentials[environment], deadline), offers.get(region))
            offers[region] = read.read.offers  # the region's three reads once, for every member there
            report = read.evaluate(stack, target.subscription_id)
            if stack.cluster.existing and read.found is not None:  # Kubernetes is not read fleet-wide
                report = dataclasses.replace(report, checks=(*report.checks, NOT_READ))
            members.append((member.stack, MemberPreflight(stack, target.subscription_id, read.read.offers,
                                                          read.deployed, read.found, report)))
    report = evaluate_fleet(fleet.config.name, fleet.config.source, members)
    print(json.dumps(report.to_json(), indent=2) if args.json else render_fleet_preflight(report))
    raise_for_fleet_failures(report)
    return 0
