"""The project's Go tools in tests (`tools/vapcheck`, `tools/controlplane`, `tools/kueuecontroller`, ...): whether their
build script can run here, and what it printed. Each `tools/<name>/build` exits 3 when Go is missing or too old,
prints its path on stdout and its progress on stderr."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GO_MISSING = 3
"""A build script's exit status when Go is not installed (or too old)."""


def tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def unavailable_reason(build: Path, tests: str) -> str | None:
    """None when `build --check` finds a usable Go; else its one-line reason, for `pytest.skip`. Under CI=true a
    missing Go raises instead (CI must run `tests`); any other failure of the check always raises."""
    try:
        r = subprocess.run([str(build), "--check"], capture_output=True, text=True, timeout=60)
    except OSError as error:  # no bash, or the script is not executable
        reason = f"{build.parent.name}: cannot run {build.relative_to(ROOT)}: {error}"
        returncode = GO_MISSING
    else:
        if r.returncode == 0:
            return None
        reason = (r.stderr.strip().splitlines() or [f"{build.name} --check exited {r.returncode}"])[-1]
        returncode = r.returncode
    if returncode != GO_MISSING:
        raise RuntimeError(f"{build.relative_to(ROOT)} --check failed (exit {returncode}): {reason}")
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"{reason} (CI=true: {tests} must run there)")
    return reason


def built_or_skip(build: Path, tests: str, timeout: int) -> Path:
    """`built(build)`, or a skip of the calling test with `unavailable_reason`'s one line (a raise under CI=true)."""
    if reason := unavailable_reason(build, tests):
        pytest.skip(reason)
    return built(build, timeout)


def built(build: Path, timeout: int, args: tuple[str, ...] = ()) -> Path:
    """What `build *args` printed last on stdout (the built binary or folder); raises with its stderr when it fails."""
    r = subprocess.run([str(build), *args], capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{build.relative_to(ROOT)} failed (exit {r.returncode}):\n{tail(r.stderr, 25)}")
    return Path(r.stdout.strip().splitlines()[-1])
