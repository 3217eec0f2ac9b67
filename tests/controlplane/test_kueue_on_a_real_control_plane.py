"""Borrowing and reclaim shown against Kueue itself: Kueue v0.19.2's own manager (tests/controlplane/kueue.py) on a real
Kubernetes 1.36 control plane, with the objects gpushare compiles for two tenants that share one time-sliced pool
and each own a dedicated one. The real job controller creates the pods of the Jobs Kueue unsuspends and the real
scheduler places them on the fake Nodes.

Two stories, each one test because each step starts from the state the previous one left (a second test could run
on another xdist worker, with a control plane and a Kueue of its own): borrowing and reclaim on the shared pool, and
a Job of the plan's podSpec on a dedicated pool run to completion, which gives its quota back."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpushare.kubernetes.kueue_admission import QUEUE_NAME_LABEL
from gpushare.kubernetes.queues import queue_manifests
from gpushare.kubernetes.tenants import pod_spec
from gpushare.model.stack import POOL_LABEL
from gpushare.stackfile.config import parse_config
from tests.controlplane import kueue
from tests.controlplane.controlplane import (
    ControlPlane,
    ensure_namespace,
    register_nodes,
    set_pod_phase,
    start_control_plane,
    stop_control_plane,
    unavailable_reason,
)

STACK_YAML = """
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: queues, kubernetesVersion: "1.36"}
  gpushare:queues: {enabled: true}
  gpushare:pools:
    - {name: shared, vmSize: Standard_NC4as_T4_v3, sharing: {strategy: time-slicing, replicas: 2}, count: 1}
    - {name: alphaown, vmSize: Standard_NC24ads_A100_v4, count: 1}
    - {name: betaown, vmSize: Standard_NC24ads_A100_v4, count: 1}
  gpushare:tenants:
    - {name: alpha, pools: [alphaown, shared]}
    - {name: beta, pools: [betaown, shared]}
"""
"""shared: one T4 node advertising 2 nvidia.com/gpu.shared, alpha's and beta's, so each is guaranteed 1 and may
borrow the other's; alphaown and betaown: one A100 each (nvidia.com/gpu), never lent."""
KUEUE = "kueue.x-k8s.io/v1beta2"
WAIT = 180
"""Seconds: generous, the machine is a loaded 2-core box (each step took a few seconds when it was idle)."""


@pytest.fixture(scope="module")
def stack():
    return parse_config(yaml.safe_load(STACK_YAML)["config"], source="stacks/Pulumi.queues.yaml", stack="queues")


@pytest.fixture(scope="module")
def kueue_plane(stack):
    """A control plane of this module's own with the stack's Nodes, Kueue's CRDs and manager, and the compiled queue
    objects applied; stopped (Kueue first, being the last process started) on teardown, on failure too."""
    for reason in (unavailable_reason(), kueue.unavailable_reason()):
        if reason:
            pytest.skip(reason)
    plane = start_control_plane({})
    try:
        plane.nodes = register_nodes(plane, stack)
        kueue.start_kueue(plane)
        for tenant in stack.tenants:
            ensure_namespace(plane, tenant.name)
        for manifest in queue_manifests(stack):
            plane.wait_for(f"{manifest['kind']} {manifest['metadata']['name']} created",
                           lambda manifest=manifest: plane.create(manifest))
        plane.wait_for("both ClusterQueues active", lambda: all(
            condition(queue, "Active") == "True" for queue in cluster_queues(plane).values()), timeout=WAIT)
        yield plane
    finally:
        stop_control_plane(plane)


def cluster_queues(plane: ControlPlane) -> dict[str, dict[str, Any]]:
    return {q["metadata"]["name"]: q for q in plane.list(KUEUE, "ClusterQueue")}


def condition(obj: dict[str, Any] | None, kind: str) -> str | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c["type"] == kind:
            return c["status"]
    return None


