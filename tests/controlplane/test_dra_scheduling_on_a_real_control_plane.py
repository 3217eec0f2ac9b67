"""The real scheduler allocating the DRA pools' devices (`gpushare.sharing.dra`) on a real control plane of its own:
each DRA pool's fake nodes publish a ResourceSlice shaped as NVIDIA's DRA driver v0.5.0 publishes it
(`tests/controlplane/dra_slices.py`, citing the driver's source), gpushare's
DeviceClasses and ResourceClaimTemplates are created, and pods naming a template get their claims from the
controller manager's resourceclaim controller and their devices from kube-scheduler's DynamicResources plugin:
only devices of the template's class on the pod's pool, one claim per device, the rendered opaque config carried
into the allocation. No kubelet, so nothing is prepared: what the driver does with the config is
`tests/sharing/test_dra.py`'s part (`tools/dracheck`). No tenant policies either: which claims a tenant may make, with
the plan's objects deployed, is `test_dra_stack_on_a_real_control_plane.py`'s part."""

from __future__ import annotations

from typing import Any

import pytest

from gpushare.model.stack import StackConfig, pool_node_taints
from gpushare.sharing import dra
from gpushare.sharing.operator_values import toleration
from tests.controlplane.controlplane import (
    CONTROLLERS,
    register_nodes,
    start_control_plane,
    stop_control_plane,
)
from tests.controlplane.dra_slices import publish_slices
from tests.sharing.test_dra import load


@pytest.fixture(scope="module")
def cluster():
    """A control plane with the resourceclaim controller, the stack's nodes, the DRA pools' slices, gpushare's
    classes, the tenants' namespaces and templates."""
    stack = load()
    plane = start_control_plane({}, controllers=(*CONTROLLERS, "resourceclaim-controller"))
    try:
        nodes = register_nodes(plane, stack)
        publish_slices(plane, stack, nodes)
        for obj in dra.device_classes(stack):
            plane.create(obj)
        for tenant in stack.tenants:
            plane.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": tenant.name}})
        for template in dra.claim_templates(stack):
            plane.create(template)
        yield plane, stack, nodes
    finally:
        stop_control_plane(plane)


def claim_pod(stack: StackConfig, tenant: str, name: str, template: str, pool: str) -> dict[str, Any]:
    """A tenant's pod on `pool` naming the ResourceClaimTemplate `template`, tolerating the pool's taints."""
    target = next(p for p in stack.pools if p.name == pool)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": tenant},
            "spec": {"nodeSelector": {"gpushare.io/pool": pool},
                     "tolerations": [toleration(t) for t in pool_node_taints(stack, target)],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
                     "containers": [{"name": "cuda", "image": "nvcr.io/nvidia/cuda:12.1.0-base-ubi8",
                                     "resources": {"claims": [{"name": "gpu"}]}}]}}


def scheduled(plane, tenant: str, name: str) -> dict[str, Any]:
    return plane.wait_for(f"pod {tenant}/{name} to be bound", lambda: (
        pod if (pod := plane.get("v1", "Pod", name, tenant))["spec"].get("nodeName") else None))


def allocation(plane, tenant: str, pod: dict[str, Any]) -> dict[str, Any]:
    """The allocation of the pod's one claim (its name from the pod's status, set by the resourceclaim
    controller)."""
    (status,) = pod["status"]["resourceClaimStatuses"]
    claim = plane.get(dra.RESOURCE_API_VERSION, "ResourceClaim", status["resourceClaimName"], tenant)
    return claim["status"]["allocation"]["devices"]


def unschedulable(plane, tenant: str, name: str) -> str:
    """The scheduler's message for a pod it cannot place."""
    def reason():
        conditions = plane.get("v1", "Pod", name, tenant).get("status", {}).get("conditions", [])
        return next((c["message"] for c in conditions if c["type"] == "PodScheduled"
                     and c.get("reason") == "Unschedulable"), None)
    return plane.wait_for(f"pod {tenant}/{name} to be unschedulable", reason)


def test_each_claim_gets_a_device_of_its_class_on_its_pool_with_the_rendered_config(cluster):
    plane, stack, nodes = cluster
    pools = {p.name: p for p in stack.pools}
    placed = {}
    for tenant, name, pool in (("vision", "mps-a", "h100mps"), ("vision", "mps-b", "h100mps"),
                               ("nlp", "ts", "t4ts"), ("nlp", "whole", "h100whole")):
        plane.create(claim_pod(stack, tenant, name, pool, pool))
        pod = scheduled(plane, tenant, name)
        devices = allocation(plane, tenant, pod)
        (result,) = devices["results"]
        assert pod["spec"]["nodeName"] in nodes[pool] and result["pool"] == pod["spec"]["nodeName"]
        assert result["driver"] == dra.DRIVER_NAME
        (config,) = devices["config"]
        assert config["source"] == "FromClaim"
        assert config["opaque"]["parameters"] == dra.opaque_config(pools[pool])
        placed[name] = result["device"]
    assert (placed["ts"], placed["whole"]) == ("gpu-0", "gpu-0")
    # One claim per device: the two MPS pods got the node's two 3g.47gb devices.
    assert {placed["mps-a"], placed["mps-b"]} == {"gpu-0-mig-3g47gb-9-0", "gpu-0-mig-3g47gb-9-4"}


def test_a_claim_waits_when_its_pool_has_no_free_device_of_its_class(cluster):
    plane, stack, _ = cluster
    plane.create(claim_pod(stack, "vision", "mps-c", "h100mps", "h100mps"))
    assert "cannot allocate all claims" in unschedulable(plane, "vision", "mps-c")


def test_a_claim_for_one_pools_class_finds_no_device_on_another_pool(cluster):
    """The class selects the kind of device: a whole-H100 claim on the T4 pool's node has nothing to take."""
    plane, stack, _ = cluster
    plane.create(claim_pod(stack, "nlp", "misplaced", "h100whole", "t4ts"))
    assert "cannot allocate all claims" in unschedulable(plane, "nlp", "misplaced")
