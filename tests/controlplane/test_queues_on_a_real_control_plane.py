"""gpushare's Kueue objects on a real Kubernetes 1.36 API server (`tests/controlplane/controlplane.py`): Kueue v0.19.2's
CRDs, built from their schemas in `../shared/data/kueue-v0.19.2-crd-schemas.json`, are installed, and the API server
itself, with its structural-schema pruning and its CEL engine for the CRDs' `x-kubernetes-validations`, accepts every
object of tests/kubernetes/test_queues.py's three-tenant stack as the admin and keeps every field; the same objects
broken the ways those rules forbid are refused with the CRDs' own messages.

Kueue's controller and webhooks do not run here (see tests/kubernetes/test_kueue_webhooks.py for the webhooks' rules,
and test_kueue_on_a_real_control_plane.py for Kueue's manager admitting, lending and reclaiming)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from gpushare.kubernetes.queues import queue_manifests
from tests.controlplane.controlplane import ApiError, start_control_plane, stop_control_plane
from tests.controlplane.test_tenants_on_a_real_control_plane import ensure_namespace
from tests.kubernetes import test_queues as compiled

KINDS = ("ResourceFlavor", "Cohort", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue")
GROUP = "kueue.x-k8s.io"


def plural(kind: str) -> str:
    lower = kind.lower()
    return lower + "es" if lower.endswith("s") else lower + "s"


def kueue_crds(schemas: dict[str, Any]) -> list[dict[str, Any]]:
    """The CRDs of `KINDS` as Kueue's `config/components/crd/bases` define them, v1beta2 (their storage version)
    only: its schema unchanged, its status subresource where the schema has a status."""
    crds = []
    for kind in KINDS:
        entry = schemas[f"v1beta2/{kind}"]
        version = {"name": "v1beta2", "served": True, "storage": True,
                   "schema": {"openAPIV3Schema": entry["schema"]}}
        if "status" in entry["schema"].get("properties", {}):
            version["subresources"] = {"status": {}}
        crds.append({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural(kind)}.{GROUP}"},
            "spec": {"group": GROUP, "scope": entry["scope"], "versions": [version],
                     "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural(kind),
                               "singular": kind.lower()}},
        })
    return crds


@pytest.fixture(scope="module")
def queue_plane():
    """A control plane of this module's own: the session's (conftest.py) belongs to the tenant tests, which create
    their namespaces themselves, and this stack's tenants share their names."""
    plane = start_control_plane({})
    try:
        yield plane
    finally:
        stop_control_plane(plane)


@pytest.fixture(scope="module")
def kueue_installed(queue_plane):
    control_plane = queue_plane
    schemas = compiled.crd_schemas()
    control_plane.install_crds(kueue_crds(schemas))
    return control_plane


@pytest.fixture(scope="module")
def queue_stack():
    return compiled.load()


@pytest.fixture(scope="module")
def applied(kueue_installed, queue_stack):
    plane = kueue_installed
    for tenant in queue_stack.tenants:
        ensure_namespace(plane, tenant.name)
    manifests = queue_manifests(queue_stack)
    created = []
    for manifest in manifests:
        # A new CRD's REST endpoint can answer 404 for a moment after it is Established.
        created.append(plane.wait_for(f"{manifest['kind']} {manifest['metadata']['name']} created",
                                      lambda manifest=manifest: plane.create(manifest)))
    return manifests, created


def contains(stored: Any, sent: Any) -> bool:
    """`sent` is all in `stored` (which may add defaults): nothing was pruned or changed."""
    if isinstance(sent, dict):
        return isinstance(stored, dict) and all(k in stored and contains(stored[k], v) for k, v in sent.items())
    if isinstance(sent, list):
        return isinstance(stored, list) and len(stored) == len(sent) and all(map(contains, stored, sent))
    return stored == sent or (isinstance(sent, int) and str(stored) == str(sent))


