"""The tenant policy with queues on, judged by the API server's own ValidatingAdmissionPolicy plugin (`tools/vapcheck`):
a tenant's Job queued in its LocalQueue is admitted suspended before Kueue picks a pool, Kueue's admit-time update
(`RunWithPodSetsInfo`: unsuspend, parallelism, and the flavor's nodeSelector and tolerations merged into the template
by `podset.Merge`/`FromAssignment`) passes the tenant policy, and its preemption (`RestorePodSetsInfo`) too; another
tenant's queue or pool, or an unsuspend by anyone but Kueue's controller, is refused."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpushare.kubernetes.kueue_admission import KUEUE_CONTROLLER_USER, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from gpushare.kubernetes.queues import pool_flavor, queue_manifests
from gpushare.kubernetes.admission.policies import tenant_policy
from gpushare.kubernetes.tenant_objects import tenant_manifests
from gpushare.sharing.pool_facts import derive_pool_facts
from tests.kubernetes.apiserver_admission import plugin_cluster
from tests.kubernetes.test_queues import load

MIG = "nvidia.com/mig-1g.12gb"
SHARED_T4 = "nvidia.com/gpu.shared"
TENANT_USER = "member-of-vision@example.com"
START_REFUSED = (f"only Kueue ({KUEUE_CONTROLLER_USER}) may unsuspend a queued Job in namespace vision: leave "
                 f"spec.suspend true and Kueue starts it when the tenant's ClusterQueue admits it")


@pytest.fixture(scope="module")
def stack():
    return load()


@pytest.fixture(scope="module")
def cluster(stack, kubernetes):
    judged = plugin_cluster(tenant_manifests(stack), kubernetes)
    assert judged.compile_errors == []
    yield judged
    judged.close()


def queued_job(queue: str = "vision", resource: str = MIG, suspend: bool = True) -> dict[str, Any]:
    """A Job as it reaches validating admission after Kueue's mutating webhook: labelled, suspended, no pool."""
    container = {"name": "train", "image": "busybox", "resources": {"limits": {resource: 1}}}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "train", "labels": {QUEUE_NAME_LABEL: queue}},
            "spec": {"suspend": suspend, "parallelism": 2, "completions": 2,
                     "template": {"metadata": {"labels": {"app": "train"}},
                                  "spec": {"restartPolicy": "Never", "containers": [container]}}}}


def admitted(stack, job: dict[str, Any], pool: str, count: int = 1) -> dict[str, Any]:
    """What Kueue's controller writes when the Job's workload is admitted on `pool`'s flavor."""
    flavor = pool_flavor(derive_pool_facts(stack)[pool])["spec"]
    job = copy.deepcopy(job)
    job["spec"]["suspend"] = False
    job["spec"]["parallelism"] = job["spec"]["completions"] = count  # partial admission
    template = job["spec"]["template"]
    template["metadata"].setdefault("annotations", {})["kueue.x-k8s.io/workload"] = "job-train-1a2b3"
    template["spec"]["nodeSelector"] = {**template["spec"].get("nodeSelector", {}), **flavor["nodeLabels"]}
    template["spec"]["tolerations"] = [*template["spec"].get("tolerations", []), *flavor["tolerations"]]
    return job


def test_a_job_queued_in_the_tenants_local_queue_is_admitted_before_any_pool_is_chosen(cluster):
    assert cluster.admit(queued_job(), "vision", user=TENANT_USER).allowed


