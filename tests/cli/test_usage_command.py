"""`gpushare usage` against a real Prometheus (Debian's 2.42, on loopback) holding a week of synthetic dcgm-exporter
and kube-state-metrics series built into a TSDB by `promtool tsdb create-blocks-from openmetrics`. The expected
figures are worked out here, step by step, from the scenario (tests/showback/showback_scenario.py), apart from
gpushare's PromQL."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import shutil
import subprocess

import pytest
import yaml

from gpushare.azure.arm import SharedCredential
from gpushare.azure.prices import CLUSTER_FEE_QUERY, PriceSheet
from gpushare.azure.remote_read import ReadDeadline
from gpushare.cli import main
from gpushare.cli.usage import prometheus_reader
from gpushare.kubernetes.workspace_prometheus import WorkspacePrometheusReader
from gpushare.model.stack import AzureEnvironment
from gpushare.showback.cost import HOURS_PER_MONTH
from gpushare.stackfile.config import parse_stack_file, read_stack_file
from tests.azure_stub import (
    ArmStub,
    ScopedTokenCredential,
    StubResponse,
    WorkspaceQueryStub,
    arm_error,
    arm_monitor_workspace,
    monitor_workspace_id,
    reach_from_environment,
)
from tests.conftest import NoDefaultCredential
from tests.prices_stub import cluster_fee_items, meters_of
from tests.prometheus_server import create_blocks, prometheus_server
from tests.prometheus_tools import prometheus_binary
from tests.showback.chargeback_stacks import assert_adds_up
from tests.showback.showback_scenario import (
    A100,
    NODE_HOURLY,
    SCENARIO,
    STACK_FILE,
    T4TS_0,
    Scenario,
    expected,
    series,
)
from tests.stack_files import write_stack
from tests.upstream_data import upstream_file

STEP = 300
STEPS = 7 * 24 * 12
"""A week of 5-minute samples."""
END = 1_795_996_800
"""2026-11-29T00:00:00Z, a multiple of 5 minutes: the report's --at."""
START = END - (STEPS - 1) * STEP
CHANGE = 3 * 24 * 12
"""From the fourth day on, research's notebook-1 has finished and the time-sliced T4 it shared is 20% busy, and
vision's four MIG instances are 30% busy with 3,000 MiB of framebuffer in use (19,000 MiB before)."""
VISION_AFTER = {"activity": 0.3, "framebuffer": 3000.0}
RAW_DATA: list = []
"""The raw server's data folder, once built (the recorded server copies it)."""
SIZES = {"a100mig": "Standard_ND96asr_v4", "t4ts": "Standard_NC4as_T4_v3", "t4mps": "Standard_NC8as_T4_v3"}


def scenario_at(step: int) -> Scenario:
    if step < CHANGE:
        return SCENARIO
    pods = tuple(dataclasses.replace(p, phase="Succeeded") if p.name == "notebook-1" else p for p in SCENARIO.pods)
    devices = tuple(dataclasses.replace(d, activity=0.2) if d.node == T4TS_0
                    else dataclasses.replace(d, **VISION_AFTER) if d.node == A100 and d.pods else d
                    for d in SCENARIO.devices)
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
    total["instance_hourly"] = phases[0][0]["instance_hourly"]
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
        assert row["idleCost"] == pytest.approx(idle * want["instance_hourly"][pool], abs=0.01), pool
    # 168 h x 16 MIG instances, 4 held by vision, 90% busy for 3 days and 30% for 4, 12 idle.
    assert pools["a100mig"]["deviceHours"] == 168 * 16
    assert pools["a100mig"]["utilisation"] == pytest.approx(4 * (0.9 * 72 + 0.3 * 96) / (168 * 16), abs=1e-4)
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
    assert report["queries"] == 9 and report["source"] == "raw" and report["currency"] == "USD"


def test_each_pools_chargeback_over_the_week_sums_to_its_cost_with_batch_charged_what_it_borrowed(prometheus_url,
                                                                                                   prices_file):
    """Worked out from the scenario: every pool is one tenant's, whole. t4ts (8 shares, $0.1315 a share-hour) is
    research's: 8 x 168 = 1,344 share-hours, $176.74 (176.736). research held 3 shares for 3 days and 1 for 4 (312
    share-hours); batch, of no tenant, held 1 throughout: 168 borrowed from research's unused guarantee, charged to
    batch (168/1,344 of 17,673.6 cents: 2,209.2) and credited to research (1,176/1,344: 15,464.4); the cent left
    over goes to the larger remainder, research's. Nobody else's: no idle."""
    code, out, err = usage("--prometheus", prometheus_url, "--at", str(END), "--prices", str(prices_file), "--json")
    assert code == 0, err
    report = json.loads(out)
    pools = {row["pool"]: row for row in report["pools"]}
    t4ts = pools["t4ts"]["chargeback"]
    assert (t4ts["tenants"]["research"]["lent"], t4ts["others"]["batch"]["borrowed"]) == (168.0, 168.0)
    assert (t4ts["tenants"]["research"]["amount"], t4ts["others"]["batch"]["amount"], t4ts["idle"]) == (
        154.65, 22.09, 0.0)
    assert pools["t4ts"]["cost"] == 176.74
    assert pools["a100mig"]["cost"] == round(168 * NODE_HOURLY["a100mig"], 2) == 4569.10
    for row in report["pools"]:
        assert_adds_up(row["chargeback"], row["cost"])
    assert {t["tenant"]: t["charge"] for t in report["tenants"]} == {
        "vision": 4569.10, "research": 154.65, "nlp": round(168 * NODE_HOURLY["t4mps"], 2)}


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
    # a100mig: its MIG profile (test_a_mig_pool_gets_the_profile_its_memory_and_compute_call_for_as_a_new_pool).
    assert recs["a100mig"]["newPool"] is True and not any(recs[p]["newPool"] for p in ("t4ts", "t4mps"))