def test_the_api_server_accepts_every_queue_object_and_keeps_every_field(applied):
    manifests, created = applied
    assert len(created) == len(manifests) == 16
    for sent, stored in zip(manifests, created):
        body = {k: v for k, v in sent.items() if k not in ("apiVersion", "kind", "metadata")}
        assert contains(stored, body), (sent["kind"], sent["metadata"]["name"], json.dumps(stored)[:2000])
    # Defaults the CRD fills in, as Kueue's controller will read them.
    queue = next(c for c in created if c["kind"] == "ClusterQueue" and c["metadata"]["name"] == "nlp")
    assert queue["spec"]["stopPolicy"] == "None"
    assert queue["spec"]["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}


def refused(plane, obj: dict[str, Any]) -> str:
    with pytest.raises(ApiError) as caught:
        plane.create(obj)
    assert caught.value.status == 422, caught.value.message
    return caught.value.message


def test_the_crds_cel_rules_refuse_what_gpushare_never_writes(applied, kueue_installed):
    """The rules gpushare's objects satisfy are live: each broken copy is refused with the rule's message."""
    manifests, _ = applied
    plane = kueue_installed
    queue = next(m for m in manifests if m["kind"] == "ClusterQueue" and m["metadata"]["name"] == "nlp")
    flavor = next(m for m in manifests if m["kind"] == "ResourceFlavor" and m["metadata"]["name"] == "t4spot")

    alone = copy.deepcopy(queue)
    alone["metadata"]["name"] = "nlp-alone"
    del alone["spec"]["cohortName"]
    assert "borrowingLimit must be nil when cohort is empty" in refused(plane, alone)

    short = copy.deepcopy(queue)
    short["metadata"]["name"] = "nlp-short"
    short["spec"]["resourceGroups"][2]["flavors"][0]["resources"].pop()
    assert "flavors must have the same number of resources as the coveredResources" in refused(plane, short)

    borrow = copy.deepcopy(queue)
    borrow["metadata"]["name"] = "nlp-borrow"
    borrow["spec"]["preemption"] = {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}}
    assert "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never" in refused(plane, borrow)

    tolerant = copy.deepcopy(flavor)
    tolerant["metadata"]["name"] = "t4spot-broken"
    tolerant["spec"]["tolerations"][0] = {"key": "nvidia.com/gpu", "operator": "Exists", "value": "present",
                                          "effect": "NoSchedule"}
    assert "a value must be empty when 'operator' is 'Exists'" in refused(plane, tolerant)

    crowded = copy.deepcopy(flavor)
    crowded["metadata"]["name"] = "t4spot-crowded"
    crowded["spec"]["tolerations"] = [{"key": f"k{i}", "operator": "Exists", "effect": "NoSchedule"} for i in range(9)]
    assert "must have at most 8 items" in refused(plane, crowded)


def test_the_crds_are_the_shared_schemas_unchanged():
    schemas = compiled.crd_schemas()
    for crd in kueue_crds(schemas):
        kind = crd["spec"]["names"]["kind"]
        assert crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] == schemas[f"v1beta2/{kind}"]["schema"]
    assert Path(compiled.CRD_SCHEMAS).name == "kueue-v0.19.2-crd-schemas.json"


def test_verify_reads_each_tenants_cluster_queue_status(applied, kueue_installed, queue_stack):
    """What `verify` reports per tenant, read with the Kubernetes client from the real API server after a status in
    Kueue's shape (as its controller writes it through the status subresource) is stored."""
    from gpushare.kubernetes.cluster_read import api_client
    from gpushare.kubernetes.queue_status import (
        cluster_queue_names,
        queue_statuses,
        read_cluster_queues,
        render_queue_lines,
    )

    plane = kueue_installed
    path = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/nlp"
    stored = plane.request("GET", path)
    stored["status"] = {
        "pendingWorkloads": 1, "admittedWorkloads": 2, "reservingWorkloads": 2,
        "conditions": [{"type": "Active", "status": "True", "reason": "Ready", "message": "Can admit new workloads",
                        "lastTransitionTime": "2026-12-02T03:00:00Z"}],
        "flavorsUsage": [{"name": "t4ts", "resources": [{"name": "nvidia.com/gpu.shared", "total": "9",
                                                         "borrowed": "3"}]},
                         {"name": "a100", "resources": [{"name": "nvidia.com/gpu", "total": "0", "borrowed": "0"}]}]}
    plane.request("PUT", path + "/status", stored)
    vision = plane.request("GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/vision")
    vision["status"] = {"conditions": [{"type": "Active", "status": "False", "reason": "FlavorNotFound",
                                        "message": "Can't admit new workloads: references missing ResourceFlavor(s)",
                                        "lastTransitionTime": "2026-12-02T03:00:00Z"}]}
    plane.request("PUT", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/vision/status", vision)

    api, _ = api_client(plane.folder / "admin.kubeconfig", None)
    names = cluster_queue_names(queue_stack)
    statuses = {s.tenant: s for s in queue_statuses(queue_stack, read_cluster_queues(api, [*names, "gone"]))}
    assert statuses["nlp"].usage == (("t4ts", "nvidia.com/gpu.shared", "9", "3"),)
    assert (statuses["nlp"].admitted, statuses["nlp"].pending, statuses["nlp"].problem) == (2, 1, None)
    assert statuses["vision"].problem == ("tenant vision: its ClusterQueue is not active: FlavorNotFound: Can't admit "
                                          "new workloads: references missing ResourceFlavor(s)")
    assert statuses["speech"].active is None and statuses["speech"].problem is None
    assert read_cluster_queues(api, ["gone"]) == {"gone": None}
    assert "  nlp: 2 admitted, 1 pending; t4ts 9 nvidia.com/gpu.shared (3 borrowed)" in \
        render_queue_lines(list(statuses.values()))
