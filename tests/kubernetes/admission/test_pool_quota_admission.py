"""A tenant with per-pool quotas (`quota.pools`), judged by the API server's own ValidatingAdmissionPolicy plugin
(`tools/vapcheck`): its GPU work must go through its LocalQueue, where Kueue keeps each pool's promise. A pod goes
through it gated by Kueue's pod webhook (`kueue.x-k8s.io/admission`), which only Kueue's controller removes; a Job's
pods are those the Job controller creates for a Job Kueue admitted. What a tenant can write itself (the queue label
without the gate, Kueue's podset label, a pod sent as if by a controller) is refused. A tenant without per-pool
quotas keeps its pool binding alone, and may queue a pod the same way."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpushare.kubernetes.kueue_admission import ADMISSION_GATE, KUEUE_CONTROLLER_USER, PODSET_LABEL, QUEUE_NAME_LABEL
from gpushare.kubernetes.queues import pool_flavor
from gpushare.kubernetes.tenant_objects import tenant_manifests, tenant_plan
from gpushare.model.stack import POOL_LABEL
from gpushare.sharing.pool_facts import derive_pool_facts
from tests.kubernetes.apiserver_admission import plugin_cluster
from tests.kubernetes.test_pool_quotas import adopter_stack

TENANT_USER = "member-of-vision@example.com"
JOB_CONTROLLER = "system:serviceaccount:kube-system:job-controller"
THROUGH_QUEUE = ("GPU work in namespace vision must go through its LocalQueue (label kueue.x-k8s.io/queue-name: "
                 "vision): its promise per pool (quota.pools) is kept by Kueue")
UNGATE_REFUSED = ("only Kueue (system:serviceaccount:kueue-system:kueue-controller-manager) may remove the "
                  "kueue.x-k8s.io/admission scheduling gate from a pod in namespace vision")


@pytest.fixture(scope="module")
def stack():
    """The adopter's design (tests/kubernetes/test_pool_quotas.py) with a fourth tenant, `ops`, on the Spot T4 pool
    without per-pool quotas."""
    return adopter_stack(extra_tenants=[{"name": "ops", "pools": ["t4spot"]}])


@pytest.fixture(scope="module")
def cluster(stack):
    judged = plugin_cluster(tenant_manifests(stack))
    assert judged.compile_errors == []
    yield judged
    judged.close()


def plan_pod(stack, tenant: str) -> dict[str, Any]:
    """The plan's pod for the tenant: its podSpec and podLabels."""
    entry = next(t for t in tenant_plan(stack) if t["name"] == tenant)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpu-check", "labels": dict(entry["podLabels"])},
            "spec": copy.deepcopy(entry["podSpec"])}


def gated(pod: dict[str, Any], queue: str = "vision") -> dict[str, Any]:
    """The pod as Kueue's pod webhook leaves it (`pod_webhook.go` Default): labelled with its queue and managed,
    gated, with Kueue's finalizer; no pool (Kueue chooses the flavor)."""
    pod = copy.deepcopy(pod)
    pod["metadata"]["labels"] = {QUEUE_NAME_LABEL: queue, "kueue.x-k8s.io/managed": "true"}
    pod["metadata"]["finalizers"] = ["kueue.x-k8s.io/managed"]
    pod["spec"].pop("nodeSelector", None)
    pod["spec"]["schedulingGates"] = [{"name": ADMISSION_GATE}]
    return pod


def ungated(stack, pod: dict[str, Any], pool: str) -> dict[str, Any]:
    """What Kueue's controller writes when the pod's Workload is admitted on `pool`'s flavor (`pod_controller.go`
    prepare: `podset.Merge` of the flavor's node labels and tolerations, then the gate removed)."""
    flavor = pool_flavor(derive_pool_facts(stack)[pool])["spec"]
    pod = copy.deepcopy(pod)
    pod["spec"]["nodeSelector"] = dict(flavor["nodeLabels"])
    pod["spec"]["tolerations"] = [*pod["spec"].get("tolerations", []),
                                  *(t for t in flavor["tolerations"] if t not in pod["spec"].get("tolerations", []))]
    pod["spec"]["schedulingGates"] = []
    return pod


def job(labels: dict[str, str] | None = None, suspend: bool = True) -> dict[str, Any]:
    container = {"name": "train", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": 1}},
                 "env": [{"name": "X", "value": "1"}]}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "train", "labels": {QUEUE_NAME_LABEL: "vision"} if labels is None else labels},
            "spec": {"suspend": suspend, "template": {"metadata": {"labels": {"app": "train"}},
                                                      "spec": {"restartPolicy": "Never", "containers": [container]}}}}


def test_the_plans_pod_for_a_tenant_with_per_pool_quotas_names_its_queue_and_is_queued(cluster, stack):
    pod = plan_pod(stack, "vision")
    assert pod["metadata"]["labels"] == {QUEUE_NAME_LABEL: "vision"}
    assert cluster.admit(gated(pod), "vision", user=TENANT_USER).allowed


def test_a_gpu_pod_outside_the_queue_is_refused_even_on_its_own_pool(cluster, stack):
    pod = plan_pod(stack, "vision")
    pod["metadata"]["labels"] = {}
    assert pod["spec"]["nodeSelector"] == {POOL_LABEL: "a100mig"}
    decision = cluster.admit(pod, "vision", user=TENANT_USER)
    assert len(decision.messages) == 1 and decision.messages[0].startswith(THROUGH_QUEUE)
    # A CPU pod is no GPU work: not held to the queue.
    cpu = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cpu"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    assert cluster.admit(cpu, "vision", user=TENANT_USER).allowed


