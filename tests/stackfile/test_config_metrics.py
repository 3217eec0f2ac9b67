"""`gpushare:metrics`: the showback section, validated with every problem named at its key path, and described by the
shipped schema as the validator reads it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpushare.model.metrics import Metrics
from gpushare.stackfile.config import parse_config
from tests.stackfile.schema_check import schema_problems
from tests.stackfile.test_config_tenants import BASE, problems

METRICS = "gpushare:metrics"
WORKSPACE = ("/subscriptions/3f2504e0-4f89-41d3-9a0c-0305e82c3301/resourceGroups/monitor-rg/providers/"
             "Microsoft.Monitor/accounts/gpu-metrics")


def with_metrics(value: Any) -> dict[str, Any]:
    raw = copy.deepcopy(BASE)
    raw[METRICS] = value
    return raw


def test_managed_or_a_url_parses_with_the_defaults_and_no_section_means_no_showback():
    assert parse_config(copy.deepcopy(BASE), source="s", stack="t").metrics is None
    managed = parse_config(with_metrics({"prometheus": "managed", "workspaceId": WORKSPACE}), source="s",
                           stack="t").metrics
    assert managed == Metrics("managed", "7d", 10, workspace_id=WORKSPACE) and managed.managed
    assert managed.window_seconds == 7 * 86400 and not managed.operator and managed.dashboard is None
    own = parse_config(with_metrics({"prometheus": "https://prom.example.com/select/0", "window": "2w",
                                     "idleBelow": 25}), source="s", stack="t").metrics
    assert own == Metrics("https://prom.example.com/select/0", "2w", 25) and not own.managed
    deployed = parse_config(with_metrics({"prometheus": "http://prometheus.monitoring:9090", "operator": True,
                                          "dashboard": "configmap", "namespace": "observability"}),
                            source="s", stack="t").metrics
    assert (deployed.operator, deployed.dashboard, deployed.namespace) == (True, "configmap", "observability")


def test_every_problem_of_the_section_is_reported_at_once_with_its_fix():
    found = problems(with_metrics({"prometheus": "prom:9090", "window": 7, "idleBelow": 100, "idle": 5}))
    assert found == {
        "gpushare:metrics.idle": "unknown key (did you mean 'idleBelow'?); allowed: prometheus, window, idleBelow, "
                                 "workspaceId, operator, dashboard, namespace, prices",
        "gpushare:metrics.prometheus": "must be managed or a Prometheus URL (http://host:port or "
                                       "https://host/path), got 'prom:9090'",
        "gpushare:metrics.window": "expected a Prometheus duration with its unit, got a number 7; write e.g. 7d or 7h",
        "gpushare:metrics.idleBelow": "must be from 1 to 99, got 100",
    }


@pytest.mark.parametrize("value, path, words", [
    ({"window": "7d"}, "gpushare:metrics.prometheus", "required: managed"),
    ("managed", "gpushare:metrics", "write gpushare:metrics: {prometheus: managed}"),
    ({"prometheus": "managed", "window": "30s"}, "gpushare:metrics.window", "duration of one unit"),
    ({"prometheus": "managed", "window": "30m"}, "gpushare:metrics.window", "from 1h to 90d"),
    ({"prometheus": "managed", "window": "13w"}, "gpushare:metrics.window", "from 1h to 90d"),
    ({"prometheus": "Managed"}, "gpushare:metrics.prometheus", "got 'Managed'"),
    ({"prometheus": "managed"}, "gpushare:metrics.workspaceId", "required with prometheus: managed"),
    ({"prometheus": "managed", "workspaceId": WORKSPACE.replace("Microsoft.Monitor/accounts", "Microsoft.Insights/"
                                                                "components")},
     "gpushare:metrics.workspaceId", "must be an Azure Monitor workspace's ARM ID"),
    ({"prometheus": "http://p:9090", "workspaceId": WORKSPACE}, "gpushare:metrics.workspaceId",
     "only with prometheus: managed"),
    ({"prometheus": "managed", "workspaceId": WORKSPACE, "operator": True}, "gpushare:metrics.operator",
     "only with a Prometheus URL"),
    ({"prometheus": "http://p:9090", "operator": "yes"}, "gpushare:metrics.operator", "expected true or false"),
    ({"prometheus": "http://p:9090", "dashboard": "grafana"}, "gpushare:metrics.dashboard", "allowed: configmap"),
    ({"prometheus": "http://p:9090", "namespace": "Monitoring"}, "gpushare:metrics.namespace",
     "Kubernetes namespace name"),
])
def test_a_bad_value_names_its_key_and_the_fix(value, path, words):
    found = problems(with_metrics(value))
    assert words in found[path], found


def test_the_schema_refuses_what_the_validator_refuses_at_the_same_key():
    good = {"config": with_metrics({"prometheus": "http://prometheus.monitoring:9090", "window": "24h"})}
    assert schema_problems(good) == []
    for bad in ({"prometheus": "prom:9090"}, {"prometheus": "managed", "window": "7"},
                {"prometheus": "managed", "idleBelow": 0}, {"window": "7d"}, {"prometheus": "managed", "x": 1},
                {"prometheus": "managed", "workspaceId": "/x"}, {"prometheus": "http://p:9090", "dashboard": "grafana"},
                {"prometheus": "http://p:9090", "namespace": "Mon"}, {"prometheus": "http://p:9090", "operator": "yes"}):
        assert schema_problems({"config": with_metrics(bad)}), bad
        assert problems(with_metrics(bad)), bad
