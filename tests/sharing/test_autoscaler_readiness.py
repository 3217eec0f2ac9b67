"""Sharing the cluster autoscaler understands: `renameByDefault`'s default follows autoscaling, and a stack whose
pools the autoscaler would count unready is refused where that stops it cluster-wide, warned about elsewhere.

The rule itself is checked against the autoscaler's own code in tests/sharing/test_autoscaler_readiness_go.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpushare.azure.deployed import DeployedPool, unlisted_nodes
from gpushare.errors import ConfigError
from gpushare.model.stack import MigStrategy
from gpushare.render.mock_engine import run_program
from gpushare.review.plan_report import autoscaler_plan
from gpushare.sharing.capacity import WHOLE_GPU_RESOURCE, pool_capacity
from gpushare.sharing.autoscaler_readiness import (
    advertises_gpu_resource,
    autoscaler_warnings,
    cluster_healthy,
    counted_unready,
    gpu_unready,
)
from gpushare.stackfile.config import encode_engine_config, parse_config

SOURCE = "stacks/Pulumi.test.yaml"
T4 = "Standard_NC4as_T4_v3"
A100 = "Standard_ND96asr_v4"
TS = {"strategy": "time-slicing", "replicas": 4}


def raw_stack(*pools: dict[str, Any], mig_strategy: str = "single", existing: bool = False) -> dict[str, Any]:
    cluster: dict[str, Any] = {"name": "gpushare-test"}
    if existing:
        cluster.update(existing=True, resourceGroup="rg")
    return {"azure-native:location": "westeurope", "gpushare:cluster": cluster,
            "gpushare:operator": {"migStrategy": mig_strategy}, "gpushare:pools": list(pools)}


def parse(raw: dict[str, Any]):
    return parse_config(copy.deepcopy(raw), source=SOURCE, stack="test")


def problems(raw: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse(raw)
    return {p.path: p.message for p in caught.value.problems}


def resources(raw: dict[str, Any]) -> dict[str, str]:
    stack = parse(raw)
    return {pool.name: pool_capacity(pool, stack.operator.mig_strategy).resource for pool in stack.pools}


def test_shares_are_advertised_as_nvidia_com_gpu_on_every_pool_once_any_pool_autoscales():
    """The fixed pool too: the autoscaler judges every node of the cluster."""
    raw = raw_stack({"name": "ts", "vmSize": T4, "sharing": TS, "count": 2},
                    {"name": "mps", "vmSize": T4, "sharing": {"strategy": "mps", "replicas": 2},
                     "autoscale": {"min": 0, "max": 3}})
    assert resources(raw) == {"ts": WHOLE_GPU_RESOURCE, "mps": WHOLE_GPU_RESOURCE}
    assert autoscaler_warnings(parse(raw)) == []


def test_without_autoscaling_shares_keep_the_shared_name():
    raw = raw_stack({"name": "ts", "vmSize": T4, "sharing": TS, "count": 2})
    assert resources(raw) == {"ts": "nvidia.com/gpu.shared"}


def test_every_consumer_reads_the_one_default():
    """The device-plugin config the program renders, and the autoscaler's scale-set tags, follow the same value."""
    raw = raw_stack({"name": "ts", "vmSize": T4, "sharing": TS, "autoscale": {"min": 0, "max": 2}})
    recording = run_program("test", encode_engine_config(raw))
    (config_map,) = [r for r in recording.resources if r.type == "kubernetes:core/v1:ConfigMap"]
    (text,) = [v for k, v in config_map.inputs["data"].items() if k.startswith("ts-")]
    assert "renameByDefault: false" in text
    (agent_pool,) = recording.by_type("azure-native:containerservice:AgentPool")
    assert {tag for tag in agent_pool.inputs["tags"] if "_node-template_resources_" in tag} == {
        "k8s.io_cluster-autoscaler_node-template_resources_nvidia.com_gpu"}


def test_renaming_written_by_the_stack_is_kept_and_warned_about_below_the_threshold():
    raw = raw_stack({"name": "ts", "vmSize": T4, "sharing": {**TS, "renameByDefault": True},
                     "autoscale": {"min": 0, "max": 3}})
    assert resources(raw) == {"ts": "nvidia.com/gpu.shared"}
    (warning,) = autoscaler_warnings(parse(raw))
    assert warning.startswith("pool ts: renameByDefault: true advertises its shares as nvidia.com/gpu.shared only, "
                              "and the cluster autoscales (pools ts)")
    assert "kubernetes/autoscaler#8095" in warning and "up to 3 of the cluster's 5 nodes" in warning
    assert warning.endswith("remove renameByDefault to advertise nvidia.com/gpu")


