"""Smoke pods: one pod per pool that asks for one unit of its resource and lists the GPUs it got."""

from __future__ import annotations

from dataclasses import dataclass

from gpushare.kubernetes.tenants import shared_pools
from gpushare.kubernetes.verify.expectations import PoolExpectation
from gpushare.kubernetes.verify.findings import Finding
from gpushare.model.stack import CUDA_CHECK_IMAGE, POOL_LABEL, StackConfig
from gpushare.sharing.operator_values import toleration

SMOKE_NAMESPACE_PREFIX = "gpushare-smoke-"


def smoke_pod(expect: PoolExpectation, namespace: str) -> dict:
    """One pod that asks for one unit of the pool's resource on the pool's nodes and lists the GPUs it got.

    Restricted pod security (non-root, no privilege escalation, no capabilities), so namespace policies allow it.
    """
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"smoke-{expect.pool}", "namespace": namespace,
                     "labels": {"app.kubernetes.io/managed-by": "gpushare-verify", POOL_LABEL: expect.pool}},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {POOL_LABEL: expect.pool},
            "tolerations": [toleration(taint) for taint in expect.taints],
            "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "nvidia-smi",
                "image": CUDA_CHECK_IMAGE,
                "command": ["nvidia-smi", "-L"],
                "resources": {"limits": {expect.resource: "1"}},
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            }],
        },
    }


def smoke_skips(stack: StackConfig) -> dict[str, str]:
    """Pools that get no smoke pod, and why: with tenants, the shared-pool admission policy admits GPU pods outside
    tenant namespaces only on pools no tenant lists (`gpushare.kubernetes.admission.policies.shared_pool_policy`)."""
    if not stack.tenants:
        return {}
    shared = set(shared_pools(stack))
    return {
        pool.name: f"pool of tenant {', '.join(t.name for t in stack.tenants if pool.name in t.pools)}: the "
                   f"admission policy admits GPU pods on it only in its tenants' namespaces"
        for pool in stack.pools if pool.name not in shared
    }


@dataclass(frozen=True)
class SmokeResult:
    pool: str
    phase: str
    """Succeeded, Failed, or the phase it was still in when time ran out."""
    node: str | None
    log: str
    detail: str = ""
    """Why it did not finish (e.g. the scheduler's message), when it did not."""

    @property
    def passed(self) -> bool:
        return self.phase == "Succeeded" and "GPU " in self.log

    def finding(self) -> Finding | None:
        if self.passed or self.phase == "Skipped":
            return None
        if self.phase == "Rejected":
            return Finding(
                f"pool {self.pool}", f"the API server refused the smoke pod: {self.detail}",
                "an admission policy or a quota does not allow this pod in a namespace of its own",
                "allow GPU pods for this pool in namespaces named gpushare-smoke-*, or run without --smoke",
            )
        if self.phase == "Succeeded":
            problem = "the smoke pod ran but `nvidia-smi -L` listed no GPU"
        elif self.phase == "Failed":
            problem = "the smoke pod failed"
        else:
            detail = f": {self.detail}" if self.detail else ""
            problem = f"the smoke pod did not finish in time (still {self.phase}{detail})"
        return Finding(
            f"pool {self.pool}", problem,
            "a pod asking for the pool's resource did not get a working device",
            "read the pod's log above and the mismatches for this pool; `kubectl describe pod` while it runs",
        )

    def to_json(self) -> dict:
        return {"pool": self.pool, "phase": self.phase, "node": self.node, "log": self.log, "detail": self.detail,
                "passed": self.passed}
