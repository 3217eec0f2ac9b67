"""`stacks --changed-since REF [--json]`: the stacks a change affects, for a workflow matrix."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gpushare.changed_stacks import changed_stacks


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "stacks", help="stacks a change affects (git diff against REF's merge base), e.g. for a CI matrix",
        description="List the stacks affected by the changes between the merge base of REF and HEAD: a changed "
                    "stack file -> that stack; code, Pulumi.yaml or requirements*.txt -> every stack; docs and "
                    "tests -> none. Deleted stack files are reported on stderr, never listed.",
    )
    parser.add_argument("--changed-since", metavar="REF", required=True,
                        help="base commit or ref, e.g. the PR's base SHA or origin/main")
    parser.add_argument("--json", action="store_true", help="print one JSON list of stack names (a matrix)")
    parser.add_argument("--project", metavar="DIR", type=Path, default=Path("."),
                        help="project directory holding stacks/ (default: the current directory)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    result = changed_stacks(args.changed_since, args.project)
    print(result.reason, file=sys.stderr)
    for stack in result.deleted:
        print(f"warning: stack {stack}: its file was deleted, so it is neither previewed nor deployed; its "
              f"resources stay in Azure until `pulumi destroy --stack {stack}`", file=sys.stderr)
    print(json.dumps(list(result.stacks)) if args.json else "\n".join(result.stacks))
    return 0
