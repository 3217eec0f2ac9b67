"""Dispatch across clusters shown against Kueue itself: three real Kubernetes 1.34 control planes on loopback
(`controlplane.py`), each with Kueue v0.19.2's own manager (`kueue.py`, acting as its chart's service account, the
identity the tenant policies let unsuspend Jobs), one the MultiKueue manager (`hub`, with the `multiKueue` settings
gpushare compiles) and two workers (`west`, `east`) with the fake GPU Nodes of their stacks, and the objects
`gpushare.kubernetes.multikueue.dispatch` compiles applied to each: on the manager the tenants' policies as each
worker judges them, on each worker its own stack's tenant objects (namespaces, LimitRanges, admission policies) as
well. The manager reaches the workers through kubeconfig Secrets made here as the deployment makes them from the
workers' outputs (`certificate-authority-data` and a token inline: Kueue refuses file paths), so MultiKueue's
copies are created on the workers as `gpushare-multikueue` and judged by the worker's tenant policy.

The stacks are files naming a fleet file beside them (`gpushare:fleet`), whose dispatch manager is `hub`: the
objects are compiled from the fleet's member stacks, as `gpushare fleet plan` and the fleet stack compile them, and
the manager's own objects (its tenant gamma's, its shared and debug policies, its queues) from its stack file as its
own `pulumi up` reads it, which leaves the dispatched tenants' namespaces to the fleet's dispatch policies.

alpha has one A100 in each worker; beta has a T4 time-sliced three ways (`nvidia.com/gpu.shared`) in west only;
gamma, the manager's own tenant, has the manager's T4. Jobs are
submitted on the manager as Kueue's Job webhook (not registered here, `kueue.py`) leaves them: suspended, with
`spec.managedBy: kueue.x-k8s.io/multikueue`. The workers' job controllers create the remote Jobs' pods and their
schedulers bind them to the fake Nodes.

Each control plane and Kueue starts once for the module (all of it took about a minute on a loaded 2-core
machine). Five stories, each one test; the last removes beta, so it runs last."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
import yaml

from gpushare.kubernetes.kueue_admission import KUEUE_CONTROLLER_USER, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from gpushare.kubernetes.multikueue import (
    KUBECONFIG_KEY,
    MULTIKUEUE_CONTROLLER,
    WORKER_IDENTITY,
    dispatch,
    manager_configuration,
    worker_access_objects,
    worker_kubeconfig,
)
from gpushare.kubernetes.admission.policies import EXEMPT_DEBUG_POLICY_NAME, SHARED_POLICY_NAME
from gpushare.kubernetes.queues import queue_manifests
from gpushare.kubernetes.tenant_objects import tenant_manifests
from gpushare.kubernetes.tenants import pod_spec
from gpushare.model.stack import POOL_LABEL
from gpushare.stackfile.config import load_stack_file
from gpushare.stackfile.fleet_config import load_fleet
from tests.controlplane import kueue
from tests.controlplane.controlplane import (
    ApiError,
    ControlPlane,
    resource_path,
    register_nodes,
    start_control_plane,
    stop_control_plane,
    unavailable_reason,
)

STACKS = {
    "hub": """
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: hub, kubernetesVersion: "1.36"}
  gpushare:queues: {enabled: true}
  gpushare:pools:
    - {name: hubt4, vmSize: Standard_NC4as_T4_v3, count: 1}
  gpushare:tenants:
    - {name: gamma, pools: [hubt4]}
""",
    "west": """
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: west, kubernetesVersion: "1.36"}
  gpushare:queues: {enabled: true}
  gpushare:pools:
    - {name: westa100, vmSize: Standard_NC24ads_A100_v4, count: 1}
    - {name: westt4, vmSize: Standard_NC4as_T4_v3, sharing: {strategy: time-slicing, replicas: 3}, count: 1}
  gpushare:tenants:
    - {name: alpha, pools: [westa100]}
    - {name: beta, pools: [westt4]}
