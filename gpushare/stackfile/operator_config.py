"""`gpushare:operator`: the GPU Operator chart version and repository, who installs the driver, the MIG strategy,
and the user's own chart values."""

from __future__ import annotations

import re
from typing import Any

from gpushare.model.keys import OPERATOR_KEY
from gpushare.model.stack import (
    DriverOwner,
    MigStrategy,
    Operator,
)
from gpushare.sharing.operator_values import VERIFIED_CHART_VERSIONS, check_user_values
from gpushare.stackfile.checks import Checker, checked_later, kind_of, show
from gpushare.stackfile.declarations import OBJECT, STRING, Field, Section

CHART_VERSION_RE = re.compile(r"^v\d+\.\d+\.\d+$")
REPOSITORY_RE = re.compile(r"^(https?|oci)://[^\s/]+(/\S*)?$")
_DEFAULT = Operator()
OPERATOR = Section((
    Field("chartVersion", STRING, "The NVIDIA GPU Operator Helm chart version (v<year>.<month>.<patch>); one "
                                  "gpushare has not verified is a warning naming the verified ones.",
          pattern=CHART_VERSION_RE, examples=VERIFIED_CHART_VERSIONS,
          rule=f"must be a released GPU Operator chart version such as {_DEFAULT.chart_version} "
               f"(v<year>.<month>.<patch>, with the leading v)"),
    Field("driver", STRING, "Who installs the NVIDIA driver on GPU nodes: aks (AKS's GPU driver) or operator (the "
                            "GPU Operator's driver container; not with MIG pools, DRA pools or AzureLinux).",
          enum=DriverOwner),
    Field("migStrategy", STRING, "How the device plugin advertises MIG devices: single (nvidia.com/gpu) or mixed "
                                 "(nvidia.com/mig-<slice> per slice; no mps pools).",
          enum=MigStrategy),
    Field("repository", STRING, "The chart repository (https://...) or OCI registry (oci://<registry>/<path>) "
                                "holding the gpu-operator chart, e.g. a private mirror.",
          pattern=REPOSITORY_RE,
          rule="must be a Helm chart repository URL (https://...) or an OCI registry path (oci://<registry>/<path>)"),
    Field("values", OBJECT, "Chart values deep-merged over gpushare's (lists replaced); paths gpushare owns are "
                            "refused with the gpushare key to use, unknown paths with the closest one.",
          default_text="none", examples=({"dcgmExporter": {"serviceMonitor": {"enabled": True}}},)),
), model=Operator)
OPERATOR_KEYS = OPERATOR.keys
OPERATOR_FIELD = Field(OPERATOR_KEY, OBJECT, "The NVIDIA GPU Operator (Helm chart) gpushare installs.",
                       default_text="the defaults of its keys", section=OPERATOR)


def _parse_values(c: Checker, value: Any, path: str, chart_version: str) -> dict | None:
    if not isinstance(value, dict):
        c.add(path, f"expected a mapping of GPU Operator chart values (as in the chart's values.yaml), got "
                    f"{kind_of(value)} {show(value)}; e.g. values: {{dcgmExporter: {{serviceMonitor: {{enabled: true}}}}}}")
        return None
    findings = check_user_values(value, chart_version)
    for where, why in findings.problems:
        c.add(f"{path}.{where}", why)
    return None if findings.problems else value


def _chart_version(c: Checker, value: Any, path: str) -> str | None:
    # A version gpushare has not verified is a warning (`operator_values.operator_warnings`), not a refusal.
    return c.check(OPERATOR["chartVersion"], str(value) if isinstance(value, (int, float)) else value, path)


def _repository(c: Checker, value: Any, path: str) -> str | None:
    return c.string(value, path, REPOSITORY_RE,
                    f"must be a Helm chart repository URL (https://...) or an OCI registry path "
                    f"(oci://<registry>/<path>, holding the gpu-operator chart); default "
                    f"{OPERATOR['repository'].default}")


def parse_operator(c: Checker, value: Any) -> Operator:
    path = OPERATOR_KEY
    if value is None:
        return Operator()
    operator = c.section_values(value, OPERATOR, path, rules={"chartVersion": _chart_version,
                                                              "repository": _repository, "values": checked_later})
    if operator is None:
        return Operator()
    if "values" in operator.given:
        operator["values"] = _parse_values(c, operator["values"], f"{path}.values", operator["chartVersion"])
    return operator.model()
