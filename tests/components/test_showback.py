"""The Showback component in gpushare's program, under the mock engine: which showback objects register for each
`gpushare:metrics` setting, their inputs (the rules are what `gpushare rules` prints, the PodMonitor selects the GPU
Operator's dcgm-exporter pods on their metrics port), what they wait for, and nothing without `gpushare:metrics`."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpushare.cli import main
from gpushare.kubernetes.dcgm_scrape import DCGM_EXPORTER_POD_LABELS, DCGM_EXPORTER_PORT
from gpushare.render.mock_engine import MOCK_SUBSCRIPTION, Recording, run_program
from gpushare.stackfile.config import encode_engine_config, read_stack_file
from tests.stack_files import write_stack

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "showback" / "Pulumi.showback.yaml"
WORKSPACE = ("/subscriptions/3f2504e0-4f89-41d3-9a0c-0305e82c3301/resourceGroups/monitor-rg/providers/"
             "Microsoft.Monitor/accounts/gpu-metrics")
RULE_GROUP = "azure-native:alertsmanagement:PrometheusRuleGroup"
AZURE_POD_MONITOR = "kubernetes:azmonitoring.coreos.com/v1:PodMonitor"
POD_MONITOR = "kubernetes:monitoring.coreos.com/v1:PodMonitor"
PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
COMPONENT = "gpushare:showback:Showback"
SHOWBACK_TYPES = (COMPONENT, RULE_GROUP, AZURE_POD_MONITOR, POD_MONITOR, PROMETHEUS_RULE)
MANAGED = {"prometheus": "managed", "workspaceId": WORKSPACE}
OWN = {"prometheus": "http://prometheus.monitoring:9090"}
# The GPU Operator's dcgm-exporter DaemonSet's pod template (NVIDIA/gpu-operator assets/state-dcgm-exporter/
# 0800_daemonset.yaml at v26.7.0), written out here as the operator creates it: what the PodMonitor must select.
DCGM_EXPORTER_POD = {"metadata": {"labels": {"app": "nvidia-dcgm-exporter"}},
                     "spec": {"containers": [{"name": "nvidia-dcgm-exporter",
                                              "ports": [{"name": "metrics", "containerPort": 9400}]}]}}


def stack_file(tmp_path: Path, metrics: dict[str, Any] | None) -> Path:
    document = yaml.safe_load(FIXTURE.read_text())
    if metrics is None:
        del document["config"]["gpushare:metrics"]
    else:
        document["config"]["gpushare:metrics"] = {"window": "7d", **metrics}
    path = write_stack(tmp_path, yaml.safe_dump(document), "Pulumi.showback.yaml")
    return path


def program(path: Path) -> Recording:
    return run_program("showback", encode_engine_config(read_stack_file(path).config), stack_file=path)


def printed(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(argv)) == 0
    return out.getvalue()


def showback_types(recording: Recording) -> list[str]:
    return sorted(r.type for r in recording.resources if r.type in SHOWBACK_TYPES or r.parent == "showback")


def test_without_gpushare_metrics_nothing_of_showback_registers(tmp_path):
    recording = program(stack_file(tmp_path, None))
    assert showback_types(recording) == []
    assert not any("gpushare:metrics" in w for w in recording.warnings)


def test_managed_deploys_the_rule_group_of_gpushare_rules_scoped_to_the_workspace_and_the_cluster(tmp_path):
    path = stack_file(tmp_path, MANAGED)
    recording = program(path)
    assert showback_types(recording) == [RULE_GROUP, COMPONENT, AZURE_POD_MONITOR]
    group = recording.get(RULE_GROUP, "showback-rule-group")
    inputs = group.inputs
    cluster_id = f"/subscriptions/{MOCK_SUBSCRIPTION}/mock/ManagedCluster/gpushare-showback"
    assert inputs["scopes"] == [WORKSPACE, cluster_id]
    assert (inputs["clusterName"], inputs["resourceGroupName"], inputs["location"]) == (
        "gpushare-showback", "gpushare-showback-rg", "westeurope")
    assert (inputs["ruleGroupName"], inputs["interval"], inputs["enabled"]) == ("gpushare-showback", "PT5M", True)
    assert group.parent == "showback" and {"cluster-aks", "cluster-rg"} <= set(group.depends_on)

    # Rule for rule, what `gpushare rules` prints, in Azure's field names.
    printed_group = yaml.safe_load(printed("rules", str(path)))["groups"][0]
    assert printed_group["name"] == inputs["ruleGroupName"]
    iso = {"1h": "PT1H", "6h": "PT6H", "15m": "PT15M"}
    severity = {"info": 3, "warning": 2}
    expected = []
    for rule in printed_group["rules"]:
        azure = {"expression": rule["expr"], "labels": rule["labels"]}
        if "record" in rule:
            azure["record"] = rule["record"]
        else:
            azure.update(alert=rule["alert"], annotations=rule["annotations"], severity=severity[
                rule["labels"]["severity"]], **({"for": iso[rule["for"]]} if "for" in rule else {}))
        expected.append(azure)
    assert inputs["rules"] == expected
    assert len(expected) > 20 and {r["alert"] for r in expected if "alert" in r} == {
        "GpushareTenantQuotaUnused", "GpusharePoolIdle", "GpusharePoolSaturated"}


def assert_scrapes_the_gpu_operators_dcgm_exporter(monitor, api_version: str) -> None:
    inputs = monitor.inputs
    assert (inputs["apiVersion"], inputs["kind"]) == (api_version, "PodMonitor")
    assert inputs["metadata"]["namespace"] == "gpu-operator"
    selector = inputs["spec"]["selector"]["matchLabels"]
    assert selector.items() <= DCGM_EXPORTER_POD["metadata"]["labels"].items() and selector
    [endpoint] = inputs["spec"]["podMetricsEndpoints"]
    ports = {p["name"] for c in DCGM_EXPORTER_POD["spec"]["containers"] for p in c["ports"]}
    assert endpoint["port"] in ports
    assert endpoint["honorLabels"] is True
    assert endpoint["relabelings"] == [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}]
    assert (monitor.parent, monitor.provider) == ("showback", "cluster-access-provider")
    assert "gpu-operator-namespace" in monitor.depends_on


def test_managed_scrapes_dcgm_exporter_through_an_azmonitoring_pod_monitor(tmp_path):
    recording = program(stack_file(tmp_path, MANAGED))
    assert_scrapes_the_gpu_operators_dcgm_exporter(recording.get(AZURE_POD_MONITOR, "showback-pod-monitor"),
                                                   "azmonitoring.coreos.com/v1")
    assert (DCGM_EXPORTER_POD_LABELS, DCGM_EXPORTER_PORT) == ({"app": "nvidia-dcgm-exporter"}, "metrics")


def test_a_url_with_the_prometheus_operator_deploys_what_gpushare_rules_prints_and_a_pod_monitor(tmp_path):
    path = stack_file(tmp_path, {**OWN, "operator": True, "namespace": "observability"})
    recording = program(path)
    assert showback_types(recording) == [COMPONENT, POD_MONITOR, PROMETHEUS_RULE]
    rule = recording.get(PROMETHEUS_RULE, "showback-prometheus-rule")
    assert rule.inputs == yaml.safe_load(printed("rules", str(path), "--format", "prometheusrule"))
    assert rule.inputs["metadata"]["namespace"] == "observability"
    assert (rule.parent, rule.provider) == ("showback", "cluster-access-provider")
    assert_scrapes_the_gpu_operators_dcgm_exporter(recording.get(POD_MONITOR, "showback-pod-monitor"),
                                                   "monitoring.coreos.com/v1")
    assert not any("were not deployed" in w for w in recording.warnings)


def test_a_url_without_the_operator_deploys_no_rules_and_says_how_to_load_them(tmp_path):
    recording = program(stack_file(tmp_path, OWN))
    assert showback_types(recording) == [COMPONENT]
    [warning] = [w for w in recording.warnings if "gpushare:metrics" in w]
    assert "not deployed" in warning and "gpushare rules showback" in warning and "operator: true" in warning


@pytest.mark.parametrize("metrics", [MANAGED, {**OWN, "operator": True}, OWN], ids=["managed", "operator", "url"])
def test_the_dashboard_config_map_is_what_gpushare_dashboard_prints_only_when_asked(tmp_path, metrics):
    assert not [r for r in program(stack_file(tmp_path, metrics)).by_type(CONFIG_MAP) if r.parent == "showback"]
    path = stack_file(tmp_path, {**metrics, "dashboard": "configmap"})
    config_map = program(path).get(CONFIG_MAP, "showback-dashboard")
    printed_map = yaml.safe_load(printed("dashboard", str(path), "--format", "configmap"))
    assert {"metadata": config_map.inputs["metadata"], "data": config_map.inputs["data"]} == {
        "metadata": printed_map["metadata"], "data": printed_map["data"]}
    assert config_map.inputs["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config_map.inputs["metadata"]["namespace"] == "monitoring"
    [board] = config_map.inputs["data"].values()
    assert json.loads(board)["uid"] == "gpushare-showback"
    assert (config_map.parent, config_map.provider) == ("showback", "cluster-access-provider")


def test_plan_json_lists_the_showback_resources(tmp_path):
    plan = json.loads(printed("plan", str(stack_file(tmp_path, MANAGED)), "--json"))
    types = {r["type"] for r in plan["resources"]}
    assert {RULE_GROUP, AZURE_POD_MONITOR} <= types


RELEASE = "kubernetes:helm.sh/v3:Release"


@pytest.mark.parametrize("metrics, pod_monitor, service_monitor", [
    ({**OWN, "operator": True}, POD_MONITOR, False),
    (MANAGED, AZURE_POD_MONITOR, None),
    (OWN, None, None),
], ids=["operator", "managed", "url"])
def test_dcgm_exporter_is_scraped_once_by_one_monitor(tmp_path, metrics, pod_monitor, service_monitor):
    """Where the program deploys its monitoring.coreos.com PodMonitor, the GPU Operator's own dcgm-exporter
    ServiceMonitor (chart default on, created by the operator wherever the Prometheus Operator's CRD exists) is
    turned off in the release's values, or the same Prometheus scrapes the exporter twice. Managed Prometheus reads
    only its azmonitoring.coreos.com PodMonitor, and without operator the program scrapes nothing: the chart's
    default stays (no value set: None)."""
    recording = program(stack_file(tmp_path, metrics))
    monitors = [r.type for r in recording.resources if r.type in (POD_MONITOR, AZURE_POD_MONITOR)]
    assert monitors == ([pod_monitor] if pod_monitor else [])
    values = recording.get(RELEASE, "gpu-operator-release").inputs["values"]
    assert values.get("dcgmExporter", {}).get("serviceMonitor", {}).get("enabled") is service_monitor


def test_keeping_the_chart_service_monitor_beside_the_pod_monitor_is_warned_and_honoured(tmp_path):
    path = stack_file(tmp_path, {**OWN, "operator": True})
    document = yaml.safe_load(path.read_text())
    document["config"]["gpushare:operator"]["values"] = {"dcgmExporter": {"serviceMonitor": {"enabled": True}}}
    path.write_text(yaml.safe_dump(document))
    recording = program(path)
    values = recording.get(RELEASE, "gpu-operator-release").inputs["values"]
    assert values["dcgmExporter"]["serviceMonitor"]["enabled"] is True  # the user's value wins, as Helm merges
    [warning] = [w for w in recording.warnings if "dcgmExporter.serviceMonitor.enabled" in w]
    assert "scrapes the exporter twice" in warning and "namespace gpu-operator" in warning


def saved_prices(tmp_path: Path, region: str = "westeurope") -> Path:
    """`gpushare prices showback --template` filled in with the scenario's node prices, beside the stack file."""
    from tests.showback.showback_scenario import NODE_HOURLY
    document = json.loads(printed("prices", str(FIXTURE), "--template"))
    by_size = {pool["vmSize"]: NODE_HOURLY[pool["name"]]
               for pool in yaml.safe_load(FIXTURE.read_text())["config"]["gpushare:pools"]}
    for size, items in document["items"].items():
        for item in items:
            item["retailPrice"] = by_size.get(size, 0.1)
    document["readAt"], document["region"] = "2026-12-01", region
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(document))
    return path


