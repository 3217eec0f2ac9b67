"""Issue 42's "done when" on a real Kubernetes 1.36 control plane: a stack with one DRA MIG pool (MPS inside each 3g
MIG device of H100 NVL GPUs) and one device-plugin T4 pool, deployed as `plan --json` renders it (DeviceClass,
namespaces, ResourceQuotas per DeviceClass, the tenant and shared policies, vision's ResourceClaimTemplate; not the
Helm releases, whose charts cannot be fetched offline), the DRA pool's fake nodes publishing ResourceSlices as NVIDIA's
DRA driver v0.5.0 publishes them (`tests/controlplane/dra_slices.py`, citing its source).

Tenants act as themselves (a user in their Entra group). The real scheduler gives vision's plan pods devices of its
DRA pool only, one MIG device each, with the MPS config gpushare rendered carried into the allocation; the API server
refuses vision's claim over its quota per DeviceClass, and nlp, whose pools are the device plugin's only, gets no
DRA device by any path (the chart's own classes included). No kubelet, so nothing is prepared: what the driver does
with the config is `tests/sharing/test_dra.py`'s part (`tools/dracheck`)."""

from __future__ import annotations

import contextlib
import copy
import io
import json
from typing import Any

import pytest
import yaml

from gpushare.cli import main
from gpushare.sharing import dra
from gpushare.sharing.dra_quota import device_class_quota_key
from gpushare.stackfile.config import parse_config
from tests.controlplane.controlplane import (
    CONTROLLERS,
    ApiError,
    apply_rendered,
    group_user,
    register_nodes,
    start_control_plane,
    stop_control_plane,
)
from tests.controlplane.dra_slices import driver_devices, publish_slices

VISION_GROUP = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
NLP_GROUP = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
MIG_CLASS = "gpushare-h100-nvl-94gb-mig-3g.47gb"
STACK_YAML = f"""\
config:
  azure-native:location: westeurope
  gpushare:cluster: {{name: gpushare-dra, kubernetesVersion: "1.36"}}
  gpushare:pools:
    - name: h100mps
      vmSize: Standard_NC40ads_H100_v5
      mig: MIG3g
      allocation: dra
      count: 2
      sharing: {{strategy: mps, replicas: 2}}
    - name: t4ts
      vmSize: Standard_NC4as_T4_v3
      count: 2
      sharing: {{strategy: time-slicing, replicas: 4}}
  gpushare:tenants:
    - name: vision
      pools: [h100mps, t4ts]
      quota: {{{MIG_CLASS}: 3, nvidia.com/gpu.shared: 4}}
      groups: [{VISION_GROUP}]
    - name: nlp
      pools: [t4ts]
      quota: {{nvidia.com/gpu.shared: 4}}
      groups: [{NLP_GROUP}]
"""
VISION, NLP = group_user(VISION_GROUP), group_user(NLP_GROUP)
QUOTA_KEY = device_class_quota_key(MIG_CLASS)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    """(control plane, stack, plan document, pool -> node names): the plan's objects applied, the slices published."""
    path = tmp_path_factory.mktemp("dra-stack") / "Pulumi.dra.yaml"
    path.write_text(STACK_YAML)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", str(path), "--json"]) == 0
    document = json.loads(out.getvalue())
    stack = parse_config(yaml.safe_load(STACK_YAML)["config"], source=str(path), stack="dra")
    plane = start_control_plane({VISION: [VISION_GROUP], NLP: [NLP_GROUP]},
                                controllers=(*CONTROLLERS, "resourceclaim-controller"))
    try:
        nodes = register_nodes(plane, stack)
        apply_rendered(plane, stack, document)
        publish_slices(plane, stack, nodes)
        yield plane, stack, document, nodes
    finally:
        stop_control_plane(plane)


def plan_pod(document: dict[str, Any], tenant: str, name: str) -> dict[str, Any]:
    """The tenant's pod snippet of `plan`, named `name`."""
    spec = next(t["podSpec"] for t in document["tenants"] if t["name"] == tenant)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": tenant},
            "spec": copy.deepcopy(spec)}


