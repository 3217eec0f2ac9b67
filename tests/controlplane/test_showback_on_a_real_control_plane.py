"""The showback objects the program deploys for the Prometheus Operator, on a real Kubernetes 1.36 API server
(`tests/controlplane/controlplane.py`) with the Prometheus Operator's own CRDs installed: the PrometheusRule
(`gpushare rules --format prometheusrule`) and the dcgm-exporter PodMonitor are accepted with every field kept (the
API server prunes what a structural schema does not declare), and a PodMonitor broken the way the schema forbids is
refused.

The CRDs are the prometheus-operator Go module's example/prometheus-operator-crd/ (v0.85.0, the newest version
the Go module proxy serves here), fetched with `go mod download` into the shared module cache. Azure Monitor's
`azmonitoring.coreos.com` PodMonitor CRD (the ama-metrics add-on's) is not published offline: its object carries the
same spec (`dcgm_scrape.dcgm_pod_monitor`), checked here only against the Prometheus Operator's schema."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from gpushare.kubernetes.dcgm_scrape import AZURE_MONITOR_API, PROMETHEUS_OPERATOR_API, dcgm_pod_monitor
from gpushare.showback.rules import prometheus_rule
from gpushare.stackfile.config import parse_stack_file, read_stack_file
from tests.controlplane.controlplane import (
    ApiError,
    binaries,
    ensure_namespace,
    start_control_plane,
    stop_control_plane,
)
from tests.controlplane.test_queues_on_a_real_control_plane import contains

MODULE = "github.com/prometheus-operator/prometheus-operator@v0.85.0"
CRDS = ("monitoring.coreos.com_prometheusrules.yaml", "monitoring.coreos.com_podmonitors.yaml")
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "showback" / "Pulumi.showback.yaml"


def operator_crds(tmp: Path) -> list[dict]:
    """The module's CRDs, downloaded (or read from the module cache) by `go mod download`."""
    result = subprocess.run(["go", "mod", "download", "-json", MODULE], cwd=tmp, capture_output=True, text=True,
                            timeout=600)
    found = json.loads(result.stdout or "{}")
    if result.returncode != 0 or "Dir" not in found:
        raise RuntimeError(f"go mod download {MODULE} failed: {found.get('Error') or result.stderr.strip()}")
    folder = Path(found["Dir"]) / "example" / "prometheus-operator-crd"
    return [yaml.safe_load((folder / name).read_text()) for name in CRDS]


@pytest.fixture(scope="module")
def operator_plane(tmp_path_factory):
    binaries()  # skips without Go (raises under CI=true), like every control-plane test
    crds = operator_crds(tmp_path_factory.mktemp("gomod"))
    plane = start_control_plane({})
    try:
        plane.install_crds(crds)
        for namespace in ("gpu-operator", "monitoring"):
            ensure_namespace(plane, namespace)
        yield plane
    finally:
        stop_control_plane(plane)


def created(plane, document: dict) -> dict:
    # A new CRD's REST endpoint can answer 404 for a moment after it is Established.
    return plane.wait_for(f"{document['kind']} created", lambda: plane.create(document))


def test_the_api_server_keeps_every_field_of_the_prometheus_rule(operator_plane):
    stack = parse_stack_file(read_stack_file(FIXTURE))
    assert stack.metrics is not None
    document = prometheus_rule(stack, stack.metrics, "monitoring")
    stored = created(operator_plane, document)
    assert contains(stored["spec"], document["spec"]), json.dumps(stored["spec"])[:2000]
    assert len(stored["spec"]["groups"][0]["rules"]) > 20


def test_the_api_server_keeps_every_field_of_the_pod_monitor_and_refuses_a_broken_one(operator_plane):
    document = dcgm_pod_monitor(PROMETHEUS_OPERATOR_API)
    stored = created(operator_plane, document)
    assert contains(stored["spec"], document["spec"]), json.dumps(stored["spec"])
    broken = json.loads(json.dumps(document))
    broken["metadata"]["name"] = "broken"
    broken["spec"]["podMetricsEndpoints"][0]["honorLabels"] = "yes"
    with pytest.raises(ApiError) as refused:
        operator_plane.create(broken)
    assert refused.value.status == 422 and "honorLabels" in str(refused.value)


def test_the_azure_monitor_pod_monitor_differs_only_in_its_api_group():
    azure, operator = dcgm_pod_monitor(AZURE_MONITOR_API), dcgm_pod_monitor(PROMETHEUS_OPERATOR_API)
    assert azure["apiVersion"] == "azmonitoring.coreos.com/v1"
    assert {**azure, "apiVersion": operator["apiVersion"]} == operator
