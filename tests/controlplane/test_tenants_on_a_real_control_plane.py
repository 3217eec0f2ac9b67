"""The tenants' objects on a real Kubernetes 1.36 control plane (`tests/controlplane/controlplane.py`): the API server
accepts them and compiles the policies; tenants acting as themselves (a user in the tenant's Entra group, which its
RoleBinding gives `edit`) get their plan's pods admitted, created by the ReplicaSet controller and bound by the
scheduler to their own pools' nodes only; the attacks tests/kubernetes/admission/test_tenant_admission.py judges
with vapcheck are refused by the real API server with the same messages; ResourceQuota and RBAC hold.

The stack is test_tenant_admission.py's STACK_YAML; what is applied is every Kubernetes object its `plan --json` lists
(the tenants', the shared-pool policies, the GPU Operator's namespace and device-plugin ConfigMap) except the GPU
Operator's Helm release: its chart cannot be fetched offline, and no object of these tests needs it.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from gpushare.kubernetes.tenants import pod_spec, pool_offers, pool_share
from gpushare.sharing.operator_values import NAMESPACE
from tests.controlplane.controlplane import (
    ADMIN,
    HELM_RELEASE,
    ROOT,
    ApiError,
    ensure_namespace,
    group_user,
)
from tests.kubernetes.admission import test_tenant_admission as judged

SCHEDULE_TIMEOUT = 30
TYPE_CHECK_TIMEOUT = 180
REPLICASET_CONTROLLER = "system:serviceaccount:kube-system:replicaset-controller"


def tenant_user(tenant) -> str:
    """A member of the tenant's first group; the admin for a tenant with no groups (no RoleBinding to act through)."""
    return group_user(tenant.groups[0]) if tenant.groups else ADMIN


def named(obj: dict[str, Any], name: str) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj.setdefault("metadata", {})["name"] = name
    return obj


