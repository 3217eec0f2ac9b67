"""Per-pool promises (`quota.pools`, issue 41) held on a real Kubernetes control plane (`controlplane.py`) by Kueue
v0.19.2's own manager (`kueue.py`, with the `batch/job` and `pod` integrations gpushare's chart values enable, acting
as its chart's service account), with everything the plan renders for the stack applied: the tenants' namespaces,
RoleBindings and admission policies, and the Kueue objects. Two tenants, alpha and beta, share an A100 MIG pool and
a time-sliced T4 pool that both advertise `nvidia.com/gpu`: one ResourceQuota line could not tell them apart, the
flavors do.

Pods are created by each tenant's own user with its LocalQueue's label only; Kueue's own pod webhook (reached
through `kueue.PodWebhookRelay`, which only moves bytes so the API server can verify a certificate) gates them
(`kueue.x-k8s.io/admission`), labels them managed and adds Kueue's finalizer. The tenant policy judges every step on
the real API server: the create after Kueue's mutation, Kueue's ungating patch (as
`system:serviceaccount:kueue-system:kueue-controller-manager`), and a tenant's own attempts to skip the queue.

One story, one test: each step starts from the state the last one left."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest
import yaml

from gpushare.cli import main
from gpushare.kubernetes.kueue_admission import ADMISSION_GATE, KUEUE_CONTROLLER_USER, PODSET_LABEL, QUEUE_NAME_LABEL
from gpushare.model.stack import POOL_LABEL
from gpushare.stackfile.config import parse_config
from tests.controlplane import kueue
from tests.controlplane.controlplane import (
    ApiError,
    ControlPlane,
    apply_rendered,
    finish_deletion,
    group_user,
    register_nodes,
    set_pod_phase,
    start_control_plane,
    stop_control_plane,
    unavailable_reason,
)
from tests.controlplane.test_kueue_on_a_real_control_plane import KUEUE, WAIT, cluster_queues, condition, reason

ALPHA_GROUP = "a1a1a1a1-0000-4000-8000-000000000001"
BETA_GROUP = "b2b2b2b2-0000-4000-8000-000000000002"
STACK_YAML = f"""
config:
  azure-native:location: westeurope
  gpushare:cluster: {{name: pools, kubernetesVersion: "1.36"}}
  gpushare:queues: {{enabled: true, borrowingByDesign: true}}
  gpushare:pools:
    - {{name: a100mig, vmSize: Standard_NC24ads_A100_v4, mig: MIG3g, count: 1}}
    - {{name: t4, vmSize: Standard_NC4as_T4_v3, count: 1,
        sharing: {{strategy: time-slicing, replicas: 2, renameByDefault: false}}}}
  gpushare:tenants:
    - {{name: alpha, pools: [a100mig, t4], quota: {{pools: {{a100mig: 1, t4: 1}}}}, groups: [{ALPHA_GROUP}]}}
    - {{name: beta, pools: [a100mig, t4], quota: {{pools: {{a100mig: 1, t4: 1}}}}, groups: [{BETA_GROUP}]}}
"""
"""a100mig: one node with 2 MIG 3g.40gb slices; t4: one T4 shared by 2; both `nvidia.com/gpu`. Each tenant is
promised 1 A100 slice and 1 T4 share, and may borrow the other's while it is idle."""
ALPHA, BETA = group_user(ALPHA_GROUP), group_user(BETA_GROUP)


@pytest.fixture(scope="module")
def pools_plane(tmp_path_factory):
    for why in (unavailable_reason(), kueue.unavailable_reason()):
        if why:
            pytest.skip(why)
    raw = yaml.safe_load(STACK_YAML)["config"]
    stack = parse_config(raw, source="stacks/Pulumi.pools.yaml", stack="pools")
    path = tmp_path_factory.mktemp("stack") / "Pulumi.pools.yaml"
    path.write_text(STACK_YAML)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", str(path), "--json"]) == 0
    plan = json.loads(out.getvalue())
    plane = start_control_plane({ALPHA: [ALPHA_GROUP], BETA: [BETA_GROUP], KUEUE_CONTROLLER_USER: ["system:masters"]})
    try:
        plane.nodes = register_nodes(plane, stack)
        kueue.start_kueue(plane, frameworks=("batch/job", "pod"), user=KUEUE_CONTROLLER_USER)
        relay = kueue.PodWebhookRelay(plane, [tenant.name for tenant in stack.tenants])
        # Kueue's objects are among the plan's resources, on Kueue's own CRDs; its namespace start_kueue made.
        plan["resources"] = [r for r in plan["resources"] if r["name"] != "kueue-namespace"]
        apply_rendered(plane, stack, plan)
        plane.wait_for("both ClusterQueues active", lambda: all(
            condition(queue, "Active") == "True" for queue in cluster_queues(plane).values()), timeout=WAIT)
        yield plane
        relay.close()
    finally:
        stop_control_plane(plane)


