"""The red team's findings of issue 39 about the tenant admission policies, each as the attacker (or the user) sees it
from the API server's own ValidatingAdmissionPolicy plugin (`tools/vapcheck`): tolerations by effect, CDI annotations
added after creation, priority classes, node names outside tenant namespaces, and the behaviours no test asserted."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.kubernetes.admission.test_tenant_admission import (
    CDI_RULE,
    FOREIGN,
    REPLICA_SET_CONTROLLER,
    TOLERATE_ALL,
    TOLERATE_GPU,
    VISION_VOID,
    VOID,
    annotated,
    cluster,  # noqa: F401 (a fixture)
    container,
    gpu,
    node_name_elsewhere,
    pod,
    reach,
    stack,  # noqa: F401 (a fixture)
    tolerate_tenant,
    workload,
)

TOLERATE_GPU_EXISTS = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
"""The GPU toleration as ExtendedResourceToleration adds it (and gpushare writes it, issue 39)."""


# --- tolerations: only those that pass a NoSchedule taint reach a GPU node --------------------------------------------

@pytest.mark.parametrize("effect", ["NoExecute", "PreferNoSchedule"])
@pytest.mark.parametrize("namespace", ["vision", "team-x"])
def test_a_cpu_pod_tolerating_every_noexecute_or_prefernoschedule_taint_is_admitted(cluster, effect, namespace):
    """It cannot pass the GPU pools' NoSchedule taints (a log shipper that stays through node problems)."""
    shipper = pod(container(), tolerations=[{"operator": "Exists", "effect": effect},
                                            {**tolerate_tenant("nlp"), "effect": effect}])
    decision = cluster.admit(shipper, namespace)
    assert decision.allowed, decision.messages


@pytest.mark.parametrize("toleration", [TOLERATE_ALL, {"operator": "Exists", "effect": "NoSchedule"}],
                         ids=["every effect", "NoSchedule"])
def test_a_toleration_of_every_noschedule_taint_is_still_refused(cluster, toleration):
    plain = pod(container(env=VOID), tolerations=[toleration])
    assert cluster.admit(plain, "vision").messages == [
        "spec.tolerations[0] tolerates every taint: " + FOREIGN, reach("spec.tolerations[0] tolerates every taint")]
    assert cluster.admit(plain, "team-x").messages == [reach("spec.tolerations[0] tolerates every taint", "team-x")]


@pytest.mark.parametrize("toleration", [TOLERATE_GPU, TOLERATE_GPU_EXISTS], ids=["Equal", "Exists"])
def test_both_forms_of_the_gpu_toleration_are_judged_alike(cluster, toleration):
    assert cluster.admit(pod(container(env=VOID), tolerations=[toleration]), "vision").messages == [
        reach("spec.tolerations[0] tolerates nvidia.com/gpu")]
    decision = cluster.admit(pod(container(env=VOID), pool="t4ts", tolerations=[toleration]), "vision")
    assert decision.allowed, decision.messages


def test_a_pod_tolerating_only_a_tenants_taint_is_judged(cluster):
    """No GPU request, no pool selector: the tenant taint alone lets it onto that tenant's dedicated nodes."""
    sneaky = pod(container(env=VOID), tolerations=[tolerate_tenant("vision")])
    assert cluster.admit(sneaky, "team-x").messages == [
        reach("spec.tolerations[0] tolerates gpushare.io/tenant", "team-x")]
    nlp_foreign = FOREIGN.replace("namespace vision", "namespace nlp").replace("tenant=vision", "tenant=nlp")
    assert cluster.admit(sneaky, "nlp").messages == [
        "spec.tolerations[0] tolerates gpushare.io/tenant=vision: " + nlp_foreign,
        "Pods that can run on GPU nodes (spec.tolerations[0] tolerates gpushare.io/tenant) in namespace nlp must set "
        "nodeSelector gpushare.io/pool to one of: a100, t4ts"]


