"""`stacks --changed-since REF [--json]`: the stacks a change affects, for a workflow matrix."""

from __future__ import annotations

import argparse
import json
import sys

from gpushare.cli.stack_argument import add_project_argument, project_argument
from gpushare.review.changed_stacks import changed_stacks, deleted_stack_steps, named_stack


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "stacks", help="stacks a change affects (git diff against REF's merge base), as a CI matrix",
        description="List the stacks affected by the changes between the merge base of REF and HEAD: a changed "
                    "stack file -> that stack; code, Pulumi.yaml or requirements*.txt -> every stack; docs and "
                    "tests -> none. Deleted stack files are reported on stderr, never listed.",
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--changed-since", metavar="REF",
                       help="base commit or ref, e.g. the PR's base SHA or origin/main (40 zeros: every stack)")
    which.add_argument("--named", metavar="STACK", help="just this stack, checked to exist (a manual deploy)")
    parser.add_argument("--json", action="store_true", help="print one JSON list of stack names (a matrix)")
    add_project_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    project = project_argument(args)
    if args.named is not None:
        result = named_stack(args.named, project)
    else:
        result = changed_stacks(args.changed_since, project)
    print(result.reason, file=sys.stderr)
    for stack in result.deleted:
        print(f"warning: {deleted_stack_steps(stack, args.changed_since)}", file=sys.stderr)
    print(json.dumps(list(result.stacks)) if args.json else "\n".join(result.stacks))
    return 0
