"""`gpushare:metrics`: where the stack's GPU metrics go (Azure Monitor managed Prometheus, or a Prometheus the user
names) and the thresholds of the showback rules and `gpushare usage` (`gpushare.showback.rules`)."""

from __future__ import annotations

import re
from typing import Any

from gpushare.model.keys import METRICS_KEY
from gpushare.model.metrics import DURATION_RE, MANAGED, Metrics, duration_seconds
from gpushare.stackfile.checks import Checker, kind_of, show
from gpushare.stackfile.declarations import BOOLEAN, INTEGER, OBJECT, STRING, Field, Section
from gpushare.stackfile.namespaces import NAMESPACE_RE

PROMETHEUS_RE = re.compile(r"^(managed|https?://[^\s/?#]+(/[^\s?#]*)?)$")
WORKSPACE_ID_RE = re.compile(
    r"^/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[-\w.()]+/providers/Microsoft\.Monitor/accounts/[-\w]+$",
    re.IGNORECASE,
)
"""An Azure Monitor workspace's ARM ID (resource type Microsoft.Monitor/accounts): the scope of the Prometheus rule
group gpushare deploys on a managed stack."""
WORKSPACE_ID_SHAPE = ("/subscriptions/<subscription id>/resourceGroups/<group>/providers/Microsoft.Monitor/accounts/"
                      "<workspace> (`az monitor account show -g <group> -n <workspace> --query id -o tsv` prints it)")
DASHBOARD_CONFIG_MAP = "configmap"
PRICES_FILE_RE = re.compile(r"^[^\s]+\.json$")
MIN_WINDOW, MAX_WINDOW = 3600, 90 * 86400
"""An hour at least (less is noise at 5-minute samples); 90 days at most (beyond most Prometheus retentions,
and the managed workspace's 18 months cost a query that long)."""


PROMETHEUS_MISSING = ("managed (Azure Monitor managed Prometheus) or the URL of your Prometheus, e.g. "
                      "http://prometheus.monitoring:9090")
METRICS = Section((
    Field("prometheus", STRING, "managed: the cluster's Azure Monitor managed Prometheus (azureMonitorProfile); or "
                                "the http(s) URL of the Prometheus that scrapes the cluster and evaluates the rules.",
          required=True, pattern=PROMETHEUS_RE, examples=("managed", "http://prometheus.monitoring:9090"),
          rule="must be managed or a Prometheus URL (http://host:port or https://host/path)",
          missing=PROMETHEUS_MISSING),
    Field("window", STRING, "A Prometheus duration (30m, 24h, 7d, 2w; 1h to 90d): what gpushare usage reads by "
                            "default, and how long a tenant's quota lies unused before the alert fires.",
          pattern=DURATION_RE,
          rule="must be a Prometheus duration of one unit, such as 24h, 7d or 2w"),
    Field("idleBelow", INTEGER, "Percent busy (DCGM graphics-engine activity) under which a device counts as idle, "
                                "for the alerts and gpushare usage's recommendations.",
          minimum=1, maximum=99),
    Field("workspaceId", STRING, "With prometheus: managed (and required then): the ARM ID of the Azure Monitor "
                                 "workspace the cluster's managed Prometheus writes to; the program deploys the rule "
                                 "group there, scoped to the cluster.", pattern=WORKSPACE_ID_RE,
          examples=("/subscriptions/3f2504e0-4f89-41d3-9a0c-0305e82c3301/resourceGroups/monitor-rg/providers/"
                    "Microsoft.Monitor/accounts/gpu-metrics",),
          rule=f"must be an Azure Monitor workspace's ARM ID, {WORKSPACE_ID_SHAPE}"),
    Field("operator", BOOLEAN, "With a Prometheus URL: the Prometheus Operator runs in the cluster, so the program "
                               "deploys the rules as a PrometheusRule and the dcgm-exporter scrape as a PodMonitor; "
                               "false: neither (load gpushare rules --format file yourself)."),
    Field("dashboard", STRING, "configmap: the program deploys the showback dashboard as a ConfigMap labelled "
                               "grafana_dashboard=1 for the Grafana chart's sidecar; absent: not deployed (gpushare "
                               "dashboard prints it).", default_text="none", enum=(DASHBOARD_CONFIG_MAP,)),
    Field("namespace", STRING, "The namespace of the PrometheusRule and the dashboard ConfigMap (the Prometheus "
                               "Operator's rule namespace, the Grafana sidecar's); it must exist.",
          pattern=NAMESPACE_RE,
          rule="must be a Kubernetes namespace name (lower-case letters, digits and -, at most 63)"),
    Field("prices", STRING, "A saved price answer (gpushare prices STACK > FILE, committed beside the stack), "
                            "relative to the stack file's folder: the deployed rules get the idle cost rules and "
                            "the dashboard its cost panels, at those list prices. Absent: the deployed group and "
                            "dashboard carry no cost (gpushare rules --prices prints it).",
          default_text="none", pattern=PRICES_FILE_RE, examples=("prices.json",),
          rule="must be the path of a JSON file, such as prices.json or ../prices/westeurope.json"),
), model=Metrics)
METRICS_FIELD = Field(METRICS_KEY, OBJECT, "GPU showback: the Prometheus the GPU metrics go to, and the thresholds "
                                           "of the generated rules and of gpushare usage.",
                      default_text="none (no showback rules)", section=METRICS)


