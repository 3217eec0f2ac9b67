"""KueueQueues under the mock engine: Kueue's Helm release and every queue object, verbatim, after what they need."""

from __future__ import annotations

import json

import pulumi
import pulumi_kubernetes as k8s
import pytest

from gpushare.components.kueue_queues import KueueQueues, KueueQueuesArgs
from gpushare.components.tenant import GpuTenant, GpuTenantArgs
from gpushare.kubernetes.queues import queue_manifests
from gpushare.plan.stack_plan import build_plan
from gpushare.render.mock_engine import Recording, run_pulumi
from tests.kubernetes.test_queues import load

STACK = load(**{"gpushare:queues": {"enabled": True, "fairSharing": True}})
RELEASE = "kubernetes:helm.sh/v3:Release"


def deploy() -> Recording:
    def program():
        provider = k8s.Provider("cluster-provider", kubeconfig="apiVersion: v1")
        role_assignment = k8s.core.v1.ConfigMap("deployer-role", opts=pulumi.ResourceOptions(provider=provider))
        plan = build_plan(STACK)
        assert plan.queues is not None
        tenants = {name: GpuTenant(f"tenant-{name}", GpuTenantArgs(
            objects=objects, provider=provider, depends_on=[role_assignment])) for name, objects in plan.tenants.items()}
        queues = KueueQueues("kueue", KueueQueuesArgs(release=plan.queues.release, manifests=plan.queues.manifests,
                                                      provider=provider, tenants=tenants, depends_on=[role_assignment]))
        pulumi.export("cluster-queues", queues.cluster_queues)
        pulumi.export("kueue-namespace", queues.namespace)

    return run_pulumi(program)


@pytest.fixture(scope="module")
def recording() -> Recording:
    return deploy()


def test_every_queue_object_registers_verbatim_after_kueues_release(recording):
    registered = {(r.inputs["kind"], r.inputs["metadata"]["name"]): r for r in recording.resources
                  if r.parent == "kueue" and r.type.startswith("kubernetes:kueue.x-k8s.io/")}
    expected = queue_manifests(STACK)
    assert len(registered) == len(expected) == 16
    for manifest in expected:
        resource = registered[(manifest["kind"], manifest["metadata"]["name"])]
        assert resource.type == f"kubernetes:kueue.x-k8s.io/v1beta2:{manifest['kind']}"
        assert resource.inputs == manifest
        assert resource.provider == "cluster-provider"
        # The chart installs the CRDs: nothing of Kueue's API exists before the release.
        assert {"kueue-release", "deployer-role"} <= set(resource.depends_on)
        if manifest["kind"] == "LocalQueue":
            assert f"tenant-{manifest['metadata']['namespace']}-namespace" in resource.depends_on


def test_kueue_is_installed_from_its_chart_with_fair_sharing_on(recording):
    release = recording.get(RELEASE, "kueue-release")
    assert release.parent == "kueue"
    assert (release.inputs["chart"], release.inputs["version"]) == ("oci://registry.k8s.io/kueue/charts/kueue",
                                                                    "0.19.2")
    assert release.inputs["namespace"] == "kueue-system"
    config = json.loads(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert config["fairSharing"] == {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]}
    # No node selector or toleration: no GPU taint is tolerated, so the controller runs on the system pool.
    assert "controllerManager" not in release.inputs["values"]


def test_the_configuration_enables_only_the_integrations_the_stack_uses_in_the_tenants_namespaces():
    """The chart enables twelve integrations, `pod` among them with a Fail webhook on every namespace but two: the
    release keeps Kueue to Jobs and pods, in the tenants' namespaces, and leaves fair sharing off unless asked."""
    stack = load()
    from gpushare.kubernetes.queues import kueue_release

    config = json.loads(kueue_release(stack).values["managerConfig"]["controllerManagerConfigYaml"])
    assert config["integrations"] == {"frameworks": ["batch/job", "pod"]}
    assert config["managedJobsNamespaceSelector"] == {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["vision", "nlp", "speech"]}]}
    assert "fairSharing" not in config