def bare_pod(name: str, spec: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def deployment(name: str, spec: dict[str, Any], replicas: int = 1) -> dict[str, Any]:
    spec = {k: v for k, v in spec.items() if k != "restartPolicy"}  # a Deployment's pods must restart Always
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def test_the_api_server_accepts_every_object_the_plan_renders_but_the_operators_helm_release(applied,
                                                                                              plan_document):
    resources, manifests, created = applied
    assert [(c["kind"], c["metadata"]["name"]) for c in created] == [
        (m["kind"], m["metadata"]["name"]) for m in manifests]
    # The GPU Operator's namespace and device-plugin ConfigMap too: only the Helm release is left out (its chart
    # cannot be fetched offline).
    left_out = [r["type"] for r in plan_document["resources"]
                if r["type"].startswith("kubernetes:") and r not in resources]
    assert left_out == [HELM_RELEASE]
    kinds = {(m["kind"], m["metadata"].get("namespace")) for m in manifests}
    assert {("Namespace", None), ("ConfigMap", NAMESPACE), ("ValidatingAdmissionPolicy", None),
            ("ValidatingAdmissionPolicyBinding", None), ("ResourceQuota", "vision"), ("LimitRange", "nlp"),
            ("RoleBinding", "vision")} <= kinds
    config_map = next(c for c in created if c["kind"] == "ConfigMap")
    assert config_map["data"] == next(m for m in manifests if m["kind"] == "ConfigMap")["data"]


def test_every_policy_type_checks_without_warnings(control_plane, applied):
    _, manifests, _ = applied
    policies = [m["metadata"]["name"] for m in manifests if m["kind"] == "ValidatingAdmissionPolicy"]
    assert policies
    for name in policies:
        def checked():
            policy = control_plane.get("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", name)
            status = policy.get("status", {})
            return status if status.get("observedGeneration") == policy["metadata"]["generation"] else None
        # The controller type-checks each expression against the schema of every kind the policy matches (pods and
        # each workload kind): CPU work, over 40 s for the shared-pool policy on 2 busy cores.
        status = control_plane.wait_for(f"the type-checking status of {name}", checked, timeout=TYPE_CHECK_TIMEOUT)
        assert not status.get("typeChecking", {}).get("expressionWarnings"), (name, status)
        assert not [c for c in status.get("conditions", []) if c.get("status") == "False"], (name, status)


def _node_of(plane, namespace: str, name: str) -> str:
    """The node the scheduler binds the pod to; on a timeout, the pod's conditions (the scheduler's reason)."""
    try:
        return plane.wait_for(f"pod {namespace}/{name} to be scheduled", lambda: plane.get(
            "v1", "Pod", name, namespace).get("spec", {}).get("nodeName"), timeout=SCHEDULE_TIMEOUT)
    except AssertionError as error:
        conditions = plane.get("v1", "Pod", name, namespace).get("status", {}).get("conditions")
        raise AssertionError(f"{error}: {conditions}") from None


def _offer_spec(stack, tenant, offer) -> dict[str, Any]:
    """The plan's pod spec aimed at one of the tenant's pools: that pool's selector, resource and share."""
    spec = copy.deepcopy(pod_spec(stack, tenant))
    spec["nodeSelector"] = {"gpushare.io/pool": offer.pool}
    share = pool_share(stack, offer.pool)
    spec["containers"][0]["resources"] = {"limits": {offer.resource: 1, **share}, "requests": dict(share)}
    return spec


def test_each_tenants_plan_pods_are_admitted_and_scheduled_on_its_own_pools_only(control_plane, applied, stack):
    placed = []
    for tenant in stack.tenants:
        user = tenant_user(tenant)
        own = {node for offer in pool_offers(stack, tenant) for node in control_plane.nodes[offer.pool]}
        for offer in pool_offers(stack, tenant):
            name = f"plan-{offer.pool}"
            control_plane.create(bare_pod(name, _offer_spec(stack, tenant, offer)), tenant.name, user)
            node = _node_of(control_plane, tenant.name, name)
            assert node in control_plane.nodes[offer.pool], (tenant.name, offer.pool, node)
            assert node in own
            placed.append((tenant.name, offer.pool, node))
    assert {t for t, _, _ in placed} == {t.name for t in stack.tenants}


def test_deployments_pods_are_created_by_the_replicaset_controller_and_land_on_the_tenants_pool(
        control_plane, applied, stack):
    for tenant in stack.tenants:
        spec = pod_spec(stack, tenant)
        pool = spec["nodeSelector"]["gpushare.io/pool"]
        # One replica: the bare pods of the test before hold a device on each pool's node already, and nlp's a100
        # nodes have one GPU each (two replicas there stay Pending: "Insufficient nvidia.com/gpu").
        control_plane.create(deployment("plan", spec), tenant.name, tenant_user(tenant))
        pods = control_plane.wait_for(f"the Deployment's pod in {tenant.name}", lambda: control_plane.list(
            "v1", "Pod", tenant.name, selector="app=plan"))
        for pod in pods:
            assert [o["kind"] for o in pod["metadata"]["ownerReferences"]] == ["ReplicaSet"]
            assert _node_of(control_plane, tenant.name, pod["metadata"]["name"]) in control_plane.nodes[pool]
        creators = control_plane.pod_creators(tenant.name)
        by_controller = [n for n, user in creators.items() if user == REPLICASET_CONTROLLER]
        assert len(by_controller) >= 1, creators


def test_jobs_pods_are_created_by_the_job_controller_and_land_on_the_tenants_pool(control_plane, applied, stack):
    for tenant in stack.tenants:
        offer = pool_offers(stack, tenant)[-1]  # t4ts for both: its node has 4 shared units, 2 taken by bare pods
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "plan-job"},
               "spec": {"backoffLimit": 0, "template": {"spec": _offer_spec(stack, tenant, offer)}}}
        control_plane.create(job, tenant.name, tenant_user(tenant))
        pods = control_plane.wait_for(f"the Job's pod in {tenant.name}", lambda: control_plane.list(
            "v1", "Pod", tenant.name, selector="job-name=plan-job"))
        assert [o["kind"] for o in pods[0]["metadata"]["ownerReferences"]] == ["Job"]
        assert _node_of(control_plane, tenant.name, pods[0]["metadata"]["name"]) in control_plane.nodes[offer.pool]
        assert "system:serviceaccount:kube-system:job-controller" in control_plane.pod_creators(tenant.name).values()


