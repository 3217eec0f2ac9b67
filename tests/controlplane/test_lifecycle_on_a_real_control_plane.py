"""A GPU workload's whole life on the real control plane (`controlplane.py`, with AKS's ExtendedResourceToleration
and PodTolerationRestriction admission plugins): created from what gpushare writes, placed by the real scheduler on
a fake GPU node, run and ended by a kubelet-like status, finished by its controller (the Job controller removes its
`batch.kubernetes.io/job-tracking` finalizer and completes the Job), deleted and garbage-collected, in a tenant's
namespace, a namespace of the shared pool and a platform namespace. Every step after creation but the status is a
pod update: each was refused for a GPU pod carrying gpushare's former `operator: Equal` toleration of the GPU taint
(issue 39), as the first test keeps showing.

No kubelet runs: a bound pod's status is written through its `status` subresource as the kubelet would
(`set_pod_phase`), and a pod marked for deletion is deleted for good (grace period 0) as the kubelet does once its
containers stopped (`finish_deletion`). The stack, the users and the applied plan are conftest.py's."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpushare.kubernetes.tenants import pod_spec, pool_share
from gpushare.kubernetes.verify.expectations import pool_expectations
from gpushare.kubernetes.verify.smoke import smoke_pod
from gpushare.model.stack import GPU_TAINT, POOL_LABEL
from gpushare.sharing.operator_values import NAMESPACE as OPERATOR_NAMESPACE
from gpushare.sharing.operator_values import toleration
from gpushare.sharing.pool_facts import derive_pool_facts
from tests.controlplane.controlplane import (
    ADMIN,
    MERGE_PATCH,
    ApiError,
    ControlPlane,
    ensure_namespace,
    finish_deletion,
    group_user,
    node_objects,
    register_node,
    set_pod_phase,
)

JOB_TRACKING = "batch.kubernetes.io/job-tracking"
"""The finalizer the Job controller puts on each pod it creates and removes once it has counted the pod's end."""
FROZEN = "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"
FORMER_GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
"""What `toleration(GPU_TAINT)` wrote before issue 39."""
ADDED_BY_AKS = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
"""What ExtendedResourceToleration adds to every pod requesting nvidia.com/gpu."""
SPARE_POOLS = ("a100", "t4batch")
SHARED_NAMESPACE = "lifecycle-shared"
PLATFORM_NAMESPACE = "monitoring"
"""A platform namespace of the stack, limited to the pool t4batch."""
WAIT = 120
"""Seconds: each step took about a second on an idle machine; the 2 cores here are shared and busy."""


@pytest.fixture(scope="module")
def spare_nodes(control_plane, stack):
    """One more Node for each pool these tests run whole-GPU pods on (a100 has two GPUs, t4batch four), so they find
    room whatever the session's other tests hold there; deleted again at the end of the module."""
    added = []
    for pool in SPARE_POOLS:
        node = copy.deepcopy(node_objects(stack)[pool][0])
        name = f"aks-{pool}-12345678-vmss999999"  # the AKS VMSS form the policies read a pool from
        node["metadata"]["name"] = node["metadata"]["labels"]["kubernetes.io/hostname"] = name
        register_node(control_plane, node)
        control_plane.nodes[pool].append(name)
        added.append((pool, name))
    yield
    for pool, name in added:
        control_plane.nodes[pool].remove(name)
        control_plane.request("DELETE", f"/api/v1/nodes/{name}")


def tenant_user(stack, name: str) -> tuple[Any, str]:
    """The tenant and a member of its first group; the admin for a tenant with no groups."""
    tenant = next(t for t in stack.tenants if t.name == name)
    return tenant, group_user(tenant.groups[0]) if tenant.groups else ADMIN


def patch_pod(plane: ControlPlane, namespace: str, name: str, metadata: dict[str, Any],
              user: str = ADMIN) -> dict[str, Any]:
    return plane.request("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}", {"metadata": metadata}, user,
                         content_type=MERGE_PATCH)


def delete(plane: ControlPlane, path: str, propagation: str, user: str = ADMIN) -> None:
    plane.request("DELETE", path, {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation},
                  user)


def absent(plane: ControlPlane, api_version: str, kind: str, name: str, namespace: str) -> bool:
    try:
        plane.get(api_version, kind, name, namespace)
    except ApiError as error:
        if error.status == 404:
            return True
        raise
    return False


def complete(plane: ControlPlane, namespace: str, name: str) -> bool:
    job = plane.get("batch/v1", "Job", name, namespace)
    return any(c["type"] == "Complete" and c["status"] == "True" for c in job.get("status", {}).get("conditions", []))