def reason(obj: dict[str, Any], kind: str) -> tuple[str, str]:
    c = next(c for c in obj["status"]["conditions"] if c["type"] == kind)
    return c["reason"], c.get("message", "")


def submit(plane: ControlPlane, tenant: str, name: str, spec: dict[str, Any] | None = None) -> None:
    """A Job as a tenant's user submits it to its LocalQueue: suspended (what Kueue's Job webhook would make it, which
    is not registered here); its pod `spec`, by default one pod asking for one time-sliced GPU share and a little cpu
    and memory."""
    resources = {"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu.shared": "1"}
    plane.create({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": tenant, "labels": {QUEUE_NAME_LABEL: tenant}},
        "spec": {"suspend": True, "parallelism": 1, "completions": 1, "backoffLimit": 0, "template": {"spec": spec or {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox",
                            "resources": {"requests": resources, "limits": {"nvidia.com/gpu.shared": "1"}}}]}}}})


def job(plane: ControlPlane, tenant: str, name: str) -> dict[str, Any]:
    return plane.get("batch/v1", "Job", name, tenant)


def workload(plane: ControlPlane, tenant: str, name: str) -> dict[str, Any] | None:
    """The Workload Kueue's Job reconciler made for the Job (it owns it)."""
    return next((w for w in plane.list(KUEUE, "Workload", tenant)
                 if any(o["kind"] == "Job" and o["name"] == name for o in w["metadata"].get("ownerReferences", []))),
                None)


def admitted(plane: ControlPlane, tenant: str, name: str) -> dict[str, Any] | None:
    found = workload(plane, tenant, name)
    return found if condition(found, "Admitted") == "True" and not job(plane, tenant, name)["spec"]["suspend"] \
        else None


def pending(plane: ControlPlane, tenant: str, name: str) -> dict[str, Any] | None:
    """The Workload when Kueue tried and could not reserve quota for it (QuotaReserved False, reason Pending)."""
    found = workload(plane, tenant, name)
    if found and condition(found, "QuotaReserved") == "False" and reason(found, "QuotaReserved")[0] == "Pending":
        return found
    return None


def scheduled_on(plane: ControlPlane, tenant: str, name: str) -> list[str]:
    """The nodes the scheduler bound the Job's live pods to (empty until every one is bound)."""
    pods = [p for p in plane.list("v1", "Pod", tenant, selector=f"job-name={name}")
            if not p["metadata"].get("deletionTimestamp")]
    nodes = [p["spec"].get("nodeName") for p in pods]
    return nodes if nodes and all(nodes) else []


def shared_usage(plane: ControlPlane, tenant: str, flavor_name: str = "shared",
                 resource_name: str = "nvidia.com/gpu.shared") -> tuple[str, str]:
    """(total, borrowed) of the resource the tenant's ClusterQueue uses on the flavor (the shared pool's
    nvidia.com/gpu.shared by default)."""
    queue = cluster_queues(plane)[tenant]
    for flavor in queue["status"].get("flavorsUsage", []):
        if flavor["name"] == flavor_name:
            resource = next(r for r in flavor["resources"] if r["name"] == resource_name)
            return resource["total"], resource.get("borrowed", "0")
    return "0", "0"


def play_the_kubelet(plane: ControlPlane, tenant: str) -> None:
    """No kubelet confirms a deleted pod's end, so a pod the job controller or the garbage collector deleted stays
    Terminating, still holding its GPU share in the scheduler's view; it is removed as the kubelet would once its
    containers stopped (grace period 0)."""
    for pod in plane.list("v1", "Pod", tenant):
        if pod["metadata"].get("deletionTimestamp"):
            plane.request("DELETE", f"/api/v1/namespaces/{tenant}/pods/{pod['metadata']['name']}",
                          {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})


