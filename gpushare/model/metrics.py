"""The validated `gpushare:metrics` section (`gpushare.stackfile.metrics_config` reads and checks it): where the
stack's GPU metrics go and the thresholds of the showback rules and `gpushare usage`."""

from __future__ import annotations

import re
from dataclasses import dataclass

MANAGED = "managed"
DURATION_RE = re.compile(r"^(?P<amount>[1-9][0-9]*)(?P<unit>[mhdw])$")
"""A Prometheus duration of one unit (`30m`, `24h`, `7d`, `2w`): what a range selector and an alert's `for` take."""
SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 604800}


@dataclass(frozen=True)
class Metrics:
    """The validated `gpushare:metrics` section."""

    prometheus: str
    """`managed` (the cluster's Azure Monitor workspace) or the URL of the Prometheus to read and rule."""
    window: str = "7d"
    """What `gpushare usage` reads by default, and how long a tenant's quota lies unused before it is alerted."""
    idle_below: int = 10
    """A device busier than this percentage is in use; below it, idle (alerts and recommendations)."""
    workspace_id: str | None = None
    """The Azure Monitor workspace the cluster's managed Prometheus writes to (required when managed): the scope of
    the rule group the program deploys."""
    operator: bool = False
    """With a URL: the Prometheus Operator runs in the cluster, so the program deploys a PrometheusRule and a
    monitoring.coreos.com PodMonitor (without it, neither: the rules are loaded by hand)."""
    dashboard: str | None = None
    """`configmap`: the program deploys the dashboard as a ConfigMap for the Grafana sidecar; None: not deployed."""
    namespace: str = "monitoring"
    """Where the PrometheusRule and the dashboard ConfigMap go (the Prometheus Operator's and Grafana's namespace)."""
    prices: str | None = None
    """A saved price answer (`gpushare prices STACK > FILE`), as written: relative to the stack file's folder. The
    deployed rules and dashboard carry idle cost at its prices; None: they carry none."""

    @property
    def managed(self) -> bool:
        return self.prometheus == MANAGED

    @property
    def window_seconds(self) -> int:
        return duration_seconds(self.window)


def duration_seconds(text: str) -> int:
    match = DURATION_RE.match(text)
    assert match, text
    return int(match["amount"]) * SECONDS[match["unit"]]
