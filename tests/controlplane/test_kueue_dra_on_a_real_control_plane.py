"""Kueue counting DRA claims per DeviceClass: Kueue v0.19.2's own manager (tests/controlplane/kueue.py), started with
the `resources.deviceClassMappings` and feature gate of the Configuration gpushare deploys
(`gpushare.kubernetes.queues.manager_config_yaml`), on a real Kubernetes 1.36 control plane whose DRA pool's fake
nodes publish ResourceSlices as NVIDIA's DRA driver does (`tests/controlplane/dra_slices.py`).

vision's ClusterQueue holds its dedicated DRA pool's devices under the class's quota name (`<class>.deviceclass.
resource.k8s.io/devices`, 2: one H100 NVL node in 3g.47gb MIG devices). Jobs of the plan's pod snippet (a claim of
vision's template) are admitted while the quota lasts, counted per class; the next waits on exactly that quota; the
admitted Jobs' pods get their devices from the real scheduler on the DRA pool. (Without the mappings Kueue admits
none of them: a class it has no mapping for makes the workload inadmissible, `pkg/dra/claims.go`.)"""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from gpushare.kubernetes.kueue_admission import QUEUE_NAME_LABEL
from gpushare.kubernetes.queues import manager_config_yaml, queue_manifests
from gpushare.kubernetes.tenants import pod_spec
from gpushare.sharing import dra
from gpushare.sharing.dra_quota import device_class_quota_key
from gpushare.stackfile.config import parse_config
from tests.controlplane import kueue
from tests.controlplane.controlplane import (
    CONTROLLERS,
    ensure_namespace,
    register_nodes,
    start_control_plane,
    stop_control_plane,
    unavailable_reason,
)
from tests.controlplane.dra_slices import publish_slices
from tests.controlplane.test_kueue_on_a_real_control_plane import (
    KUEUE,
    WAIT,
    admitted,
    cluster_queues,
    condition,
    pending,
    reason,
    scheduled_on,
)

MIG_CLASS = "gpushare-h100-nvl-94gb-mig-3g.47gb"
QUOTA_NAME = device_class_quota_key(MIG_CLASS)
STACK_YAML = """
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: queues-dra, kubernetesVersion: "1.36"}
  gpushare:queues: {enabled: true}
  gpushare:pools:
    - {name: h100mps, vmSize: Standard_NC40ads_H100_v5, mig: MIG3g, allocation: dra, count: 1,
       sharing: {strategy: mps, replicas: 2}}
    - {name: t4ts, vmSize: Standard_NC4as_T4_v3, count: 1, sharing: {strategy: time-slicing, replicas: 4}}
  gpushare:tenants:
    - {name: vision, pools: [h100mps, t4ts]}
    - {name: nlp, pools: [t4ts]}
"""


@pytest.fixture(scope="module")
def stack():
    return parse_config(yaml.safe_load(STACK_YAML)["config"], source="stacks/Pulumi.queues-dra.yaml", stack="q")


def test_the_deployed_configuration_maps_each_dra_class_onto_the_queues_resource(stack):
    deployed = json.loads(manager_config_yaml(stack))
    assert deployed["resources"] == {"deviceClassMappings": [{"name": QUOTA_NAME, "deviceClassNames": [MIG_CLASS]}]}
    assert deployed["featureGates"] == {"KueueDRAIntegration": True}
    (vision,) = [m for m in queue_manifests(stack) if m["kind"] == "ClusterQueue"
                 and m["metadata"]["name"] == "vision"]
    groups = [g["coveredResources"] for g in vision["spec"]["resourceGroups"]]
    assert [QUOTA_NAME] in groups


def test_more_dra_classes_than_kueue_maps_are_refused_by_the_plan(stack, monkeypatch):
    from gpushare.kubernetes import queues
    from gpushare.sharing.pool_facts import derive_pool_facts
    monkeypatch.setattr(queues, "MAX_DEVICE_CLASS_MAPPINGS", 0)
    (problem,) = queues.queue_layout_problems(stack, derive_pool_facts(stack))
    assert problem.path == "gpushare:queues" and f"DeviceClasses {MIG_CLASS}); Kueue counts at most 0" in problem.message


