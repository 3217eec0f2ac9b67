"""Smoke pods: one pod per pool that gets one device of it and lists the GPUs it got. On a device-plugin pool the pod
asks for one unit of the pool's resource; on a DRA pool it claims one device through a ResourceClaimTemplate created
beside it, the one gpushare renders for a tenant of the pool (`gpushare.sharing.dra.claim_template`: the pool's
DeviceClass and opaque sharing config)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpushare.kubernetes.tenants import shared_pools
from gpushare.kubernetes.verify.expectations import PoolExpectation
from gpushare.kubernetes.verify.findings import Finding
from gpushare.model.stack import CUDA_CHECK_IMAGE, POOL_LABEL, Allocation, GpuPool, StackConfig
from gpushare.sharing import dra
from gpushare.sharing.operator_values import toleration
from gpushare.sharing.pool_facts import derive_pool_facts

SMOKE_NAMESPACE_PREFIX = "gpushare-smoke-"
SMOKE_LABELS = {"app.kubernetes.io/managed-by": "gpushare-verify"}
DEVICE_PLUGIN = "device-plugin"
DRA = "dra"


def _pod(pool: str, taints: tuple[str, ...], namespace: str) -> dict[str, Any]:
    """The pod on the pool's nodes that lists the GPUs it got, asking for none yet.

    Restricted pod security (non-root, no privilege escalation, no capabilities), so namespace policies allow it.
    """
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"smoke-{pool}", "namespace": namespace, "labels": {**SMOKE_LABELS, POOL_LABEL: pool}},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {POOL_LABEL: pool},
            "tolerations": [toleration(taint) for taint in taints],
            "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "nvidia-smi",
                "image": CUDA_CHECK_IMAGE,
                "command": ["nvidia-smi", "-L"],
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            }],
        },
    }


def smoke_pod(expect: PoolExpectation, namespace: str) -> dict[str, Any]:
    """One pod that asks for one unit of the device-plugin pool's resource on the pool's nodes and lists the GPUs it
    got."""
    pod = _pod(expect.pool, expect.taints, namespace)
    pod["spec"]["containers"][0]["resources"] = {"limits": {expect.resource: "1"}}
    return pod


def dra_smoke_objects(pool: GpuPool, taints: tuple[str, ...], namespace: str) -> list[dict[str, Any]]:
    """On a DRA pool: the ResourceClaimTemplate gpushare renders for a tenant of the pool, here in the smoke namespace
    (`dra.claim_template`: one device of the pool's DeviceClass with the pool's opaque config), then a pod on the
    pool's nodes that claims it, as the plan's pod snippet on a DRA pool does (`gpushare.kubernetes.tenants.pod_spec`).
    The container asks for no extended resource, so it sets NVIDIA_VISIBLE_DEVICES=void, as the admission policies'
    device rules require of such a container on a GPU node: the device comes by CDI from the claim."""
    template = dra.claim_template(namespace, pool)
    pod = _pod(pool.name, taints, namespace)
    pod["spec"]["resourceClaims"] = [{"name": dra.CLAIM_REQUEST,
                                      "resourceClaimTemplateName": template["metadata"]["name"]}]
    container = pod["spec"]["containers"][0]
    container["resources"] = {"claims": [{"name": dra.CLAIM_REQUEST}]}
    container["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]
    return [template, pod]


@dataclass(frozen=True)
class SmokeTarget:
    """One pool's smoke run: what it creates in the smoke namespace, the pod last."""

    pool: str
    allocation: str
    """`device-plugin` or `dra`."""
    device_plugin: PoolExpectation | None = None
    dra_pool: GpuPool | None = None
    taints: tuple[str, ...] = ()
    """A DRA pool's taints (the Spot taint AKS adds included); a device-plugin pool's are its expectation's."""

    def manifests(self, namespace: str) -> list[dict[str, Any]]:
        if self.dra_pool is not None:
            return dra_smoke_objects(self.dra_pool, self.taints, namespace)
        assert self.device_plugin is not None
        return [smoke_pod(self.device_plugin, namespace)]


def smoke_targets(stack: StackConfig, expectations: list[PoolExpectation]) -> list[SmokeTarget]:
    """Every pool's smoke run in stack order: a device-plugin pool's from its expectation, a DRA pool's from the
    pool (its claim template is rendered from it) and its taints (`PoolFacts.tolerated_taints`, as the device-plugin
    pools' expectations take them)."""
    by_pool: Mapping[str, PoolExpectation] = {e.pool: e for e in expectations}
    facts = derive_pool_facts(stack) if any(p.allocation is Allocation.DRA for p in stack.pools) else {}
    targets = []
    for pool in stack.pools:
        if pool.allocation is Allocation.DRA:
            targets.append(SmokeTarget(pool.name, DRA, dra_pool=pool, taints=facts[pool.name].tolerated_taints))
        elif pool.name in by_pool:
            targets.append(SmokeTarget(pool.name, DEVICE_PLUGIN, device_plugin=by_pool[pool.name]))
    return targets


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
    allocation: str = DEVICE_PLUGIN
    """`device-plugin` (the pod asked for the pool's resource) or `dra` (it claimed a device)."""

    @property
    def passed(self) -> bool:
        return self.phase == "Succeeded" and "GPU " in self.log

    def finding(self) -> Finding | None:
        if self.passed or self.phase == "Skipped":
            return None
        if self.phase == "Rejected":
            return Finding(
                f"pool {self.pool}", f"the API server refused the smoke {self._objects}: {self.detail}",
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
            "a pod claiming one of the pool's devices did not get a working device" if self.allocation == DRA
            else "a pod asking for the pool's resource did not get a working device",
            "read the pod's log above and the mismatches for this pool; `kubectl describe pod` while it runs",
        )

    @property
    def _objects(self) -> str:
        return "pod or its ResourceClaimTemplate" if self.allocation == DRA else "pod"

    def to_json(self) -> dict:
        return {"pool": self.pool, "phase": self.phase, "node": self.node, "log": self.log, "detail": self.detail,
                "passed": self.passed, "allocation": self.allocation}
