"""The other workload kinds gpushare admits, followed through their whole life on the real control plane as
`test_lifecycle_on_a_real_control_plane.py` follows Jobs and bare pods (its helpers, its spare nodes): a tenant's
Deployment through a rolling update, a pod taken out of its selector, scaling to zero and deletion; a StatefulSet on
the shared pool, created, updated and scaled down in order, orphaned, adopted and deleted; a tenant's CronJob whose
Jobs run to completion under its history limit; a platform DaemonSet through an update, orphaning, adoption and
deletion. The controllers create, update and delete the pods; this module plays the kubelet (`kubelet_pass`).

Every GPU pod here asks for `nvidia.com/gpu`. A rolling update replaces pods without updating them, but the pod
updates along each life (a relabel, the garbage collector's orphaning, a controller's adoption, the Job controller's
finalizer removal) were each refused with gpushare's former `operator: Equal` toleration of the GPU taint, and every
test here failed with it (issue 39)."""

from __future__ import annotations

import copy
from typing import Any

from gpushare.kubernetes.tenants import pod_spec
from gpushare.kubernetes.verify.expectations import pool_expectations
from gpushare.kubernetes.verify.smoke import smoke_pod
from gpushare.model.stack import GPU_TAINT, POOL_LABEL
from gpushare.sharing.pool_facts import derive_pool_facts
from gpushare.sharing.operator_values import toleration
from tests.controlplane.controlplane import (
    ADMIN,
    MERGE_PATCH,
    ControlPlane,
    ensure_namespace,
    finish_deletion,
    resource_path,
    set_pod_phase,
)
from tests.controlplane.test_lifecycle_on_a_real_control_plane import (  # noqa: F401 (spare_nodes: a fixture)
    ADDED_BY_AKS,
    PLATFORM_NAMESPACE,
    SHARED_NAMESPACE,
    WAIT,
    absent,
    delete,
    gone,
    patch_pod,
    run_to_completion,
    spare_nodes,
    tenant_user,
)

SLEEP = ["sleep", "infinity"]


def serving(spec: dict[str, Any]) -> dict[str, Any]:
    """A pod spec of the plan (or verify's smoke pod) as a long-running server's: restarted always, never ending."""
    spec = copy.deepcopy(spec)
    spec["restartPolicy"] = "Always"
    spec["containers"][0]["command"] = SLEEP
    return spec


def kubelet_pass(plane: ControlPlane, namespace: str, selector: str, deleted: list[str] | None = None
                 ) -> list[dict[str, Any]]:
    """What the selected pods' kubelets do once: a bound pod still Pending starts Running (and Ready), a pod marked
    for deletion is deleted for good (its name appended to `deleted`). Returns the pods not being deleted."""
    live = []
    for pod in plane.list("v1", "Pod", namespace, selector=selector):
        name = pod["metadata"]["name"]
        if pod["metadata"].get("deletionTimestamp"):
            finish_deletion(plane, namespace, name)
            if deleted is not None and name not in deleted:
                deleted.append(name)
            continue
        if pod["spec"].get("nodeName") and pod.get("status", {}).get("phase", "Pending") == "Pending":
            set_pod_phase(plane, pod, "Running")
        live.append(pod)
    return live


def settled(plane: ControlPlane, api_version: str, kind: str, name: str, namespace: str, selector: str,
            deleted: list[str] | None = None) -> dict[str, Any]:
    """Plays the kubelet until the controller reports its workload rolled out (as `kubectl rollout status` reads
    it: the current generation observed, every replica updated and ready) and no other pod of it is left. Returns
    the workload."""
    def rolled_out() -> dict[str, Any] | None:
        pods = kubelet_pass(plane, namespace, selector, deleted)
        workload = plane.get(api_version, kind, name, namespace)
        status = workload.get("status", {})
        if status.get("observedGeneration", 0) < workload["metadata"]["generation"]:
            return None
        if kind == "DaemonSet":
            want = status.get("desiredNumberScheduled", -1)
            done = want == status.get("updatedNumberScheduled") == status.get("numberAvailable") == \
                status.get("currentNumberScheduled") and status.get("numberMisscheduled", 0) == 0
        else:
            want = workload["spec"]["replicas"]
            done = want == status.get("replicas", 0) == status.get("updatedReplicas", 0) == \
                status.get("readyReplicas", 0)
            if kind == "StatefulSet":
                done = done and status.get("currentRevision") == status.get("updateRevision")
        every = plane.list("v1", "Pod", namespace, selector=selector)
        running = all(p.get("status", {}).get("phase") == "Running" for p in pods)
        return workload if done and running and len(pods) == len(every) == want else None
    try:
        return plane.wait_for(f"{kind} {namespace}/{name} rolled out", rolled_out, timeout=WAIT)
    except AssertionError as error:
        pods = plane.list("v1", "Pod", namespace, selector=selector)
        raise AssertionError(f"{error}: status {plane.get(api_version, kind, name, namespace).get('status')}; pods "
                             f"{[(p['metadata']['name'], p['spec'].get('nodeName'), p.get('status')) for p in pods]}"
                             ) from None


