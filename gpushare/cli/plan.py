"""`plan STACK [--json] [--deployed FILE] [--program DIR]`: render a stack offline, running the real Pulumi program
(gpushare's own, or with `--program` the user's that calls `deploy()`) under the mock engine, and with `--deployed`
run the guard against saved `az aks nodepool list` output."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpushare.azure.deployed import read_file
from gpushare.azure.guard.guard_report import GuardReport, raise_for_violations
from gpushare.azure.guard.guard_runs import check_file
from gpushare.azure.prices import PricesError, PricesFileError
from gpushare.cli.price_options import add_price_options, price_sheet
from gpushare.cli.stack_argument import add_stack_arguments, read_stack_argument
from gpushare.plan.stack_plan import StackPlan, build_plan, with_guard
from gpushare.review.cluster_facts import agent_pool_profiles, vnet_warnings
from gpushare.showback.cost import priced_vm_sizes, spot_cap_warnings, stack_cost
from gpushare.review.plan_report import plan_document, render_text
from gpushare.stackfile.config import encode_engine_config, parse_stack_file
from gpushare.stackfile.files import read_stack_file
from gpushare.stackfile.project import PROJECT_FILE, ProjectError, is_stack_path, project_at

if TYPE_CHECKING:
    from gpushare.render.mock_engine import Recording


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
    parser.add_argument(
        "--program", metavar="DIR", type=Path,
        help="plan your own Pulumi program instead: run DIR/__main__.py, which calls gpushare.components.deploy(), "
             "offline as `pulumi preview` would (STACK is the stack's name; DIR/Pulumi.STACK.yaml, when there, is "
             "its config)",
    )
    add_price_options(parser)
    parser.set_defaults(run=run)


@dataclass(frozen=True)
class _Planned:
    plan: StackPlan
    """The CLI's plan, built once (with the guard's read of `--deployed` pools): the report reads it."""
    recording: Recording
    program_plan: StackPlan
    """The plan the program's deploy() built and registered (offline: no guard)."""
    guard: GuardReport | None


def _program_run(args: argparse.Namespace) -> _Planned:
    """`--program DIR`: the user's program under the mock engine; the stack is what its deploy() validated."""
    from gpushare.render.user_program import run_user_program

    if is_stack_path(args.stack):
        raise ProjectError(f"plan --program: STACK is the stack's name (Pulumi.STACK.yaml beside the program), "
                           f"got the path {args.stack!r}")
    config = {}
    if (args.program / PROJECT_FILE).is_file():
        stack_file = project_at(args.program).stack_file(args.stack)
        config = encode_engine_config(read_stack_file(stack_file).config) if stack_file.is_file() else {}
    deployed = read_file(args.deployed) if args.deployed else None
    run = run_user_program(args.program, args.stack, config, {"agentPoolProfiles": agent_pool_profiles(deployed)})
    # The program rendered offline (its guard skipped); the stack it validated is compared with the deployed pools.
    program_plan = run.deployment.plan
    guard = check_file(run.stack, args.deployed, program_plan.pool_facts) if args.deployed else None
    return _Planned(with_guard(program_plan, guard) if guard else program_plan, run.recording, program_plan, guard)


def _own_program_run(args: argparse.Namespace) -> _Planned:
    """gpushare's own program for the stack file STACK names."""
    stack_file = read_stack_argument(args)
    stack = parse_stack_file(stack_file)
    plan = build_plan(stack)  # what only the derived facts show wrong is a config error, as in the program
    # Imported here: the mock engine pulls in Pulumi and the providers' SDKs, which validation does not need.
    from gpushare.render.mock_engine import run_program
    from gpushare.render.user_program import observing_deploy

    guard = check_file(stack, args.deployed, plan.pool_facts) if args.deployed else None
    # The guard ran above; the program renders offline so the plan shows what it would create, an existing
    # cluster's read answering with the pools the guard read (or an unknown subnet).
    read = {"agentPoolProfiles": agent_pool_profiles(guard.deployed if guard else None)}
    with observing_deploy() as deployments:
        recording = run_program(stack.stack, encode_engine_config(stack_file.config), stack_file=stack_file.path,
                                existing_cluster=read)
    (deployment,) = deployments
    return _Planned(with_guard(plan, guard) if guard else plan, recording, deployment.plan, guard)


def program_only_warnings(recorded: list[str], program_plan: StackPlan) -> list[str]:
    """What the program logged besides its plan's warnings (a user program's own, a registration's), in order: the
    CLI shows its own plan's warnings instead of the program's, which had no guard."""
    expected = Counter(program_plan.warnings)
    extra = []
    for warning in recorded:
        if expected[warning]:
            expected[warning] -= 1
        else:
            extra.append(warning)
    return extra


def run(args: argparse.Namespace) -> int:
    planned = _program_run(args) if args.program else _own_program_run(args)
    plan, guard = planned.plan, planned.guard
    stack = plan.stack
    resources = [r.to_json() for r in planned.recording.resources if r.custom]
    warnings = [*plan.warnings, *program_only_warnings(planned.recording.warnings, planned.program_plan)]
    warnings += vnet_warnings(stack, guard.deployed if guard else None)
    cost, unpriced = None, None
    try:
        deployed = guard.deployed if guard else None
        sheet = price_sheet(args, stack.location, priced_vm_sizes(stack, deployed))
        cost = stack_cost(stack, sheet, deployed, facts=plan.pool_facts) if sheet else None
        warnings += spot_cap_warnings(cost) if cost else []
    except PricesFileError:
        raise  # a file the user named that is not a fitting prices file: fixed like the stack file, not skipped
    except PricesError as exc:
        # The API could not be read: the plan stands without prices; say why (on the cost line and as a warning).
        unpriced = f"{exc}" + (f"; {exc.hint}" if exc.hint else "")
        warnings.append(f"prices: {unpriced}")
    document = plan_document(plan, resources, warnings, guard, cost, unpriced)
    print(json.dumps(document, indent=2, sort_keys=False) if args.json else render_text(document))
    if guard:
        raise_for_violations(guard)
    return 0
