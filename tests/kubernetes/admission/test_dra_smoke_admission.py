"""`verify --smoke` on DRA pools, judged by the API server's own ValidatingAdmissionPolicy plugin (`tools/vapcheck`)
with every policy gpushare deploys: in a smoke namespace (no tenant's), the shared-pool policy admits the smoke
ResourceClaimTemplate, the claim the resource-claim controller makes from it and the pod that claims it on a DRA pool no
tenant lists (the cluster's shared pools), and refuses them on a tenant's DRA pool: those devices stay the tenants'."""

from __future__ import annotations

from gpushare.kubernetes.verify.expectations import pool_expectations
from gpushare.kubernetes.verify.smoke import smoke_skips, smoke_targets
from tests.kubernetes.admission.test_dra_admission import (
    A100_CLASS,
    CLAIM_CONTROLLER,
    MIG_CLASS,
    claim,
    cluster,  # noqa: F401 (the fixture: every policy of the DRA stack, judged by the plugin)
    stack,  # noqa: F401 (the fixture: the same DRA stack)
)

SMOKE_NS = "gpushare-smoke-5e7a01"


def smoke_objects(stack, pool: str) -> tuple[dict, dict]:
    """(claim template, pod) verify --smoke creates for `pool`."""
    (target,) = [t for t in smoke_targets(stack, pool_expectations(stack)) if t.pool == pool]
    template, pod = target.manifests(SMOKE_NS)
    return template, pod


def test_the_smoke_objects_on_a_dra_pool_no_tenant_lists_are_admitted(stack, cluster):
    assert "a100dra" not in smoke_skips(stack)
    template, pod = smoke_objects(stack, "a100dra")
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == A100_CLASS
    decision = cluster.admit(template, SMOKE_NS)
    assert decision.allowed, decision.messages
    made = claim(template["spec"]["spec"]["devices"], name="smoke-a100dra-gpu-x7k2q")
    decision = cluster.admit(made, SMOKE_NS, user=CLAIM_CONTROLLER)
    assert decision.allowed, decision.messages
    decision = cluster.admit(pod, SMOKE_NS)
    assert decision.allowed, decision.messages


def test_the_smoke_objects_on_a_tenants_dra_pool_are_refused(stack, cluster):
    """verify skips these pools (`smoke_skips`); were they created, the shared policy would refuse both."""
    assert smoke_skips(stack)["h100mps"].startswith("pool of tenant vision")
    template, pod = smoke_objects(stack, "h100mps")
    decision = cluster.admit(template, SMOKE_NS)
    assert not decision.allowed and decision.messages == [
        f"ResourceClaimTemplate spec.spec.devices.requests[0] (gpu) asks for DeviceClass {MIG_CLASS}: claims outside "
        f"tenant namespaces must not ask for a DeviceClass of tenants' DRA pools only ({MIG_CLASS}, "
        "gpushare-h100-nvl-94gb, gpushare-t4-16gb): those devices are the tenants'; use a class of a pool no tenant "
        "lists"]
    decision = cluster.admit(pod, SMOKE_NS)
    assert not decision.allowed and decision.messages == [
        "Pods that can run on GPU nodes (spec.tolerations[0] tolerates nvidia.com/gpu) in namespace "
        f"{SMOKE_NS} must set nodeSelector gpushare.io/pool to one of: a100dra (the pools no tenant lists); got "
        "h100mps"]


def test_without_its_void_visible_devices_the_dra_smoke_pod_is_refused(stack, cluster):
    """The pod asks for no extended resource: without NVIDIA_VISIBLE_DEVICES=void the NVIDIA runtime would hand it
    every GPU of the node (the device rules), so the env the smoke pod sets is what makes it admissible."""
    _, pod = smoke_objects(stack, "a100dra")
    del pod["spec"]["containers"][0]["env"]
    decision = cluster.admit(pod, SMOKE_NS)
    assert not decision.allowed
    assert decision.messages[0].startswith("spec.containers[0] (nvidia-smi): containers that request no GPU in pods "
                                           "outside tenant namespaces that can run on GPU nodes must set env "
                                           "NVIDIA_VISIBLE_DEVICES=void"), decision.messages
