"""`verify --smoke` on DRA pools against a real Kubernetes 1.36 control plane with the stack's policies deployed as
`plan --json` renders them: on a DRA pool no tenant lists, the real API server admits the smoke ResourceClaimTemplate
(the one gpushare renders for a tenant of the pool) and the pod claiming it in the smoke namespace, the
resource-claim controller makes the claim, and the real scheduler allocates it from the pool's published slice and
binds the pod to the pool's node; on a tenant's DRA pool the shared-pool policy refuses the template, so verify skips
those pools. No kubelet, so the pod stays Pending on its node (its run and log: tests/kubernetes/verify/
test_verify_dra_smoke.py against the kube stub)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
import yaml

from gpushare.cli import main
from gpushare.kubernetes import cluster_read
from gpushare.kubernetes.verify.expectations import pool_expectations
from gpushare.kubernetes.verify.smoke import smoke_skips, smoke_targets
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
from tests.controlplane.dra_slices import publish_slices

VISION_GROUP = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
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
      count: 1
      sharing: {{strategy: mps, replicas: 2}}
    - name: a100shared
      vmSize: Standard_NC24ads_A100_v4
      allocation: dra
      count: 1
  gpushare:tenants:
    - name: vision
      pools: [h100mps]
      quota: {{{MIG_CLASS}: 2}}
      groups: [{VISION_GROUP}]
"""
VISION = group_user(VISION_GROUP)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    """(control plane, stack, pool -> node names): the plan's objects applied, the slices published."""
    path = tmp_path_factory.mktemp("dra-smoke") / "Pulumi.dra.yaml"
    path.write_text(STACK_YAML)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", str(path), "--json"]) == 0
    document = json.loads(out.getvalue())
    stack = parse_config(yaml.safe_load(STACK_YAML)["config"], source=str(path), stack="dra")
    plane = start_control_plane({VISION: [VISION_GROUP]}, controllers=(*CONTROLLERS, "resourceclaim-controller"))
    try:
        nodes = register_nodes(plane, stack)
        apply_rendered(plane, stack, document)
        publish_slices(plane, stack, nodes)
        yield plane, stack, nodes
    finally:
        stop_control_plane(plane)


def test_the_smoke_pod_on_an_unlisted_dra_pool_gets_its_device_and_a_tenants_pool_is_refused(deployed):
    plane, stack, nodes = deployed
    assert list(smoke_skips(stack)) == ["h100mps"]
    api, _ = cluster_read.api_client(plane.kubeconfig(), None)
    progress: list[str] = []
    # Every pool, the tenant's too: what verify skips is what the shared policy refuses.
    results = {r.pool: r for r in cluster_read.run_smoke(api, smoke_targets(stack, pool_expectations(stack)),
                                                         timeout=8, poll_interval=0.5, progress=progress.append)}
    shared = results["a100shared"]
    # Bound: the scheduler binds a pod with a claim only once the claim (made from the smoke template) is allocated.
    assert (shared.phase, shared.node, shared.allocation) == ("Pending", nodes["a100shared"][0], "dra"), shared
    tenants = results["h100mps"]
    assert tenants.phase == "Rejected", tenants
    assert "ValidatingAdmissionPolicy 'gpushare-shared-gpu-pools'" in tenants.detail
    # The API server cuts a long denial short; the start names the class the template asks for.
    asks = f"ResourceClaimTemplate spec.spec.devices.requests[0] (gpu) asks for DeviceClass {MIG_CLASS}"
    assert asks in tenants.detail, tenants.detail
    assert tenants.finding().problem.startswith("the API server refused the smoke pod or its ResourceClaimTemplate: ")
    namespace = progress[0].split("namespace ")[1].split(",")[0]
    # Deleted: gone, or Terminating while its pod, which no kubelet confirms stopped, is deleted.
    try:
        assert plane.get("v1", "Namespace", namespace)["status"]["phase"] == "Terminating"
    except ApiError as error:
        assert error.status == 404