def test_a_platform_daemon_set_selecting_its_pool_by_affinity_runs_a_pod_on_each_node_of_that_pool(
        control_plane, applied):
    """The DaemonSet controller pins each pod to its node by name, replacing the template's gpushare.io/pool terms
    (`ReplaceDaemonSetPodNodeNameNodeAffinity`): the policy places such a pod by its node's pool, so the real
    controller's pods are admitted, one per t4batch node, and on no other node (issue 39: every one was refused)."""
    ensure_namespace(control_plane, "monitoring")
    agent = judged.workload("DaemonSet", judged.pod(judged.container(env=judged.DCGM),
                                                    tolerations=[judged.TOLERATE_ALL],
                                                    affinity=judged.T4BATCH_AFFINITY))
    control_plane.create(named(agent, "dcgm-exporter"), "monitoring", ADMIN)
    nodes = control_plane.nodes["t4batch"]
    pods = control_plane.wait_for("the DaemonSet's pod on each t4batch node", lambda: (
        found if len(found := control_plane.list("v1", "Pod", "monitoring", selector="app=a")) == len(nodes)
        else None))
    pinned = sorted(p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchFields"][0]["values"][0] for p in pods)
    assert pinned == sorted(nodes)
    # The lifecycle tests' platform Job shares the namespace: its pods are the Job controller's.
    creators = set(control_plane.pod_creators("monitoring").values())
    assert creators - {"system:serviceaccount:kube-system:job-controller"} == {
        "system:serviceaccount:kube-system:daemon-set-controller"}


def test_the_red_teams_later_findings_are_refused_by_the_real_api_server(control_plane, applied, stack):
    """Issue 39, as a tenant and an admin see them: a CDI annotation patched onto a pod the scheduler placed, a
    system priority class, and a node name of another tenant's node outside tenant namespaces."""
    vision = next(t for t in stack.tenants if t.name == "vision")
    user = tenant_user(vision)
    plain = bare_pod("annotate-me", {"containers": [{"name": "c", "image": "busybox"}]})
    control_plane.create(plain, "vision", user)
    _node_of(control_plane, "vision", "annotate-me")
    with pytest.raises(ApiError) as refused:
        control_plane.request("PATCH", "/api/v1/namespaces/vision/pods/annotate-me",
                              {"metadata": {"annotations": {"cdi.k8s.io/all": "nvidia.com/gpu=all"}}}, user,
                              content_type="application/merge-patch+json")
    assert "metadata.annotations[cdi.k8s.io/all] is set" in refused.value.message, refused.value.message
    spec = {**pod_spec(stack, vision), "priorityClassName": "system-node-critical"}
    with pytest.raises(ApiError) as refused:
        control_plane.create(bare_pod("preemptor", spec), "vision", user)
    assert "spec.priorityClassName is system-node-critical" in refused.value.message, refused.value.message
    ensure_namespace(control_plane, "team-x")
    node = control_plane.nodes["a100"][0]
    pinned = bare_pod("pinned", {"nodeSelector": {"gpushare.io/pool": "t4batch"}, "nodeName": node, "containers": [
        {"name": "c", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": 1}}}]})
    with pytest.raises(ApiError) as refused:
        control_plane.create(pinned, "team-x", ADMIN)
    assert f"spec.nodeName is {node}, a node of pool a100" in refused.value.message, refused.value.message


# --- attacks: test_tenant_admission.py's tables, on the real API server ---------------------------------------

def _cases() -> list[tuple[str, dict[str, Any], str, list[str]]]:
    cases = []
    for table in (judged.REJECTED, judged.JUDGED_REJECTED, judged.DEVICE_ATTACKS):
        for name, (obj, namespace, messages) in table.items():
            cases.append((name, obj, namespace, [messages] if isinstance(messages, str) else list(messages)))
    return cases


CASES = _cases()
REAL_SERVER_MESSAGES = {
    # The PodTolerationRestriction plugin (enabled on AKS) merges tolerations on every pod that is not BestEffort
    # (it adds node.kubernetes.io/memory-pressure): MergeTolerations keeps only the superset, so `operator: Exists`
    # swallows the nvidia.com/gpu toleration before it and becomes spec.tolerations[0]. vapcheck does not model it.
    "tolerates everything, selects another tenant's pool": "spec.tolerations[0] tolerates every taint: pods in "
                                                           "namespace vision may tolerate only nvidia.com/gpu",
}


def _pod_spec_of(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec", {})
    if obj["kind"] == "Pod":
        return spec
    if obj["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return spec["template"]["spec"]


def ensure_runtime_class(plane, name: str) -> None:
    """A RuntimeClass the GPU Operator would create: without it the RuntimeClass admission plugin refuses the pod
    ("RuntimeClass not found") before the policy sees it."""
    try:
        plane.create({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
                      "handler": name})
    except ApiError as error:
        if error.status != 409:
            raise


@pytest.mark.parametrize(("obj", "namespace", "messages"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_api_server_refuses_each_attack_with_the_policys_message(control_plane, applied, stack, obj, namespace,
                                                                      messages):
    tenants = {t.name: t for t in stack.tenants}
    user = tenant_user(tenants[namespace]) if namespace in tenants else ADMIN
    if namespace not in tenants:
        ensure_namespace(control_plane, namespace)
    runtime_class = _pod_spec_of(obj).get("runtimeClassName")
    if runtime_class:
        ensure_runtime_class(control_plane, runtime_class)
    name = f"attack-{abs(hash((namespace, repr(obj)))) % 10**8}"
    with pytest.raises(ApiError) as refused:
        control_plane.create(named(obj, name), namespace, user)
    error = refused.value
    assert error.status in (403, 422), error
    assert "ValidatingAdmissionPolicy" in error.message, error.message
    case = next(c[0] for c in CASES if c[1] is obj)
    # The API server reports the first failing validation of the first policy that denies.
    assert REAL_SERVER_MESSAGES.get(case, messages[0]) in error.message, error.message


def test_zero_gpus_and_a_node_name_are_refused_as_the_tenant_itself(control_plane, applied, stack):
    vision = next(t for t in stack.tenants if t.name == "vision")
    user = tenant_user(vision)
    spec = pod_spec(stack, vision)
    attacks = {
        "nvidia.com/gpu: 0": {**spec, "containers": [{**spec["containers"][0], "resources": {
            "limits": {"nvidia.com/gpu": 0, **pool_share(stack, "h100mig")}}}]},
        "spec.nodeName": {**spec, "nodeName": control_plane.nodes["a100"][0]},
        "another tenant's pool": {**spec, "nodeSelector": {"gpushare.io/pool": "a100"}},
        "tolerates everything": {**spec, "tolerations": [{"operator": "Exists"}]},
        "NVIDIA_VISIBLE_DEVICES=all": {**spec, "containers": [{**spec["containers"][0], "env": [
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]},
    }
    for what, attack in attacks.items():
        with pytest.raises(ApiError) as refused:
            control_plane.create(bare_pod("attack", attack), "vision", user)
        assert "ValidatingAdmissionPolicy" in refused.value.message, (what, refused.value.message)


# --- quota and RBAC ----------------------------------------------------------------------------------------------

def test_a_tenant_above_its_gpu_quota_is_refused_by_resource_quota(control_plane, applied, stack):
    vision = next(t for t in stack.tenants if t.name == "vision")
    spec = copy.deepcopy(pod_spec(stack, vision))
    resource = next(iter(r for r in spec["containers"][0]["resources"]["limits"] if r.startswith("nvidia.com/")))
    assert dict(vision.quota)[resource] == 14
    spec["containers"][0]["resources"]["limits"][resource] = 15
    with pytest.raises(ApiError) as refused:
        control_plane.create(bare_pod("greedy", spec), "vision", tenant_user(vision))
    message = refused.value.message
    assert refused.value.status == 403, message
    assert f'pods "greedy" is forbidden: exceeded quota: gpushare-gpu-quota, requested: requests.{resource}=15' in \
        message
    assert f"limited: requests.{resource}=14" in message


def test_rbac_gives_a_tenant_edit_in_its_namespace_and_nothing_over_its_guard_rails(control_plane, applied, stack):
    vision = next(t for t in stack.tenants if t.name == "vision")
    user = tenant_user(vision)
    can = control_plane.can_i
    assert can(user, "create", "pods", "vision")
    assert can(user, "create", "deployments", "vision", group="apps")
    assert not can(user, "create", "pods", "nlp")
    assert not can("stranger@example.com", "create", "pods", "vision")
    for verb in ("update", "patch", "delete"):
        assert not can(user, verb, "resourcequotas", "vision"), verb
        assert not can(user, verb, "limitranges", "vision"), verb
        assert not can(user, verb, "validatingadmissionpolicies", group="admissionregistration.k8s.io"), verb
        assert not can(user, verb, "validatingadmissionpolicybindings", group="admissionregistration.k8s.io"), verb
        assert not can(user, verb, "namespaces", name="vision"), verb
    assert not can(user, "create", "rolebindings", "vision", group="rbac.authorization.k8s.io")
    # And by trying: the server's answer, not only the review's.
    quota = control_plane.get("v1", "ResourceQuota", "gpushare-gpu-quota", "vision", user=user)
    quota["spec"]["hard"] = {k: "1000" for k in quota["spec"]["hard"]}
    with pytest.raises(ApiError) as refused:
        control_plane.request("PUT", "/api/v1/namespaces/vision/resourcequotas/gpushare-gpu-quota", quota, user)
    assert refused.value.status == 403
    policy = next(m for m in applied[1] if m["kind"] == "ValidatingAdmissionPolicy")
    with pytest.raises(ApiError) as refused:
        control_plane.request("DELETE", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/"
                              + policy["metadata"]["name"], user=user)
    assert refused.value.status == 403
    grant = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "mine"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}
    with pytest.raises(ApiError) as refused:
        control_plane.create(grant, "vision", user)
    assert refused.value.status == 403


def test_the_server_reports_the_pinned_version(control_plane):
    go_mod = (ROOT / "tools" / "controlplane" / "go.mod").read_text()
    pinned = re.search(r"^require k8s\.io/kubernetes (v1\.(\d+)\.\d+)\b", go_mod, re.MULTILINE)
    version = control_plane.request("GET", "/version")
    assert version["gitVersion"] == pinned[1], version
    assert (version["major"], version["minor"]) == ("1", pinned[2])
