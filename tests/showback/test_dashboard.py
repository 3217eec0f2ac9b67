"""The showback dashboard, built with grafana-foundation-sdk, judged by Grafana's own Dashboard type
(@grafana/schema through the TypeScript compiler, tools/grafanacheck); every panel reads a series the stack's rule
group records."""

from __future__ import annotations

import contextlib
import io
import json
import re

import pytest
import yaml

from gpushare.cli import main
from gpushare.showback.dashboard import dashboard_json
from gpushare.showback.rules import plain_group
from gpushare.stackfile.config import load_stack_file
from tests.showback.grafana_check import grafana_type_errors
from tests.showback.showback_scenario import STACK_FILE, price_cost


@pytest.fixture(scope="module")
def stack():
    return load_stack_file(STACK_FILE)


def _panels(model):
    return [p for p in model["panels"] if p["type"] != "row"]


def test_grafanas_dashboard_type_accepts_the_dashboard_and_refuses_a_broken_one(tmp_path, stack):
    good, priced, broken = tmp_path / "good.json", tmp_path / "priced.json", tmp_path / "broken.json"
    good.write_text(json.dumps(dashboard_json(stack, None)))
    priced.write_text(json.dumps(dashboard_json(stack, "EUR")))
    model = dashboard_json(stack, None)
    model["panels"][1]["gridPos"]["w"] = "half"
    broken.write_text(json.dumps(model))
    errors = grafana_type_errors([good, priced, broken])
    assert errors[str(good)] == [] and errors[str(priced)] == []
    assert errors[str(broken)] == ["Type 'string' is not assignable to type 'number'."]


def test_every_panel_reads_a_series_the_rule_group_records(stack):
    recorded = {r["record"] for r in plain_group(stack, stack.metrics, price_cost())["rules"] if "record" in r}
    model = dashboard_json(stack, "USD")
    read = {name for panel in _panels(model) for target in panel["targets"]
            for name in re.findall(r"gpushare:[a-z_]+:[a-z]+", target["expr"])}
    assert read and read <= recorded
    assert {p["title"] for p in _panels(model)} >= {"Busy share per pool", "Idle cost per tenant, per hour",
                                                     "Chargeback per tenant, per hour"}
    assert all(t["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
               for p in _panels(model) for t in p["targets"])
    # Without prices there is no cost to show.
    assert not any("idle_cost" in t["expr"] for p in _panels(dashboard_json(stack, None)) for t in p["targets"])


def test_the_command_prints_a_configmap_for_the_grafana_sidecar(stack):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["dashboard", str(STACK_FILE), "--format", "configmap", "--namespace", "grafana"]) == 0
    config_map = yaml.safe_load(out.getvalue())
    assert config_map["kind"] == "ConfigMap" and config_map["metadata"]["namespace"] == "grafana"
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    (body,) = config_map["data"].values()
    assert json.loads(body)["uid"] == "gpushare-showback"
