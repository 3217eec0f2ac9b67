"""Pods as the controllers create them, judged by the API server's own ValidatingAdmissionPolicy plugin
(`tools/vapcheck`): a platform DaemonSet's pods pinned to their nodes, every controller identity the platform rule
accepts, and the ways a platform namespace limited to some pools could reach others (issue 39)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.kubernetes.admission.test_tenant_admission import (
    A100_AFFINITY,
    CONTROLLER_MANAGER,
    DAEMON_SET_CONTROLLER,
    DAEMON_SET_OWNER,
    DCGM,
    REPLICA_SET_CONTROLLER,
    T4BATCH_AFFINITY,
    TOLERATE_ALL,
    VOID,
    cluster,  # noqa: F401 (a fixture)
    container,
    pod,
    reach,
    stack,  # noqa: F401 (a fixture)
    workload,
)

T4BATCH_NODE, A100_NODE = "aks-t4batch-12345678-vmss000002", "aks-a100-12345678-vmss000000"
PLATFORM_RULE = ("workloads of platform namespaces (gpushare:platform.namespaces) may run only on the pools listed for "
                 "their namespace: select them with nodeSelector gpushare.io/pool, or a required nodeAffinity term "
                 "gpushare.io/pool In [...] of those pools, or list the pool for the namespace")
DAEMON_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
"""What the DaemonSet controller adds to every pod's tolerations (kubernetes `pkg/controller/daemon/util/
daemonset_util.go` AddOrUpdateDaemonPodTolerations)."""


def pinned_to(template_pod: dict[str, Any], node: str) -> dict[str, Any]:
    """The pod the DaemonSet controller creates for `node` from its template: the template's required node-affinity
    terms replaced by one naming the node (kubernetes `pkg/controller/daemon/util/daemonset_util.go`
    ReplaceDaemonSetPodNodeNameNodeAffinity; preferred terms and nodeSelector stay), its daemon tolerations added,
    owned by the DaemonSet."""
    made = copy.deepcopy(template_pod)
    made["metadata"] = copy.deepcopy(DAEMON_SET_OWNER)
    spec = made["spec"]
    node_affinity = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}
    spec["tolerations"] = [*spec.get("tolerations", []), *DAEMON_TOLERATIONS]
    return made


MONITOR = pod(container(env=DCGM), tolerations=[TOLERATE_ALL], affinity=T4BATCH_AFFINITY)
"""dcgm-exporter in namespace monitoring, which may use pool t4batch alone, selecting it as the policy's message
recommends."""


@pytest.mark.parametrize("user", [DAEMON_SET_CONTROLLER, CONTROLLER_MANAGER])
def test_a_platform_daemon_set_selecting_its_pool_by_affinity_gets_its_pods_on_that_pools_nodes(cluster, user):
    assert cluster.admit(workload("DaemonSet", MONITOR), "monitoring").allowed
    decision = cluster.admit(pinned_to(MONITOR, T4BATCH_NODE), "monitoring", user=user)
    assert decision.allowed, decision.messages


@pytest.mark.parametrize("node", [A100_NODE, "aks-system-12345678-vmss000000", "gpu-node-7"])
def test_a_platform_daemon_set_pod_pinned_to_a_node_of_another_pool_is_refused(cluster, node):
    """Another tenant's node, a node of a pool gpushare does not manage, a node whose name shows no pool."""
    decision = cluster.admit(pinned_to(MONITOR, node), "monitoring", user=DAEMON_SET_CONTROLLER)
    assert decision.messages == [
        "pods of platform namespace monitoring may run only on pools t4batch (spec.tolerations[0] tolerates every "
        f"taint): {PLATFORM_RULE}"]


def test_a_pinned_pod_a_person_creates_in_a_platform_namespace_is_judged_like_any_other(cluster):
    decision = cluster.admit(pinned_to(MONITOR, T4BATCH_NODE), "monitoring")
    assert not decision.allowed
    assert reach("spec.tolerations[0] tolerates every taint", "monitoring") in decision.messages


@pytest.mark.parametrize("affinity", [
    {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpushare.io/pool", "operator": "NotIn", "values": ["a100"]}]}]}}},
    {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        *T4BATCH_AFFINITY["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"],
        {"matchExpressions": [{"key": "gpushare.io/pool", "operator": "NotIn", "values": ["t4batch"]}]}]}}},
    {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpushare.io/pool", "operator": "Exists"}]}]}}},
], ids=["NotIn another pool", "In its pool or NotIn it", "Exists"])
def test_a_platform_namespace_limited_to_pools_cannot_reach_the_others_by_other_operators(cluster, affinity):
    """A NotIn or Exists term matches every other pool's nodes: only In terms of the namespace's pools place it."""
    agent = workload("DaemonSet", pod(container(env=DCGM), tolerations=[TOLERATE_ALL], affinity=affinity))
    assert cluster.admit(agent, "monitoring").messages == [
        "DaemonSet pod template: pods of platform namespace monitoring may run only on pools t4batch "
        f"(spec.tolerations[0] tolerates every taint): {PLATFORM_RULE}"]


PLATFORM_CONTROLLERS = [
    "system:serviceaccount:kube-system:daemon-set-controller",
    "system:serviceaccount:kube-system:replicaset-controller",
    "system:serviceaccount:kube-system:statefulset-controller",
    "system:serviceaccount:kube-system:job-controller",
    "system:kube-controller-manager",
]
"""The identities that create a platform workload's pods: each controller's own service account (kube-controller-manager
with `--use-service-account-credentials`), or the controller manager's (without it)."""
NODE_AGENT = pod(container(env=DCGM), tolerations=[TOLERATE_ALL])


@pytest.mark.parametrize("user", PLATFORM_CONTROLLERS)
def test_every_controller_identity_creates_a_platform_workloads_pods_on_every_pool(cluster, user):
    decision = cluster.admit(NODE_AGENT, "calico-system", user=user)
    assert decision.allowed, decision.messages
    outside = cluster.admit(NODE_AGENT, "logging", user=user)
    assert reach("spec.tolerations[0] tolerates every taint", "logging") in outside.messages, \
        "outside a platform namespace the controller's pods are judged like its template"


@pytest.mark.parametrize("user", [
    "system:serviceaccount:kube-system:cronjob-controller",  # creates Jobs, never pods
    "system:serviceaccount:kube-system:generic-garbage-collector",
    "system:serviceaccount:calico-system:calico-node",
    "system:node:aks-t4batch-12345678-vmss000002",
])
def test_no_other_identity_creates_platform_pods(cluster, user):
    decision = cluster.admit(NODE_AGENT, "calico-system", user=user)
    assert reach("spec.tolerations[0] tolerates every taint", "calico-system") in decision.messages


def test_the_replica_set_controllers_pods_of_a_limited_platform_namespace_stay_on_its_pools(cluster):
    """A Deployment's pods keep the template's terms: on t4batch admitted, on a100 refused, by any controller."""
    on_t4batch = pod(container(env=VOID), tolerations=[TOLERATE_ALL], affinity=T4BATCH_AFFINITY)
    on_a100 = pod(container(env=VOID), tolerations=[TOLERATE_ALL], affinity=A100_AFFINITY)
    assert cluster.admit(on_t4batch, "monitoring", user=REPLICA_SET_CONTROLLER).allowed
    assert not cluster.admit(on_a100, "monitoring", user=REPLICA_SET_CONTROLLER).allowed
