"""The whole verdict: every pool's result, the operator, the autoscaler, the tenants and the smoke pods, and its
JSON."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from gpushare.kubernetes.verify.api_json import ClusterSnapshot, object_labels, object_name
from gpushare.kubernetes.verify.autoscaler import AutoscalerView, autoscaler_findings, autoscaler_view
from gpushare.kubernetes.verify.dra_pools import DraPoolResult, check_dra_pool
from gpushare.kubernetes.verify.expectations import MPS_DS, OPERATOR_DAEMONSETS, DraPoolExpectation, PoolExpectation
from gpushare.kubernetes.verify.findings import Finding, Verdict, verdict_of
from gpushare.kubernetes.verify.pools import PoolResult, check_pool, pod_state
from gpushare.kubernetes.verify.tenant_drift import SkippedCheck
from gpushare.model.stack import POOL_LABEL
from gpushare.sharing.operator_values import CONFIG_MAP_NAME, NAMESPACE, RELEASE_NAME


@dataclass(frozen=True)
class VerifyReport:
    pools: list[PoolResult]
    operator: list[Finding]
    daemon_sets: dict[str, str]
    """Per expected DaemonSet: `ready/desired`, or `missing`."""
    extra: list[Finding] = field(default_factory=list)
    """Findings of the smoke pods."""
    tenant_objects: int = 0
    """How many rendered tenant objects were compared (0: the stack has no tenants)."""
    tenants: list[Finding] = field(default_factory=list)
    skipped: list[SkippedCheck] = field(default_factory=list)
    """Checks not made: the identity may not read the object (each names the role that would allow it)."""
    autoscaler: AutoscalerView | None = None
    dra_pools: list[DraPoolResult] = field(default_factory=list)
    """The DRA pools' results (`verify.dra_pools`)."""

    @property
    def findings(self) -> list[Finding]:
        autoscaler = autoscaler_findings(self.autoscaler) if self.autoscaler else []
        return ([f for pool in self.pools for f in pool.findings]
                + [f for pool in self.dra_pools for f in pool.findings] + self.operator + autoscaler + self.tenants
                + self.extra)

    @property
    def verdict(self) -> Verdict:
        return verdict_of(self.findings)

    @property
    def settled(self) -> bool:
        """Nothing left that changes by waiting: every finding is a mismatch or waits for demand (`idle`)."""
        return not any(f.pending and not f.idle for f in self.findings) and self.verdict is not Verdict.MISMATCH

    @property
    def exit_code(self) -> int:
        return 1 if self.verdict is Verdict.MISMATCH else 0

    def to_json(self) -> dict:
        dra = {"draPools": [pool.to_json() for pool in self.dra_pools]} if self.dra_pools else {}
        return {
            "verdict": self.verdict.value,
            "pools": [pool.to_json() for pool in self.pools],
            **dra,
            "operator": {
                "namespace": NAMESPACE,
                "daemonSets": self.daemon_sets,
                "findings": [f.to_json() for f in self.operator],
            },
            "tenants": {"objects": self.tenant_objects, "findings": [f.to_json() for f in self.tenants],
                        "skipped": [s.to_json() for s in self.skipped]},
            "other": [f.to_json() for f in self.extra],
            "autoscaler": {**self.autoscaler.to_json(),
                           "findings": [f.to_json() for f in autoscaler_findings(self.autoscaler)]}
            if self.autoscaler else None,
        }



def _daemon_set_summary(names: Iterable[str], daemon_sets: Mapping[str, Mapping]) -> dict[str, str]:
    summary = {}
    for name in names:
        ds = daemon_sets.get(name)
        if ds is None:
            summary[name] = "missing"
        else:
            status = ds.get("status") or {}
            summary[name] = f"{status.get('numberReady', 0)}/{status.get('desiredNumberScheduled', 0)}"
    return summary


def evaluate(expectations: list[PoolExpectation], snapshot: ClusterSnapshot,
             dra_expectations: Iterable[DraPoolExpectation] = ()) -> VerifyReport:
    """Compare every pool's expectation with the cluster (the DRA pools' with `dra_expectations`)."""
    operator: list[Finding] = []
    data = None
    if snapshot.config_map is None:
        operator.append(Finding(
            "operator", f"ConfigMap {NAMESPACE}/{CONFIG_MAP_NAME} not found",
            "the stack's GPU Operator resources are not deployed (or deployed to another namespace)",
            "run `pulumi up`",
        ))
    else:
        data = snapshot.config_map.get("data") or {}
    daemon_sets = {object_name(ds): ds for ds in snapshot.daemon_sets}
    wanted = list(OPERATOR_DAEMONSETS) + ([MPS_DS] if any(MPS_DS in e.daemon_sets for e in expectations) else [])
    for name in wanted:
        if name not in daemon_sets:
            operator.append(Finding(
                "operator", f"DaemonSet {NAMESPACE}/{name} not found",
                "the GPU Operator has not deployed it: the release is missing or its ClusterPolicy is not ready",
                f"`helm status {RELEASE_NAME} -n {NAMESPACE}`; `kubectl get clusterpolicy -o yaml` shows the "
                "operator's state",
            ))
    pods = {}
    for pod in snapshot.pods:
        app, node = object_labels(pod).get("app"), (pod.get("spec") or {}).get("nodeName")
        # During a rollout a node has two pods for a while: the Ready one decides.
        if app and node and not (pods.get((app, node)) and pod_state(pods[(app, node)])[0]):
            pods[(app, node)] = pod
    missing = {n for n in wanted if n not in daemon_sets}
    by_pool: dict[str, list[Mapping]] = {}
    for node in snapshot.nodes:
        by_pool.setdefault(object_labels(node).get(POOL_LABEL, ""), []).append(node)
    pools = []
    for expect in expectations:
        # A missing DaemonSet is one operator finding, not one per node.
        scoped = dataclasses.replace(expect, daemon_sets=tuple(d for d in expect.daemon_sets if d not in missing))
        result = check_pool(scoped, sorted(by_pool.get(expect.pool, []), key=object_name), snapshot, pods, data)
        pools.append(PoolResult(expect, result.nodes, result.findings))
    dra_pools = [check_dra_pool(expect, sorted(by_pool.get(expect.pool, []), key=object_name), snapshot, pods)
                 for expect in dra_expectations]
    return VerifyReport(pools, operator, _daemon_set_summary(wanted, daemon_sets),
                        autoscaler=autoscaler_view(expectations, snapshot), dra_pools=dra_pools)
