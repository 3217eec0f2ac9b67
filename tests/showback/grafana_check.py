"""Grafana's own dashboard types (@grafana/schema, what Grafana's frontend compiles against) judging a dashboard
through the TypeScript compiler: `tools/grafanacheck`, installed and run by tests/npm_tools.py."""

from __future__ import annotations

from pathlib import Path

from tests.npm_tools import run_check


def grafana_type_errors(dashboards: list[Path]) -> dict[str, list[str]]:
    """The TypeScript compiler's errors per file, each file's JSON typed as @grafana/schema's `Dashboard`."""
    verdict = run_check("grafanacheck", "@grafana/schema", [str(d) for d in dashboards],
                        tests="the dashboard type check", timeout=300)
    return {r["file"]: r["errors"] for r in verdict["results"]}