def on_pool(pod: dict[str, Any], pool: str, resource: str) -> dict[str, Any]:
    """`pod` moved to a device-plugin pool: its node selector, one unit of `resource`, no claim."""
    pod = copy.deepcopy(pod)
    spec = pod["spec"]
    spec["nodeSelector"] = {"gpushare.io/pool": pool}
    spec.pop("resourceClaims", None)
    container = spec["containers"][0]
    container.pop("env", None)
    container["resources"] = {"limits": {resource: 1, "cpu": "1", "memory": "4Gi"},
                              "requests": {"cpu": "1", "memory": "4Gi"}}
    return pod


def bound(plane, namespace: str, name: str) -> dict[str, Any]:
    return plane.wait_for(f"pod {namespace}/{name} to be bound", lambda: (
        pod if (pod := plane.get("v1", "Pod", name, namespace))["spec"].get("nodeName") else None))


def claim_of(plane, pod: dict[str, Any]) -> dict[str, Any]:
    """The pod's one ResourceClaim (named in its status by the resourceclaim controller), once allocated."""
    (status,) = pod["status"]["resourceClaimStatuses"]
    namespace = pod["metadata"]["namespace"]
    return plane.wait_for(f"claim {status['resourceClaimName']} allocated", lambda: (
        claim if (claim := plane.get(dra.RESOURCE_API_VERSION, "ResourceClaim", status["resourceClaimName"],
                                     namespace)).get("status", {}).get("allocation") else None))


@pytest.fixture(scope="module")
def vision_claims(deployed):
    """Three of vision's plan pods, bound, and their allocated claims: pod name -> (pod, claim)."""
    plane, _, document, _ = deployed
    placed = {}
    for i in range(3):
        name = f"gpu-check-{i}"
        plane.create(plan_pod(document, "vision", name), user=VISION)
        pod = bound(plane, "vision", name)
        placed[name] = (pod, claim_of(plane, pod))
    return placed


def test_the_plan_deploys_the_dra_objects_and_a_quota_per_device_class(deployed):
    plane, _, _, nodes = deployed
    assert [c["metadata"]["name"] for c in plane.list(dra.RESOURCE_API_VERSION, "DeviceClass")] == [MIG_CLASS]
    (template,) = plane.list(dra.RESOURCE_API_VERSION, "ResourceClaimTemplate", "vision")
    assert template["metadata"]["name"] == "h100mps"
    assert plane.list(dra.RESOURCE_API_VERSION, "ResourceClaimTemplate", "nlp") == []
    quota = plane.get("v1", "ResourceQuota", "gpushare-gpu-quota", "vision")
    assert quota["status"]["hard"] == {QUOTA_KEY: "3", "requests.nvidia.com/gpu.shared": "4"}
    # The DRA pool's nodes advertise no GPU resource; each publishes one slice of the driver with 2 3g.47gb devices.
    slices = plane.list(dra.RESOURCE_API_VERSION, "ResourceSlice")
    assert sorted(s["spec"]["nodeName"] for s in slices) == sorted(nodes["h100mps"])
    for node in nodes["h100mps"]:
        allocatable = plane.get("v1", "Node", node)["status"]["allocatable"]
        assert not [name for name in allocatable if "nvidia.com" in name or "deviceclass" in name]
    assert all(len(s["spec"]["devices"]) == 2 for s in slices)