def job(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"backoffLimit": 0, "template": {"spec": spec}}}


def bound_pod(plane: ControlPlane, namespace: str, job_name: str) -> dict[str, Any]:
    """The Job's one pod once the scheduler has bound it; on a timeout, why the scheduler did not."""
    def bound() -> dict[str, Any] | None:
        pods = plane.list("v1", "Pod", namespace, selector=f"job-name={job_name}")
        return pods[0] if len(pods) == 1 and pods[0]["spec"].get("nodeName") else None
    try:
        return plane.wait_for(f"the pod of Job {namespace}/{job_name} bound", bound, timeout=WAIT)
    except AssertionError as error:
        pods = plane.list("v1", "Pod", namespace, selector=f"job-name={job_name}")
        raise AssertionError(f"{error}: {[p.get('status', {}).get('conditions') for p in pods]}") from None


def run_to_completion(plane: ControlPlane, namespace: str, job_name: str, pool: str) -> dict[str, Any]:
    """The Job's pod is bound to a node of `pool`, runs and succeeds; the Job controller then removes its finalizer
    (a pod update) and completes the Job. Returns the pod as it is then."""
    pod = bound_pod(plane, namespace, job_name)
    assert pod["spec"]["nodeName"] in plane.nodes[pool], (pool, pod["spec"]["nodeName"])
    assert pod["metadata"]["finalizers"] == [JOB_TRACKING]
    assert ADDED_BY_AKS in pod["spec"]["tolerations"]
    set_pod_phase(plane, pod, "Running")
    set_pod_phase(plane, pod, "Succeeded")
    name = pod["metadata"]["name"]
    try:
        plane.wait_for(f"Job {namespace}/{job_name} complete", lambda: complete(plane, namespace, job_name),
                       timeout=WAIT)
    except AssertionError as error:
        # What the Job controller met: the same update, tried here.
        try:
            patch_pod(plane, namespace, name, {"finalizers": None})
            why = "the finalizer could be removed"
        except ApiError as refused:
            why = f"removing the finalizer is refused: {refused.message}"
        raise AssertionError(f"{error}; {why}") from None
    done = plane.get("v1", "Pod", name, namespace)
    assert not done["metadata"].get("finalizers"), done["metadata"]
    assert done["status"]["phase"] == "Succeeded"
    assert plane.get("batch/v1", "Job", job_name, namespace)["status"]["succeeded"] == 1
    return done


def gone(plane: ControlPlane, what: str, *objects: tuple[str, str, str, str]) -> None:
    """Waits until every (api_version, kind, name, namespace) is deleted for good, playing the kubelet for a pod
    marked for deletion (by whoever marked it: the garbage collector, a user)."""
    def all_gone() -> bool:
        for api_version, kind, name, namespace in objects:
            if kind == "Pod" and not absent(plane, api_version, kind, name, namespace) and \
                    plane.get(api_version, kind, name, namespace)["metadata"].get("deletionTimestamp"):
                finish_deletion(plane, namespace, name)
        return all(absent(plane, *obj) for obj in objects)
    plane.wait_for(what, all_gone, timeout=WAIT)


def test_the_former_equal_toleration_freezes_a_gpu_pod_and_the_plans_pod_updates(control_plane, applied, stack):
    """The red team's finding, on this control plane: ExtendedResourceToleration added its `Exists` toleration beside
    the `Equal` one at creation, PodTolerationRestriction drops the `Equal` one on the next update and the API server
    refuses the changed list, whatever the update. The plan's podSpec updates normally. Both pods are held by a
    scheduling gate: neither takes a GPU."""
    nlp, user = tenant_user(stack, "nlp")
    plan = copy.deepcopy(pod_spec(stack, nlp))
    assert plan["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
    former = copy.deepcopy(plan)
    former["tolerations"][0] = FORMER_GPU_TOLERATION
    for name, spec in (("former-form", former), ("plan-form", plan)):
        control_plane.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                              "spec": {**spec, "schedulingGates": [{"name": "example.com/hold"}]}}, "nlp", user)

    stored = control_plane.get("v1", "Pod", "former-form", "nlp")["spec"]["tolerations"]
    assert FORMER_GPU_TOLERATION in stored and ADDED_BY_AKS in stored
    for metadata in ({"labels": {"team": "nlp"}}, {"annotations": {"example.com/note": "x"}},
                     {"finalizers": ["example.com/keep"]}):
        with pytest.raises(ApiError) as refused:
            patch_pod(control_plane, "nlp", "former-form", metadata, user)
        assert refused.value.status == 422 and FROZEN in refused.value.message, refused.value.message

    stored = control_plane.get("v1", "Pod", "plan-form", "nlp")["spec"]["tolerations"]
    assert [t for t in stored if t["key"] == "nvidia.com/gpu"] == [ADDED_BY_AKS]
    updated = patch_pod(control_plane, "nlp", "plan-form", {"labels": {"team": "nlp"}, "annotations": {
        "example.com/note": "x"}, "finalizers": ["example.com/keep"]}, user)
    assert updated["metadata"]["labels"] == {"team": "nlp"}
    assert updated["metadata"]["finalizers"] == ["example.com/keep"]
    assert updated["spec"]["tolerations"] == stored
    patch_pod(control_plane, "nlp", "plan-form", {"finalizers": None}, user)
    for name in ("former-form", "plan-form"):
        control_plane.request("DELETE", f"/api/v1/namespaces/nlp/pods/{name}", user=user)
    gone(control_plane, "both gated pods deleted", *(("v1", "Pod", n, "nlp") for n in ("former-form", "plan-form")))