def patch(plane: ControlPlane, api_version: str, kind: str, name: str, namespace: str, body: dict[str, Any],
          user: str = ADMIN) -> dict[str, Any]:
    return plane.request("PATCH", resource_path(api_version, kind, namespace, name), body, user,
                         content_type=MERGE_PATCH)


def revised(note: str) -> dict[str, Any]:
    """A template change (`kubectl rollout restart` writes such an annotation): the controller replaces every pod."""
    return {"spec": {"template": {"metadata": {"annotations": {"example.com/revision": note}}}}}


def pod_names(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods)


def on_pool(plane: ControlPlane, pods: list[dict[str, Any]], pool: str) -> None:
    for pod in pods:
        assert pod["spec"]["nodeName"] in plane.nodes[pool], (pod["metadata"]["name"], pod["spec"]["nodeName"])
        assert ADDED_BY_AKS in pod["spec"]["tolerations"]


def test_a_tenants_gpu_deployment_rolls_out_releases_a_pod_scales_to_zero_and_is_garbage_collected(
        control_plane, applied, stack, spare_nodes):
    """nlp's plan pod (a whole GPU on a100) as one replica that frees its GPU before its successor takes it
    (maxSurge 0): each replaced pod must finish terminating, or the new one never fits."""
    nlp, user = tenant_user(stack, "nlp")
    selector = "app=trainer-api"
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "trainer-api"}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": "trainer-api"}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
        "template": {"metadata": {"labels": {"app": "trainer-api"}}, "spec": serving(pod_spec(stack, nlp))}}}
    control_plane.create(deployment, "nlp", user)
    settled(control_plane, "apps/v1", "Deployment", "trainer-api", "nlp", selector)
    first = kubelet_pass(control_plane, "nlp", selector)
    on_pool(control_plane, first, "a100")

    # A rolling update: the Deployment controller makes a new ReplicaSet and scales the old one to 0, whose
    # controller deletes the old pod; the new pod is bound once the old one is gone.
    patch(control_plane, "apps/v1", "Deployment", "trainer-api", "nlp", revised("2"), user)
    deleted: list[str] = []
    settled(control_plane, "apps/v1", "Deployment", "trainer-api", "nlp", selector, deleted)
    assert deleted == pod_names(first)
    sets = control_plane.list("apps/v1", "ReplicaSet", "nlp", selector=selector)
    assert sorted(s["spec"]["replicas"] for s in sets) == [0, 1], [s["metadata"]["name"] for s in sets]
    second = kubelet_pass(control_plane, "nlp", selector)
    on_pool(control_plane, second, "a100")

    # Taken out of the selector for a look (a label update of the running GPU pod), the ReplicaSet controller
    # releases it (an ownerReferences update) and makes a replacement, bound once the released pod is deleted.
    quarantined = second[0]["metadata"]["name"]
    patch_pod(control_plane, "nlp", quarantined, {"labels": {"app": "trainer-api-debug"}}, user)
    released = control_plane.wait_for("the relabelled pod released", lambda: (
        pod if not (pod := control_plane.get("v1", "Pod", quarantined, "nlp"))["metadata"].get("ownerReferences")
        else None), timeout=WAIT)
    assert released["status"]["phase"] == "Running"
    control_plane.request("DELETE", f"/api/v1/namespaces/nlp/pods/{quarantined}", user=user)
    gone(control_plane, "the released pod deleted", ("v1", "Pod", quarantined, "nlp"))
    settled(control_plane, "apps/v1", "Deployment", "trainer-api", "nlp", selector)
    on_pool(control_plane, kubelet_pass(control_plane, "nlp", selector), "a100")

    # Scaled to 0, then deleted (background): the garbage collector deletes both ReplicaSets, whose pods go too.
    patch(control_plane, "apps/v1", "Deployment", "trainer-api", "nlp", {"spec": {"replicas": 0}}, user)
    settled(control_plane, "apps/v1", "Deployment", "trainer-api", "nlp", selector)
    assert control_plane.list("v1", "Pod", "nlp", selector=selector) == []
    patch(control_plane, "apps/v1", "Deployment", "trainer-api", "nlp", {"spec": {"replicas": 1}}, user)
    last = control_plane.wait_for("a pod again", lambda: kubelet_pass(control_plane, "nlp", selector), timeout=WAIT)
    delete(control_plane, "/apis/apps/v1/namespaces/nlp/deployments/trainer-api", "Background", user)
    gone(control_plane, "the Deployment, its ReplicaSets and its pod deleted",
         ("apps/v1", "Deployment", "trainer-api", "nlp"),
         *(("apps/v1", "ReplicaSet", s["metadata"]["name"], "nlp") for s in sets),
         *(("v1", "Pod", p["metadata"]["name"], "nlp") for p in last))
    assert control_plane.list("v1", "Pod", "nlp", selector=selector) == []