def test_renaming_that_could_stop_the_autoscaler_cluster_wide_is_refused_with_the_fix():
    """4 renamed nodes at most, of 2 system + 4 + 0: more than 3 and more than 45%."""
    raw = raw_stack({"name": "big", "vmSize": T4, "sharing": {**TS, "renameByDefault": True}, "count": 4},
                    {"name": "burst", "vmSize": T4, "autoscale": {"min": 0, "max": 5}})
    found = problems(raw)
    message = found["gpushare:pools[0].sharing.renameByDefault"]
    assert message.startswith("true advertises pool big's shares as nvidia.com/gpu.shared only: in a cluster that "
                              "autoscales (pools burst do)")
    assert "pools big could make up to 4 of the cluster's 6 nodes unready" in message
    assert "stop the autoscaler for every pool (ClusterStateRegistry.IsClusterHealthy)" in message
    assert "kubernetes/autoscaler#8095" in message and "remove it" in message
    # One fewer node is within the threshold: planned, with the warning.
    fewer = copy.deepcopy(raw)
    fewer["gpushare:pools"][0]["count"] = 3
    assert autoscaler_warnings(parse(fewer))


def test_mixed_mig_with_autoscaling_is_refused_past_the_threshold_and_warned_about_below():
    pools = ({"name": "mig", "vmSize": A100, "mig": "MIG1g", "autoscale": {"min": 0, "max": 4}},)
    found = problems(raw_stack(*pools, mig_strategy="mixed"))
    assert set(found) == {"gpushare:operator.migStrategy"}
    assert "use migStrategy single" in found["gpushare:operator.migStrategy"]
    small = raw_stack({**pools[0], "autoscale": {"min": 0, "max": 2}}, mig_strategy="mixed")
    (warning,) = autoscaler_warnings(parse(small))
    assert warning.startswith("pool mig: migStrategy mixed advertises its MIG instances as nvidia.com/mig-1g.5gb only")
    assert warning.endswith("use migStrategy single to advertise nvidia.com/gpu")


def test_mig_single_and_whole_gpus_are_counted_ready():
    raw = raw_stack({"name": "mig", "vmSize": A100, "mig": "MIG1g", "autoscale": {"min": 0, "max": 9}},
                    {"name": "t4", "vmSize": T4, "autoscale": {"min": 0, "max": 9}})
    assert autoscaler_warnings(parse(raw)) == []


def test_an_existing_cluster_is_warned_not_refused_its_own_pools_are_unknown_offline():
    raw = raw_stack({"name": "ts", "vmSize": T4, "sharing": TS, "count": 8}, existing=True)
    stack = parse(raw)
    assert resources(raw) == {"ts": "nvidia.com/gpu.shared"}
    (warning,) = autoscaler_warnings(stack)
    assert "if the existing cluster's own pools autoscale" in warning and "`gpushare verify`" in warning


@pytest.mark.parametrize(("sharing", "mig", "strategy"), [
    (None, None, "single"), (None, "MIG1g", "single"), (None, "MIG1g", "mixed"),
    (TS, None, "single"), ({**TS, "renameByDefault": True}, None, "single"), ({**TS, "renameByDefault": False},
                                                                              "MIG2g", "mixed"),
    ({**TS, "renameByDefault": True}, "MIG2g", "single"),
])
def test_the_readiness_fact_agrees_with_the_resource_the_plan_advertises(sharing, mig, strategy):
    """`advertises_gpu_resource` (what validation judges) and `pool_capacity` (what every consumer reads) give one
    answer."""
    entry: dict[str, Any] = {"name": "p", "vmSize": A100 if mig else T4, "count": 1}
    if sharing:
        entry["sharing"] = sharing
    if mig:
        entry["mig"] = mig
    pool = parse(raw_stack(entry, mig_strategy=strategy)).pools[0]
    mig_strategy = MigStrategy(strategy)
    assert advertises_gpu_resource(pool, mig_strategy) == (
        pool_capacity(pool, mig_strategy).resource == WHOLE_GPU_RESOURCE)