@pytest.mark.parametrize("tenant_name", ["nlp", "vision"])
def test_a_tenants_plan_job_is_updated_runs_to_completion_and_is_garbage_collected(control_plane, applied, stack,
                                                                                   spare_nodes, tenant_name):
    """nlp's plan asks for a whole GPU (`nvidia.com/gpu`, the key of the GPU taint), vision's for a MIG slice."""
    tenant, user = tenant_user(stack, tenant_name)
    spec = pod_spec(stack, tenant)
    pool = spec["nodeSelector"][POOL_LABEL]
    control_plane.create(job("plan-lifecycle", spec), tenant_name, user)
    pod = bound_pod(control_plane, tenant_name, "plan-lifecycle")
    name = pod["metadata"]["name"]
    set_pod_phase(control_plane, pod, "Running")

    # The tenant's own updates of its running GPU pod: a label, an annotation, a finalizer added and removed.
    patch_pod(control_plane, tenant_name, name, {"labels": {"checked": "yes"}}, user)
    patch_pod(control_plane, tenant_name, name, {"annotations": {"example.com/note": "running"}}, user)
    with_finalizer = patch_pod(control_plane, tenant_name, name,
                               {"finalizers": [JOB_TRACKING, "example.com/keep"]}, user)
    assert with_finalizer["metadata"]["finalizers"] == [JOB_TRACKING, "example.com/keep"]
    patch_pod(control_plane, tenant_name, name, {"finalizers": [JOB_TRACKING]}, user)
    live = control_plane.get("v1", "Pod", name, tenant_name)
    assert live["metadata"]["labels"]["checked"] == "yes" and live["status"]["phase"] == "Running"

    done = run_to_completion(control_plane, tenant_name, "plan-lifecycle", pool)
    assert done["metadata"]["annotations"]["example.com/note"] == "running"
    # Background propagation (kubectl's default): the garbage collector deletes the pod after the Job.
    delete(control_plane, f"/apis/batch/v1/namespaces/{tenant_name}/jobs/plan-lifecycle", "Background", user)
    gone(control_plane, "the Job and its pod deleted", ("batch/v1", "Job", "plan-lifecycle", tenant_name),
         ("v1", "Pod", name, tenant_name))


def test_a_running_gpu_pod_with_a_finalizer_finishes_terminating_once_it_is_removed(control_plane, applied, stack,
                                                                                    spare_nodes):
    """Deleting a running pod marks it; the kubelet deletes it for good once it stopped, and a pod holding a
    finalizer stays Terminating until its owner removes it: an update of a pod being deleted."""
    nlp, user = tenant_user(stack, "nlp")
    control_plane.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "plan-pod", "finalizers": ["example.com/keep"]}, "spec": pod_spec(stack, nlp)}, "nlp", user)
    def bound() -> dict[str, Any] | None:
        pod = control_plane.get("v1", "Pod", "plan-pod", "nlp")
        return pod if pod["spec"].get("nodeName") else None
    pod = control_plane.wait_for("plan-pod bound", bound, timeout=WAIT)
    assert pod["spec"]["nodeName"] in control_plane.nodes["a100"]
    set_pod_phase(control_plane, pod, "Running")
    control_plane.request("DELETE", "/api/v1/namespaces/nlp/pods/plan-pod", user=user)
    finish_deletion(control_plane, "nlp", "plan-pod")
    terminating = control_plane.get("v1", "Pod", "plan-pod", "nlp")
    assert terminating["metadata"]["deletionTimestamp"] and terminating["metadata"]["finalizers"] == [
        "example.com/keep"]
    patch_pod(control_plane, "nlp", "plan-pod", {"finalizers": None}, user)
    gone(control_plane, "plan-pod deleted", ("v1", "Pod", "plan-pod", "nlp"))