def test_a_stateful_set_on_the_shared_pool_is_created_updated_and_deleted_in_order(control_plane, applied, stack,
                                                                                    spare_nodes):
    """In a namespace of no tenant, on the pool no tenant lists (t4batch): verify's smoke pod for that pool as a
    Guaranteed server. The StatefulSet controller makes each pod only once the one before is Running and Ready and
    replaces and removes them from the highest ordinal down."""
    ensure_namespace(control_plane, SHARED_NAMESPACE)
    expect = next(e for e in pool_expectations(stack) if e.pool == "t4batch")
    spec = serving(smoke_pod(expect, SHARED_NAMESPACE)["spec"])
    spec["containers"][0]["resources"]["limits"].update({"cpu": "1", "memory": "1Gi"})
    selector = "app=ledger"
    stateful_set = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "ledger"}, "spec": {
        "replicas": 2, "serviceName": "ledger", "selector": {"matchLabels": {"app": "ledger"}},
        "template": {"metadata": {"labels": {"app": "ledger"}}, "spec": spec}}}
    control_plane.create(stateful_set, SHARED_NAMESPACE)

    def bound(name: str) -> dict[str, Any] | None:
        pods = control_plane.list("v1", "Pod", SHARED_NAMESPACE, selector=selector)
        return pods if any(p["metadata"]["name"] == name and p["spec"].get("nodeName") for p in pods) else None
    first = control_plane.wait_for("ledger-0 bound", lambda: bound("ledger-0"), timeout=WAIT)
    assert pod_names(first) == ["ledger-0"]  # ledger-1 waits for ledger-0 to run
    set_pod_phase(control_plane, first[0], "Running")
    settled(control_plane, "apps/v1", "StatefulSet", "ledger", SHARED_NAMESPACE, selector)
    on_pool(control_plane, kubelet_pass(control_plane, SHARED_NAMESPACE, selector), "t4batch")

    patch(control_plane, "apps/v1", "StatefulSet", "ledger", SHARED_NAMESPACE, revised("2"))
    deleted: list[str] = []
    updated = settled(control_plane, "apps/v1", "StatefulSet", "ledger", SHARED_NAMESPACE, selector, deleted)
    assert deleted == ["ledger-1", "ledger-0"]
    pods = kubelet_pass(control_plane, SHARED_NAMESPACE, selector)
    assert {p["metadata"]["labels"]["controller-revision-hash"] for p in pods} == {
        updated["status"]["updateRevision"]}
    on_pool(control_plane, pods, "t4batch")

    patch(control_plane, "apps/v1", "StatefulSet", "ledger", SHARED_NAMESPACE, {"spec": {"replicas": 1}})
    deleted = []
    settled(control_plane, "apps/v1", "StatefulSet", "ledger", SHARED_NAMESPACE, selector, deleted)
    assert deleted == ["ledger-1"]

    # `kubectl delete statefulset --cascade=orphan` and a create again (how its immutable volumeClaimTemplates are
    # changed): the garbage collector takes ledger-0's ownerReference away, the StatefulSet controller adopts it.
    delete(control_plane, f"/apis/apps/v1/namespaces/{SHARED_NAMESPACE}/statefulsets/ledger", "Orphan")
    gone(control_plane, "the StatefulSet deleted", ("apps/v1", "StatefulSet", "ledger", SHARED_NAMESPACE))
    assert not control_plane.get("v1", "Pod", "ledger-0", SHARED_NAMESPACE)["metadata"].get("ownerReferences")
    again = copy.deepcopy(stateful_set)
    again["spec"]["replicas"] = 1
    again["spec"]["template"]["metadata"]["annotations"] = {"example.com/revision": "2"}
    created = control_plane.create(again, SHARED_NAMESPACE)
    control_plane.wait_for("ledger-0 adopted", lambda: [o["uid"] for o in control_plane.get(
        "v1", "Pod", "ledger-0", SHARED_NAMESPACE)["metadata"].get("ownerReferences", [])] == [
        created["metadata"]["uid"]], timeout=WAIT)
    settled(control_plane, "apps/v1", "StatefulSet", "ledger", SHARED_NAMESPACE, selector)
    delete(control_plane, f"/apis/apps/v1/namespaces/{SHARED_NAMESPACE}/statefulsets/ledger", "Background")
    gone(control_plane, "the StatefulSet and its pod deleted", ("apps/v1", "StatefulSet", "ledger", SHARED_NAMESPACE),
         ("v1", "Pod", "ledger-0", SHARED_NAMESPACE))


