"""The upstream data files the tests read from `../shared/data` beside the checkout (never copied into the project).

On a developer's clone elsewhere they are absent and the test that reads one is skipped, saying so; CI (`CI=true`)
lays `shared/` beside the checkout, so there a missing file fails the test instead of skipping it silently."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def upstream_file(name: str, what: str, folder: Path = SHARED_DATA) -> Path:
    """`folder/name`, or a skip (a failure under CI) naming `what` it is and where it belongs."""
    path = folder / name
    if not path.is_file():
        message = f"{path} is missing ({what}, kept beside the checkout in ../shared/data)"
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(f"{message}; CI lays ../shared/data beside the checkout")
        pytest.skip(message)
    return path