def _window(c: Checker, value: Any, path: str) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        c.add(path, f"expected a Prometheus duration with its unit, got a number {value}; write e.g. {value}d or "
                    f"{value}h")
        return None
    text = c.check(METRICS["window"], value, path)
    if text is None:
        return None
    if not MIN_WINDOW <= duration_seconds(text) <= MAX_WINDOW:
        c.add(path, f"must be from 1h to 90d (shorter is noise at 5-minute samples, longer beyond most retentions), "
                    f"got {show(value)}")
        return None
    return text


def _prometheus(c: Checker, value: Any, path: str) -> str | None:
    if value is None:
        c.add(path, f"required: {PROMETHEUS_MISSING}")
        return None
    return c.check(METRICS["prometheus"], value, path)


def parse_metrics(c: Checker, value: Any) -> Metrics | None:
    """None when the key is absent; every problem of the section is reported (`c`)."""
    path = METRICS_KEY
    if isinstance(value, str) and PROMETHEUS_RE.match(value):
        c.add(path, f"expected a mapping, got {kind_of(value)} {show(value)}; write "
                    f"{path}: {{prometheus: {value}}}")
        return None
    metrics = c.section_values(value, METRICS, path, rules={"prometheus": _prometheus, "window": _window,
                                                            "dashboard": _dashboard})
    if metrics is None:
        return None
    prometheus, given = metrics["prometheus"], metrics.given
    if prometheus == MANAGED and "workspaceId" not in given:
        c.add(f"{path}.workspaceId", f"required with prometheus: managed: the Azure Monitor workspace the rule group "
                                     f"goes to, {WORKSPACE_ID_SHAPE}")
    if prometheus is not None and prometheus != MANAGED and "workspaceId" in given:
        c.add(f"{path}.workspaceId", f"only with prometheus: managed (an Azure Monitor workspace); with the URL "
                                     f"{prometheus} remove it")
    if prometheus == MANAGED and "operator" in given:
        c.add(f"{path}.operator", "only with a Prometheus URL: managed Prometheus takes the rule group and an "
                                  "azmonitoring.coreos.com PodMonitor; remove it")
    if metrics.incomplete:
        return None
    return metrics.model()


def _dashboard(c: Checker, value: Any, path: str) -> str | None:
    if value != DASHBOARD_CONFIG_MAP:
        c.add(path, f"unknown value {show(value)}; allowed: {DASHBOARD_CONFIG_MAP} (a ConfigMap for the Grafana "
                    f"sidecar), or leave the key out")
        return None
    return value