""",
    "east": """
config:
  azure-native:location: eastus
  gpushare:cluster: {name: east, kubernetesVersion: "1.36"}
  gpushare:queues: {enabled: true}
  gpushare:pools:
    - {name: easta100, vmSize: Standard_NC24ads_A100_v4, count: 1}
  gpushare:tenants:
    - {name: alpha, pools: [easta100]}
""",
}
"""The manager `hub` (Kueue on, its T4 pool its own tenant gamma's) and two workers: one whole A100 of alpha's in each
(`nvidia.com/gpu`), and three T4 shares of beta's in west (`nvidia.com/gpu.shared`)."""
FLEET = {"fleet": {"name": "gpu-fleet", "resourceGroup": "rg-gpu-fleet", "location": "westeurope"},
         "members": [{"stack": "west", "canary": True, "group": "canary"}, {"stack": "hub", "group": "rest"},
                     {"stack": "east", "group": "rest"}],
         "dispatch": {"manager": "hub"}}
"""The fleet file beside them: hub dispatches; west is the update canary."""
MANAGER = "hub"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
WAIT = 240
"""Seconds: generous, three control planes and three Kueues share a loaded 2-core machine."""
MANAGED = "app.kubernetes.io/managed-by=gpushare"
MULTIKUEUE_USER = f"system:serviceaccount:kueue-system:{WORKER_IDENTITY}"
"""Who MultiKueue acts as on a worker: the manager's kubeconfig holds that service account's token."""
VAP_API = "admissionregistration.k8s.io/v1"


def write_fleet(directory, drop_tenant: str | None = None):
    """STACKS as stack files naming the fleet file (FLEET) written beside them, `drop_tenant` removed from each;
    the fleet file's path."""
    directory.mkdir(parents=True)
    for name, text in STACKS.items():
        config = {**yaml.safe_load(text)["config"], "gpushare:fleet": "fleet.yaml"}
        config["gpushare:tenants"] = [t for t in config["gpushare:tenants"] if t["name"] != drop_tenant]
        (directory / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": config}))
    (directory / "fleet.yaml").write_text(yaml.safe_dump(FLEET))
    return directory / "fleet.yaml"


def manager_own(fleet_file):
    """The manager's stack as its own `pulumi up` reads it: its stack file, through its `gpushare:fleet`."""
    return load_stack_file(fleet_file.parent / f"Pulumi.{MANAGER}.yaml")


@pytest.fixture(scope="module")
def fleet_file(tmp_path_factory):
    return write_fleet(tmp_path_factory.mktemp("fleet") / "stacks")


@pytest.fixture(scope="module")
def members(fleet_file):
    """The member stacks as the fleet plan has them."""
    return load_fleet(fleet_file).stacks


def manager_manifests(own, compiled) -> list[dict[str, Any]]:
    """What the manager gets: its own stack's tenant objects and queues (its `pulumi up`), then the fleet stack's
    dispatch objects (`FleetDispatch`)."""
    return tenant_manifests(own) + queue_manifests(own) + compiled.manager_objects


@pytest.fixture(scope="module")
def fleet(members, fleet_file):
    """member name -> its control plane with Kueue running and the compiled objects applied; stopped on teardown,
    on failure too."""
    for reason in (unavailable_reason(), kueue.unavailable_reason()):
        if reason:
            pytest.skip(reason)
    compiled = dispatch(MANAGER, members)
    planes: dict[str, ControlPlane] = {}
    kueue_user = {KUEUE_CONTROLLER_USER: ["system:masters"]}
    try:
        for name in compiled.worker_objects:
            plane = planes[name] = start_control_plane(kueue_user)
            plane.nodes = register_nodes(plane, members[name])
            kueue.start_kueue(plane, user=KUEUE_CONTROLLER_USER)
            apply(plane, worker_manifests(members[name], compiled, name) + worker_access_objects())
        hub = planes[MANAGER] = start_control_plane(kueue_user)
        hub.nodes = register_nodes(hub, members[MANAGER])
        settings = manager_configuration(members[MANAGER], sorted(compiled.tenant_workers))
        kueue.start_kueue(hub, user=KUEUE_CONTROLLER_USER, settings={"multiKueue": settings["multiKueue"]})
        for worker, secret in compiled.kubeconfig_secrets.items():
            hub.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret,
                                                                         "namespace": compiled.secret_namespace},
                        "data": {KUBECONFIG_KEY: base64.b64encode(inline_kubeconfig(planes[worker])).decode()}})
        apply(hub, manager_manifests(manager_own(fleet_file), compiled))
        hub.wait_for("every MultiKueueCluster connected", lambda: all(
            condition(c, "Active") == "True" for c in hub.list(KUEUE_API, "MultiKueueCluster")), timeout=WAIT)
        for name, plane in planes.items():
            plane.wait_for(f"{name}'s ClusterQueues active", lambda plane=plane: all(
                condition(q, "Active") == "True" for q in plane.list(KUEUE_API, "ClusterQueue")), timeout=WAIT)
        yield planes
    finally:
        for plane in reversed(planes.values()):
            stop_control_plane(plane)