def tenant_pod(tenant: str, name: str, pool: str) -> dict[str, Any]:
    """A tenant's pod for one `nvidia.com/gpu` on `pool`, naming its LocalQueue."""
    resources = {"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": tenant, "labels": {QUEUE_NAME_LABEL: tenant}},
            "spec": {"restartPolicy": "Never", "nodeSelector": {POOL_LABEL: pool},
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": resources, "limits": resources}}]}}


def submit(plane: ControlPlane, tenant: str, name: str, pool: str) -> None:
    """Created by the tenant's user; what the API server stored is what Kueue's pod webhook made of it."""
    created = plane.create(tenant_pod(tenant, name, pool), user=ALPHA if tenant == "alpha" else BETA)
    # With TopologyAwareScheduling (on by default in v0.19.2) the webhook adds its topology gate as well
    # (`pod_webhook.go:185`); Kueue's ungating patch lifts both (`pod_controller.go` prepare).
    assert created["spec"]["schedulingGates"] == [{"name": ADMISSION_GATE}, {"name": "kueue.x-k8s.io/topology"}]
    assert created["metadata"]["labels"]["kueue.x-k8s.io/managed"] == "true"
    assert created["metadata"]["finalizers"] == ["kueue.x-k8s.io/managed"]


def pod(plane: ControlPlane, tenant: str, name: str) -> dict[str, Any]:
    return plane.get("v1", "Pod", name, tenant)


def gated(plane: ControlPlane, tenant: str, name: str) -> bool:
    return any(g["name"] == ADMISSION_GATE for g in pod(plane, tenant, name)["spec"].get("schedulingGates", []))


def workload(plane: ControlPlane, tenant: str, name: str) -> dict[str, Any] | None:
    """The Workload Kueue's pod reconciler made for the pod (it owns it)."""
    return next((w for w in plane.list(KUEUE, "Workload", tenant)
                 if any(o["kind"] == "Pod" and o["name"] == name for o in w["metadata"].get("ownerReferences", []))),
                None)


def running_on(plane: ControlPlane, tenant: str, name: str) -> str | None:
    """The node the scheduler bound the pod to once Kueue ungated it."""
    found = pod(plane, tenant, name)
    return None if gated(plane, tenant, name) else found["spec"].get("nodeName")


def usage(plane: ControlPlane, tenant: str, pool: str) -> tuple[str, str]:
    """(total, borrowed) nvidia.com/gpu the tenant's ClusterQueue uses on the pool's flavor."""
    for flavor in cluster_queues(plane)[tenant]["status"].get("flavorsUsage", []):
        if flavor["name"] == pool:
            resource = next(r for r in flavor["resources"] if r["name"] == "nvidia.com/gpu")
            return resource["total"], resource.get("borrowed", "0")
    return "0", "0"


def refusal(call) -> str:
    with pytest.raises(ApiError) as error:
        call()
    return str(error.value.body.get("message", ""))


def test_a_promise_per_pool_holds_a_pod_beyond_it_while_another_pool_admits_and_idle_promises_are_lent(pools_plane):
    plane = pools_plane
    a100_node, t4_node = plane.nodes["a100mig"][0], plane.nodes["t4"][0]

    # Skipping the queue is refused by the real API server: a GPU pod on its own pool without the queue, and a
    # queued pod the tenant ungates itself.
    bare = tenant_pod("alpha", "bare", "a100mig")
    del bare["metadata"]["labels"]
    assert "must go through its LocalQueue" in refusal(lambda: plane.create(bare, user=ALPHA))

    # beta and alpha each take their A100 promise; alpha's second A100 pod waits, gated: its promise there is used
    # and the only other slice is beta's, in use.
    submit(plane, "beta", "beta-a100", "a100mig")
    assert plane.wait_for("beta's A100 pod admitted and placed", lambda: running_on(plane, "beta", "beta-a100"),
                          timeout=WAIT) == a100_node
    submit(plane, "alpha", "alpha-a100-1", "a100mig")
    assert plane.wait_for("alpha's first A100 pod placed", lambda: running_on(plane, "alpha", "alpha-a100-1"),
                          timeout=WAIT) == a100_node
    submit(plane, "alpha", "alpha-a100-2", "a100mig")
    held = plane.wait_for("alpha's second A100 pod pending", lambda: (w := workload(plane, "alpha", "alpha-a100-2"))
                          and condition(w, "QuotaReserved") == "False" and w, timeout=WAIT)
    assert "insufficient unused quota for nvidia.com/gpu in flavor a100mig" in reason(held, "QuotaReserved")[1]

    # Its T4 pod, within its T4 promise, is admitted and placed on the T4 node while the A100 pod stays gated.
    submit(plane, "alpha", "alpha-t4", "t4")
    assert plane.wait_for("alpha's T4 pod placed", lambda: running_on(plane, "alpha", "alpha-t4"),
                          timeout=WAIT) == t4_node
    assert gated(plane, "alpha", "alpha-a100-2") and not pod(plane, "alpha", "alpha-a100-2")["spec"].get("nodeName")
    plane.wait_for("alpha using its promise on each pool", lambda: (usage(plane, "alpha", "a100mig"),
                   usage(plane, "alpha", "t4")) == (("1", "0"), ("1", "0")), timeout=WAIT)
    # The tenant cannot lift the gate itself.
    waiting = pod(plane, "alpha", "alpha-a100-2")
    waiting["spec"]["schedulingGates"] = []
    assert "only Kueue" in refusal(lambda: plane.request(
        "PUT", "/api/v1/namespaces/alpha/pods/alpha-a100-2", waiting, user=ALPHA))

    # beta's pod ends: its idle A100 promise is lent, and alpha's waiting pod is admitted by borrowing it.
    set_pod_phase(plane, pod(plane, "beta", "beta-a100"), "Succeeded")
    assert plane.wait_for("alpha's second A100 pod placed by borrowing", lambda: running_on(
        plane, "alpha", "alpha-a100-2"), timeout=WAIT) == a100_node
    plane.wait_for("alpha borrowing 1 A100 slice", lambda: usage(plane, "alpha", "a100mig") == ("2", "1"),
                   timeout=WAIT)

    # beta needs its promise back: Kueue preempts alpha's borrowing pod and admits beta's.
    submit(plane, "beta", "beta-a100-2", "a100mig")
    evicted = plane.wait_for("alpha's borrowing pod preempted", lambda: (w := workload(
        plane, "alpha", "alpha-a100-2")) and condition(w, "Evicted") == "True" and w, timeout=WAIT)
    assert reason(evicted, "Evicted")[0] == "Preempted"
    assert reason(evicted, "Preempted")[0] == "InCohortReclamation"
    plane.wait_for("alpha's borrowing pod deleted", lambda: pod(plane, "alpha", "alpha-a100-2")["metadata"].get(
        "deletionTimestamp"), timeout=WAIT)
    finish_deletion(plane, "alpha", "alpha-a100-2")
    assert plane.wait_for("beta's pod placed on its promise", lambda: running_on(plane, "beta", "beta-a100-2"),
                          timeout=WAIT) == a100_node
    assert running_on(plane, "alpha", "alpha-a100-1") == a100_node  # within alpha's promise: kept


def test_a_queued_jobs_pods_are_the_job_controllers_and_carry_kueues_mark(pools_plane):
    """beta's Job through its LocalQueue on its T4 promise (submitted suspended: Kueue's Job webhook is not
    registered here). Kueue unsuspends it, writing `kueue.x-k8s.io/podset` into its pod template; the Job controller
    creates its pod as its own service account; the tenant policy admits each step, and Kueue's pod webhook leaves
    the pod ungated (its owner is a Job Kueue manages). Beta's T4 promise is untouched by the other story."""
    plane = pools_plane
    resources = {"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": "1"}
    plane.create({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "beta", "labels": {QUEUE_NAME_LABEL: "beta"}},
        "spec": {"suspend": True, "backoffLimit": 0, "template": {"spec": {
            "restartPolicy": "Never", "nodeSelector": {POOL_LABEL: "t4"},
            "containers": [{"name": "main", "image": "busybox",
                            "resources": {"requests": resources, "limits": resources}}]}}}}, user=BETA)
    [started] = plane.wait_for("the Job's pod created", lambda: [
        p for p in plane.list("v1", "Pod", "beta", selector="job-name=train") if p["spec"].get("nodeName")],
        timeout=WAIT)
    assert started["spec"]["nodeName"] == plane.nodes["t4"][0]
    assert started["metadata"]["labels"][PODSET_LABEL] == "main"
    assert not started["spec"].get("schedulingGates")
    # The audit log names a generated pod by no name: the Job controller is among beta's pods' creators.
    assert "system:serviceaccount:kube-system:job-controller" in plane.pod_creators("beta").values()
    plane.wait_for("beta using its T4 promise", lambda: usage(plane, "beta", "t4") == ("1", "0"), timeout=WAIT)
