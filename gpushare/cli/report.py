"""`report PREVIEW_JSON [--stack NAME] [--max-chars N]`: GitHub Markdown for one stack's `pulumi preview --json`."""

from __future__ import annotations

import argparse
import sys

from gpushare.azure.prices import PricesError, PricesFileError
from gpushare.cli.inputs import read_input
from gpushare.cli.price_options import add_price_options, price_sheet
from gpushare.review.markdown import DEFAULT_MAX_CHARS, GITHUB_COMMENT_LIMIT
from gpushare.review.preview_report.digest import parse_preview
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
            sheet = price_sheet(args, region, preview_vm_sizes(preview))
        except PricesFileError:
            raise  # as in `plan`: a named file that does not fit is an error to fix
        except PricesError as exc:
            problem = f"{exc}" + (f"; {exc.hint}" if exc.hint else "")
    sys.stdout.write(render_report(preview, args.stack, args.max_chars, sheet, problem))
    return 0