def test_a_job_on_the_shared_pool_completes_and_the_garbage_collector_orphans_its_pod(control_plane, applied, stack,
                                                                                     spare_nodes):
    """In a namespace of no tenant, on the pool no tenant lists (t4batch): verify's smoke pod for that pool, with CPU
    and memory limits (Guaranteed, as a real workload; PodTolerationRestriction leaves BestEffort pods alone)."""
    ensure_namespace(control_plane, SHARED_NAMESPACE)
    expect = next(e for e in pool_expectations(stack) if e.pool == "t4batch")
    spec = smoke_pod(expect, SHARED_NAMESPACE)["spec"]
    spec["containers"][0]["resources"]["limits"].update({"cpu": "1", "memory": "1Gi"})
    control_plane.create(job("smoke", spec), SHARED_NAMESPACE)
    done = run_to_completion(control_plane, SHARED_NAMESPACE, "smoke", "t4batch")
    name = done["metadata"]["name"]
    assert done["status"]["qosClass"] == "Guaranteed"
    # Orphan: the garbage collector removes the Job from the pod's ownerReferences (a pod update), then the Job goes.
    delete(control_plane, f"/apis/batch/v1/namespaces/{SHARED_NAMESPACE}/jobs/smoke", "Orphan")
    gone(control_plane, "the Job deleted", ("batch/v1", "Job", "smoke", SHARED_NAMESPACE))
    orphan = control_plane.get("v1", "Pod", name, SHARED_NAMESPACE)
    assert not orphan["metadata"].get("ownerReferences"), orphan["metadata"]
    control_plane.request("DELETE", f"/api/v1/namespaces/{SHARED_NAMESPACE}/pods/{name}")
    gone(control_plane, "the orphaned pod deleted", ("v1", "Pod", name, SHARED_NAMESPACE))


def test_a_platform_namespaces_gpu_job_completes_and_is_deleted_in_the_foreground(control_plane, applied, stack,
                                                                                  spare_nodes):
    """monitoring may reach t4batch: a Job there tolerating that pool's taints as gpushare writes them."""
    ensure_namespace(control_plane, PLATFORM_NAMESPACE)
    taints = derive_pool_facts(stack)["t4batch"].tolerated_taints
    assert GPU_TAINT in taints
    spec = {"nodeSelector": {POOL_LABEL: "t4batch"}, "tolerations": [toleration(t) for t in taints],
            "restartPolicy": "Never",
            "containers": [{"name": "probe", "image": "nvcr.io/nvidia/cuda:12.1.0-base-ubi8", "resources": {
                "limits": {"nvidia.com/gpu": 1, **pool_share(stack, "t4batch")}}}]}
    control_plane.create(job("gpu-probe", spec), PLATFORM_NAMESPACE)
    name = run_to_completion(control_plane, PLATFORM_NAMESPACE, "gpu-probe", "t4batch")["metadata"]["name"]
    # Foreground: the garbage collector deletes the pod first, then the Job.
    delete(control_plane, f"/apis/batch/v1/namespaces/{PLATFORM_NAMESPACE}/jobs/gpu-probe", "Foreground")
    gone(control_plane, "the pod, then the Job, deleted", ("v1", "Pod", name, PLATFORM_NAMESPACE),
         ("batch/v1", "Job", "gpu-probe", PLATFORM_NAMESPACE))


def test_a_privileged_pod_is_refused_by_pod_security_where_a_level_is_enforced(control_plane, applied, stack):
    """As on AKS (`--allow-privileged=true`): the API server allows privileged containers, and Pod Security refuses
    them in the tenants' namespaces (`baseline`); the GPU Operator's namespace (`privileged`) admits them."""
    _, user = tenant_user(stack, "vision")
    privileged = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "privileged"}, "spec": {"containers": [
        {"name": "c", "image": "busybox", "securityContext": {"privileged": True},
         "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]}]}}
    with pytest.raises(ApiError) as refused:
        control_plane.create(privileged, "vision", user)
    assert refused.value.status == 403, refused.value.message
    assert 'violates PodSecurity "baseline:latest": privileged (container "c" must not set ' \
           'securityContext.privileged=true)' in refused.value.message
    created = control_plane.request("POST", f"/api/v1/namespaces/{OPERATOR_NAMESPACE}/pods?dryRun=All", privileged)
    assert created["spec"]["containers"][0]["securityContext"]["privileged"] is True
