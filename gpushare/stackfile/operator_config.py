"""`gpushare:operator`: the GPU Operator chart version and repository, who installs the driver, the MIG strategy,
and the user's own chart values."""

from __future__ import annotations

import re
from typing import Any

from gpushare.sharing.operator_values import check_user_values
from gpushare.stackfile.checks import Checker, kind_of, optional, show
from gpushare.stackfile.keys import OPERATOR_KEY
from gpushare.stackfile.model import (
    DriverOwner,
    MigStrategy,
    Operator,
)

OPERATOR_KEYS = ("chartVersion", "driver", "migStrategy", "repository", "values")
CHART_VERSION_RE = re.compile(r"^v\d+\.\d+\.\d+$")
REPOSITORY_RE = re.compile(r"^(https?|oci)://[^\s/]+(/\S*)?$")


def _parse_values(c: Checker, value: Any, path: str, chart_version: str) -> dict | None:
    if not isinstance(value, dict):
        c.add(path, f"expected a mapping of GPU Operator chart values (as in the chart's values.yaml), got "
                    f"{kind_of(value)} {show(value)}; e.g. values: {{dcgmExporter: {{serviceMonitor: {{enabled: true}}}}}}")
        return None
    findings = check_user_values(value, chart_version)
    for where, why in findings.problems:
        c.add(f"{path}.{where}", why)
    return None if findings.problems else value


def parse_operator(c: Checker, value: Any) -> Operator:
    path = OPERATOR_KEY
    default = Operator()
    if value is None:
        return default
    raw = c.mapping(value, path, OPERATOR_KEYS)
    if raw is None:
        return default
    chart_version = optional(
        raw, "chartVersion",
        lambda v: c.string(v if not isinstance(v, (int, float)) else str(v), f"{path}.chartVersion", CHART_VERSION_RE,
                           f"must be a released GPU Operator chart version such as {default.chart_version} "
                           f"(v<year>.<month>.<patch>, with the leading v)"),
        default.chart_version,
    )
    # A version gpushare has not verified is a warning (`operator_values.operator_warnings`), not a refusal.
    repository = optional(
        raw, "repository",
        lambda v: c.string(v, f"{path}.repository", REPOSITORY_RE,
                           f"must be a Helm chart repository URL (https://...) or an OCI registry path "
                           f"(oci://<registry>/<path>, holding the gpu-operator chart); default "
                           f"{default.repository}"),
        default.repository,
    )
    values = optional(raw, "values", lambda v: _parse_values(c, v, f"{path}.values", chart_version), {})
    return Operator(
        repository=repository,
        values=values,
        chart_version=chart_version,
        driver=optional(raw, "driver", lambda v: c.choice(v, f"{path}.driver", DriverOwner), default.driver),
        mig_strategy=optional(raw, "migStrategy", lambda v: c.choice(v, f"{path}.migStrategy", MigStrategy),
                               default.mig_strategy),
    )