# --- devices ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "admitted"), [("void", True), ("none", True), ("all", False), ("", False)])
def test_nvidia_visible_devices_none_counts_as_void_for_a_container_without_a_gpu(cluster, value, admitted):
    sidecar = container("sidecar", env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": value}])
    decision = cluster.admit(pod(container(limits=gpu()), sidecar, pool="h100mig"), "vision")
    assert decision.allowed == admitted, decision.messages
    if not admitted:
        assert "spec.containers[1] (sidecar): " + VISION_VOID in decision.messages


CDI = {"cdi.k8s.io/all": "nvidia.com/gpu=all"}


def with_annotations(obj: dict[str, Any], annotations: dict[str, str]) -> dict[str, Any]:
    return annotated(obj, {**obj["metadata"].get("annotations", {}), **annotations})


@pytest.mark.parametrize("namespace", ["vision", "team-x", "calico-system"])
def test_a_cdi_annotation_added_by_a_metadata_update_is_refused(cluster, namespace):
    """Pending (the scheduler binds it afterwards) or bound: the update that adds the annotation is judged."""
    pending = pod(container(env=VOID))
    bound = copy.deepcopy(pending)
    bound["spec"]["nodeName"] = "aks-t4batch-12345678-vmss000000"
    for stored in (pending, bound):
        decision = cluster.admit(with_annotations(stored, CDI), namespace, operation="UPDATE", old=stored)
        assert decision.messages == [f"metadata.annotations[cdi.k8s.io/all] is set: {CDI_RULE}"], stored["spec"]
        changed = cluster.admit(with_annotations(stored, {"cdi.k8s.io/all": "nvidia.com/gpu=0"}), namespace,
                                operation="UPDATE", old=with_annotations(stored, CDI))
        assert not changed.allowed, "changing the devices an annotation names is judged too"


def test_other_metadata_updates_of_a_pod_still_pass(cluster):
    """An unrelated annotation, or a label on a pod stored with a CDI annotation (admitted before the policy)."""
    stale = with_annotations(pod(container(limits=gpu())), CDI)
    assert cluster.admit(with_annotations(stale, {"example.com/x": "1"}), "vision", operation="UPDATE",
                         old=stale).allowed
    relabelled = copy.deepcopy(stale)
    relabelled["metadata"]["labels"] = {"app": "x"}
    assert cluster.admit(relabelled, "vision", operation="UPDATE", old=stale).allowed


# --- priorities -------------------------------------------------------------------------------------------------------

def priority_rule(tenant: str) -> str:
    return (f"pods in namespace {tenant} must not name a system priority class (system-node-critical, "
            "system-cluster-critical): for such a pod the scheduler preempts other tenants' pods, on pools they "
            "share too; remove spec.priorityClassName")


@pytest.mark.parametrize("name", ["system-node-critical", "system-cluster-critical"])
def test_a_tenant_cannot_name_a_system_priority_class(cluster, name):
    preemptor = pod(container(limits=gpu("nvidia.com/gpu.shared")), pool="t4ts", priorityClassName=name)
    assert cluster.admit(preemptor, "nlp").messages == [f"spec.priorityClassName is {name}: {priority_rule('nlp')}"]
    assert cluster.admit(workload("Job", preemptor), "vision").messages == [
        f"Job pod template: spec.priorityClassName is {name}: {priority_rule('vision')}"]
    assert cluster.admit(pod(container(), priorityClassName=name), "vision").messages == [
        f"spec.priorityClassName is {name}: {priority_rule('vision')}"], "CPU pods preempt across tenants too"


def test_other_priority_classes_and_other_namespaces_are_left_alone(cluster):
    """The classes a cluster's admins create, and add-ons outside tenant namespaces (which need the system ones)."""
    batch = pod(container(limits=gpu("nvidia.com/gpu.shared")), pool="t4ts", priorityClassName="batch-low")
    assert cluster.admit(batch, "nlp").allowed
    assert cluster.admit(pod(container(), priorityClassName="system-cluster-critical"), "team-x").allowed


# --- spec.nodeName outside tenant namespaces ------------------------------------------------------------------------

@pytest.mark.parametrize(("node", "shown"), [
    ("aks-a100-12345678-vmss000000", "a node of pool a100"),
    ("aks-h100mig-12345678-vmss00000a", "a node of pool h100mig"),
])
def test_a_pod_outside_tenant_namespaces_cannot_name_a_node_of_a_pool_it_may_not_use(cluster, node, shown):
    """It selects the untenanted pool, but a node name skips the scheduler: its selector is checked only by the kubelet,
    after binding."""
    pinned = pod(container(limits=gpu("nvidia.com/gpu")), pool="t4batch", nodeName=node)
    assert cluster.admit(pinned, "team-x").messages == [node_name_elsewhere(node, shown)]


def test_a_node_of_a_pool_the_namespace_may_use_can_be_named(cluster):
    on_t4batch = pod(container(limits=gpu("nvidia.com/gpu")), pool="t4batch",
                     nodeName="aks-t4batch-12345678-vmss000001")
    decision = cluster.admit(on_t4batch, "team-x")
    assert decision.allowed, decision.messages
    agent = pod(container(env=VOID), tolerations=[TOLERATE_ALL], nodeName="aks-a100-12345678-vmss000000")
    decision = cluster.admit(agent, "calico-system", user=REPLICA_SET_CONTROLLER)
    assert decision.allowed, ("a platform namespace of every pool", decision.messages)
    refused = cluster.admit(pod(container(env=VOID), pool="t4batch", tolerations=[TOLERATE_ALL],
                                nodeName="aks-a100-12345678-vmss000000"), "monitoring", user=REPLICA_SET_CONTROLLER)
    assert node_name_elsewhere("aks-a100-12345678-vmss000000", "a node of pool a100") in refused.messages


@pytest.mark.parametrize("node", ["akswin000002", "aks-cpu-12345678-vm3", "virtual-node-aci-linux"])
def test_a_node_named_in_another_form_is_of_no_gpushare_pool(cluster, node):
    """gpushare creates its pools as scale sets, so their nodes are all named aks-<pool>-<id>-vmss<instance>; a Windows
    pool's, a VirtualMachines pool's or a virtual node is another pool's, and naming it reaches no gpushare pool."""
    decision = cluster.admit(pod(container(limits=gpu("nvidia.com/gpu")), pool="t4batch", nodeName=node), "team-x")
    assert decision.allowed, decision.messages


def test_a_node_of_a_pool_gpushare_does_not_manage_can_be_named(cluster):
    """Another GPU pool of an existing cluster: the pod reaches no gpushare pool through it."""
    aimed = pod(container(limits={"nvidia.com/gpu": 1}), nodeSelector={"kubernetes.azure.com/agentpool": "legacygpu"},
                nodeName="aks-legacygpu-12345678-vmss000003")
    decision = cluster.admit(aimed, "team-x")
    assert decision.allowed, decision.messages
