"""`report PREVIEW_JSON [--stack NAME] [--max-chars N] [--fleet-base FILE]`: GitHub Markdown for one stack's
`pulumi preview --json`; for a fleet member (its stack file in the project names `gpushare:fleet`), also its update
stage and, with `--fleet-base`, the fleet-wide delta (docs/fleets.md)."""

from __future__ import annotations

import argparse
import sys

from gpushare.azure.prices import PricesError, PricesFileError
from gpushare.cli.inputs import read_input
from gpushare.cli.price_options import add_price_options, price_sheet
from gpushare.review.markdown import DEFAULT_MAX_CHARS, GITHUB_COMMENT_LIMIT
from gpushare.cli.fleet import fleet_plan_document, member_fleet_file, region_prices
from gpushare.cli.stack_argument import add_project_argument
from gpushare.errors import ConfigError
from gpushare.review.fleet_compare import parse_fleet_plan
from gpushare.review.preview_report.digest import parse_preview, urn_stack
from gpushare.review.preview_report.fleet import fleet_section
from gpushare.stackfile.files import StackFile, read_stack_file
from gpushare.stackfile.project import ProjectError, find_project, project_at
from gpushare.review.preview_report.pricing import preview_region, preview_vm_sizes
from gpushare.review.preview_report.pr_comment import render_report


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "report", help="Markdown for a PR from `pulumi preview --json`: errors, GPU capacity, then the rest",
        description="Read what `pulumi preview --json` printed and write GitHub Markdown: diagnostics errors, the "
                    "GPU pools' capacity before -> after with loud flags, the GPU Operator, counts, then details.",
    )
    parser.add_argument("preview", metavar="PREVIEW_JSON", help="the preview's JSON file, or - for stdin")
    parser.add_argument("--stack", metavar="NAME", help="stack name for the heading (default: from the URNs)")
    parser.add_argument("--max-chars", metavar="N", type=_max_chars, default=DEFAULT_MAX_CHARS,
                        help=f"longest output; details are cut first (default {DEFAULT_MAX_CHARS:,}, "
                             f"GitHub allows {GITHUB_COMMENT_LIMIT:,})")
    parser.add_argument("--fleet-base", metavar="FILE",
                        help="for a fleet member (gpushare:fleet): `gpushare fleet plan FLEET_FILE --json` of the "
                             "base commit (an empty file: no fleet there); the comment then shows the fleet-wide "
                             "delta against the fleet planned from this checkout")
    add_project_argument(parser)
    add_price_options(parser)
    parser.set_defaults(run=run)


def _max_chars(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if not 2_000 <= value <= GITHUB_COMMENT_LIMIT:
        raise argparse.ArgumentTypeError(f"must be between 2,000 and {GITHUB_COMMENT_LIMIT:,}, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    text, source = read_input(args.preview)
    preview = parse_preview(text, source)
    sheet, problem = None, None
    if args.prices is not None:
        region = preview_region(preview)
        try:
            if region is None:
                raise PricesError("the preview names no region (no ManagedCluster step, no `azure-native:location` "
                                  "in its config)")
            sheet = price_sheet(region_prices(args, region), region, preview_vm_sizes(preview))
        except PricesFileError:
            raise  # as in `plan`: a named file that does not fit is an error to fix
        except PricesError as exc:
            problem = f"{exc}" + (f"; {exc.hint}" if exc.hint else "")
    stack = args.stack or next((urn_stack(s.urn) for s in preview.steps if urn_stack(s.urn)), None)
    fleet = _fleet_lines(args, stack) if stack else []
    sys.stdout.write(render_report(preview, stack, args.max_chars, sheet, problem, fleet))
    return 0


def _stack_file(args: argparse.Namespace, stack: str) -> StackFile | None:
    """The stack's file in the project (`--project`, else the one around the current directory), or None: no
    project, or no such stack here (the report then shows no fleet section)."""
    if args.project is not None:
        project = project_at(args.project)
    else:
        try:
            project = find_project()
        except ProjectError:
            project = None  # a Pulumi.yaml around that cannot be read: the preview's report stands without a fleet
    path = project.stack_file(stack) if project is not None else None
    return read_stack_file(path) if path is not None and path.is_file() else None


def _fleet_lines(args: argparse.Namespace, stack: str) -> list[str]:
    """The fleet section: the head's fleet planned from the stack's `gpushare:fleet`, against `--fleet-base`. A
    fleet that does not plan is said in a line: the preview itself, which validated the same files, says why."""
    base = parse_fleet_plan(*read_input(args.fleet_base)) if args.fleet_base else None
    try:
        stack_file = _stack_file(args, stack)
    except ConfigError:
        stack_file = None  # the preview's own errors say what is wrong with it
    fleet_file = member_fleet_file(stack_file) if stack_file is not None else None
    if fleet_file is None:
        return fleet_section(stack, None, base)
    try:
        head = fleet_plan_document(args, fleet_file, strict=False)
    except ConfigError as error:
        return fleet_section(stack, None, base, f"{fleet_file} does not validate ({len(error.problems)} "
                                                f"problem{'s' if len(error.problems) != 1 else ''}; "
                                                f"`gpushare fleet plan {fleet_file}` lists them)")
    return fleet_section(stack, head, base)
