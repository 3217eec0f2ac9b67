"""`gpushare:metrics`: where the stack's GPU metrics go (Azure Monitor managed Prometheus, or a Prometheus the user
names) and the thresholds of the showback rules and `gpushare usage` (`gpushare.review.showback_rules`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gpushare.stackfile.checks import Checker, kind_of, optional, show
from gpushare.stackfile.declarations import INTEGER, OBJECT, STRING, Field, Section
from gpushare.stackfile.keys import METRICS_KEY

MANAGED = "managed"
PROMETHEUS_RE = re.compile(r"^(managed|https?://[^\s/?#]+(/[^\s?#]*)?)$")
DURATION_RE = re.compile(r"^(?P<amount>[1-9][0-9]*)(?P<unit>[mhdw])$")
"""A Prometheus duration of one unit (`30m`, `24h`, `7d`, `2w`): what a range selector and an alert's `for` take."""
SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 604800}
MIN_WINDOW, MAX_WINDOW = 3600, 90 * 86400
"""An hour at least (less is noise at 5-minute samples); 90 days at most (beyond most Prometheus retentions,
and the managed workspace's 18 months cost a query that long)."""


@dataclass(frozen=True)
class Metrics:
    """The validated `gpushare:metrics` section."""

    prometheus: str
    """`managed` (the cluster's Azure Monitor workspace) or the URL of the Prometheus to read and rule."""
    window: str = "7d"
    """What `gpushare usage` reads by default, and how long a tenant's quota lies unused before it is alerted."""
    idle_below: int = 10
    """A device busier than this percentage is in use; below it, idle (alerts and recommendations)."""

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


_DEFAULT = Metrics(prometheus=MANAGED)
METRICS = Section((
    Field("prometheus", STRING, "managed: the cluster's Azure Monitor managed Prometheus (azureMonitorProfile); or "
                                "the http(s) URL of the Prometheus that scrapes the cluster and evaluates the rules.",
          required=True, pattern=PROMETHEUS_RE, examples=("managed", "http://prometheus.monitoring:9090"),
          rule="must be managed or a Prometheus URL (http://host:port or https://host/path)"),
    Field("window", STRING, "A Prometheus duration (30m, 24h, 7d, 2w; 1h to 90d): what gpushare usage reads by "
                            "default, and how long a tenant's quota lies unused before the alert fires.",
          default=_DEFAULT.window, pattern=DURATION_RE,
          rule="must be a Prometheus duration of one unit, such as 24h, 7d or 2w"),
    Field("idleBelow", INTEGER, "Percent busy (DCGM graphics-engine activity) under which a device counts as idle, "
                                "for the alerts and gpushare usage's recommendations.",
          default=_DEFAULT.idle_below, minimum=1, maximum=99),
))
METRICS_KEYS = METRICS.keys
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


def parse_metrics(c: Checker, value: Any) -> Metrics | None:
    """None when the key is absent; every problem of the section is reported (`c`)."""
    path = METRICS_KEY
    if isinstance(value, str) and PROMETHEUS_RE.match(value):
        c.add(path, f"expected a mapping, got {kind_of(value)} {show(value)}; write "
                    f"{path}: {{prometheus: {value}}}")
        return None
    raw = c.mapping(value, path, METRICS_KEYS)
    if raw is None:
        return None
    if raw.get("prometheus") is None:
        c.add(f"{path}.prometheus", "required: managed (Azure Monitor managed Prometheus) or the URL of your "
                                    "Prometheus, e.g. http://prometheus.monitoring:9090")
        prometheus = None
    else:
        prometheus = c.check(METRICS["prometheus"], raw["prometheus"], f"{path}.prometheus")
    window = optional(raw, "window", lambda v: _window(c, v, f"{path}.window"), _DEFAULT.window)
    idle_below = c.field(raw, METRICS["idleBelow"], path)
    if prometheus is None:
        return None
    return Metrics(prometheus=prometheus, window=window, idle_below=idle_below)
