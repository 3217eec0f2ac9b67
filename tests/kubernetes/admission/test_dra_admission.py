"""Tenants on DRA pools, judged by the API server's own ValidatingAdmissionPolicy plugin (`tools/vapcheck`): what a
tenant's ResourceClaims and ResourceClaimTemplates may ask for (its pools' DeviceClasses, gpushare's opaque configs or
none, no adminAccess, no device tolerations), which templates its pods may name, and that pods on DRA pools claim
devices instead of asking for extended resources; in other namespaces, no claim of a class only tenants' pools have.
Each is a request a tenant (or a controller for it) sends, as docs/tenants.md's isolation table lists it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from gpushare.kubernetes.tenant_objects import tenant_manifests
from gpushare.kubernetes.tenants import pod_spec, pod_specs
from gpushare.sharing import dra
from gpushare.stackfile.config import parse_config
from tests.kubernetes.apiserver_admission import plugin_cluster

H100_NVL = "Standard_NC40ads_H100_v5"
STACK_YAML = f"""\
azure-native:location: westeurope
gpushare:cluster: {{name: gpushare-dra, kubernetesVersion: "1.36"}}
gpushare:pools:
  - {{name: h100mps, vmSize: {H100_NVL}, mig: MIG3g, allocation: dra, sharing: {{strategy: mps, replicas: 2}}}}
  - {{name: h100whole, vmSize: {H100_NVL}, allocation: dra}}
  - {{name: t4ts, vmSize: Standard_NC4as_T4_v3, allocation: dra, sharing: {{strategy: time-slicing, replicas: 4}}}}
  - {{name: a100dra, vmSize: Standard_NC24ads_A100_v4, allocation: dra}}
  - {{name: t4plugin, vmSize: Standard_NC4as_T4_v3, sharing: {{strategy: time-slicing, replicas: 4}}}}
gpushare:tenants:
  - {{name: vision, pools: [h100mps, t4plugin], quota: {{gpushare-h100-nvl-94gb-mig-3g.47gb: 2}}}}
  - {{name: nlp, pools: [t4ts, t4plugin, h100whole]}}
"""
MIG_CLASS = "gpushare-h100-nvl-94gb-mig-3g.47gb"
"""vision's h100mps only."""
WHOLE_CLASS = "gpushare-h100-nvl-94gb"
"""nlp's h100whole only."""
A100_CLASS = "gpushare-a100-80gb"
"""a100dra, a pool no tenant lists."""
CLAIM_CONTROLLER = "system:serviceaccount:kube-system:resource-claim-controller"


@pytest.fixture(scope="module")
def stack():
    return parse_config(yaml.safe_load(STACK_YAML), source="stacks/Pulumi.dra.yaml", stack="dra")


@pytest.fixture(scope="module")
def cluster(stack):
    judged = plugin_cluster(tenant_manifests(stack))
    assert judged.compile_errors == []
    yield judged
    judged.close()


def templates(stack) -> dict[tuple[str, str], dict[str, Any]]:
    """(tenant, pool) -> the ResourceClaimTemplate gpushare renders."""
    return {(t["metadata"]["namespace"], t["metadata"]["name"]): t for t in dra.claim_templates(stack)}


def claim(devices: dict[str, Any], name: str = "c") -> dict[str, Any]:
    return {"apiVersion": dra.RESOURCE_API_VERSION, "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": devices}}


def exactly(device_class: str, **more: Any) -> dict[str, Any]:
    return {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class, "count": 1, **more}}]}


def claim_template(devices: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": dra.RESOURCE_API_VERSION, "kind": "ResourceClaimTemplate", "metadata": {"name": "mine"},
            "spec": {"spec": {"devices": devices}}}


def dra_pod(stack, tenant: str, pool: str, claims: list[dict[str, Any]]) -> dict[str, Any]:
    """The plan's pod snippet of `tenant` on `pool`, naming `claims` in spec.resourceClaims."""
    tenant_obj = next(t for t in stack.tenants if t.name == tenant)
    spec = copy.deepcopy(pod_spec(stack, tenant_obj))
    spec["nodeSelector"] = {"gpushare.io/pool": pool}
    spec["resourceClaims"] = claims
    spec["containers"][0]["resources"]["claims"] = [{"name": c["name"]} for c in claims]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def class_message(tenant: str, classes: str, templates_: str) -> str:
    return (f"claims in namespace {tenant} may ask only for the DeviceClasses of its DRA pools ({classes}): another "
            f"class selects other pools' devices, or every GPU without the pool's sharing; name one of those, or use "
            f"the tenant's ResourceClaimTemplates ({templates_})")


VISION_CLASS = class_message("vision", MIG_CLASS, "h100mps")


# --- what gpushare renders passes -----------------------------------------------------------------------------------

def test_the_tenants_templates_and_the_claims_made_from_them_are_admitted(stack, cluster):
    for (tenant, _), template in templates(stack).items():
        assert cluster.admit(template, tenant).allowed, template["metadata"]
        made = claim(template["spec"]["spec"]["devices"], name="p-gpu-x7k2q")
        decision = cluster.admit(made, tenant, user=CLAIM_CONTROLLER)
        assert decision.allowed, decision.messages