MIG_PARTED = "gpu-operator-default-mig-parted-config.yaml"


def a100_40gb_layouts() -> dict[str, int]:
    """Slice -> instances per GPU of the GPU Operator's `all-<slice>` MIG layouts for an A100-40GB (its mig-parted
    ConfigMap, the first block of single-profile layouts), apart from gpushare's catalog."""
    path = upstream_file(MIG_PARTED, "the GPU Operator's default mig-parted ConfigMap")
    configs = yaml.safe_load(yaml.safe_load(path.read_text())["data"]["config.yaml"])["mig-configs"]
    layouts = {}
    for name in ("all-1g.5gb", "all-2g.10gb", "all-3g.20gb", "all-4g.20gb", "all-7g.40gb"):
        (devices,) = configs[name]
        ((slice_, count),) = devices["mig-devices"].items()
        layouts[slice_] = count
    return layouts


def test_a_mig_pool_gets_the_profile_its_memory_and_compute_call_for_as_a_new_pool(prometheus_url, prices_file):
    """Worked out from the scenario: vision holds 4 of the A100 node's 16 3g.20gb instances (8 GPUs x 2).
    Days 1-3 an instance's framebuffer reaches 19,000 MiB, above 90% of 20 GB: fewer, larger slices (7g.40gb, the
    next with more memory). Days 4-7 (the last 4d) it peaks at 3,000 MiB with the instances 30% busy: 0.9 of a 3g's
    3 compute slices, which a 2g.10gb holds (under 80% of its 2 slices and 10 GB) and a 1g.5gb does not (0.9 > 0.8
    of 1): more, smaller slices."""
    layouts, gpus = a100_40gb_layouts(), 8
    cases = {"7d": ("MIG7g", "7g.40gb"), "4d": ("MIG2g", "2g.10gb")}
    for window, (profile, slice_) in cases.items():
        code, out, err = usage("--prometheus", prometheus_url, "--window", window, "--at", str(END), "--prices",
                               str(prices_file), "--json")
        assert code == 0, err
        row = next(r for r in json.loads(out)["pools"] if r["pool"] == "a100mig")
        rec = row["recommendation"]
        assert row["peakFramebufferMiB"] == (19000 if window == "7d" else VISION_AFTER["framebuffer"]), window
        assert rec["profile"] == {"before": "MIG3g", "after": profile, "slice": slice_, "resource": "nvidia.com/gpu"}
        # One node still holds vision's 4 slices: the pool keeps its size and cost; capacity per the new layout.
        assert rec["capacity"] == {"before": gpus * layouts["3g.20gb"], "after": gpus * layouts[slice_]}, window
        assert rec["monthlyDelta"] == 0 and rec["newPool"] is True
        assert rec["edit"] == f"new pool: mig MIG3g -> {profile}"
        assert "cannot change in place (the guard stops the edit): add a pool with mig: " + profile in rec["why"]
        assert "then retire a100mig" in rec["why"]
    code, text, _ = usage("--prometheus", prometheus_url, "--window", "4d", "--at", str(END))
    assert "a100mig: new pool: mig MIG3g -> MIG2g (held instances peaked at 3,000 MiB of framebuffer" in text


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
    assert markdown.startswith("### GPU usage of stack showback over 7d (9 Prometheus queries, raw series)")
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
               "peakAllocated", "peakPending", "peakFramebufferMiB")
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


SUB = "0b5a3c6e-2f41-4d8b-9a7c-5e1f2d3b4a60"
WORKSPACE_ID = monitor_workspace_id(SUB, "rg-monitor", "ws-gpus")
PROMETHEUS_SCOPE = "https://prometheus.monitor.azure.com/.default"
"""The query API's token scope (Microsoft Learn, "Query Prometheus metrics using the API and PromQL")."""


@pytest.fixture
def managed_stack(tmp_path):
    """The showback stack with its metrics in an Azure Monitor workspace."""
    text = STACK_FILE.read_text().replace("prometheus: http://prometheus.monitoring:9090",
                                          f"prometheus: managed\n    workspaceId: {WORKSPACE_ID}")
    assert "workspaceId" in text
    path = tmp_path / STACK_FILE.name
    path.write_text(text)
    return path


