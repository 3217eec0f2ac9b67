"""`gpushare <command>`: the tools around the Pulumi program (offline, except `preflight` and `verify`).

Also `python -m gpushare`. STACK is a stack file's path, or a stack name in the Pulumi project found from the current
directory upwards (its Pulumi.yaml) or given by `--project DIR`.

Exit codes: 0 success (also when the reader closes stdout early, `plan STACK | head -1`), 1 a preflight check
failed or `verify` found a mismatch, 2 invalid stack file or deployed-pools file (and argparse's usage errors) or no
subscription to read, 3 guard violation, 4 Azure or the cluster could not be read. A `GpushareError` prints one `error:` block (plus `hint:`); anything
else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import os
import sys

from gpushare.cli import compare, plan, preflight, prices, report, schema, stacks, verify
from gpushare.errors import GpushareError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpushare", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    plan.add_parser(commands)
    preflight.add_parser(commands)
    report.add_parser(commands)
    compare.add_parser(commands)
    stacks.add_parser(commands)
    prices.add_parser(commands)
    verify.add_parser(commands)
    schema.add_parser(commands)
    return parser


def _colour(text: str, code: str, stream) -> str:
    if os.environ.get("NO_COLOR") or not (os.environ.get("FORCE_COLOR") or stream.isatty()):
        return text
    return f"\033[{code}m{text}\033[0m"


CLOSED_PIPE_EXIT = 0
"""A reader that stops early (`| head -1`) got what it asked for: not a failure, so `make plan | head` stays quiet
too (make reports any non-zero exit of its recipe)."""


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = args.run(args)
        sys.stdout.flush()  # inside the try: a closed pipe surfaces here, not at interpreter exit
        return code
    except BrokenPipeError:
        # The reader (`| head -1`) has what it wanted. Point stdout at devnull so the interpreter's final flush of
        # what is still buffered cannot fail again (Python docs, signal module: "Note on SIGPIPE").
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return CLOSED_PIPE_EXIT
    except GpushareError as exc:
        print(f"{_colour('error:', '1;31', sys.stderr)} {exc}", file=sys.stderr)
        if exc.hint:
            print(f"{_colour('hint:', '1;33', sys.stderr)} {exc.hint}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