def worker_manifests(stack, compiled, name: str) -> list[dict[str, Any]]:
    """What a worker's own stack registers for its tenants (namespaces, LimitRanges, the tenant, shared and debug
    policies), then its queues."""
    return tenant_manifests(stack) + compiled.worker_objects[name]


def inline_kubeconfig(plane: ControlPlane) -> bytes:
    """The kubeconfig the deployment writes into the Secret from a worker's outputs (`worker_kubeconfig`): its API
    server, and the CA and token Kubernetes put into the worker's service-account token Secret for the manager's
    identity (`worker_access_objects`): MultiKueue acts there with that account's ClusterRole only."""
    token_secret = plane.wait_for("the manager's token on the worker", lambda: (plane.get(
        "v1", "Secret", WORKER_IDENTITY, kueue.NAMESPACE).get("data") or {}).get("token") and plane.get(
        "v1", "Secret", WORKER_IDENTITY, kueue.NAMESPACE), timeout=WAIT)
    return worker_kubeconfig(plane.url, token_secret["data"]).encode()


def apply(plane: ControlPlane, objects: list[dict[str, Any]]) -> None:
    """Creates each object (retrying while a CRD settles), updates one already there (a merge patch: what a
    recompile changes, such as the manager's shared binding once a tenant is no longer dispatched); deletes the
    gpushare-made Kueue objects, namespaces and policies no longer compiled, as `pulumi up` would."""
    wanted = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects}
    for obj in objects:
        def create(obj=obj):
            try:
                return plane.create(obj)
            except ApiError as error:
                if error.status == 409:
                    meta = obj["metadata"]
                    return plane.request("PATCH", resource_path(obj["apiVersion"], obj["kind"], meta.get(
                        "namespace"), meta["name"]), obj, content_type="application/merge-patch+json")
                raise
        plane.wait_for(f"{obj['kind']} {obj['metadata']['name']} created", create)
    kinds = [(KUEUE_API, kind) for kind in ("LocalQueue", "ClusterQueue", "AdmissionCheck", "MultiKueueConfig",
                                            "WorkloadPriorityClass")] + [("v1", "Namespace")] + [
        (VAP_API, kind) for kind in ("ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy")]
    for api_version, kind in kinds:
        listed = plane.wait_for(f"the {kind}s listed", lambda api_version=api_version, kind=kind: [
            plane.list(api_version, kind, selector=MANAGED)])  # a 429 while a CRD's storage settles is retried
        for found in listed[0]:
            meta = found["metadata"]
            if (kind, meta.get("namespace"), meta["name"]) not in wanted:
                plane.request("DELETE", resource_path(api_version, kind, meta.get("namespace"), meta["name"]))


