"""ajv, the JavaScript JSON Schema validator editors run (the YAML language server uses it), installed from the npm
registry by `npm ci` from `tools/ajvcheck`'s lock file into a cache outside the clone, once per lock file.

Without node and npm the tests that need it skip with the reason; under CI=true that is an error (CI must run them).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tools" / "ajvcheck"
FILES = ("package.json", "package-lock.json", "check.mjs")


def _cache_dir() -> Path:
    base = (os.environ.get("GPUSHARE_CACHE")
            or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpushare")
    key = hashlib.sha256(b"".join((SOURCE / name).read_bytes() for name in FILES)).hexdigest()[:16]
    return Path(base) / "ajvcheck" / key


@cache
def _installed() -> Path:
    """The folder holding check.mjs and node_modules/ajv, installed once per lock file."""
    target = _cache_dir()
    if (target / "node_modules" / "ajv" / "package.json").is_file():
        return target
    staging = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in FILES:
        shutil.copy2(SOURCE / name, staging / name)
    installed = subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=staging,
                               capture_output=True, text=True, timeout=600)
    if installed.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise RuntimeError(f"npm ci in tools/ajvcheck failed:\n{installed.stderr[-2000:]}")
    try:
        staging.rename(target)
    except OSError:  # another worker installed it meanwhile
        shutil.rmtree(staging, ignore_errors=True)
    return target


def ajv_check(schema: Path, documents: list[Path]) -> dict[str, Any]:
    """ajv's verdict: {"compiled": bool, "error"?, "results"?: [{file, valid, errors}]}; skips without node."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        reason = f"ajv: {' and '.join(missing)} not installed (Debian: apt-get install nodejs npm)"
        if os.environ.get("CI") == "true":
            raise RuntimeError(f"{reason} (CI=true: the ajv schema tests must run there)")
        pytest.skip(reason)
    folder = _installed()
    ran = subprocess.run(["node", str(folder / "check.mjs"), str(schema), *map(str, documents)],
                         capture_output=True, text=True, timeout=120)
    if not ran.stdout.strip():
        raise RuntimeError(f"ajv check printed nothing (exit {ran.returncode}): {ran.stderr[-2000:]}")
    return json.loads(ran.stdout)
