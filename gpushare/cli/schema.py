"""`schema`: print the stack file's JSON Schema, for editors (the YAML language server) and other tools."""

from __future__ import annotations

import argparse
import sys

from gpushare.stackfile.schema import schema_text


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "schema", help="print the stack file's JSON Schema (draft 2020-12), for editors",
        description="Print the JSON Schema of a stack file, generated from the declarations the validator reads. "
                    "Rules between keys are not in it: `plan STACK` checks them.",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(schema_text())
    return 0
