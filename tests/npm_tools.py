"""The project's npm tools in tests (`tools/ajvcheck`, `tools/grafanacheck`): each installed by `npm ci` from its lock
file into a cache outside the clone, once per lock file, and run with node. Without node and npm the tests that need
one skip with the reason; under CI=true that is an error (CI must run them)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = ("package.json", "package-lock.json", "check.mjs")
_installed: dict[str, Path] = {}


def _cache_dir(tool: str) -> Path:
    base = (os.environ.get("GPUSHARE_CACHE")
            or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpushare")
    key = hashlib.sha256(b"".join((ROOT / "tools" / tool / name).read_bytes() for name in FILES)).hexdigest()[:16]
    return Path(base) / tool / key


def _install(tool: str, package: str) -> Path:
    """The folder holding the tool's check.mjs and node_modules/<package>, installed once per lock file."""
    target = _cache_dir(tool)
    if (target / "node_modules" / package / "package.json").is_file():
        return target
    staging = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in FILES:
        shutil.copy2(ROOT / "tools" / tool / name, staging / name)
    installed = subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=staging,
                               capture_output=True, text=True, timeout=600)
    if installed.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise RuntimeError(f"npm ci in tools/{tool} failed:\n{installed.stderr[-2000:]}")
    try:
        staging.rename(target)
    except OSError:  # another worker installed it meanwhile
        shutil.rmtree(staging, ignore_errors=True)
    return target


def run_check(tool: str, package: str, args: list[str], *, tests: str, timeout: int) -> Any:
    """`node tools/<tool>/check.mjs ARGS` from its installed copy: the JSON it prints. Skips without node and npm
    (naming `tests`), an error under CI=true."""
    missing = [name for name in ("node", "npm") if shutil.which(name) is None]
    if missing:
        reason = f"{tool}: {' and '.join(missing)} not installed (Debian: apt-get install nodejs npm)"
        if os.environ.get("CI") == "true":
            raise RuntimeError(f"{reason} (CI=true: {tests} must run there)")
        pytest.skip(reason)
    if tool not in _installed:
        _installed[tool] = _install(tool, package)
    ran = subprocess.run(["node", str(_installed[tool] / "check.mjs"), *args], capture_output=True, text=True,
                         timeout=timeout)
    if not ran.stdout.strip():
        raise RuntimeError(f"{tool} printed nothing (exit {ran.returncode}): {ran.stderr[-2000:]}")
    return json.loads(ran.stdout)