def test_the_plans_pod_snippet_on_a_dra_pool_names_the_template_and_is_admitted(stack, cluster):
    vision = stack.tenants[0]
    spec = pod_spec(stack, vision)
    assert spec["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "h100mps"}]
    assert "nvidia.com/gpu" not in spec["containers"][0]["resources"]["limits"]
    decision = cluster.admit({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}, "vision")
    assert decision.allowed, decision.messages


def test_the_plans_pod_snippet_of_every_pool_of_each_tenant_is_admitted(stack, cluster):
    """A snippet per pool the tenant lists (`pod_specs`): on a DRA pool a claim of the tenant's template of that pool
    and no extended resource, on a device-plugin pool the pool's resource; each admitted in the tenant's namespace
    and refused in the other tenant's where that tenant does not list the pool."""
    seen = {}
    for tenant in stack.tenants:
        specs = pod_specs(stack, tenant)
        assert list(specs) == list(tenant.pools)
        assert specs[tenant.pools[0]] == pod_spec(stack, tenant)
        other = next(t for t in stack.tenants if t.name != tenant.name)
        for pool, spec in specs.items():
            seen[(tenant.name, pool)] = spec.get("resourceClaims")
            assert spec["nodeSelector"] == {"gpushare.io/pool": pool}
            limits = spec["containers"][0]["resources"]["limits"]
            if pool == "t4plugin":
                assert "resourceClaims" not in spec and limits["nvidia.com/gpu.shared"] == 1
            else:
                assert spec["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": pool}]
                assert spec["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
                assert not [r for r in limits if r.startswith("nvidia.com/")]
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
            decision = cluster.admit(pod, tenant.name)
            assert decision.allowed, (tenant.name, pool, decision.messages)
            if pool not in other.pools:
                assert not cluster.admit(pod, other.name).allowed, (tenant.name, pool, other.name)
    assert set(seen) == {("vision", "h100mps"), ("vision", "t4plugin"), ("nlp", "t4ts"), ("nlp", "t4plugin"),
                         ("nlp", "h100whole")}


def test_a_claim_with_no_config_or_narrowing_selectors_is_admitted(cluster):
    """No config: the driver's default (the device unshared), one device against the quota. Selectors only narrow
    within the class."""
    narrowed = exactly(MIG_CLASS, selectors=[{"cel": {"expression": "device.attributes['gpu.nvidia.com'].index == 0"}}])
    for devices in (exactly(MIG_CLASS), narrowed):
        decision = cluster.admit(claim(devices), "vision")
        assert decision.allowed, decision.messages


# --- what escapes the tenant's pools is refused ---------------------------------------------------------------------

@pytest.mark.parametrize(("device_class", "why"), [
    (WHOLE_CLASS, "another tenant's pool's class"),
    (A100_CLASS, "a pool no tenant lists"),
    ("gpu.nvidia.com", "the driver chart's own class: every GPU of every DRA pool"),
])
def test_a_tenants_claim_of_another_class_is_refused(cluster, device_class, why):
    decision = cluster.admit(claim(exactly(device_class)), "vision")
    assert decision.messages == [
        f"ResourceClaim spec.devices.requests[0] (gpu) asks for DeviceClass {device_class}: {VISION_CLASS}"], why


def test_another_class_in_a_first_available_subrequest_or_a_template_is_refused(cluster):
    fallback = {"requests": [{"name": "any", "firstAvailable": [
        {"name": "mine", "deviceClassName": MIG_CLASS}, {"name": "theirs", "deviceClassName": WHOLE_CLASS}]}]}
    assert cluster.admit(claim(fallback), "vision").messages == [
        f"ResourceClaim spec.devices.requests[0] (any) asks for DeviceClass {WHOLE_CLASS}: {VISION_CLASS}"]
    assert cluster.admit(claim_template(exactly(WHOLE_CLASS)), "vision").messages == [
        f"ResourceClaimTemplate spec.spec.devices.requests[0] (gpu) asks for DeviceClass {WHOLE_CLASS}: {VISION_CLASS}"]


def test_admin_access_is_refused(cluster):
    decision = cluster.admit(claim(exactly(MIG_CLASS, adminAccess=True)), "vision")
    assert decision.messages == [
        "ResourceClaim spec.devices.requests[0].exactly.adminAccess is set: claims in namespace vision must not set "
        "adminAccess: it allocates devices already allocated to other claims, other tenants' too; remove it"]
    assert not cluster.admit(claim(exactly(A100_CLASS, adminAccess=True)), "team-x").allowed


def test_device_tolerations_are_refused(cluster):
    tolerating = exactly(MIG_CLASS, tolerations=[{"operator": "Exists"}])
    assert cluster.admit(claim(tolerating), "vision").messages == [
        "ResourceClaim spec.devices.requests[0] sets tolerations: claims in namespace vision must not tolerate device "
        "taints: an administrator taints a device to keep claims off it; remove the request's tolerations"]


def test_an_opaque_config_of_the_tenants_own_is_refused(stack, cluster):
    """A full-device MPS share on a pool the stack shares in halves; another pool's config; another driver's."""
    mine = copy.deepcopy(templates(stack)[("vision", "h100mps")]["spec"]["spec"]["devices"])
    mine["config"][0]["opaque"]["parameters"]["sharing"]["mpsConfig"]["defaultActiveThreadPercentage"] = 100
    nlp_config = templates(stack)[("nlp", "t4ts")]["spec"]["spec"]["devices"]["config"][0]
    other_driver = {"requests": ["gpu"], "opaque": {"driver": "example.com", "parameters": {"kind": "X"}}}
    for config in (mine["config"][0], nlp_config, other_driver):
        decision = cluster.admit(claim({**exactly(MIG_CLASS), "config": [config]}), "vision")
        assert decision.messages == [
            "ResourceClaim spec.devices.config[0]: claims in namespace vision may carry only the opaque config "
            "gpushare renders for its DRA pools (the pool's sharing, as in its ResourceClaimTemplates h100mps) or "
            "none: the driver applies a claim's config to the device; remove the config or copy it from the tenant's "
            "template"], config


# --- pods ---------------------------------------------------------------------------------------------------------

def test_a_pod_naming_another_tenants_template_is_refused_and_its_own_admitted(stack, cluster):
    own = dra_pod(stack, "vision", "h100mps", [{"name": "gpu", "resourceClaimTemplateName": "h100mps"}])
    assert cluster.admit(own, "vision").allowed
    theirs = dra_pod(stack, "vision", "h100mps", [{"name": "gpu", "resourceClaimTemplateName": "h100whole"}])
    message = ("spec.resourceClaims[0] names template h100whole: pods in namespace vision may name only its "
               "ResourceClaimTemplates (h100mps) or a ResourceClaim of the namespace in spec.resourceClaims")
    assert cluster.admit(theirs, "vision").messages == [message]
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"},
                  "spec": {"selector": {"matchLabels": {"app": "a"}},
                           "template": {"metadata": {"labels": {"app": "a"}}, "spec": theirs["spec"]}}}
    assert cluster.admit(deployment, "vision").messages == ["Deployment pod template: " + message]


