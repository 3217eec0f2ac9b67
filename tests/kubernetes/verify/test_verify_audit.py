"""`verify`'s judgement in the cases an audit found unpinned: each breaks a promise a user relies on (pods get the
slices the plan promised) without any other test noticing."""

from __future__ import annotations

from gpushare.kubernetes.verify.expectations import pool_expectations
from gpushare.kubernetes.verify.findings import Verdict
from gpushare.kubernetes.verify.verify_report import evaluate
from gpushare.kubernetes.verify.text import render_text
from tests.builders import pool, stack
from tests.kube_stub import daemon_set, node
from tests.kubernetes.verify.verify_stacks import DEV, LONG_AGO, NS, PROD, by_pool, snapshot, t4ts_node


def planned_node(name: str, expect, **labels) -> dict:
    """A node exactly as the plan promises for `expect`'s pool, with `labels` changed."""
    return node(name, {"gpushare.io/pool": expect.pool, "nvidia.com/device-plugin.config": expect.config_key,
                       expect.product.key: expect.product.value, **expect.labels, **labels},
                {expect.resource: str(expect.per_node)}, ready_since=LONG_AGO)


def test_a_node_advertising_another_nvidia_resource_besides_the_expected_one_is_a_mismatch():
    expect = by_pool(DEV)["t4ts"]
    extra = t4ts_node("n1", expect.config_key)
    extra["status"]["allocatable"]["nvidia.com/gpu"] = "1"
    report = evaluate([expect], snapshot([extra, t4ts_node("n2", expect.config_key)]))
    assert report.verdict is Verdict.MISMATCH
    (finding,) = report.findings
    assert finding.problem.startswith("node n1 advertises") and "nvidia.com/gpu: 1" in finding.problem


def test_a_single_strategy_label_on_a_mixed_stack_is_a_finding():
    expect = by_pool(PROD)["a100mig"]
    report = evaluate([expect], snapshot([planned_node("m1", expect, **{"nvidia.com/mig.strategy": "single"})],
                                         config=PROD))
    assert [f.problem for f in report.findings] == ["node m1 has nvidia.com/mig.strategy=single, expected mixed"]
    assert report.verdict is Verdict.MISMATCH


def test_a_daemon_set_one_of_two_ready_shows_1_of_2_in_json_and_text():
    key = by_pool(DEV)["t4ts"].config_key
    state = snapshot([t4ts_node("n1", key), t4ts_node("n2", key)])
    state.daemon_sets[0] = daemon_set(NS, state.daemon_sets[0]["metadata"]["name"], 2, 1)
    name = state.daemon_sets[0]["metadata"]["name"]
    report = evaluate([by_pool(DEV)["t4ts"]], state)
    assert report.to_json()["operator"]["daemonSets"][name] == "1/2"
    assert f"{name} 1/2" in render_text(report)


def test_an_unshared_pool_with_an_unconfirmed_gpu_name_does_not_match_a_shared_product():
    """Only the suffix of an unconfirmed name is checked; an unshared whole-GPU pool's suffix is empty, so the check
    must still refuse a product GFD marks `-SHARED` (the node runs a sharing config the plan does not have)."""
    unshared = stack(pool("h100", "Standard_NC40ads_H100_v5"))
    (expect,) = pool_expectations(unshared)
    assert not expect.product.confirmed and expect.product.suffix == ""
    shared = {expect.product.key: "NVIDIA-H100-NVL-SHARED"}
    report = evaluate([expect], snapshot([planned_node("h1", expect, **shared)], config=unshared))
    assert [f.problem for f in report.findings] == [
        f"node h1 has {expect.product.key}=NVIDIA-H100-NVL-SHARED, expected {expect.product.value} (the GPU name is "
        "unconfirmed: only the suffix is checked)"]
    plain = {expect.product.key: "NVIDIA-H100-NVL"}
    assert evaluate([expect], snapshot([planned_node("h1", expect, **plain)], config=unshared)).verdict is Verdict.PASS
