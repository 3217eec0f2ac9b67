"""`gpushare:operator`: the GPU Operator chart version, who installs the driver, and the MIG strategy."""

from __future__ import annotations

import re
from typing import Any

from gpushare.sharing.operator_values import VERIFIED_CHART_VERSIONS
from gpushare.stackfile.checks import Checker, optional
from gpushare.stackfile.keys import OPERATOR_KEY
from gpushare.stackfile.model import (
    DriverOwner,
    MigStrategy,
    Operator,
)

OPERATOR_KEYS = ("chartVersion", "driver", "migStrategy")
CHART_VERSION_RE = re.compile(r"^v\d+\.\d+\.\d+$")


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
    if chart_version not in VERIFIED_CHART_VERSIONS:
        c.add(f"{path}.chartVersion",
              f"gpushare has not verified the chart values it sets against GPU Operator chart {chart_version} "
              f"(Helm ignores a value path a chart does not have, silently); allowed: "
              f"{', '.join(VERIFIED_CHART_VERSIONS)}")
    return Operator(
        chart_version=chart_version,
        driver=optional(raw, "driver", lambda v: c.choice(v, f"{path}.driver", DriverOwner), default.driver),
        mig_strategy=optional(raw, "migStrategy", lambda v: c.choice(v, f"{path}.migStrategy", MigStrategy),
                               default.mig_strategy),
    )
