"""`gpushare <command>`: the tools around the Pulumi program (offline, except `preflight` and `verify`).

Also `python -m gpushare`. STACK is a stack file's path, or a stack name in the Pulumi project found from the current
directory upwards (its Pulumi.yaml) or given by `--project DIR`.

Exit codes: 0 success (also when the reader closes stdout early, `plan STACK | head -1`), 1 a preflight check
failed or `verify` found a mismatch, 2 invalid stack file, deployed-pools file or prices file (and argparse's usage
errors), no subscription to read or a read deadline that is not seconds, 3 guard violation, 4 Azure, the prices
API, Prometheus or the cluster could not be read (also: no complete answer within the read deadline), 5 the output
could not be written (a full disk). A `GpushareError` prints one `error:` block (plus `hint:`); anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import importlib
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import NoReturn

from gpushare.errors import GpushareError, OutputError

COMMANDS = ("plan", "preflight", "report", "compare", "stacks", "prices", "verify", "schema", "rules", "usage",
            "dashboard", "fleet")
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


class _CommandStdout:
    """sys.stdout while a command runs: a write that fails for any reason but the reader leaving (BrokenPipeError,
    which `main` handles) is an `OutputError` naming the cause, not a traceback."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._guarded(self._stream.write, text)

    def flush(self) -> None:
        self._guarded(self._stream.flush)

    @staticmethod
    def _guarded(call: Callable[..., object], *args: object):
        try:
            return call(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _output_error(exc) from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _output_error(exc: OSError) -> OutputError:
    error = OutputError(f"the output could not be written to stdout ({exc.strerror or exc}); what was written is "
                        "incomplete")
    error.hint = "free space where stdout goes, or redirect it elsewhere, and run the command again"
    return error


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    stdout, sys.stdout = sys.stdout, _CommandStdout(sys.stdout)
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
    finally:
        sys.stdout = stdout


def run_as_command(entry: Callable[[], int]) -> NoReturn:
    """`entry()` in a process that ends once it has answered, with its exit code.

    A command is one short process, so two costs of a long-lived one are left out (`make bench`):
    - the cyclic garbage collector, about 7% of a 50-pool plan's CPU: what a command loads and builds (the
      providers' SDKs, the run's Outputs) lives until it ends. Such a plan leaves about 7,000 objects in cycles and
      peaks at the same memory without the collector. A command that polls collects while it waits
      (`gpushare.cli.verify.wait`);
    - the interpreter's teardown, about an eighth of that plan's CPU: it clears every module, then collects and
      frees the whole heap. The atexit handlers still run (temporary directories' finalizers, logging's flush), then
      stdout and stderr are flushed, then `os._exit`. What is skipped is freeing memory the process hands back
      anyway and the `__del__` of objects still alive, which Python never promises at exit. A thread still running
      keeps the ordinary exit, which waits for it.
    The benchmark's yardstick processes end the same way, so plan/bare compares the work inside them.
    """
    gc.disable()
    code = entry()
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    atexit._run_exitfuncs()  # CPython's own call at exit (Py_FinalizeEx), run here because os._exit skips it
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # a reader gone (`| head`): it read what it wanted
            pass
        except (OSError, ValueError):  # a write main reported (OutputError), or a stream closed under us
            code = code or OutputError.exit_code
    os._exit(code)


def console_main() -> NoReturn:
    """The `gpushare` command and `python -m gpushare`: `main()` as one command process (`run_as_command`).
    `main()` itself stays an ordinary function (tests and other programs call it in their own process)."""
    run_as_command(main)

if __name__ == "__main__":
    console_main()
