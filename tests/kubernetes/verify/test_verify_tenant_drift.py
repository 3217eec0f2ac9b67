"""`gpushare.kubernetes.verify.tenant_drift`: rendered tenant objects against the live ones."""

from __future__ import annotations

from gpushare.kubernetes.verify.tenant_drift import manifest_findings, object_ref


QUOTA = {"apiVersion": "v1", "kind": "ResourceQuota",
         "metadata": {"name": "gpushare-gpu-quota", "namespace": "team-a", "labels": {"gpushare.io/tenant": "team-a"}},
         "spec": {"hard": {"requests.nvidia.com/gpu.shared": 8, "limits.memory": "1024Mi"}}}
POLICY = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
          "metadata": {"name": "gpushare-tenant-team-a"},
          "spec": {"failurePolicy": "Fail", "validations": [{"expression": "true", "message": "ok"}]}}


def live_copy(manifest: dict, **spec) -> dict:
    """The object as the API server returns it: metadata and spec defaults added, quantities canonicalised."""
    metadata = {**manifest["metadata"], "uid": "u-1", "resourceVersion": "7",
                "labels": {**manifest["metadata"].get("labels", {}), "kubernetes.io/metadata.name": "x"}}
    return {**manifest, "metadata": metadata, "spec": {**manifest["spec"], **spec}, "status": {}}


def test_rendered_objects_as_deployed_pass_despite_api_defaults_and_canonical_quantities():
    live = {
        object_ref(QUOTA): live_copy(QUOTA, hard={"requests.nvidia.com/gpu.shared": "8", "limits.memory": "1Gi"}),
        object_ref(POLICY): live_copy(POLICY, matchConstraints={"matchPolicy": "Equivalent"}),
    }
    assert manifest_findings("tenants", [QUOTA, POLICY], live) == []


def test_a_missing_or_changed_rendered_object_is_a_mismatch():
    live = {
        object_ref(QUOTA): live_copy(QUOTA, hard={"requests.nvidia.com/gpu.shared": "4", "limits.memory": "1Gi"}),
        object_ref(POLICY): None,
    }
    assert [f.problem for f in manifest_findings("tenants", [QUOTA, POLICY], live)] == [
        "ResourceQuota team-a/gpushare-gpu-quota differs from the plan: spec.hard.requests.nvidia.com/gpu.shared: "
        "'4' in the cluster, 8 rendered",
        "ValidatingAdmissionPolicy gpushare-tenant-team-a not found",
    ]