@pytest.fixture
def workspace(prometheus_url, monkeypatch, tmp_path):
    """ARM serving the workspace, whose query endpoint is the real Prometheus behind a bearer check accepting a
    token for the query API's scope only; both reached as a user's environment reaches Azure."""
    with ArmStub() as arm, WorkspaceQueryStub(prometheus_url, f"token-for {PROMETHEUS_SCOPE}") as query:
        reach_from_environment(monkeypatch, arm)
        bundle = tmp_path / "ca-bundle.pem"
        bundle.write_text(open(arm.ca_path).read() + open(query.ca_path).read())
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(bundle))
        monkeypatch.setattr("azure.identity.DefaultAzureCredential", ScopedTokenCredential)
        arm.route(WORKSPACE_ID, StubResponse(200, arm_monitor_workspace(SUB, "rg-monitor", "ws-gpus", query.url)))
        yield arm, query


def test_a_managed_stack_is_read_from_its_workspace_signed_in_to_the_same_figures(managed_stack, workspace,
                                                                                    prometheus_url, prices_file):
    arm, query = workspace
    args = ("--at", str(END), "--prices", str(prices_file), "--json")
    code, out, err = run_command("usage", str(managed_stack), *args)
    assert code == 0, err
    code, direct, _ = usage("--prometheus", prometheus_url, *args)
    assert code == 0
    assert json.loads(out) == json.loads(direct)
    # One ARM GET of the workspace (the SDK's api-version), then the 9 queries, each with the query API's token.
    assert [(r.method, r.query["api-version"]) for r in arm.requests] == [("GET", ["2025-10-03"])]
    assert len(query.requests) == 9 and {r.path for r in query.requests} == {"/api/v1/query"}
    assert f"querying Azure Monitor workspace {WORKSPACE_ID} at {query.url}" in err
    # --prometheus naming the workspace's endpoint skips the ARM read (a loopback stub is not *.prometheus.monitor.
    # azure.com, so the reader is built as for one).
    reader = prometheus_reader(parse_stack_file(read_stack_file(managed_stack)), "https://ws-gpus-a1b2.westeurope.prometheus."
                               "monitor.azure.com", SharedCredential(AzureEnvironment.PUBLIC, {}), ReadDeadline())
    assert isinstance(reader, WorkspacePrometheusReader) and reader.scope == PROMETHEUS_SCOPE


def test_without_azure_credentials_the_managed_report_says_how_to_sign_in(managed_stack, workspace, monkeypatch):
    arm, query = workspace
    monkeypatch.setattr("azure.identity.DefaultAzureCredential", NoDefaultCredential)
    code, out, err = run_command("usage", str(managed_stack), "--at", str(END))
    assert code == 4 and out == "" and "Traceback" not in err
    assert "no usable Azure credentials: log in with `az login`" in err and WORKSPACE_ID in err
    assert query.requests == []


@pytest.mark.parametrize("refusal, said", [
    ("wrong-scope", "HTTP 401: the query endpoint refused the token"),
    ("forbidden", "HTTP 403: permission denied; querying the workspace's metrics needs the 'Monitoring Data Reader'"),
])
def test_a_query_endpoint_refusing_the_token_is_one_error_with_the_fix(managed_stack, workspace, refusal, said):
    arm, query = workspace
    if refusal == "wrong-scope":
        query.token = "token-for https://management.azure.com/.default"
    else:
        query.forbidden = True
    code, out, err = run_command("usage", str(managed_stack), "--at", str(END))
    assert code == 4 and out == "" and "Traceback" not in err
    assert f"{query.url}/api/v1/query (signed in for {PROMETHEUS_SCOPE}): {said}" in err


@pytest.mark.parametrize("answer, said", [
    (StubResponse(404, arm_error("ResourceNotFound", "The Resource 'Microsoft.Monitor/accounts/ws-gpus' under "
                                                     "resource group 'rg-monitor' was not found.")),
     "Azure has no such workspace (HTTP 404 ResourceNotFound"),
    (StubResponse(404, arm_error("ResourceGroupNotFound", "Resource group 'rg-monitor' could not be found.")),
     "Azure has no such workspace (HTTP 404 ResourceGroupNotFound"),
    (StubResponse(403, arm_error("AuthorizationFailed", "The client does not have authorization")),
     "permission denied (HTTP 403 AuthorizationFailed: The client does not have authorization); reading the "
     "workspace needs 'Microsoft.Monitor/accounts/read'"),
    (StubResponse(200, arm_monitor_workspace(SUB, "rg-monitor", "ws-gpus", None)),
     "the workspace reports no Prometheus query endpoint"),
])
def test_a_workspace_azure_does_not_know_or_hide_is_one_error_naming_it(managed_stack, workspace, answer, said):
    arm, query = workspace
    arm.route(WORKSPACE_ID, answer)
    code, out, err = run_command("usage", str(managed_stack), "--at", str(END))
    assert code == 4 and out == "" and "Traceback" not in err
    assert f"could not read Azure Monitor workspace {WORKSPACE_ID} (gpushare:metrics.workspaceId): {said}" in err
    assert query.requests == []