def test_a_tenant_queues_borrows_the_idle_owners_share_and_is_preempted_when_the_owner_returns(kueue_plane):
    plane = kueue_plane
    shared_node = plane.nodes["shared"]

    # beta takes its guaranteed share; alpha takes its own; alpha's second Job stays queued: its nominal quota on
    # the shared pool (1) is used and the only other share is beta's, in use.
    submit(plane, "beta", "beta-1")
    plane.wait_for("beta-1 admitted", lambda: admitted(plane, "beta", "beta-1"), timeout=WAIT)
    submit(plane, "alpha", "alpha-1")
    plane.wait_for("alpha-1 admitted", lambda: admitted(plane, "alpha", "alpha-1"), timeout=WAIT)
    submit(plane, "alpha", "alpha-2")
    queued = plane.wait_for("alpha-2 pending", lambda: pending(plane, "alpha", "alpha-2"), timeout=WAIT)
    assert "insufficient unused quota for nvidia.com/gpu.shared in flavor shared" in reason(queued, "QuotaReserved")[1]
    assert job(plane, "alpha", "alpha-2")["spec"]["suspend"] is True
    assert scheduled_on(plane, "alpha", "alpha-2") == []
    plane.wait_for("alpha's ClusterQueue using 1 share", lambda: shared_usage(plane, "alpha") == ("1", "0"),
                   timeout=WAIT)
    plane.wait_for("alpha's ClusterQueue counting 1 pending", lambda: cluster_queues(plane)["alpha"]["status"].get(
        "pendingWorkloads") == 1, timeout=WAIT)

    # beta goes idle: alpha-2 is admitted on the shared pool by borrowing beta's share, unsuspended with the
    # flavor's node selector and tolerations, and the scheduler places its pod on the shared pool's node.
    plane.request("DELETE", "/apis/batch/v1/namespaces/beta/jobs/beta-1",
                  {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"})
    borrowed = plane.wait_for("alpha-2 admitted by borrowing", lambda: admitted(plane, "alpha", "alpha-2"),
                              timeout=WAIT)
    assignment = borrowed["status"]["admission"]
    assert assignment["clusterQueue"] == "alpha"
    assert assignment["podSetAssignments"][0]["flavors"]["nvidia.com/gpu.shared"] == "shared"
    plane.wait_for("alpha's ClusterQueue borrowing 1 share", lambda: shared_usage(plane, "alpha") == ("2", "1"),
                   timeout=WAIT)
    template = job(plane, "alpha", "alpha-2")["spec"]["template"]["spec"]
    assert template["nodeSelector"] == {POOL_LABEL: "shared"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in template["tolerations"]
    play_the_kubelet(plane, "beta")
    assert plane.wait_for("alpha-2's pod scheduled", lambda: scheduled_on(plane, "alpha", "alpha-2"),
                          timeout=WAIT) == shared_node

    # beta (the lender) submits again: Kueue reclaims its share, evicting alpha's borrowing Job (suspended again,
    # its pod deleted) and admitting beta's; alpha-1, within alpha's guarantee, keeps running.
    submit(plane, "beta", "beta-2")
    plane.wait_for("beta-2 admitted", lambda: admitted(plane, "beta", "beta-2"), timeout=WAIT)
    evicted = plane.wait_for("alpha-2 evicted", lambda: condition(workload(plane, "alpha", "alpha-2"),
                                                                  "Evicted") == "True" and
                             workload(plane, "alpha", "alpha-2"), timeout=WAIT)
    assert reason(evicted, "Evicted")[0] == "Preempted"
    assert reason(evicted, "Preempted")[0] == "InCohortReclamation"
    assert plane.wait_for("alpha-2 suspended again", lambda: job(plane, "alpha", "alpha-2")["spec"]["suspend"],
                          timeout=WAIT) is True
    plane.wait_for("alpha-2 queued again", lambda: pending(plane, "alpha", "alpha-2"), timeout=WAIT)
    assert admitted(plane, "alpha", "alpha-1")
    plane.wait_for("alpha back to its guarantee", lambda: shared_usage(plane, "alpha") == ("1", "0"), timeout=WAIT)
    plane.wait_for("beta using its share", lambda: shared_usage(plane, "beta") == ("1", "0"), timeout=WAIT)
    play_the_kubelet(plane, "alpha")
    assert plane.wait_for("beta-2's pod scheduled", lambda: scheduled_on(plane, "beta", "beta-2"),
                          timeout=WAIT) == shared_node
    assert scheduled_on(plane, "alpha", "alpha-1") == shared_node



def completed(plane: ControlPlane, tenant: str, name: str) -> bool:
    return condition(job(plane, tenant, name), "Complete") == "True"


def test_a_plan_job_through_the_local_queue_runs_to_completion_and_gives_its_quota_back(kueue_plane, stack):
    """alpha's plan podSpec (one whole A100 on its own pool, whose quota is 1 and lends and borrows nothing) as a queued
    Job: admitted, run and succeeded (written as the kubelet would), its pod's `batch.kubernetes.io/job-tracking`
    finalizer removed by the Job controller (a pod update the API server refused with gpushare's former `Equal`
    toleration of the GPU taint, issue 39) and the Job completed; Kueue then finishes its Workload and admits the
    next Job, which waited for that quota."""
    plane = kueue_plane
    alpha = next(t for t in stack.tenants if t.name == "alpha")
    spec = pod_spec(stack, alpha)
    assert spec["nodeSelector"] == {POOL_LABEL: "alphaown"}
    submit(plane, "alpha", "plan-1", spec)
    plane.wait_for("plan-1 admitted", lambda: admitted(plane, "alpha", "plan-1"), timeout=WAIT)
    assert plane.wait_for("plan-1's pod scheduled", lambda: scheduled_on(plane, "alpha", "plan-1"),
                          timeout=WAIT) == plane.nodes["alphaown"]
    plane.wait_for("alpha using its own pool's GPU", lambda: shared_usage(
        plane, "alpha", "alphaown", "nvidia.com/gpu") == ("1", "0"), timeout=WAIT)
    submit(plane, "alpha", "plan-2", spec)
    queued = plane.wait_for("plan-2 pending", lambda: pending(plane, "alpha", "plan-2"), timeout=WAIT)
    assert "insufficient unused quota for nvidia.com/gpu in flavor alphaown" in reason(queued, "QuotaReserved")[1]

    run_plan_job(plane, "plan-1")
    # plan-1's end gave the quota back: plan-2, which waited for it, is admitted and runs; then none is used.
    plane.wait_for("plan-2 admitted once plan-1 finished", lambda: admitted(plane, "alpha", "plan-2"), timeout=WAIT)
    run_plan_job(plane, "plan-2")
    plane.wait_for("alpha's quota on its own pool all given back", lambda: shared_usage(
        plane, "alpha", "alphaown", "nvidia.com/gpu") == ("0", "0"), timeout=WAIT)


def run_plan_job(plane: ControlPlane, name: str) -> None:
    """The admitted Job's pod bound on alphaown, Running, Succeeded; the Job controller removes its finalizer and
    completes the Job, and Kueue finishes its Workload."""
    assert plane.wait_for(f"{name}'s pod bound", lambda: scheduled_on(plane, "alpha", name),
                          timeout=WAIT) == plane.nodes["alphaown"]
    [pod] = plane.list("v1", "Pod", "alpha", selector=f"job-name={name}")
    assert pod["metadata"]["finalizers"] == ["batch.kubernetes.io/job-tracking"]
    set_pod_phase(plane, pod, "Running")
    set_pod_phase(plane, pod, "Succeeded")
    plane.wait_for(f"{name} complete", lambda: completed(plane, "alpha", name), timeout=WAIT)
    assert not plane.get("v1", "Pod", pod["metadata"]["name"], "alpha")["metadata"].get("finalizers")
    plane.wait_for(f"{name}'s Workload finished", lambda: condition(workload(plane, "alpha", name),
                                                                     "Finished") == "True", timeout=WAIT)