def job_from_cron_job(cron_job: dict[str, Any], name: str) -> dict[str, Any]:
    """What `kubectl create job NAME --from=cronjob/CRONJOB` creates: the job template, marked as started by hand
    and owned by the CronJob as its controller (kubectl `pkg/cmd/create/create_job.go`, createJobFromCronJob)."""
    template = cron_job["spec"]["jobTemplate"]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": name, "labels": template.get("metadata", {}).get("labels", {}),
        "annotations": {"cronjob.kubernetes.io/instantiate": "manual",
                        **template.get("metadata", {}).get("annotations", {})},
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": cron_job["metadata"]["name"],
                             "uid": cron_job["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]},
        "spec": copy.deepcopy(template["spec"])}


def test_a_tenants_cron_job_runs_its_jobs_to_completion_and_keeps_its_history_limit(control_plane, applied, stack,
                                                                                   spare_nodes):
    """Its Jobs started as `kubectl create job --from=cronjob/...` starts them (the schedule, once a year, fires
    during no test); the CronJob controller deletes the older finished Job beyond `successfulJobsHistoryLimit`."""
    nlp, user = tenant_user(stack, "nlp")
    cron_job = control_plane.create({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"},
                                     "spec": {"schedule": "0 3 1 1 *", "successfulJobsHistoryLimit": 1,
                                              "jobTemplate": {"spec": {"backoffLimit": 0, "template": {
                                                  "spec": pod_spec(stack, nlp)}}}}}, "nlp", user)
    pods = []
    for name in ("nightly-manual-1", "nightly-manual-2"):
        control_plane.create(job_from_cron_job(cron_job, name), "nlp", user)
        pods.append(run_to_completion(control_plane, "nlp", name, "a100")["metadata"]["name"])
    gone(control_plane, "the older Job, beyond the history limit, deleted by the CronJob controller",
         ("batch/v1", "Job", "nightly-manual-1", "nlp"), ("v1", "Pod", pods[0], "nlp"))
    assert not absent(control_plane, "batch/v1", "Job", "nightly-manual-2", "nlp")
    delete(control_plane, "/apis/batch/v1/namespaces/nlp/cronjobs/nightly", "Background", user)
    gone(control_plane, "the CronJob, its Job and its pod deleted", ("batch/v1", "CronJob", "nightly", "nlp"),
         ("batch/v1", "Job", "nightly-manual-2", "nlp"), ("v1", "Pod", pods[1], "nlp"))


