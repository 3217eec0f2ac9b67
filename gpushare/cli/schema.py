"""`schema [--prices | --markdown]`: print the stack file's JSON Schema, for editors (the YAML language server) and
other tools; with `--prices`, the saved prices file's; with `--markdown`, the stack file's key reference
(`docs/config-reference.md`)."""

from __future__ import annotations

import argparse
import json
import sys

from gpushare.azure.prices import prices_file_schema
from gpushare.stackfile.reference import reference_markdown
from gpushare.stackfile.schema import schema_text


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "schema", help="print the stack file's JSON Schema (draft 2020-12), for editors",
        description="Print the JSON Schema of a stack file, generated from the declarations the validator reads. "
                    "Rules between keys are not in it: `plan STACK` checks them.",
    )
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--prices", action="store_true",
                       help="print the JSON Schema of a saved prices file (`gpushare prices`) instead")
    shown.add_argument("--markdown", action="store_true",
                       help="print the stack file's keys as a Markdown reference (docs/config-reference.md) instead")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.prices:
        sys.stdout.write(json.dumps(prices_file_schema(), indent=2, ensure_ascii=False) + "\n")
    elif args.markdown:
        sys.stdout.write(reference_markdown())
    else:
        sys.stdout.write(schema_text())
    return 0
