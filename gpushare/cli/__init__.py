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
import importlib
import os
import sys
from collections.abc import Sequence

from gpushare.errors import GpushareError

COMMANDS = ("plan", "preflight", "report", "compare", "stacks", "prices", "verify", "schema")
"""Each is the module `gpushare.cli.<name>`, with `add_parser(commands)` and the `run` it sets."""


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser for `argv`. When it names a command, only that command's module is imported and given its real
    parser; the others get a bare one, enough for argparse's list of choices. Each module imports what its command
    reads and runs: all of them together are 0.05 s of every `plan`."""
    wanted = argv[0] if argv and argv[0] in COMMANDS else None
    parser = argparse.ArgumentParser(prog="gpushare", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        if wanted in (None, name):
            importlib.import_module(f"gpushare.cli.{name}").add_parser(commands)
        else:
            commands.add_parser(name)
    return parser


def _colour(text: str, code: str, stream) -> str:
    if os.environ.get("NO_COLOR") or not (os.environ.get("FORCE_COLOR") or stream.isatty()):
        return text
    return f"\033[{code}m{text}\033[0m"


CLOSED_PIPE_EXIT = 0
"""A reader that stops early (`| head -1`) got what it asked for: not a failure, so `make plan | head` stays quiet
too (make reports any non-zero exit of its recipe)."""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
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
