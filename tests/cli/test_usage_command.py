"""`gpushare usage` against a real Prometheus (Debian's 2.42, on loopback) holding a week of synthetic dcgm-exporter
and kube-state-metrics series built into a TSDB by `promtool tsdb create-blocks-from openmetrics`. The expected
figures are worked out here, step by step, from the scenario (tests/review/showback_scenario.py), apart from
gpushare's PromQL."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import shutil
import subprocess

import pytest

from gpushare.azure.prices import CLUSTER_FEE_QUERY, PriceSheet
from gpushare.cli import main
from gpushare.review.cost import HOURS_PER_MONTH
from tests.prices_stub import cluster_fee_items, meters_of
from tests.prometheus_server import create_blocks, prometheus_server
from tests.prometheus_tools import prometheus_binary
from tests.review.showback_scenario import (
    NODE_HOURLY,
    SCENARIO,
    STACK_FILE,
    T4TS_0,
    Scenario,
    expected,
    series,
)
from tests.stack_files import write_stack

STEP = 300
STEPS = 7 * 24 * 12
"""A week of 5-minute samples."""
END = 1_795_996_800
"""2026-11-29T00:00:00Z, a multiple of 5 minutes: the report's --at."""
START = END - (STEPS - 1) * STEP
CHANGE = 3 * 24 * 12
"""From the fourth day on, research's notebook-1 has finished and the time-sliced T4 it shared is 20% busy."""
RAW_DATA: list = []
"""The raw server's data folder, once built (the recorded server copies it)."""
SIZES = {"a100mig": "Standard_ND96asr_v4", "t4ts": "Standard_NC4as_T4_v3", "t4mps": "Standard_NC8as_T4_v3"}


def scenario_at(step: int) -> Scenario:
    if step < CHANGE:
        return SCENARIO
    pods = tuple(dataclasses.replace(p, phase="Succeeded") if p.name == "notebook-1" else p for p in SCENARIO.pods)
    devices = tuple(dataclasses.replace(d, activity=0.2) if d.node == T4TS_0 else d for d in SCENARIO.devices)
    return dataclasses.replace(SCENARIO, pods=pods, devices=devices)


def week_of_series():
    """Each series of the scenario with its value at every step (the scenario's two phases)."""
    before, after = series(scenario_at(0)), series(scenario_at(CHANGE))
    assert [(m, l) for m, l, _ in before] == [(m, l) for m, l, _ in after]
    for (metric, labels, first), (_, _, second) in zip(before, after):
        if metric == "kube_pod_status_phase" and first == second == 0:
            continue  # the phases a pod is not in: the rules select phase == 1 only
        yield metric, labels, [(START + k * STEP, first if k < CHANGE else second) for k in range(STEPS)]


def week_expected() -> dict:
    """The week's figures: each step's instant figures (`expected`) summed over the steps, x 5 minutes."""
    hours = STEP / 3600
    phases = [(expected(scenario_at(0)), CHANGE), (expected(scenario_at(CHANGE)), STEPS - CHANGE)]
    total: dict = {}
    for figures, steps in phases:
        for name in ("allocatable", "allocated", "used", "ns_allocated", "ns_used"):
            for key, value in figures[name].items():
                total.setdefault(name, {}).setdefault(key, 0.0)
                total[name][key] += value * steps * hours
    total["peak_allocated"] = {p: max(f["allocated"][p] for f, _ in phases) for p in phases[0][0]["allocated"]}
    total["device_hourly"] = phases[0][0]["device_hourly"]
    return total


@pytest.fixture(scope="module")
def prometheus_url(tmp_path_factory):
    promtool, prometheus = prometheus_binary("promtool"), prometheus_binary("prometheus")
    work = tmp_path_factory.mktemp("prometheus")
    create_blocks(promtool, week_of_series(), work, work / "data")
    RAW_DATA[:] = [work / "data"]
    with prometheus_server(prometheus, work / "data", work) as url:
        yield url


