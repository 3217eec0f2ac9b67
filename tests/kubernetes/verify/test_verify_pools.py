"""`gpushare.kubernetes.verify` (expectations, pools, report): what each pool's nodes must show, and how the live state
is judged (pure functions over the Kubernetes API's JSON; the CLI tests drive the same code through the real client).
Fast and without Go: the JSON is tests/kube_stub.py's builders', which
tests/controlplane/test_verify_on_a_real_control_plane.py shows are judged as the real API server's objects are."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from gpushare.kubernetes.verify.api_json import ClusterSnapshot
from gpushare.kubernetes.verify.expectations import MPS_DS, OPERATOR_DAEMONSETS
from gpushare.kubernetes.verify.findings import Verdict
from gpushare.kubernetes.verify.verify_report import evaluate
from gpushare.model.catalog import MigProfile
from gpushare.model.stack import Spot
from gpushare.sharing.operator_values import operator_plan
from gpushare.sharing.autoscaler_readiness import counted_unready
from gpushare.sharing.autoscaler_readiness import node_ready as autoscaler_node_ready
from tests.builders import pool, stack, time_slicing
from tests.kube_stub import node, pod
from tests.kubernetes.verify.verify_stacks import DEV, LONG_AGO, NOW, NS, PROD, by_pool, snapshot, t4ts_node

def test_expectations_under_mixed_name_the_mig_resource_and_its_labels():
    a100, h100, t4 = (by_pool(PROD)[name] for name in ("a100mig", "h100mig", "t4batch"))
    assert (a100.resource, a100.per_node) == ("nvidia.com/mig-1g.5gb", 56)
    assert (a100.product.key, a100.product.value, a100.product.confirmed) == (
        "nvidia.com/mig-1g.5gb.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", True)
    assert a100.labels == {"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig-1g.5gb.replicas": "1",
                           "nvidia.com/mig-1g.5gb.sharing-strategy": "none"}
    # Renamed to .shared, but GFD's label keys keep the resource's own name and add no -SHARED.
    assert (h100.resource, h100.per_node) == ("nvidia.com/mig-3g.47gb.shared", 4)
    assert (h100.product.key, h100.product.value, h100.product.confirmed) == (
        "nvidia.com/mig-3g.47gb.product", "NVIDIA-H100-NVL-MIG-3g.47gb", False)
    assert h100.labels["nvidia.com/mig-3g.47gb.replicas"] == "2"
    assert h100.labels["nvidia.com/mig-3g.47gb.sharing-strategy"] == "time-slicing"
    # renameByDefault false: the plain resource, and GFD marks the product -SHARED.
    assert (t4.resource, t4.per_node, t4.product.value) == ("nvidia.com/gpu", 32, "Tesla-T4-SHARED")
    assert t4.min_nodes == 0
    assert all(e.daemon_sets == OPERATOR_DAEMONSETS for e in (a100, h100, t4))


def test_expectations_under_single_and_mps():
    single = by_pool(stack(pool("a100", "Standard_ND96asr_v4", mig=MigProfile.MIG1G)))["a100"]
    assert (single.resource, single.product.key, single.product.value) == (
        "nvidia.com/gpu", "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb")
    t4mps = by_pool(DEV)["t4mps"]
    assert t4mps.labels["nvidia.com/mps.capable"] == "true"
    assert t4mps.labels["nvidia.com/gpu.sharing-strategy"] == "mps"
    assert t4mps.daemon_sets == (*OPERATOR_DAEMONSETS, MPS_DS)


def test_config_keys_come_from_the_operator_plan_not_the_pool_name():
    plan = {c.pool: c for c in operator_plan(DEV).configs if c.pool}
    for name, expect in by_pool(DEV).items():
        assert (expect.config_key, expect.config_text) == (plan[name].key, plan[name].text)


@pytest.mark.parametrize("found, matches", [
    ("NVIDIA-H100-NVL-MIG-3g.47gb", True),
    ("NVIDIA-H100-NVL-PCIe-MIG-3g.47gb", True),  # the name is unconfirmed: any name with the right suffix
    ("NVIDIA-H100-NVL-MIG-3g.47gb-SHARED", False),
    ("NVIDIA-H100-NVL", False),
    ("-MIG-3g.47gb", False),
])
def test_an_unconfirmed_product_name_is_checked_by_its_suffix_only(found, matches):
    assert by_pool(PROD)["h100mig"].product.matches(found) is matches


def test_a_confirmed_product_name_must_match_exactly():
    product = by_pool(PROD)["t4batch"].product
    assert product.matches("Tesla-T4-SHARED") and not product.matches("Tesla-T4") \
        and not product.matches("NVIDIA-T4-SHARED")


# --- evaluate -------------------------------------------------------------------------------------------


def only_t4ts(config=DEV):
    return [by_pool(config)["t4ts"]]


def findings(report):
    return [(f.pending, f.problem, f.cause) for f in report.findings]


def test_two_ready_nodes_as_planned_pass():
    key = by_pool(DEV)["t4ts"].config_key
    report = evaluate(only_t4ts(), snapshot([t4ts_node("n1", key), t4ts_node("n2", key)]))
    assert (report.verdict, report.exit_code, findings(report)) == (Verdict.PASS, 0, [])


def test_a_fixed_pool_below_its_count_is_pending():
    key = by_pool(DEV)["t4ts"].config_key
    report = evaluate(only_t4ts(), snapshot([t4ts_node("n1", key)]))
    assert findings(report) == [(True, "1 of 2 nodes so far", "the pool is still scaling")]
    assert (report.verdict, report.exit_code, report.settled) == (Verdict.PENDING, 0, False)


def test_an_autoscaled_pool_at_zero_is_pending_but_settled():
    report = evaluate([by_pool(PROD)["t4batch"]], snapshot([], config=PROD))
    assert report.verdict is Verdict.PENDING and report.settled and report.exit_code == 0


def test_a_stale_config_label_names_both_keys():
    expect = by_pool(DEV)["t4ts"]
    data = {**operator_plan(DEV).config_map_data, "t4ts-0ld0ld00": "version: v1\n"}
    report = evaluate(only_t4ts(), snapshot([t4ts_node("n1", "t4ts-0ld0ld00"), t4ts_node("n2", expect.config_key)],
                                            data=data))
    assert findings(report) == [(
        False, "node n1: its config label is t4ts-0ld0ld00, the plan's config for pool t4ts is " + expect.config_key,
        "the pool's node labels are from another deployment of the stack",
    )]


def test_a_config_map_entry_that_differs_from_the_plan():
    expect = by_pool(DEV)["t4ts"]
    data = {**operator_plan(DEV).config_map_data, expect.config_key: "version: v1\n"}
    nodes = [t4ts_node("n1", expect.config_key), t4ts_node("n2", expect.config_key)]
    report = evaluate(only_t4ts(), snapshot(nodes, data=data))
    assert [p for _, p, _ in findings(report)] == [
        f"ConfigMap key {expect.config_key} holds another config than the plan"]


def test_a_missing_config_map_is_one_operator_finding():
    key = by_pool(DEV)["t4ts"].config_key
    state = snapshot([t4ts_node("n1", key), t4ts_node("n2", key)])
    report = evaluate(only_t4ts(), ClusterSnapshot(state.nodes, None, state.daemon_sets, state.pods, NOW))
    assert [f.problem for f in report.operator] == ["ConfigMap gpu-operator/gpushare-device-plugin-config not found"]
    assert report.verdict is Verdict.MISMATCH


def test_gfd_labels_that_disagree_with_the_plan():
    key = by_pool(DEV)["t4ts"].config_key
    nodes = [t4ts_node("n1", key, **{"nvidia.com/gpu.replicas": "2", "nvidia.com/gpu.product": "Tesla-T4-SHARED"}),
             t4ts_node("n2", key)]
    assert [p for _, p, _ in findings(evaluate(only_t4ts(), snapshot(nodes)))] == [
        "node n1 has nvidia.com/gpu.product=Tesla-T4-SHARED, expected Tesla-T4",
        "node n1 has nvidia.com/gpu.replicas=2, expected 4",
    ]


def test_a_mig_pool_whose_gpus_are_not_partitioned():
    expect = by_pool(PROD)["a100mig"]
    gpu_node = node("m1", {"gpushare.io/pool": "a100mig", "nvidia.com/device-plugin.config": expect.config_key},
                    {"nvidia.com/gpu": "8"}, ready_since=LONG_AGO)
    report = evaluate([expect], snapshot([gpu_node], config=PROD))
    (finding,) = report.findings
    assert finding.problem == "node m1 advertises nvidia.com/gpu: 8, expected nvidia.com/mig-1g.5gb: 56"
    assert finding.cause.startswith("MIG is not enabled on the node's GPUs")


def test_a_config_that_has_not_reached_the_plugin_yet_says_restart_it():
    expect = by_pool(DEV)["t4ts"]
    stale = node("n1", {"gpushare.io/pool": "t4ts", "nvidia.com/device-plugin.config": expect.config_key},
                 {"nvidia.com/gpu.shared": "2"}, ready_since=LONG_AGO)
    report = evaluate(only_t4ts(), snapshot([stale, t4ts_node("n2", expect.config_key)]))
    (finding,) = report.findings
    assert "the device plugin runs an older config" in finding.cause
    assert finding.fix == "`kubectl rollout restart -n gpu-operator daemonset/nvidia-device-plugin-daemonset`"


def test_a_missing_operator_pod_is_pending_on_a_new_node_and_a_failure_on_an_old_one():
    key = by_pool(DEV)["t4ts"].config_key
    fresh = (NOW - timedelta(minutes=2)).isoformat().replace("+00:00", "Z")
    nodes = [t4ts_node("n1", key, ready_since=fresh), t4ts_node("n2", key)]
    pods = [pod(NS, ds, "n1") for ds in ("nvidia-device-plugin-daemonset", "nvidia-operator-validator")]
    pods += [pod(NS, ds, "n2") for ds in ("nvidia-device-plugin-daemonset", "nvidia-operator-validator")]
    report = evaluate(only_t4ts(), snapshot(nodes, pods=pods))
    assert [(pending, problem) for pending, problem, _ in findings(report)] == [
        (True, "node n1 has no gpu-feature-discovery pod"),
        (False, "node n2 has no gpu-feature-discovery pod"),
    ]


def test_a_not_ready_node_is_pending_and_not_checked():
    key = by_pool(DEV)["t4ts"].config_key
    not_ready = node("n2", {"gpushare.io/pool": "t4ts"}, {}, ready=False, ready_since=LONG_AGO)
    report = evaluate(only_t4ts(), snapshot([t4ts_node("n1", key), not_ready]))
    assert findings(report) == [(True, "node n2 is NotReady", "the node is joining or unhealthy")]
    assert report.pools[0].to_json()["nodesReady"] == 1


def test_during_a_rollout_the_ready_pod_of_a_node_decides():
    key = by_pool(DEV)["t4ts"].config_key
    nodes = [t4ts_node("n1", key), t4ts_node("n2", key)]
    pods = [pod(NS, ds, n) for n in ("n1", "n2") for ds in OPERATOR_DAEMONSETS]
    starting = pod(NS, "gpu-feature-discovery", "n1", ready=False, phase="Pending")
    assert evaluate(only_t4ts(), snapshot(nodes, pods=[pods[0], starting, *pods[1:]])).verdict is Verdict.PASS
    assert evaluate(only_t4ts(), snapshot(nodes, pods=[*pods, starting])).verdict is Verdict.PASS


def test_a_ready_device_plugin_that_advertises_nothing():
    key = by_pool(DEV)["t4ts"].config_key
    empty = node("n1", {"gpushare.io/pool": "t4ts", "nvidia.com/device-plugin.config": key}, {}, ready_since=LONG_AGO)
    (finding,) = evaluate(only_t4ts(), snapshot([empty, t4ts_node("n2", key)])).findings
    assert finding.problem == "node n1 advertises no nvidia.com resource, expected nvidia.com/gpu.shared: 4"
    assert finding.cause.startswith("the device plugin registered no GPU on this node")


def test_an_existing_clusters_own_nodes_are_not_gpushares_to_check():
    """`existing: true`: the cluster's system pool and another team's GPU pool carry no gpushare.io/pool label."""
    key = by_pool(DEV)["t4ts"].config_key
    own = [node("aks-system-0", {"kubernetes.azure.com/agentpool": "system"}, {}),
           node("aks-render-0", {"kubernetes.azure.com/agentpool": "render", "nvidia.com/gpu.product": "NVIDIA-A10"},
                {"nvidia.com/gpu": "1"})]
    report = evaluate(only_t4ts(), snapshot([t4ts_node("n1", key), t4ts_node("n2", key), *own]))
    assert (report.verdict, findings(report)) == (Verdict.PASS, [])
    assert [n.name for pool in report.pools for n in pool.nodes] == ["n1", "n2"]


SPOT_DEV = stack(dataclasses.replace(pool("t4ts", "Standard_NC4as_T4_v3", sharing=time_slicing(4), count=2),
                                     spot=Spot()))


@pytest.mark.parametrize("spot_labels", [
    {"kubernetes.azure.com/priority": "spot"},  # the label AKS sets now (aks-docs use-labels.md)
    {"kubernetes.azure.com/scalesetpriority": "spot"},  # the deprecated one, alone on older nodes
    {"kubernetes.azure.com/priority": "spot", "kubernetes.azure.com/scalesetpriority": "spot"},
])
def test_a_spot_pools_nodes_pass_with_either_of_akss_spot_labels(spot_labels):
    expect = by_pool(SPOT_DEV)["t4ts"]
    nodes = [t4ts_node(n, expect.config_key, **spot_labels) for n in ("n1", "n2")]
    report = evaluate([expect], snapshot(nodes, config=SPOT_DEV))
    assert (report.verdict, findings(report)) == (Verdict.PASS, [])


def test_a_spot_pools_node_without_a_spot_label_is_not_a_spot_node():
    expect = by_pool(SPOT_DEV)["t4ts"]
    nodes = [t4ts_node("n1", expect.config_key),
             t4ts_node("n2", expect.config_key, **{"kubernetes.azure.com/priority": "regular"})]
    report = evaluate([expect], snapshot(nodes, config=SPOT_DEV))
    assert report.verdict is Verdict.MISMATCH
    assert [p for _, p, _ in findings(report)] == [
        f"node {n} carries neither of AKS's Spot labels (kubernetes.azure.com/priority=spot or "
        f"kubernetes.azure.com/scalesetpriority=spot)" for n in ("n1", "n2")]


def with_ready(node_object: dict, status: str) -> dict:
    """The node as the node lifecycle controller leaves it when the kubelet stops posting: Ready `Unknown`."""
    for condition in node_object["status"]["conditions"]:
        if condition["type"] == "Ready":
            condition.update(status=status, reason="NodeStatusUnknown")
    return node_object


def test_a_node_whose_ready_condition_is_unknown_is_not_ready_to_verify():
    key = by_pool(DEV)["t4ts"].config_key
    report = evaluate(only_t4ts(), snapshot([with_ready(t4ts_node("n1", key), "Unknown"), t4ts_node("n2", key)]))
    assert findings(report) == [(True, "node n1 is NotReady", "the node is joining or unhealthy")]
    assert [n["ready"] for n in report.pools[0].to_json()["nodes"]] == [False, True]


def test_a_node_whose_ready_condition_is_unknown_is_unready_to_the_autoscaler():
    """cluster-autoscaler `GetNodeReadiness`: only a Ready condition that is True makes a node ready."""
    key = by_pool(DEV)["t4ts"].config_key
    unknown = with_ready(t4ts_node("n1", key), "Unknown")
    assert not autoscaler_node_ready(unknown) and counted_unready(unknown, NOW + timedelta(hours=1))
    assert autoscaler_node_ready(t4ts_node("n2", key))
