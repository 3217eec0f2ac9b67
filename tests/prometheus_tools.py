"""Debian's Prometheus in tests (`apt-get install prometheus`, 2.42: /usr/bin/promtool and /usr/bin/prometheus):
the real rule checker, rule tester, TSDB block builder and server. Where it is absent the tests skip with one line;
under CI=true they fail instead (.ci/run installs it)."""

from __future__ import annotations

import os
import shutil

import pytest

INSTALL = "apt-get install -y --no-install-recommends prometheus"


def prometheus_binary(name: str) -> str:
    """The path of `promtool` or `prometheus`; skips (or, under CI=true, fails) when Debian's package is missing."""
    found = shutil.which(name) or (f"/usr/bin/{name}" if os.access(f"/usr/bin/{name}", os.X_OK) else None)
    if found:
        return found
    reason = f"{name} not installed (Debian: {INSTALL})"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI=true: the showback tests must run there")
    pytest.skip(reason)
