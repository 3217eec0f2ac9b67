"""`verify` on the tenants' Kueue queues: per tenant, what its ClusterQueue's status says (Kueue v0.19.2 v1beta2
`ClusterQueueStatus`: `pendingWorkloads`, `admittedWorkloads`, and per flavor and resource in `flavorsUsage` the
`total` used and the part `borrowed` beyond its nominal quota), and what is wrong: a queue missing, or not Active
(its `Active` condition False names why, e.g. a flavor that does not exist)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpushare.kubernetes.queues import KUEUE_API, queue_manifests
from gpushare.model.quantity import parse_quantity
from gpushare.model.stack import StackConfig


@dataclass(frozen=True)
class TenantQueueStatus:
    tenant: str
    found: bool
    active: bool | None
    """The `Active` condition; None when the status has none yet."""
    reason: str
    """Why it is not Active (the condition's reason and message), else empty."""
    pending: int
    admitted: int
    usage: tuple[tuple[str, str, str, str], ...]
    """(pool, resource, total used, borrowed), for each resource in use."""

    @property
    def problem(self) -> str | None:
        if not self.found:
            return f"tenant {self.tenant}: its ClusterQueue {self.tenant} is not in the cluster; run `pulumi up`"
        if self.active is False:
            return f"tenant {self.tenant}: its ClusterQueue is not active: {self.reason}"
        return None

    def to_json(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "found": self.found, "active": self.active, "reason": self.reason,
                "pendingWorkloads": self.pending, "admittedWorkloads": self.admitted,
                "usage": [{"pool": p, "resource": r, "total": t, "borrowed": b} for p, r, t, b in self.usage],
                "problem": self.problem}


def _zero(quantity: object) -> bool:
    return parse_quantity(quantity) in (None, 0)


def tenant_queue_status(tenant: str, queue: Mapping | None) -> TenantQueueStatus:
    if queue is None:
        return TenantQueueStatus(tenant, False, None, "", 0, 0, ())
    status = queue.get("status") or {}
    active = next((c for c in status.get("conditions") or () if c.get("type") == "Active"), None)
    usage = tuple((str(flavor.get("name")), str(r.get("name")), str(r.get("total", 0)), str(r.get("borrowed", 0)))
                  for flavor in status.get("flavorsUsage") or () for r in flavor.get("resources") or ()
                  if not _zero(r.get("total", 0)))
    return TenantQueueStatus(
        tenant=tenant, found=True, active=None if active is None else active.get("status") == "True",
        reason="" if active is None or active.get("status") == "True"
        else f"{active.get('reason', '')}: {active.get('message', '')}",
        pending=int(status.get("pendingWorkloads") or 0), admitted=int(status.get("admittedWorkloads") or 0),
        usage=usage)


def queue_statuses(stack: StackConfig, live: Mapping[str, Mapping | None]) -> list[TenantQueueStatus]:
    """`live`: ClusterQueue name -> the object read from the cluster (None: not found)."""
    return [tenant_queue_status(t.name, live.get(t.name)) for t in stack.tenants] if stack.queues.enabled else []


def cluster_queue_names(stack: StackConfig) -> list[str]:
    return [m["metadata"]["name"] for m in queue_manifests(stack) if m["kind"] == "ClusterQueue"]


def render_queue_lines(statuses: list[TenantQueueStatus]) -> list[str]:
    lines = []
    for s in statuses:
        if not s.found:
            lines.append(f"  {s.tenant}: no ClusterQueue")
            continue
        used = ", ".join(f"{pool} {total} {resource}" + (f" ({borrowed} borrowed)" if not _zero(borrowed) else "")
                         for pool, resource, total, borrowed in s.usage) or "nothing in use"
        state = "" if s.active is not False else " NOT ACTIVE"
        lines.append(f"  {s.tenant}:{state} {s.admitted} admitted, {s.pending} pending; {used}")
    return ["queues (Kueue ClusterQueue status):", *lines] if lines else []


def read_cluster_queues(api: Any, names: list[str]) -> dict[str, Mapping | None]:
    """Each ClusterQueue by name (None when not found), through the Kubernetes client's CustomObjectsApi."""
    from kubernetes import client

    from gpushare.kubernetes.cluster_read import call

    group, version = KUEUE_API.split("/")
    objects = client.CustomObjectsApi(api)
    return {name: call(api, f"read ClusterQueue {name}", objects.get_cluster_custom_object, group, version,
                       "clusterqueues", name, missing_ok=True) for name in names}