def test_the_queued_job_is_still_judged_by_the_device_rules(cluster):
    job = queued_job()
    job["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    decision = cluster.admit(job, "vision", user=TENANT_USER)
    assert not decision.allowed
    assert any("NVIDIA_VISIBLE_DEVICES" in m for m in decision.messages)


def test_a_job_naming_another_queue_or_not_suspended_without_a_pool_is_refused(cluster):
    decision = cluster.admit(queued_job(queue="nlp"), "vision", user=TENANT_USER)
    assert decision.messages[-1].startswith("Jobs in namespace vision may name only its LocalQueue "
                                            "(kueue.x-k8s.io/queue-name: vision)")
    assert decision.messages[-1].endswith("; got nlp")
    # Not suspended (Kueue's webhook did not run): it is an ordinary Job, which must choose a pool.
    running = cluster.admit(queued_job(suspend=False), "vision", user=TENANT_USER)
    assert running.messages == ["Job pod template: GPU pods in namespace vision must set nodeSelector gpushare.io/pool "
                                "to one of: h100mig, t4ts"]


def test_kueues_admission_of_the_job_on_a_tenant_pool_passes(cluster, stack):
    for pool, resource in (("h100mig", MIG), ("t4ts", SHARED_T4)):
        job = queued_job(resource=resource)
        decision = cluster.admit(admitted(stack, job, pool), "vision", operation="UPDATE", old=job,
                                 user=KUEUE_CONTROLLER_USER)
        assert decision.allowed, (pool, decision.messages)


def test_kueues_preemption_restores_a_queued_job(cluster, stack):
    job = queued_job()
    running = admitted(stack, job, "h100mig")
    assert cluster.admit(job, "vision", operation="UPDATE", old=running, user=KUEUE_CONTROLLER_USER).allowed


def test_only_kueue_may_unsuspend_a_queued_job(cluster, stack):
    job = queued_job()
    started = admitted(stack, job, "h100mig")
    decision = cluster.admit(started, "vision", operation="UPDATE", old=job, user=TENANT_USER)
    assert decision.messages == [START_REFUSED]
    # A suspend flip alone leaves the template as it was: it is judged all the same.
    flipped = copy.deepcopy(job)
    flipped["spec"]["suspend"] = False
    assert START_REFUSED in cluster.admit(flipped, "vision", operation="UPDATE", old=job,
                                          user=TENANT_USER).messages


def test_even_kueue_cannot_place_a_tenants_job_on_another_tenants_pool(cluster, stack):
    job = queued_job(resource="nvidia.com/gpu")
    decision = cluster.admit(admitted(stack, job, "a100"), "vision", operation="UPDATE", old=job,
                             user=KUEUE_CONTROLLER_USER)
    assert not decision.allowed
    assert "Job pod template: GPU pods in namespace vision must set nodeSelector gpushare.io/pool to one of: " \
           "h100mig, t4ts; got a100" in decision.messages
    assert any("tolerates gpushare.io/tenant=nlp" in m for m in decision.messages)


def test_every_flavor_a_tenants_queue_lists_is_one_its_policy_admits(cluster, stack):
    """The compiled queues and the policy agree: each flavor of each ClusterQueue, applied as Kueue applies it, is
    admitted in that tenant's namespace."""
    queues = [m for m in queue_manifests(stack) if m["kind"] == "ClusterQueue" and m["metadata"]["name"] == "vision"]
    facts = derive_pool_facts(stack)
    for group in queues[0]["spec"]["resourceGroups"][:-1]:
        for flavor in group["flavors"]:
            job = queued_job(resource=facts[flavor["name"]].capacity.resource)
            assert cluster.admit(admitted(stack, job, flavor["name"]), "vision", operation="UPDATE", old=job,
                                 user=KUEUE_CONTROLLER_USER).allowed, flavor["name"]


def test_with_queues_off_the_tenant_policy_has_no_queue_rule():
    off = load(**{"gpushare:queues": {"enabled": False}})
    policy = tenant_policy(off, off.tenants[0])[0]
    assert "kueue" not in str(policy)
    on = load()
    assert "kueue" in str(tenant_policy(on, on.tenants[0])[0])


# --- CronJobs, priority classes, leaving the queue (issue 39) ---------------------------------------------------------

CRONJOB_CONTROLLER = "system:serviceaccount:kube-system:cronjob-controller"
POOL_REFUSED = ("GPU pods in namespace vision must set nodeSelector gpushare.io/pool to one of: h100mig, t4ts")


def queued_cron_job(queue: str | None = "vision", **labels: str) -> dict[str, Any]:
    """A CronJob whose job template names the LocalQueue (Kueue's webhook does not touch CronJobs)."""
    job = queued_job()
    template_labels = {**({QUEUE_NAME_LABEL: queue} if queue else {}), **labels}
    job_spec = {k: v for k, v in job["spec"].items() if k != "suspend"}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"},
            "spec": {"schedule": "0 2 * * *", "jobTemplate": {"metadata": {"labels": template_labels},
                                                              "spec": job_spec}}}