def condition(obj: dict[str, Any] | None, kind: str) -> str | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c["type"] == kind:
            return c["status"]
    return None


def job(tenant: str, name: str, resource: str = "nvidia.com/gpu", multikueue: bool = True,
        labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A Job naming the tenant's LocalQueue (or `labels`), suspended, Guaranteed as its policy asks; on the manager
    also `managedBy` MultiKueue (what Kueue's Job webhook makes of it there)."""
    asks = {"cpu": "100m", "memory": "64Mi", resource: "1"}
    spec: dict[str, Any] = {
        "suspend": True, "parallelism": 1, "completions": 1, "backoffLimit": 0,
        "template": {"spec": {"restartPolicy": "Never", "containers": [{
            "name": "main", "image": "busybox", "resources": {"requests": asks, "limits": dict(asks)}}]}}}
    if multikueue:
        spec["managedBy"] = MULTIKUEUE_CONTROLLER
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": tenant, "labels": labels or {QUEUE_NAME_LABEL: tenant}},
            "spec": spec}


def submit(plane: ControlPlane, tenant: str, name: str, resource: str = "nvidia.com/gpu",
           multikueue: bool = True) -> None:
    plane.create(job(tenant, name, resource, multikueue))


def workload(plane: ControlPlane, tenant: str, job: str) -> dict[str, Any] | None:
    """The Workload of the Job: on the manager the one its Job owns; on a worker the copy MultiKueue made (named as
    the manager's, labelled with the manager's origin)."""
    for found in plane.list(KUEUE_API, "Workload", tenant):
        owners = found["metadata"].get("ownerReferences", [])
        if any(o["kind"] == "Job" and o["name"] == job for o in owners) or found["metadata"]["name"].startswith(
                f"job-{job}-"):
            return found
    return None


def jobs(plane: ControlPlane, tenant: str) -> set[str]:
    return {j["metadata"]["name"] for j in plane.list("batch/v1", "Job", tenant)}


def check_state(hub: ControlPlane, tenant: str, job: str) -> str | None:
    found = workload(hub, tenant, job)
    states = [c["state"] for c in ((found or {}).get("status") or {}).get("admissionChecks", [])]
    return states[0] if states else None


def dispatched_to(hub: ControlPlane, tenant: str, job: str) -> str | None:
    """The worker MultiKueue placed the Workload on (`status.clusterName`) once its check is Ready."""
    found = workload(hub, tenant, job)
    if found and check_state(hub, tenant, job) == "Ready":
        return found["status"].get("clusterName")
    return None


def pending_on(plane: ControlPlane, tenant: str, job: str) -> bool:
    """The Workload is there and Kueue could not reserve quota for it."""
    found = workload(plane, tenant, job)
    return bool(found) and condition(found, "QuotaReserved") == "False"


def bound_node(plane: ControlPlane, tenant: str, job: str) -> str | None:
    pods = [p for p in plane.list("v1", "Pod", tenant, selector=f"job-name={job}")
            if not p["metadata"].get("deletionTimestamp")]
    return pods[0]["spec"].get("nodeName") if pods else None


def play_the_kubelet(plane: ControlPlane, tenant: str) -> None:
    """Removes pods marked for deletion, as the kubelet would once their containers stopped (there is none)."""
    for pod in plane.list("v1", "Pod", tenant):
        if pod["metadata"].get("deletionTimestamp"):
            try:
                plane.request("DELETE", f"/api/v1/namespaces/{tenant}/pods/{pod['metadata']['name']}",
                              {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
            except ApiError as error:
                if error.status != 404:
                    raise


def bound(plane: ControlPlane, tenant: str, job: str) -> str:
    """The node the Job's pod is bound to, once it is; a timeout shows the tenant's Jobs and pods there."""
    try:
        return plane.wait_for(f"{job}'s pod bound", lambda: bound_node(plane, tenant, job), timeout=WAIT)
    except AssertionError as error:
        raise AssertionError(f"{error}\n{state(plane, tenant)}") from None


def state(plane: ControlPlane, tenant: str) -> str:
    """The tenant's Jobs and pods on a plane, for a failure's message."""
    found = [(j["metadata"]["name"], j["spec"].get("suspend"), j.get("status")) for j in
             plane.list("batch/v1", "Job", tenant)]
    found += [(p["metadata"]["name"], p["spec"].get("nodeName"), p["metadata"].get("deletionTimestamp"),
               p["metadata"].get("finalizers"), p.get("status", {}).get("conditions")) for p in
              plane.list("v1", "Pod", tenant)]
    return json.dumps(found, indent=1)


def delete_job(plane: ControlPlane, tenant: str, name: str) -> None:
    plane.request("DELETE", f"/apis/batch/v1/namespaces/{tenant}/jobs/{name}",
                  {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"})


def test_a_job_goes_to_the_worker_with_free_capacity_of_its_kind_and_waits_while_none_has_room(fleet):
    hub, west, east = fleet["hub"], fleet["west"], fleet["east"]

    # alpha's A100 in east is taken by a Job submitted there directly: the manager's Job goes to west.
    submit(east, "alpha", "east-local", multikueue=False)
    assert bound(east, "alpha", "east-local") == east.nodes["easta100"][0]
    submit(hub, "alpha", "train-1")
    assert hub.wait_for("train-1 dispatched", lambda: dispatched_to(hub, "alpha", "train-1"), timeout=WAIT) == "west"
    remote = west.wait_for("train-1's Job on west", lambda: next(
        (j for j in west.list("batch/v1", "Job", "alpha") if j["metadata"]["name"] == "train-1"), None), timeout=WAIT)
    assert remote["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] == "multikueue"
    # Judged by west's policy for alpha like a Job alpha submits there: its copy was created suspended, naming
    # alpha's LocalQueue, and unsuspended by west's Kueue on alpha's pool.
    assert west.get(VAP_API, "ValidatingAdmissionPolicyBinding", "gpushare-tenant-alpha")
    assert "managedBy" not in remote["spec"]  # the worker's own job controller runs it
    assert bound(west, "alpha", "train-1") == west.nodes["westa100"][0]
    assert west.get("batch/v1", "Job", "train-1", "alpha")["spec"]["template"]["spec"]["nodeSelector"] == {
        POOL_LABEL: "westa100"}
    assert "train-1" not in jobs(east, "alpha")
    # On the manager, alpha's policies (as west and east build it) let the manager's Kueue start its Job there, on
    # the fleet flavor with no pool (MultiKueue's copy has one); its job controller makes no pod of it.
    hub.wait_for("train-1 started on the manager", lambda: hub.get("batch/v1", "Job", "train-1", "alpha")[
        "spec"].get("suspend") is False, timeout=WAIT)

    # No worker has a free A100: the next Job is offered to both, admitted by neither, and waits with its check
    # Pending; no Job is made anywhere.
    submit(hub, "alpha", "train-2")
    for plane in (west, east):
        plane.wait_for("train-2 offered and pending", lambda plane=plane: pending_on(plane, "alpha", "train-2"),
                       timeout=WAIT)
    assert check_state(hub, "alpha", "train-2") == "Pending"
    assert workload(hub, "alpha", "train-2")["status"].get("clusterName") is None
    assert "train-2" not in jobs(west, "alpha") | jobs(east, "alpha")

    # east's A100 is freed: train-2 goes there, and runs on its A100.
    delete_job(east, "alpha", "east-local")
    east.wait_for("east-local's pod gone", lambda: play_the_kubelet(east, "alpha") or not east.list(
        "v1", "Pod", "alpha", selector="job-name=east-local"), timeout=WAIT)
    assert hub.wait_for("train-2 dispatched", lambda: dispatched_to(hub, "alpha", "train-2"), timeout=WAIT) == "east"
    assert bound(east, "alpha", "train-2") == east.nodes["easta100"][0]
    west.wait_for("train-2's copy on west removed", lambda: workload(west, "alpha", "train-2") is None, timeout=WAIT)
    assert "train-2" not in jobs(west, "alpha")


def test_a_job_goes_only_to_members_where_its_tenant_has_a_pool_of_the_kind_it_asks_for(fleet, members):
    hub, west, east = fleet["hub"], fleet["west"], fleet["east"]
    compiled = dispatch(MANAGER, members)
    assert compiled.tenant_workers == {"alpha": ["west", "east"], "beta": ["west"]}
    assert hub.get(KUEUE_API, "MultiKueueConfig", "gpushare-fleet-beta")["spec"]["clusters"] == ["west"]

    # beta's T4 share: only west is offered it, and runs it.
    submit(hub, "beta", "share-1", "nvidia.com/gpu.shared")
    assert hub.wait_for("share-1 dispatched", lambda: dispatched_to(hub, "beta", "share-1"), timeout=WAIT) == "west"
    assert bound(west, "beta", "share-1") == west.nodes["westt4"][0]
    assert east.list(KUEUE_API, "Workload", "beta") == [] and jobs(east, "beta") == set()

    # alpha has no pool advertising nvidia.com/gpu.shared in any member: its queue on the manager does not cover
    # it, so Kueue reserves nothing and no worker is offered the Workload.
    submit(hub, "alpha", "wrong-kind", "nvidia.com/gpu.shared")
    hub.wait_for("wrong-kind pending on the manager", lambda: pending_on(hub, "alpha", "wrong-kind"), timeout=WAIT)
    message = next(c["message"] for c in workload(hub, "alpha", "wrong-kind")["status"]["conditions"]
                   if c["type"] == "QuotaReserved")
    assert "nvidia.com/gpu.shared" in message
    assert workload(west, "alpha", "wrong-kind") is None and workload(east, "alpha", "wrong-kind") is None

    # On the manager a tenant submits Jobs, which MultiKueue runs elsewhere: a pod of its own there is refused.
    with pytest.raises(ApiError) as refused:
        hub.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "on-the-manager", "namespace": "alpha"},
                    "spec": {"containers": [{"name": "main", "image": "busybox"}]}})
    assert refused.value.status == 403 and "exceeded quota" in str(refused.value), refused.value


def refusal(call) -> str:
    """The message of the admission policy's refusal `call` gets (422: a ValidatingAdmissionPolicy's default
    reason, Invalid)."""
    with pytest.raises(ApiError) as refused:
        call()
    assert refused.value.status == 422 and "ValidatingAdmissionPolicy" in str(refused.value), refused.value
    return str(refused.value)


def test_a_tenant_is_held_to_its_own_queue_and_priority_class_on_the_manager_and_in_multikueues_copies(fleet):
    hub, west = fleet["hub"], fleet["west"]
    # On the manager, each tenant's policy as each of its workers builds it.
    assert {p["metadata"]["name"] for p in hub.list(VAP_API, "ValidatingAdmissionPolicy", selector=MANAGED)} == {
        "gpushare-tenant-alpha.west", "gpushare-tenant-alpha.east", "gpushare-tenant-beta.west",
        "gpushare-tenant-gamma", SHARED_POLICY_NAME, EXEMPT_DEBUG_POLICY_NAME}

    # A Job of alpha's naming beta's WorkloadPriorityClass, or beta's LocalQueue, is refused on the manager before
    # Kueue makes a Workload of it (MultiKueue would copy that Workload, priority and all, to the workers, whose
    # Kueue admits and preempts by it before any policy there sees a Job).
    for labels, says in (
            ({QUEUE_NAME_LABEL: "alpha", PRIORITY_CLASS_LABEL: "gpushare-beta"},
             "may name only its Kueue WorkloadPriorityClass (kueue.x-k8s.io/priority-class: gpushare-alpha)"),
            ({QUEUE_NAME_LABEL: "beta"}, "may name only its LocalQueue (kueue.x-k8s.io/queue-name: alpha)")):
        message = refusal(lambda labels=labels: hub.create(job("alpha", "not-mine", labels=labels)))
        assert says in message and "gpushare-tenant-alpha." in message, message
    assert "not-mine" not in jobs(hub, "alpha")

    # beta's Job naming its own priority class passes the manager's policy, and MultiKueue's copy of it passes
    # west's: it runs on beta's T4 there, with beta's priority.
    hub.create(job("beta", "share-2", "nvidia.com/gpu.shared",
                   labels={QUEUE_NAME_LABEL: "beta", PRIORITY_CLASS_LABEL: "gpushare-beta"}))
    assert hub.wait_for("share-2 dispatched", lambda: dispatched_to(hub, "beta", "share-2"), timeout=WAIT) == "west"
    assert bound(west, "beta", "share-2") == west.nodes["westt4"][0]
    assert west.get("batch/v1", "Job", "share-2", "beta")["metadata"]["labels"][PRIORITY_CLASS_LABEL] == "gpushare-beta"

    # On the worker no rule exempts MultiKueue's identity: as gpushare-multikueue (the token the manager's
    # kubeconfig holds), a Job in alpha's namespace naming beta's priority class is refused by alpha's policy, and
    # one naming alpha's own is admitted (a dry run: nothing is made).
    token = west.get("v1", "Secret", WORKER_IDENTITY, kueue.NAMESPACE)["data"]["token"]
    west.tokens[MULTIKUEUE_USER] = base64.b64decode(token).decode()
    path = "/apis/batch/v1/namespaces/alpha/jobs?dryRun=All"
    foreign = job("alpha", "copy", multikueue=False,
                  labels={QUEUE_NAME_LABEL: "alpha", PRIORITY_CLASS_LABEL: "gpushare-beta"})
    message = refusal(lambda: west.request("POST", path, foreign, user=MULTIKUEUE_USER))
    assert "gpushare-tenant-alpha" in message and "may name only its Kueue WorkloadPriorityClass" in message, message
    own = job("alpha", "copy", multikueue=False,
              labels={QUEUE_NAME_LABEL: "alpha", PRIORITY_CLASS_LABEL: "gpushare-alpha"})
    assert west.request("POST", path, own, user=MULTIKUEUE_USER)["metadata"]["name"] == "copy"


def shared_binding_leaves_out(plane: ControlPlane) -> list[str]:
    """The namespaces the manager's shared policy's binding does not judge, as the API server holds it."""
    binding = plane.get(VAP_API, "ValidatingAdmissionPolicyBinding", SHARED_POLICY_NAME)
    [expression] = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
    assert (expression["key"], expression["operator"]) == ("kubernetes.io/metadata.name", "NotIn")
    return expression["values"]


def gpu_pod(namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def test_a_manager_with_a_tenant_of_its_own_dispatches_the_others_and_holds_its_own_to_its_pools(
        fleet, members, fleet_file):
    hub, west = fleet["hub"], fleet["west"]
    gamma = next(t for t in members[MANAGER].tenants if t.name == "gamma")
    # The manager's own stack, through its fleet, leaves exactly the dispatched tenants' namespaces out of its
    # shared policy (their dispatch policies judge them there); its own tenant and the exempt ones, as always.
    assert shared_binding_leaves_out(hub) == ["alpha", "beta", "gamma", "gpu-operator", "kube-system"]

    # A dispatched tenant's Job passes the manager's whole admission, is dispatched and runs on its worker.
    submit(hub, "beta", "past-gamma", "nvidia.com/gpu.shared")
    assert hub.wait_for("past-gamma dispatched", lambda: dispatched_to(hub, "beta", "past-gamma"),
                        timeout=WAIT) == "west"
    assert bound(west, "beta", "past-gamma") == west.nodes["westt4"][0]

    # The manager's own tenant is held to its pools as on one cluster: its plan's pod is admitted (a dry run), the
    # same GPU pod aimed past its pool is refused by its policy.
    own = pod_spec(members[MANAGER], gamma)
    assert own["nodeSelector"] == {POOL_LABEL: "hubt4"}
    path = "/api/v1/namespaces/gamma/pods?dryRun=All"
    assert hub.request("POST", path, gpu_pod("gamma", "on-its-pool", own))["metadata"]["name"] == "on-its-pool"
    message = refusal(lambda: hub.create(gpu_pod("gamma", "anywhere", {**own, "nodeSelector": {}})))
    assert "gpushare-tenant-gamma" in message and "gpushare.io/pool to one of: hubt4" in message, message
    # Every other namespace is still judged by the shared policy: a namespace that labels itself with a
    # dispatched tenant's name gets its own name back from the API server, and its GPU pod is refused.
    hub.create({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "posing", "labels": {"kubernetes.io/metadata.name": "beta"}}})
    assert hub.get("v1", "Namespace", "posing")["metadata"]["labels"]["kubernetes.io/metadata.name"] == "posing"
    message = refusal(lambda: hub.create(gpu_pod("posing", "borrowed", own)))
    assert SHARED_POLICY_NAME in message and "every GPU pool belongs to a tenant (gamma: hubt4)" in message, message


def test_a_tenant_removed_from_the_fleet_loses_its_queues_everywhere(fleet, fleet_file):
    hub, west = fleet["hub"], fleet["west"]
    # Its namespace's Jobs go with it (the tenant's namespace is removed with it); then the recompiled objects.
    for name in jobs(hub, "beta"):
        delete_job(hub, "beta", name)
    west.wait_for("beta's Jobs on west removed by MultiKueue", lambda: play_the_kubelet(west, "beta") or not jobs(
        west, "beta"), timeout=WAIT)
    smaller_file = write_fleet(fleet_file.parent.parent / "without-beta", drop_tenant="beta")
    smaller = load_fleet(smaller_file).stacks
    compiled = dispatch(MANAGER, smaller)
    assert compiled.tenant_workers == {"alpha": ["west", "east"]}
    for name, plane in fleet.items():
        apply(plane, manager_manifests(manager_own(smaller_file), compiled) if name == MANAGER
              else worker_manifests(smaller[name], compiled, name))

    def names(plane: ControlPlane, kind: str, namespace: str | None = None) -> set[str]:
        return {o["metadata"]["name"] for o in plane.list(KUEUE_API, kind, namespace)}

    for name, plane in fleet.items():
        plane.wait_for(f"beta's queues gone on {name}", lambda plane=plane: play_the_kubelet(plane, "beta") or (
            "beta" not in names(plane, "ClusterQueue") and not names(plane, "LocalQueue", "beta")), timeout=WAIT)
        assert "alpha" in names(plane, "ClusterQueue")
    assert names(hub, "MultiKueueConfig") == {"gpushare-fleet-alpha"}
    assert names(hub, "AdmissionCheck") == {"gpushare-fleet-alpha"}
    assert "gpushare-beta" not in names(west, "WorkloadPriorityClass")
    assert {p["metadata"]["name"] for p in hub.list(VAP_API, "ValidatingAdmissionPolicy", selector=MANAGED)} == {
        "gpushare-tenant-alpha.west", "gpushare-tenant-alpha.east", "gpushare-tenant-gamma", SHARED_POLICY_NAME,
        EXEMPT_DEBUG_POLICY_NAME}
    gone = hub.request("GET", "/api/v1/namespaces?labelSelector=" + MANAGED)["items"]
    assert [n["metadata"]["name"] for n in gone if not n["metadata"].get("deletionTimestamp")] == ["alpha", "gamma"]
    # No longer dispatched, beta's name is judged by the manager's shared policy again.
    assert shared_binding_leaves_out(hub) == ["alpha", "gamma", "gpu-operator", "kube-system"]
