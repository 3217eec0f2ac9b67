"""ajv, the JavaScript JSON Schema validator editors run (the YAML language server uses it): `tools/ajvcheck`,
installed and run by tests/npm_tools.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.npm_tools import run_check


def ajv_check(schema: Path, documents: list[Path]) -> dict[str, Any]:
    """ajv's verdict: {"compiled": bool, "error"?, "results"?: [{file, valid, errors}]}; skips without node."""
    return run_check("ajvcheck", "ajv", [str(schema), *map(str, documents)], tests="the ajv schema tests",
                     timeout=120)