def test_the_queue_label_without_kueues_gate_is_no_proof(cluster, stack):
    """Kueue's pod webhook leaves ungated a pod whose controller owner is a Job Kueue manages
    (FindAncestorJobManagedByKueue); a tenant can write such an owner, so the label alone is refused."""
    pod = plan_pod(stack, "vision")
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "1",
                                           "controller": True}]
    decision = cluster.admit(pod, "vision", user=TENANT_USER)
    assert decision.messages[0].startswith(THROUGH_QUEUE)
    assert decision.messages[0].endswith("carries no kueue.x-k8s.io/admission scheduling gate (Kueue gates the "
                                         "pods it queues)")


def test_only_kueue_removes_the_gate_and_it_places_the_pod_on_a_tenant_pool(cluster, stack):
    waiting = gated(plan_pod(stack, "vision"))
    for pool in ("a100mig", "t4spot"):
        assert cluster.admit(ungated(stack, waiting, pool), "vision", operation="UPDATE", old=waiting,
                             user=KUEUE_CONTROLLER_USER).allowed, pool
    decision = cluster.admit(ungated(stack, waiting, "a100mig"), "vision", operation="UPDATE", old=waiting,
                             user=TENANT_USER)
    assert decision.messages == [UNGATE_REFUSED + ": Kueue removes it when the tenant's ClusterQueue admits the pod"]
    # Even Kueue cannot give it another tenant's pool.
    refused = cluster.admit(ungated(stack, waiting, "h100mig"), "vision", operation="UPDATE", old=waiting,
                            user=KUEUE_CONTROLLER_USER)
    assert any("must set nodeSelector gpushare.io/pool to one of: a100mig, t4spot; got h100mig" in m
               for m in refused.messages)
    # Nor can the tenant move a waiting pod to another queue (its gate kept).
    moved = copy.deepcopy(waiting)
    moved["metadata"]["labels"][QUEUE_NAME_LABEL] = "nlp"
    messages = cluster.admit(moved, "vision", operation="UPDATE", old=waiting, user=TENANT_USER).messages
    assert any(m.startswith(THROUGH_QUEUE) for m in messages), messages


def test_a_jobs_pods_are_admitted_when_the_job_controller_creates_them_after_kueue_admitted_the_job(cluster, stack):
    pod = plan_pod(stack, "vision")
    pod["metadata"]["labels"] = {PODSET_LABEL: "main", "job-name": "train"}
    assert cluster.admit(pod, "vision", user=JOB_CONTROLLER).allowed
    assert cluster.admit(pod, "vision", user="system:kube-controller-manager").allowed
    # The label is Kueue's mark, written by a tenant it proves nothing: the requester does.
    assert cluster.admit(pod, "vision", user=TENANT_USER).messages[0].startswith(THROUGH_QUEUE)
    # A Job the queue never admitted has no mark on its pods.
    del pod["metadata"]["labels"][PODSET_LABEL]
    assert cluster.admit(pod, "vision", user=JOB_CONTROLLER).messages[0].startswith(THROUGH_QUEUE)


def test_a_gpu_job_must_name_the_queue_and_keep_naming_it(cluster):
    assert cluster.admit(job(), "vision", user=TENANT_USER).allowed
    unqueued = job(labels={})
    unqueued["spec"]["template"]["spec"]["nodeSelector"] = {POOL_LABEL: "a100mig"}
    unqueued["spec"]["suspend"] = False
    assert cluster.admit(unqueued, "vision", user=TENANT_USER).messages[0].startswith(
        "Job pod template: " + THROUGH_QUEUE)
    # Dropping the label of a suspended queued Job would let it be unsuspended outside the queue later.
    dropped = job(labels={})
    messages = cluster.admit(dropped, "vision", operation="UPDATE", old=job(), user=TENANT_USER).messages
    assert any(m.startswith("Job pod template: " + THROUGH_QUEUE) for m in messages), messages


def test_a_deployments_template_must_name_the_queue(cluster, stack):
    spec = plan_pod(stack, "vision")["spec"]
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "serve"},
                  "spec": {"selector": {"matchLabels": {"app": "serve"}},
                           "template": {"metadata": {"labels": {"app": "serve"}}, "spec": spec}}}
    assert cluster.admit(deployment, "vision", user=TENANT_USER).messages[0].startswith(
        "Deployment pod template: " + THROUGH_QUEUE)
    deployment["spec"]["template"]["metadata"]["labels"][QUEUE_NAME_LABEL] = "vision"
    assert cluster.admit(deployment, "vision", user=TENANT_USER).allowed


def test_a_tenant_without_per_pool_quotas_keeps_its_pool_binding_and_may_queue_a_pod(cluster, stack):
    pod = plan_pod(stack, "ops")
    assert pod["metadata"]["labels"] == {}
    assert cluster.admit(pod, "ops", user="member-of-ops@example.com").allowed
    waiting = gated(pod, queue="ops")
    assert cluster.admit(waiting, "ops", user="member-of-ops@example.com").allowed
    decision = cluster.admit(ungated(stack, waiting, "t4spot"), "ops", operation="UPDATE", old=waiting,
                             user="member-of-ops@example.com")
    assert decision.messages == [UNGATE_REFUSED.replace("vision", "ops") + ": Kueue removes it when the tenant's "
                                 "ClusterQueue admits the pod"]
