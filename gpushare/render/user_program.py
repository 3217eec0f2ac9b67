"""A user's own Pulumi program that calls `gpushare.components.deploy()`, run offline under the mock engine as
`pulumi preview` would run it (`plan --program DIR STACK`): no cloud, no Pulumi CLI.

The Pulumi CLI runs a Python project's program from the project directory, with the stack's config from
`Pulumi.STACK.yaml`: its language host's `pulumi-language-python-exec` (pulumi/pulumi, sdk/python/cmd) runs the
program's `__main__.py` with `runpy.run_path(..., run_name="__main__")`, the program's directory first on
`sys.path`; this does the same. The guard and preflight stay offline, as in `plan`
(`GPUSHARE_OFFLINE`): they read Azure only under the real engine.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

import pulumi

from gpushare.errors import GpushareError
from gpushare.model.stack import StackConfig
from gpushare.render.mock_engine import Recording, run_pulumi

if TYPE_CHECKING:
    from gpushare.components.deployment import GpuShareDeployment

PROGRAM_FILE = "__main__.py"


class ProgramError(GpushareError):
    """The program directory cannot be run, or the program stopped: what and where, never a traceback."""

    exit_code = 2


class _ProgramExit(Exception):
    """`sys.exit()` in the program: an exception the engine's run reports instead of ending `plan`."""


@dataclass(frozen=True)
class ProgramRun:
    recording: Recording
    deployment: GpuShareDeployment
    """What the program's `deploy()` registered, its plan among it."""

    @property
    def stack(self) -> StackConfig:
        """What the program's `deploy()` validated."""
        return self.deployment.stack


def program_file(directory: Path) -> Path:
    """DIR's `__main__.py`, or a ProgramError saying what DIR lacks."""
    if not directory.is_dir():
        what = "not a directory" if directory.exists() else "no such directory"
        error = ProgramError(f"--program {directory}: {what}")
        error.hint = "pass the directory of a Pulumi Python program (the one holding its Pulumi.yaml and __main__.py)"
        raise error
    main = directory / PROGRAM_FILE
    if not main.is_file():
        error = ProgramError(f"--program {directory}: no {PROGRAM_FILE} there, the file the Pulumi CLI runs for a "
                             "Python program")
        error.hint = "put the program that calls gpushare.components.deploy() in DIR/__main__.py"
        raise error
    return main


@contextlib.contextmanager
def _as_the_pulumi_cli_runs_it(directory: Path) -> Iterator[None]:
    """The program's directory as the working directory and first on the import path; offline Azure checks."""
    from gpushare.model.environment_variables import DEPLOYED_FILE_ENV, OFFLINE_ENV, STACK_FILE_ENV

    cwd, path, directory = Path.cwd(), list(sys.path), directory.resolve()  # resolved before the chdir below
    with mock.patch.dict(os.environ):
        os.environ.pop(STACK_FILE_ENV, None)
        os.environ.pop(DEPLOYED_FILE_ENV, None)
        os.environ[OFFLINE_ENV] = "1"
        try:
            os.chdir(directory)
            sys.path.insert(0, str(directory))
            yield
        finally:
            os.chdir(cwd)
            sys.path[:] = path


def _where(exc: BaseException, main: Path) -> str:
    """`__main__.py, line 7` for the innermost frame of the user's file in the exception's traceback."""
    tracebacks = [exc.__traceback__, exc.__cause__.__traceback__ if exc.__cause__ else None]
    lines = [frame.lineno for tb in tracebacks for frame in traceback.extract_tb(tb)
             if Path(frame.filename).resolve() == main.resolve()]
    return f"{main}, line {lines[-1]}" if lines else str(main)


def _run_main(main: Path) -> None:
    """Run the program file, `main` an absolute path: the program runs in its own directory."""
    try:
        runpy.run_path(str(main), run_name="__main__")
    except SystemExit as exc:
        raise _ProgramExit(f"sys.exit({exc.code!r})") from exc


@contextlib.contextmanager
def observing_deploy() -> Iterator[list[GpuShareDeployment]]:
    """Every `deploy()` a program calls while this is open, in order (a program may import it from either module, and
    gpushare's own program from `deployment`: every name leads to the observed call)."""
    import gpushare.components
    from gpushare.components import deployment, program

    deployments: list[GpuShareDeployment] = []
    real_deploy = deployment.deploy

    def observed_deploy(config: Any, **kwargs: Any) -> GpuShareDeployment:
        result = real_deploy(config, **kwargs)
        deployments.append(result)
        return result

    with mock.patch.object(gpushare.components, "deploy", observed_deploy), \
            mock.patch.object(deployment, "deploy", observed_deploy), mock.patch.object(program, "deploy", observed_deploy):
        yield deployments


def run_user_program(directory: Path, stack: str, config: dict[str, str],
                     existing_cluster: dict[str, Any] | None = None) -> ProgramRun:
    """Run DIR/__main__.py under mocks and return what it registered and the stack its `deploy()` validated.
    `config`: the stack's config as the engine passes it (full keys, objects JSON-encoded); `existing_cluster`: what
    an existing cluster's read answers (`run_pulumi`)."""
    main = program_file(directory)
    program = main.resolve()  # the program runs in its directory: a relative DIR means nothing there
    with _as_the_pulumi_cli_runs_it(directory), observing_deploy() as deployments:
        recording = run_pulumi(lambda: _run_main(program), stack=stack, config=config, preview=True, check=False,
                               existing_cluster=existing_cluster)
    if isinstance(recording.error, pulumi.RunError):
        # deploy()'s own stop (bad mapping, guard, preflight): its message is the whole story.
        raise ProgramError(f"{main}: the program stopped: {recording.error}")
    if recording.error is not None:
        exc = recording.error
        what = f"called {exc}" if isinstance(exc, _ProgramExit) else f"failed: {type(exc).__name__}: {exc}"
        raise ProgramError(f"{_where(exc, main)}: the program {what}")
    if len(deployments) != 1:
        error = ProgramError(f"{main}: the program called gpushare.components.deploy() {len(deployments)} times; "
                             "plan --program plans a program that calls it once (one deployment per stack)")
        error.hint = "call deploy() once in the program; the Pulumi side of gpushare registers every resource there"
        raise error
    return ProgramRun(recording, deployments[0])