@pytest.fixture(scope="module")
def kueue_plane(stack):
    for why in (unavailable_reason(), kueue.unavailable_reason()):
        if why:
            pytest.skip(why)
    plane = start_control_plane({}, controllers=(*CONTROLLERS, "resourceclaim-controller"))
    try:
        plane.nodes = register_nodes(plane, stack)
        publish_slices(plane, stack, plane.nodes)
        # The deployed Configuration's DRA part; VisibilityOnDemand stays off as in kueue.configuration.
        deployed = json.loads(manager_config_yaml(stack))
        kueue.start_kueue(plane, settings={"resources": deployed["resources"], "featureGates": {
            "VisibilityOnDemand": False, **deployed["featureGates"]}})
        for tenant in stack.tenants:
            ensure_namespace(plane, tenant.name)
        for manifest in (*dra.device_classes(stack), *dra.claim_templates(stack)):
            plane.create(manifest)
        for manifest in queue_manifests(stack):
            plane.wait_for(f"{manifest['kind']} {manifest['metadata']['name']} created",
                           lambda manifest=manifest: plane.create(manifest))
        plane.wait_for("the ClusterQueues active", lambda: all(
            condition(queue, "Active") == "True" for queue in cluster_queues(plane).values()), timeout=WAIT)
        yield plane
    finally:
        stop_control_plane(plane)


def submit_plan_job(plane, stack, name: str) -> None:
    """vision's plan pod snippet (a claim of its h100mps template) as a suspended Job in its LocalQueue."""
    spec = copy.deepcopy(pod_spec(stack, next(t for t in stack.tenants if t.name == "vision")))
    assert spec["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "h100mps"}]
    plane.create({"apiVersion": "batch/v1", "kind": "Job",
                  "metadata": {"name": name, "namespace": "vision", "labels": {QUEUE_NAME_LABEL: "vision"}},
                  "spec": {"suspend": True, "parallelism": 1, "completions": 1, "backoffLimit": 0,
                           "template": {"spec": spec}}})


def test_kueue_admits_dra_jobs_per_device_class_quota_and_queues_the_next(kueue_plane, stack):
    plane = kueue_plane
    for name in ("mig-1", "mig-2"):
        submit_plan_job(plane, stack, name)
        found = plane.wait_for(f"{name} admitted", lambda name=name: admitted(plane, "vision", name), timeout=WAIT)
        (assignment,) = found["status"]["admission"]["podSetAssignments"]
        assert assignment["flavors"][QUOTA_NAME] == "h100mps"
        assert assignment["resourceUsage"][QUOTA_NAME] == "1"
        nodes = plane.wait_for(f"{name}'s pod bound", lambda name=name: scheduled_on(plane, "vision", name))
        assert set(nodes) <= set(plane.nodes["h100mps"])

    def used() -> str:
        usage = next(f for f in cluster_queues(plane)["vision"]["status"]["flavorsUsage"] if f["name"] == "h100mps")
        return next(r for r in usage["resources"] if r["name"] == QUOTA_NAME)["total"]
    # The ClusterQueue's status follows its admitted Workloads a moment later.
    plane.wait_for("vision's queue using 2 devices of the class", lambda: used() == "2", timeout=WAIT)
    # The pool's 2 devices are the queue's 2: a third Job waits on the class's quota, not on cpu or memory.
    submit_plan_job(plane, stack, "mig-3")
    queued = plane.wait_for("mig-3 pending", lambda: pending(plane, "vision", "mig-3"), timeout=WAIT)
    assert f"insufficient unused quota for {QUOTA_NAME} in flavor h100mps" in reason(queued, "QuotaReserved")[1]
    assert plane.get("batch/v1", "Job", "mig-3", "vision")["spec"]["suspend"] is True
    claims = plane.list(dra.RESOURCE_API_VERSION, "ResourceClaim", "vision")
    assert len(claims) == 2 and all(c["status"]["allocation"]["devices"]["results"][0]["pool"]
                                    in plane.nodes["h100mps"] for c in claims)
    assert plane.list(KUEUE, "Workload", "vision")