def test_a_platform_gpu_daemon_set_is_updated_orphaned_adopted_and_garbage_collected(control_plane, applied, stack,
                                                                                    spare_nodes):
    """monitoring may reach t4batch: a GPU check on every node of that pool, selecting it by node affinity with its
    taints tolerated as gpushare writes them. Deleting a DaemonSet with `--cascade=orphan` and creating it again (how
    its immutable fields are changed) is an update of each pod by the garbage collector, then by the DaemonSet
    controller adopting it."""
    ensure_namespace(control_plane, PLATFORM_NAMESPACE)
    taints = derive_pool_facts(stack)["t4batch"].tolerated_taints
    assert GPU_TAINT in taints
    selector = "app=gpu-check"
    daemon_set = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "gpu-check"}, "spec": {
        "selector": {"matchLabels": {"app": "gpu-check"}},
        "template": {"metadata": {"labels": {"app": "gpu-check"}}, "spec": {
            "tolerations": [toleration(t) for t in taints],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": ["t4batch"]}]}]}}},
            "containers": [{"name": "check", "image": "nvcr.io/nvidia/cuda:12.1.0-base-ubi8",
                            "command": SLEEP, "resources": {
                                "limits": {"nvidia.com/gpu": 1, "cpu": "1", "memory": "1Gi"}}}]}}}}
    control_plane.create(daemon_set, PLATFORM_NAMESPACE)
    nodes = sorted(control_plane.nodes["t4batch"])
    settled(control_plane, "apps/v1", "DaemonSet", "gpu-check", PLATFORM_NAMESPACE, selector)
    first = kubelet_pass(control_plane, PLATFORM_NAMESPACE, selector)
    assert sorted(p["spec"]["nodeName"] for p in first) == nodes
    on_pool(control_plane, first, "t4batch")

    patch(control_plane, "apps/v1", "DaemonSet", "gpu-check", PLATFORM_NAMESPACE, revised("2"))
    deleted: list[str] = []
    settled(control_plane, "apps/v1", "DaemonSet", "gpu-check", PLATFORM_NAMESPACE, selector, deleted)
    assert sorted(deleted) == pod_names(first)
    second = kubelet_pass(control_plane, PLATFORM_NAMESPACE, selector)
    assert sorted(p["spec"]["nodeName"] for p in second) == nodes

    delete(control_plane, f"/apis/apps/v1/namespaces/{PLATFORM_NAMESPACE}/daemonsets/gpu-check", "Orphan")
    gone(control_plane, "the DaemonSet deleted", ("apps/v1", "DaemonSet", "gpu-check", PLATFORM_NAMESPACE))
    orphans = control_plane.list("v1", "Pod", PLATFORM_NAMESPACE, selector=selector)
    assert not [p["metadata"]["ownerReferences"] for p in orphans if p["metadata"].get("ownerReferences")]
    assert pod_names(orphans) == pod_names(second)
    again = copy.deepcopy(daemon_set)
    again["spec"]["template"]["metadata"]["annotations"] = {"example.com/revision": "2"}
    created = control_plane.create(again, PLATFORM_NAMESPACE)
    adopted = control_plane.wait_for("its pods adopted", lambda: (
        pods if (pods := control_plane.list("v1", "Pod", PLATFORM_NAMESPACE, selector=selector)) and all(
            [o["uid"] for o in p["metadata"].get("ownerReferences", [])] == [created["metadata"]["uid"]]
            for p in pods) else None), timeout=WAIT)
    assert pod_names(adopted) == pod_names(second)  # the same template: adopted, not replaced

    delete(control_plane, f"/apis/apps/v1/namespaces/{PLATFORM_NAMESPACE}/daemonsets/gpu-check", "Background")
    gone(control_plane, "the DaemonSet and its pods deleted", ("apps/v1", "DaemonSet", "gpu-check", PLATFORM_NAMESPACE),
         *(("v1", "Pod", name, PLATFORM_NAMESPACE) for name in pod_names(adopted)))
