"""The DRA pools' DeviceClasses and ResourceClaimTemplates (`gpushare.sharing.dra`) created on the real control plane
(server-side dry run, so nothing stays): the API server's own validation of resource.k8s.io/v1, its CEL compile of
the selectors included, accepts every one, and refuses a planted mistake."""

from __future__ import annotations

import copy

import pytest

from gpushare.sharing import dra
from tests.controlplane.controlplane import ApiError, resource_path
from tests.sharing.test_dra import load


def dry_run_create(plane, obj, namespace=None):
    path = resource_path(obj["apiVersion"], obj["kind"], namespace) + "?dryRun=All&fieldValidation=Strict"
    return plane.request("POST", path, obj)


def test_the_api_server_accepts_every_device_class_and_claim_template(control_plane):
    stack = load()
    for device_class in dra.device_classes(stack):
        assert dry_run_create(control_plane, device_class)["metadata"]["name"] == device_class["metadata"]["name"]
    for template in dra.claim_templates(stack):
        # Into `default`: the tenants' namespaces are the tenant stack's, and validation does not depend on it.
        created = dry_run_create(control_plane, {**template, "metadata": {**template["metadata"],
                                                                           "namespace": "default"}}, "default")
        devices, written = created["spec"]["spec"]["devices"], template["spec"]["spec"]["devices"]
        assert devices["config"] == written["config"]  # the opaque config reaches the claim as gpushare wrote it
        assert devices["requests"] == [{"name": "gpu", "exactly": {**written["requests"][0]["exactly"],
                                                                   "allocationMode": "ExactCount"}}]


def test_the_api_server_refuses_a_selector_that_does_not_compile(control_plane):
    planted = copy.deepcopy(dra.device_classes(load())[0])
    planted["spec"]["selectors"][0]["cel"]["expression"] = "device.attributes['gpu.nvidia.com'].profile = '3g.47gb'"
    with pytest.raises(ApiError) as refused:
        dry_run_create(control_plane, planted)
    assert refused.value.status == 422 and "compilation failed" in refused.value.message
