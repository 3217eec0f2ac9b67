"""The stacks the verify tests judge clusters against, each one's expectations by pool, and the cluster states
(tests/kube_stub.py's objects) they judge."""

from __future__ import annotations

from datetime import datetime, timezone

from gpushare.kubernetes.verify.api_json import ClusterSnapshot
from gpushare.kubernetes.verify.expectations import MPS_DS, OPERATOR_DAEMONSETS, pool_expectations
from gpushare.model.catalog import MigProfile
from gpushare.model.stack import Autoscale, MigStrategy
from gpushare.sharing.operator_values import operator_plan
from tests.builders import mps, pool, stack, time_slicing
from tests.kube_stub import config_map, daemon_set, node, pod

NS = "gpu-operator"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
LONG_AGO = "2026-11-30T08:00:00Z"

PROD = stack(
    pool("a100mig", "Standard_ND96asr_v4", mig=MigProfile.MIG1G),
    pool("h100mig", "Standard_NC40ads_H100_v5", mig=MigProfile.MIG3G, sharing=time_slicing(2)),
    pool("t4batch", "Standard_NC64as_T4_v3", sharing=time_slicing(8, rename_by_default=False),
         count=None, autoscale=Autoscale(0, 4)),
    mig_strategy=MigStrategy.MIXED,
)
DEV = stack(
    pool("t4ts", "Standard_NC4as_T4_v3", sharing=time_slicing(4), count=2),
    pool("t4mps", "Standard_NC8as_T4_v3", sharing=mps(4)),
)


def by_pool(config):
    return {e.pool: e for e in pool_expectations(config)}


def t4ts_node(name: str, config_key: str, *, ready_since: str = LONG_AGO, **labels) -> dict:
    return node(name, {
        "gpushare.io/pool": "t4ts", "nvidia.com/device-plugin.config": config_key,
        "nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/mig.strategy": "single", **labels,
    }, {"nvidia.com/gpu.shared": "4"}, ready_since=ready_since)


def snapshot(nodes: list[dict], *, data: dict | None = None, pods: list[dict] | None = None,
             config=DEV) -> ClusterSnapshot:
    plan = operator_plan(config)
    names = [n["metadata"]["name"] for n in nodes]
    return ClusterSnapshot(
        nodes=nodes,
        config_map=config_map(NS, "gpushare-device-plugin-config", plan.config_map_data if data is None else data),
        daemon_sets=[daemon_set(NS, ds, len(nodes), len(nodes)) for ds in (*OPERATOR_DAEMONSETS, MPS_DS)],
        pods=pods if pods is not None else [pod(NS, ds, n) for n in names for ds in (*OPERATOR_DAEMONSETS, MPS_DS)],
        now=NOW,
    )