def node(allocatable: dict[str, str], *, labels: dict[str, str] | None = None, ready: str = "True",
         unschedulable: bool = False, created: str | None = None) -> dict:
    metadata: dict[str, Any] = {"name": "n", "labels": {"kubernetes.azure.com/accelerator": "nvidia"}
                                if labels is None else labels}
    if created:
        metadata["creationTimestamp"] = created
    return {"metadata": metadata, "spec": {"unschedulable": unschedulable},
            "status": {"allocatable": allocatable, "conditions": [{"type": "Ready", "status": ready}]}}


def test_the_rule_on_node_objects():
    assert gpu_unready(node({"nvidia.com/gpu.shared": "4"}))
    assert gpu_unready(node({"nvidia.com/mig-1g.5gb": "7", "nvidia.com/gpu": "0"}))
    assert not gpu_unready(node({"nvidia.com/gpu": "4"}))
    assert not gpu_unready(node({"amd.com/gpu": "1"}))  # any vendor's GPU resource
    assert not gpu_unready(node({"nvidia.com/gpu.shared": "4"}, labels={}))  # no GPU label
    assert not gpu_unready(node({}, unschedulable=True))  # cordoned: not among the ready nodes it filters
    assert not gpu_unready(node({}, ready="False"))  # unready anyway


def test_a_node_counts_unready_only_15_minutes_after_its_creation():
    from datetime import datetime, timezone
    now = datetime(2026, 8, 1, 12, 0, tzinfo=timezone.utc)
    assert not counted_unready(node({}, created="2026-08-01T11:46:00Z"), now)
    assert counted_unready(node({}, created="2026-08-01T11:45:00Z"), now)
    assert not counted_unready(node({"nvidia.com/gpu": "1"}, created="2026-08-01T00:00:00Z"), now)


@pytest.mark.parametrize(("unready", "total", "healthy"), [(3, 4, True), (4, 8, False), (4, 9, True), (5, 11, False),
                                                            (5, 12, True)])
def test_the_cluster_wide_threshold(unready, total, healthy):
    assert cluster_healthy(unready, total) is healthy


MIXED_MIG_ON_EXISTING = raw_stack({"name": "mig", "vmSize": A100, "mig": "MIG1g", "autoscale": {"min": 0, "max": 6}},
                                  mig_strategy="mixed", existing=True)
"""issue 39: an existing cluster, a mixed-MIG pool of up to 6 nodes, none of them advertising nvidia.com/gpu."""


def test_an_existing_clusters_warning_says_the_autoscaler_stops_when_its_own_numbers_say_so():
    """The warning said it "still acts" with 6 of 8 nodes unready, while `plan --json` said `healthy: false`; and the
    8 counted a system pool of 2 that gpushare creates only for its own clusters and never read here."""
    stack = parse(MIXED_MIG_ON_EXISTING)
    (warning,) = autoscaler_warnings(stack)
    assert "still acts" not in warning
    assert ("with up to 6 of the 6 nodes of gpushare's pools (the existing cluster's other pools were not read) "
            "unready it stops scaling every pool unless the cluster's other pools hold at least 8 more nodes") in warning
    assert autoscaler_plan(stack)["healthy"] is False and autoscaler_plan(stack)["nodesThen"] == 6
    assert autoscaler_plan(stack)["otherNodes"] is None


@pytest.mark.parametrize(("other_pools", "verdict", "healthy"), [
    ((("nodepool1", 2),), "with up to 6 of the cluster's 8 nodes unready it stops scaling every pool", False),
    ((("nodepool1", 3), ("cpu", 5)), "with up to 6 of the cluster's 14 nodes unready it still acts", True),
], ids=["stops", "acts"])
def test_an_existing_clusters_own_pools_count_once_read(other_pools, verdict, healthy):
    stack = parse(MIXED_MIG_ON_EXISTING)
    deployed = [DeployedPool(name=name, vm_size="Standard_D4ds_v5", count=count) for name, count in other_pools]
    deployed.append(DeployedPool(name="mig", vm_size=A100, count=0))
    (warning,) = autoscaler_warnings(stack, unlisted_nodes(stack, deployed))
    assert verdict in warning
    plan = autoscaler_plan(stack, deployed)
    assert (plan["healthy"], plan["otherNodes"]) == (healthy, sum(count for _, count in other_pools))


def test_the_warning_names_the_versions_aks_runs_and_the_upstream_fix_that_would_lift_the_rule():
    (warning,) = autoscaler_warnings(parse(MIXED_MIG_ON_EXISTING))
    assert "cluster-autoscaler 1.33.5, 1.34.4 and 1.35.1 as AKS runs them" in warning
    assert "the upstream fix kubernetes-sigs/cluster-autoscaler#92, not merged, would lift this" in warning