def test_saved_prices_put_idle_cost_in_the_deployed_rules_and_dashboard(tmp_path):
    """With `prices:` the program deploys the group and dashboard `rules --prices FILE` and `dashboard --prices FILE`
    print; without it, neither carries cost."""
    prices = saved_prices(tmp_path)
    path = stack_file(tmp_path, {**OWN, "operator": True, "dashboard": "configmap", "prices": prices.name})
    recording = program(path)
    rules = recording.get(PROMETHEUS_RULE, "showback-prometheus-rule").inputs
    assert rules == yaml.safe_load(printed("rules", str(path), "--format", "prometheusrule", "--prices", str(prices)))
    records = {rule.get("record") for rule in rules["spec"]["groups"][0]["rules"]}
    assert {"gpushare:pool_idle_cost:hourly", "gpushare:tenant_idle_cost:hourly"} <= records
    dashboard = recording.get(CONFIG_MAP, "showback-dashboard").inputs
    assert dashboard["data"] == yaml.safe_load(
        printed("dashboard", str(path), "--format", "configmap", "--prices", str(prices)))["data"]
    assert "idle_cost" in json.dumps(dashboard["data"])
    # `rules` without --prices prints what the program deploys: the stack's saved prices.
    assert yaml.safe_load(printed("rules", str(path), "--format", "prometheusrule")) == rules

    (tmp_path / "unpriced").mkdir()
    unpriced = program(stack_file(tmp_path / "unpriced", {**OWN, "operator": True, "dashboard": "configmap"}))
    assert "idle_cost" not in json.dumps(unpriced.get(PROMETHEUS_RULE, "showback-prometheus-rule").inputs)
    assert "idle_cost" not in json.dumps(unpriced.get(CONFIG_MAP, "showback-dashboard").inputs["data"])


@pytest.mark.parametrize(("prices", "expected"), [
    ("missing.json", "missing.json: cannot be read (No such file or directory); write it with `gpushare prices "
                     "STACK > missing.json`"),
    ("other-region.json", "holds prices for region 'eastus', but the stack is in 'westeurope'"),
])
def test_saved_prices_that_cannot_be_used_stop_the_plan_before_anything_registers(tmp_path, capsys, prices,
                                                                                  expected):
    saved_prices(tmp_path, region="eastus").rename(tmp_path / "other-region.json")
    path = stack_file(tmp_path, {**OWN, "operator": True, "prices": prices})
    assert main(["plan", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    assert "gpushare:metrics.prices" in captured.err and expected in captured.err
