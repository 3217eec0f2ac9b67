"""Grafana's own dashboard types (@grafana/schema, what Grafana's frontend compiles against) judging a dashboard
through the TypeScript compiler: tools/grafanacheck, installed by `npm ci` from its lock file into a cache outside
the clone, once per lock file (as tests/stackfile/ajv.py installs ajv). Without node and npm the tests skip with the
reason; under CI=true that is an error."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tools" / "grafanacheck"
FILES = ("package.json", "package-lock.json", "check.mjs")


def _cache_dir() -> Path:
    base = (os.environ.get("GPUSHARE_CACHE")
            or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpushare")
    key = hashlib.sha256(b"".join((SOURCE / name).read_bytes() for name in FILES)).hexdigest()[:16]
    return Path(base) / "grafanacheck" / key


@cache
def _installed() -> Path:
    target = _cache_dir()
    if (target / "node_modules" / "@grafana" / "schema" / "package.json").is_file():
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
        raise RuntimeError(f"npm ci in tools/grafanacheck failed:\n{installed.stderr[-2000:]}")
    try:
        staging.rename(target)
    except OSError:  # another worker installed it meanwhile
        shutil.rmtree(staging, ignore_errors=True)
    return target


def grafana_type_errors(dashboards: list[Path]) -> dict[str, list[str]]:
    """The TypeScript compiler's errors per file, each file's JSON typed as @grafana/schema's `Dashboard`."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        reason = f"grafanacheck: {' and '.join(missing)} not installed (Debian: apt-get install nodejs npm)"
        if os.environ.get("CI") == "true":
            raise RuntimeError(f"{reason} (CI=true: the dashboard type check must run there)")
        pytest.skip(reason)
    folder = _installed()
    ran = subprocess.run(["node", str(folder / "check.mjs"), *map(str, dashboards)], capture_output=True, text=True,
                         timeout=300)
    if not ran.stdout.strip():
        raise RuntimeError(f"grafanacheck printed nothing (exit {ran.returncode}): {ran.stderr[-2000:]}")
    return {r["file"]: r["errors"] for r in json.loads(ran.stdout)["results"]}