def test_vision_gets_only_its_dra_pools_devices_one_each_with_the_rendered_mps_config(deployed, vision_claims):
    plane, stack, _, nodes = deployed
    pool = next(p for p in stack.pools if p.name == "h100mps")
    published = {d["name"] for d in driver_devices(pool)}
    devices = set()
    for pod, claim in vision_claims.values():
        allocation = claim["status"]["allocation"]["devices"]
        (result,) = allocation["results"]
        assert pod["spec"]["nodeName"] in nodes["h100mps"]
        assert (result["driver"], result["pool"]) == (dra.DRIVER_NAME, pod["spec"]["nodeName"])
        assert result["device"] in published  # a 3g.47gb MIG device of the node's slice
        devices.add((result["pool"], result["device"]))
        # MPS inside the MIG device: the config the template carries, as gpushare rendered it.
        (config,) = allocation["config"]
        assert config["source"] == "FromClaim"
        assert config["opaque"] == {"driver": dra.DRIVER_NAME, "parameters": {
            "apiVersion": "resource.nvidia.com/v1beta1", "kind": "MigDeviceConfig",
            "sharing": {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50,
                                                         "defaultPinnedDeviceMemoryLimit": "24064Mi"}}}}
        assert config["opaque"]["parameters"] == dra.opaque_config(pool)
    assert len(devices) == 3  # one claim per device


def test_the_api_server_refuses_visions_claim_over_its_quota_per_device_class(deployed, vision_claims):
    plane, _, document, _ = deployed
    plane.wait_for("the quota's usage", lambda: plane.get("v1", "ResourceQuota", "gpushare-gpu-quota", "vision")
                   ["status"].get("used", {}).get(QUOTA_KEY) == "3")
    template = plane.get(dra.RESOURCE_API_VERSION, "ResourceClaimTemplate", "h100mps", "vision")
    claim = {"apiVersion": dra.RESOURCE_API_VERSION, "kind": "ResourceClaim",
             "metadata": {"name": "one-more", "namespace": "vision"}, "spec": template["spec"]["spec"]}
    with pytest.raises(ApiError) as refused:
        plane.create(claim, user=VISION)
    assert refused.value.status == 403
    assert "exceeded quota: gpushare-gpu-quota" in refused.value.message and QUOTA_KEY in refused.value.message
    # The 4th plan pod's claim, made by the resourceclaim controller from the template, is refused alike: the pod
    # is never bound, though the pool has a free device.
    plane.create(plan_pod(document, "vision", "gpu-check-3"), user=VISION)

    def refusal():
        events = plane.list("v1", "Event", "vision")
        return next((e["message"] for e in events if e["involvedObject"]["name"] == "gpu-check-3"
                     and e["reason"] == "FailedResourceClaimCreation"), None)
    assert "exceeded quota" in plane.wait_for("the claim's refusal", refusal)
    assert not plane.get("v1", "Pod", "gpu-check-3", "vision")["spec"].get("nodeName")


def test_device_plugin_pool_pods_run_beside_the_dra_pool(deployed):
    plane, _, document, nodes = deployed
    for tenant, user in (("vision", VISION), ("nlp", NLP)):
        pod = plan_pod(document, tenant, f"{tenant}-t4")
        if tenant == "vision":
            pod = on_pool(pod, "t4ts", "nvidia.com/gpu.shared")
        plane.create(pod, user=user)
        assert bound(plane, tenant, f"{tenant}-t4")["spec"]["nodeName"] in nodes["t4ts"]


def refused_by_policy(plane, obj: dict[str, Any], user: str, why: str) -> None:
    """`user`'s create of `obj` is refused by its tenant's policy, for the reason `why` names."""
    with pytest.raises(ApiError) as refused:
        plane.create(obj, user=user)
    assert refused.value.status in (403, 422), refused.value  # the policy's reason: Forbidden or Invalid
    tenant = obj["metadata"]["namespace"]
    assert f"ValidatingAdmissionPolicy 'gpushare-tenant-{tenant}'" in refused.value.message, refused.value.message
    assert why in refused.value.message, refused.value.message