def test_a_pod_naming_a_claim_of_its_namespace_is_admitted(stack, cluster):
    named = dra_pod(stack, "vision", "h100mps", [{"name": "gpu", "resourceClaimName": "shared-by-two-pods"}])
    assert cluster.admit(named, "vision").allowed


@pytest.mark.parametrize(("namespace", "pool"), [("nlp", "h100whole"), ("team-x", "a100dra")])
def test_extended_resources_on_a_dra_pool_are_refused(namespace, pool, cluster):
    """Where Kubernetes maps nvidia.com/gpu onto DRA (KEP-5004) it would be a whole GPU of the chart's class."""
    asking = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
              "spec": {"nodeSelector": {"gpushare.io/pool": pool},
                       "containers": [{"name": "c", "image": "busybox", "resources": {"limits": {
                           "nvidia.com/gpu": 1, "cpu": "1", "memory": "1Gi"}}}]}}
    messages = cluster.admit(asking, namespace).messages
    assert (f"pool {pool} is a DRA pool: pods on a DRA pool (allocation dra: h100mps, h100whole, t4ts, a100dra) must "
            f"not ask for nvidia.com/ resources: its devices are claimed through a ResourceClaim; name the namespace's "
            f"ResourceClaimTemplate of the pool in spec.resourceClaims and the claim in the container's "
            f"resources.claims instead") in messages


# --- other namespaces, updates --------------------------------------------------------------------------------------

def test_outside_tenant_namespaces_only_classes_of_tenants_pools_alone_are_refused(cluster):
    for device_class in (MIG_CLASS, WHOLE_CLASS):
        assert cluster.admit(claim(exactly(device_class)), "team-x").messages == [
            f"ResourceClaim spec.devices.requests[0] (gpu) asks for DeviceClass {device_class}: claims outside tenant "
            f"namespaces must not ask for a DeviceClass of tenants' DRA pools only ({MIG_CLASS}, "
            f"{WHOLE_CLASS}, gpushare-t4-16gb): those devices are the tenants'; use a class of a pool no tenant lists"]
    for device_class in (A100_CLASS, "nic.example.com"):
        decision = cluster.admit(claim(exactly(device_class)), "team-x")
        assert decision.allowed, (device_class, decision.messages)


def test_claim_updates_are_matched_and_metadata_updates_pass(cluster):
    """A claim's spec is immutable (the API server refuses a change); a label update passes the policy, and an update
    that would change the spec is judged."""
    stored = claim(exactly(MIG_CLASS))
    relabelled = copy.deepcopy(stored)
    relabelled["metadata"]["labels"] = {"app": "x"}
    assert cluster.admit(relabelled, "vision", operation="UPDATE", old=stored).allowed
    assert not cluster.admit(claim(exactly(WHOLE_CLASS)), "vision", operation="UPDATE", old=stored).allowed
