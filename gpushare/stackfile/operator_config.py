"""`gpushare:operator`: the GPU Operator chart version, who installs the driver, and the MIG strategy."""

from __future__ import annotations

import re
from typing import Any

from gpushare.sharing.operator_values import VERIFIED_CHART_VERSIONS
from gpushare.stackfile.checks import Checker, optional
from gpushare.stackfile.declarations import OBJECT, STRING, Field, Section
from gpushare.stackfile.keys import OPERATOR_KEY
from gpushare.stackfile.model import (
    DriverOwner,
    MigStrategy,
    Operator,
)

CHART_VERSION_RE = re.compile(r"^v\d+\.\d+\.\d+$")
_DEFAULT = Operator()
OPERATOR = Section((
    Field("chartVersion", STRING, "The NVIDIA GPU Operator Helm chart version (v<year>.<month>.<patch>); only "
                                  "versions whose chart values gpushare has verified are accepted.",
          default=_DEFAULT.chart_version, enum=VERIFIED_CHART_VERSIONS, pattern=CHART_VERSION_RE,
          rule=f"must be a released GPU Operator chart version such as {_DEFAULT.chart_version} "
               f"(v<year>.<month>.<patch>, with the leading v)"),
    Field("driver", STRING, "Who installs the NVIDIA driver on GPU nodes: aks (AKS's GPU driver) or operator (the "
                            "GPU Operator's driver container; not with MIG pools or AzureLinux).",
          default=_DEFAULT.driver, enum=DriverOwner),
    Field("migStrategy", STRING, "How the device plugin advertises MIG devices: single (nvidia.com/gpu) or mixed "
                                 "(nvidia.com/mig-<slice> per slice; no mps pools).",
          default=_DEFAULT.mig_strategy, enum=MigStrategy),
))
OPERATOR_KEYS = OPERATOR.keys
OPERATOR_FIELD = Field(OPERATOR_KEY, OBJECT, "The NVIDIA GPU Operator (Helm chart) gpushare installs.",
                       default_text="the defaults of its keys", section=OPERATOR)


def parse_operator(c: Checker, value: Any) -> Operator:
    path = OPERATOR_KEY
    default = Operator()
    if value is None:
        return default
    raw = c.mapping(value, path, OPERATOR_KEYS)
    if raw is None:
        return default
    version = OPERATOR["chartVersion"]
    chart_version = optional(
        raw, "chartVersion",
        lambda v: c.check(version, v if not isinstance(v, (int, float)) else str(v), f"{path}.chartVersion"),
        version.default,
    )
    if chart_version not in VERIFIED_CHART_VERSIONS:
        c.add(f"{path}.chartVersion",
              f"gpushare has not verified the chart values it sets against GPU Operator chart {chart_version} "
              f"(Helm ignores a value path a chart does not have, silently); allowed: "
              f"{', '.join(VERIFIED_CHART_VERSIONS)}")
    return Operator(
        chart_version=chart_version,
        driver=c.field(raw, OPERATOR["driver"], path),
        mig_strategy=c.field(raw, OPERATOR["migStrategy"], path),
    )