def job_of(cron_job: dict[str, Any]) -> dict[str, Any]:
    """The Job the CronJob controller creates (the job template's labels, kubernetes `pkg/controller/cronjob/utils.go`
    getJobFromTemplate2), as Kueue's webhook leaves it: suspended when it names a queue."""
    template = cron_job["spec"]["jobTemplate"]
    labels = dict(template["metadata"]["labels"])
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "nightly-29000000", "labels": labels, "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "1", "controller": True}]},
            "spec": {**copy.deepcopy(template["spec"]), "suspend": QUEUE_NAME_LABEL in labels}}


def test_a_cron_job_naming_the_tenants_local_queue_is_queued_like_a_job(cluster):
    cron_job = queued_cron_job()
    decision = cluster.admit(cron_job, "vision", user=TENANT_USER)
    assert decision.allowed, decision.messages
    made = cluster.admit(job_of(cron_job), "vision", user=CRONJOB_CONTROLLER)
    assert made.allowed, made.messages


def test_a_cron_job_outside_the_tenants_queue_must_choose_a_pool(cluster):
    assert cluster.admit(queued_cron_job(queue=None), "vision", user=TENANT_USER).messages == [
        f"CronJob pod template: {POOL_REFUSED}"]
    other = cluster.admit(queued_cron_job(queue="nlp"), "vision", user=TENANT_USER).messages
    assert other[-1].startswith("Jobs in namespace vision may name only its LocalQueue") and other[-1].endswith(
        "; got nlp")
    # Dropping the queue from the job template is judged, though the pod template stays as it was.
    decision = cluster.admit(queued_cron_job(queue=None), "vision", operation="UPDATE", old=queued_cron_job(),
                             user=TENANT_USER)
    assert decision.messages == [f"CronJob pod template: {POOL_REFUSED}"]


def test_a_tenant_cannot_take_a_queued_job_out_of_kueue_in_one_update(cluster):
    """Removing the queue label and unsuspending at once, with or without a pool of its own."""
    job = queued_job()
    left = copy.deepcopy(job)
    del left["metadata"]["labels"][QUEUE_NAME_LABEL]
    left["spec"]["suspend"] = False
    assert cluster.admit(left, "vision", operation="UPDATE", old=job, user=TENANT_USER).messages == [
        f"Job pod template: {POOL_REFUSED}", START_REFUSED]
    left["spec"]["template"]["spec"]["nodeSelector"] = {"gpushare.io/pool": "h100mig"}
    assert cluster.admit(left, "vision", operation="UPDATE", old=job, user=TENANT_USER).messages == [START_REFUSED]


PRIORITY_REFUSED = ("workloads in namespace vision may name only its Kueue WorkloadPriorityClass "
                    "(kueue.x-k8s.io/priority-class: gpushare-vision): another would give them that priority in "
                    "Kueue's admission and preemption, over the tenants sharing a cohort; remove the label or name "
                    "gpushare-vision; got gpushare-nlp")


def test_a_tenant_may_name_only_its_own_workload_priority_class(cluster):
    own, other = {PRIORITY_CLASS_LABEL: "gpushare-vision"}, {PRIORITY_CLASS_LABEL: "gpushare-nlp"}
    job = queued_job()
    job["metadata"]["labels"] |= own
    assert cluster.admit(job, "vision", user=TENANT_USER).allowed
    job["metadata"]["labels"] |= other
    assert cluster.admit(job, "vision", user=TENANT_USER).messages == [PRIORITY_REFUSED]
    assert cluster.admit(queued_cron_job(**other), "vision", user=TENANT_USER).messages == [PRIORITY_REFUSED]
    # Added to a queued Job by a label update alone.
    stored = queued_job()
    assert cluster.admit(job, "vision", operation="UPDATE", old=stored, user=TENANT_USER).messages == [
        PRIORITY_REFUSED]