@pytest.fixture(scope="module")
def recorded_url(prometheus_url, tmp_path_factory):
    """A second server over the same raw blocks plus the stack's rule group backfilled over the last day by
    `promtool tsdb create-blocks-from rules` (which evaluates the recording rules through the first server's API),
    as if the group had run there for a day (to one step past END: the backfill leaves out its end)."""
    promtool, prometheus = prometheus_binary("promtool"), prometheus_binary("prometheus")
    work = tmp_path_factory.mktemp("recorded")
    rules = work / "rules.yml"
    code, text, err = run_command("rules", str(STACK_FILE))
    assert code == 0, err
    rules.write_text(text)
    result = subprocess.run([promtool, "tsdb", "create-blocks-from", "rules", f"--start={END - 86400}",
                             f"--end={END + STEP}", f"--url={prometheus_url}", f"--output-dir={work / 'rules-data'}",
                             str(rules)], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    data = work / "data"
    shutil.copytree(RAW_DATA[0], data)
    for block in (work / "rules-data").iterdir():
        shutil.copytree(block, data / block.name)
    with prometheus_server(prometheus, data, work) as url:
        yield url


@pytest.fixture(scope="module")
def prices_file(tmp_path_factory):
    items = {size: tuple(meters_of(size, "westeurope", NODE_HOURLY[pool])) for pool, size in SIZES.items()}
    items[CLUSTER_FEE_QUERY] = tuple(cluster_fee_items("westeurope"))
    path = tmp_path_factory.mktemp("prices") / "prices.json"
    path.write_text(json.dumps(PriceSheet("westeurope", "USD", "2026-12-01T08:00:00Z", "test", items).to_json()))
    return path


def run_command(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def usage(*args: str) -> tuple[int, str, str]:
    return run_command("usage", str(STACK_FILE), *args)


def test_usage_reports_the_weeks_figures_the_synthetic_metrics_imply(prometheus_url, prices_file):
    code, out, err = usage("--prometheus", prometheus_url, "--window", "7d", "--at", str(END), "--prices",
                           str(prices_file), "--json")
    assert code == 0, err
    report = json.loads(out)
    want = week_expected()
    replicas = {"a100mig": 1, "t4ts": 4, "t4mps": 4}
    pools = {row["pool"]: row for row in report["pools"]}
    for pool, row in pools.items():
        device_hours = want["allocatable"][pool] / replicas[pool]
        idle = device_hours - want["used"][pool]
        assert row["sliceHours"] == pytest.approx(want["allocatable"][pool], abs=0.01), pool
        assert row["allocatedSliceHours"] == pytest.approx(want["allocated"][pool], abs=0.01), pool
        assert row["usedDeviceHours"] == pytest.approx(want["used"][pool], abs=0.01), pool
        assert row["idleDeviceHours"] == pytest.approx(idle, abs=0.01), pool
        assert row["idleCost"] == pytest.approx(idle * want["device_hourly"][pool], abs=0.01), pool
    # 168 h x 16 MIG instances, 4 held by vision and 90% busy, 12 idle.
    assert pools["a100mig"]["deviceHours"] == 168 * 16 and pools["a100mig"]["utilisation"] == pytest.approx(0.225)
    namespaces = {(r["pool"], r["namespace"]): r for r in report["namespaces"]}
    assert set(namespaces) == set(want["ns_allocated"])
    for key, row in namespaces.items():
        held = want["ns_allocated"][key] / replicas[key[0]]
        assert row["allocatedDeviceHours"] == pytest.approx(held, abs=0.01), key
        assert row["usedDeviceHours"] == pytest.approx(want["ns_used"].get(key, 0.0), abs=0.01), key
        assert row["attribution"] == ("measured" if key[0] == "a100mig" else "allocation")
    tenants = {r["tenant"]: r for r in report["tenants"]}
    research = namespaces[("t4ts", "research")]
    assert tenants["research"]["idleCost"] == pytest.approx(
        (research["allocatedDeviceHours"] - research["usedDeviceHours"]) * NODE_HOURLY["t4ts"], abs=0.01)
    assert tenants["research"]["idleDeviceHours"] == pytest.approx(
        want["ns_allocated"][("t4ts", "research")] / 4 - want["ns_used"][("t4ts", "research")], abs=0.01)
    assert report["queries"] == 8 and report["source"] == "raw" and report["currency"] == "USD"


def test_each_pool_gets_the_stack_edit_its_figures_call_for_with_capacity_and_cost_delta(prometheus_url,
                                                                                          prices_file):
    code, out, err = usage("--prometheus", prometheus_url, "--at", str(END), "--prices", str(prices_file), "--json")
    assert code == 0, err
    recs = {row["pool"]: row["recommendation"] for row in json.loads(out)["pools"]}
    want = week_expected()
    # t4ts (autoscale 1-2, 4 slices a node): at most 4 slices held at once, which one node holds.
    assert want["peak_allocated"]["t4ts"] == 4
    assert recs["t4ts"]["edit"] == "autoscale.max 2 -> 1"
    assert recs["t4ts"]["capacity"] == {"before": 8, "after": 4}
    assert recs["t4ts"]["monthlyDelta"] == pytest.approx(-1 * NODE_HOURLY["t4ts"] * HOURS_PER_MONTH, abs=0.01)
    # t4mps (1 node, 4 MPS slices): all held, a pod pending, the GPU 80% busy: one more node, not more replicas.
    assert recs["t4mps"]["edit"] == "count 1 -> 2" and recs["t4mps"]["capacity"] == {"before": 4, "after": 8}
    assert recs["t4mps"]["monthlyDelta"] == pytest.approx(NODE_HOURLY["t4mps"] * HOURS_PER_MONTH, abs=0.01)
    # a100mig: one node is the fewest that holds vision's 4 slices.
    assert recs["a100mig"]["edit"] is None and recs["a100mig"]["monthlyDelta"] == 0


def test_text_and_markdown_name_the_edit_and_the_attribution(prometheus_url, prices_file):
    code, text, _ = usage("--prometheus", prometheus_url, "--at", str(END), "--prices", str(prices_file))
    assert code == 0
    assert "t4ts: autoscale.max 2 -> 1" in text and "-$384/month" in text and "attributed by allocation" in text
    showback = (STACK_FILE.parents[3] / "docs" / "showback.md").read_text()
    start, end = "<!-- usage-example:start -->\n```\n", "```\n<!-- usage-example:end -->"
    assert showback[showback.index(start) + len(start):showback.index(end)] == text, (
        "docs/showback.md's usage example is stale")
    code, markdown, _ = usage("--prometheus", prometheus_url, "--at", str(END), "--markdown")
    assert code == 0
    assert markdown.startswith("### GPU usage of stack showback over 7d (8 Prometheus queries, raw series)")
    assert "| research | research | t4ts |" in markdown and "$" not in markdown  # no prices: no cost


def test_over_a_window_the_rules_recorded_usage_reads_their_series_to_the_same_figures(prometheus_url,
                                                                                      recorded_url, prices_file):
    args = ("--window", "1d", "--at", str(END), "--prices", str(prices_file), "--json")
    code, raw_out, err = usage("--prometheus", prometheus_url, *args)
    assert code == 0, err
    code, recorded_out, err = usage("--prometheus", recorded_url, *args)
    assert code == 0, err
    raw, recorded = json.loads(raw_out), json.loads(recorded_out)
    assert raw["source"] == "raw" and recorded["source"] == "recorded"
    figures = ("sliceHours", "allocatedSliceHours", "usedDeviceHours", "idleDeviceHours", "idleCost",
               "peakAllocated", "peakPending")
    for a, b in zip(raw["pools"], recorded["pools"]):
        assert {k: b[k] for k in figures} == pytest.approx({k: a[k] for k in figures}, abs=0.01), a["pool"]
        assert a["recommendation"] == b["recommendation"]
    assert {(r["pool"], r["namespace"]): r["usedDeviceHours"] for r in recorded["namespaces"]} == pytest.approx(
        {(r["pool"], r["namespace"]): r["usedDeviceHours"] for r in raw["namespaces"]}, abs=0.01)
    # The last day only: over the week the rules did not run throughout, so the week's report reads raw series.
    code, week, _ = usage("--prometheus", recorded_url, "--at", str(END), "--json")
    assert code == 0 and json.loads(week)["source"] == "raw"
    code, forced, _ = usage("--prometheus", recorded_url, *args, "--raw-series")
    assert code == 0 and json.loads(forced)["source"] == "raw"


def test_an_unreachable_prometheus_is_one_error_with_the_url_and_exit_4():
    with socket_closed() as url:
        code, out, err = usage("--prometheus", url, "--at", str(END))
    assert code == 4 and out == ""
    assert f"{url}/api/v1/query: cannot be reached" in err and "Traceback" not in err


@contextlib.contextmanager
def socket_closed():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    yield f"http://127.0.0.1:{port}"


def test_a_stack_without_metrics_is_refused_with_the_key_to_add(tmp_path):
    stack = write_stack(tmp_path, "\n".join(line for line in STACK_FILE.read_text().splitlines()
                               if "gpushare:metrics" not in line and "prometheus:" not in line
                               and "window:" not in line) + "\n", "Pulumi.nometrics.yaml")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["usage", str(stack), "--prometheus", "http://127.0.0.1:9"])
    assert code == 2 and "gpushare:metrics: required for showback" in err.getvalue()