@pytest.mark.parametrize("device_class", [MIG_CLASS, "mig.nvidia.com", "gpu.nvidia.com"])
def test_nlp_gets_no_dra_device_by_a_claim_of_any_class(deployed, device_class):
    """nlp's pools are the device plugin's only: no class of a DRA device is its own, gpushare's or the chart's."""
    plane, _, _, _ = deployed
    claim = {"apiVersion": dra.RESOURCE_API_VERSION, "kind": "ResourceClaim",
             "metadata": {"name": "steal", "namespace": "nlp"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]}}}
    why = f"asks for DeviceClass {device_class}: claims in namespace nlp may ask only for the DeviceClasses"
    refused_by_policy(plane, claim, NLP, why)
    template = {"apiVersion": dra.RESOURCE_API_VERSION, "kind": "ResourceClaimTemplate",
                "metadata": {"name": "steal", "namespace": "nlp"}, "spec": {"spec": claim["spec"]}}
    refused_by_policy(plane, template, NLP, why)


def test_vision_may_not_claim_the_charts_classes_or_drop_the_rendered_config(deployed):
    plane, _, _, _ = deployed
    for why, devices in (
            ("asks for DeviceClass mig.nvidia.com", {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "mig.nvidia.com"}}]}),
            ("may carry only the opaque config gpushare renders", {"requests": [{"name": "gpu", "exactly": {"deviceClassName": MIG_CLASS}}],
                     "config": [{"requests": ["gpu"], "opaque": {"driver": dra.DRIVER_NAME, "parameters": {
                         "apiVersion": "resource.nvidia.com/v1beta1", "kind": "MigDeviceConfig",
                         "sharing": {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 100}}}}}]})):
        refused_by_policy(plane, {"apiVersion": dra.RESOURCE_API_VERSION, "kind": "ResourceClaim",
                                  "metadata": {"name": "other", "namespace": "vision"},
                                  "spec": {"devices": devices}}, VISION, why)


def test_a_pod_in_nlp_cannot_reach_the_dra_pool(deployed):
    """nlp's pod placed on the DRA pool, naming a claim template of it (vision's name; none is in nlp's namespace),
    is refused."""
    plane, _, document, _ = deployed
    pod = plan_pod(document, "nlp", "sneak")
    pod["spec"]["nodeSelector"] = {"gpushare.io/pool": "h100mps"}
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "h100mps"}]
    container = pod["spec"]["containers"][0]
    container["resources"] = {"limits": {"cpu": "1", "memory": "4Gi"}, "requests": {"cpu": "1", "memory": "4Gi"},
                              "claims": [{"name": "gpu"}]}
    refused_by_policy(plane, pod, NLP, "must set nodeSelector gpushare.io/pool to one of: t4ts; got h100mps")


def test_verify_reads_the_published_slices_from_the_real_api_server_and_passes_the_dra_pool(deployed):
    """verify's DRA check on what the real API server returns (its field selector on `spec.driver` included): the
    DRA pool's nodes as the plan labels them and their slices pass; a node whose slice is gone is named."""
    from gpushare.kubernetes.cluster_read import api_client, read_snapshot
    from gpushare.kubernetes.verify.dra_pools import check_dra_pool
    from gpushare.kubernetes.verify.expectations import dra_pool_expectations

    plane, stack, _, nodes = deployed
    api, _ = api_client(plane.kubeconfig(), None)
    (expect,) = dra_pool_expectations(stack)

    def judged():
        snapshot = read_snapshot(api, dra=True)
        pool_nodes = [n for n in snapshot.nodes if n["metadata"]["labels"]["gpushare.io/pool"] == "h100mps"]
        return check_dra_pool(expect, pool_nodes, snapshot, {})
    result = judged()
    assert result.findings == [] and [n.devices for n in result.nodes] == ["2 x mig 3g.47gb on each of 1 GPU(s)"] * 2
    gone = next(s for s in plane.list(dra.RESOURCE_API_VERSION, "ResourceSlice")
                if s["spec"]["nodeName"] == nodes["h100mps"][1])
    plane.request("DELETE", f"/apis/resource.k8s.io/v1/resourceslices/{gone['metadata']['name']}")
    (finding,) = judged().findings
    assert finding.problem == f"node {nodes['h100mps'][1]} has no ResourceSlice of the DRA driver gpu.nvidia.com"
