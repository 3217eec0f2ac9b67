"""GpuTenant and SharedGpuPools under the mock engine: what registers, through which provider, after what."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import pytest
import yaml

from gpushare.components.shared_gpu_pools import SharedGpuPools, SharedGpuPoolsArgs
from gpushare.components.tenant import GpuTenant, GpuTenantArgs
from gpushare.kubernetes.admission.policies import exempt_debug_policy, shared_pool_policy
from gpushare.kubernetes.tenant_objects import tenant_objects
from gpushare.kubernetes.tenant_objects import tenant_objects_by_role
from gpushare.plan.stack_plan import build_plan
from gpushare.render.mock_engine import Recording, run_pulumi
from gpushare.stackfile.config import parse_config

STACK = parse_config(yaml.safe_load("""
azure-native:location: westeurope
gpushare:cluster: {name: shared}
gpushare:pools:
  - {name: t4a, vmSize: Standard_NC4as_T4_v3}
  - {name: t4b, vmSize: Standard_NC4as_T4_v3}
gpushare:tenants:
  - {name: vision, pools: [t4a], quota: {nvidia.com/gpu: 2}, groups: [3f2504e0-4f89-41d3-9a0c-0305e82c3301]}
  - {name: nlp, pools: [t4a], guaranteed: false}
"""), source="s", stack="dev")
VISION, NLP = STACK.tenants


def deploy() -> Recording:
    def program():
        provider = k8s.Provider("cluster-provider", kubeconfig="apiVersion: v1")
        role_assignment = k8s.core.v1.ConfigMap("deployer-role", opts=pulumi.ResourceOptions(provider=provider))
        plan = build_plan(STACK)
        tenants = []
        for tenant in STACK.tenants:
            component = GpuTenant(f"tenant-{tenant.name}", GpuTenantArgs(
                objects=plan.tenants[tenant.name], provider=provider, depends_on=[role_assignment]))
            pulumi.export(f"{tenant.name}-namespace", component.namespace)
            pulumi.export(f"{tenant.name}-policy", component.policy_name)
            tenants.append(component)
        shared = SharedGpuPools("shared-gpu-pools", SharedGpuPoolsArgs(policies=plan.shared_policies,
                                                                       provider=provider, tenants=tenants))
        pulumi.export("shared-policy", shared.policy_name)

    return run_pulumi(program)


@pytest.fixture(scope="module")
def recording() -> Recording:
    return deploy()


def children(recording: Recording, parent: str):
    return [r for r in recording.resources if r.parent == parent]


def test_each_tenant_registers_its_objects_verbatim(recording):
    """What registers is `tenant_objects` exactly (what plan shows and verify looks for), field for field."""
    for tenant in STACK.tenants:
        registered = children(recording, f"tenant-{tenant.name}")
        expected = tenant_objects(STACK, tenant)
        assert len(registered) == len(expected)
        by_kind_name = {(r.inputs["kind"], r.inputs["metadata"]["name"]): r.inputs for r in registered}
        for manifest in expected:
            assert by_kind_name[(manifest["kind"], manifest["metadata"]["name"])] == manifest


def test_object_names_and_dependencies(recording):
    vision = {r.name: r for r in children(recording, "tenant-vision")}
    assert set(vision) == {"tenant-vision-namespace", "tenant-vision-quota", "tenant-vision-limits",
                           "tenant-vision-edit-3f2504e0-4f89-41d3-9a0c-0305e82c3301", "tenant-vision-policy",
                           "tenant-vision-policy-binding"}
    for name, resource in vision.items():
        assert resource.provider == "cluster-provider", name
        assert "deployer-role" in resource.depends_on, name
        if name not in ("tenant-vision-namespace", "tenant-vision-policy"):
            assert "tenant-vision-namespace" in resource.depends_on, name
    # The policy assumes the LimitRange's defaults for pod templates: it is bound only once they exist.
    assert {"tenant-vision-policy", "tenant-vision-limits"} <= set(vision["tenant-vision-policy-binding"].depends_on)


def test_a_tenant_without_quota_or_groups_gets_neither(recording):
    kinds = sorted(r.inputs["kind"] for r in children(recording, "tenant-nlp"))
    assert kinds == ["LimitRange", "Namespace", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]


def test_the_shared_policy_registers_once_for_all_tenants(recording):
    shared = children(recording, "shared-gpu-pools")
    inputs = {r.name: r.inputs for r in shared}
    assert inputs == dict(zip(["shared-gpu-pools-policy", "shared-gpu-pools-binding", "shared-gpu-pools-debug-policy",
                               "shared-gpu-pools-debug-binding"], shared_pool_policy(STACK) + exempt_debug_policy(STACK)))
    assert "shared-gpu-pools-debug-policy" in next(r for r in shared if r.name == "shared-gpu-pools-debug-binding"
                                                   ).depends_on
    binding = next(r for r in shared if r.name == "shared-gpu-pools-binding")
    assert "shared-gpu-pools-policy" in binding.depends_on
    # It stops judging the tenants' namespaces: only once their own bindings exist (the real engine runs
    # independent steps in parallel, tests/engine).
    assert {"tenant-vision-policy-binding", "tenant-nlp-policy-binding"} <= set(binding.depends_on)
    assert all(r.provider == "cluster-provider" for r in shared)


def test_outputs(recording):
    assert recording.exports == {"vision-namespace": "vision", "vision-policy": "gpushare-tenant-vision",
                                 "nlp-namespace": "nlp", "nlp-policy": "gpushare-tenant-nlp",
                                 "shared-policy": "gpushare-shared-gpu-pools"}


@pytest.mark.parametrize(("strategy", "hard"), [("single", "requests.nvidia.com/gpu"),
                                                ("mixed", "requests.nvidia.com/mig-1g.12gb")])
def test_quota_keys_follow_the_mig_strategy(strategy, hard):
    """Under `single` MIG slices are advertised as nvidia.com/gpu, under `mixed` by slice: the quota must name the
    resource the pods actually request, or it limits nothing."""
    resource = hard.removeprefix("requests.")
    stack = parse_config(yaml.safe_load(f"""
azure-native:location: westeurope
gpushare:cluster: {{name: shared}}
gpushare:operator: {{migStrategy: {strategy}}}
gpushare:pools: [{{name: h100mig, vmSize: Standard_NC40ads_H100_v5, mig: MIG1g}}]
gpushare:tenants: [{{name: vision, pools: [h100mig], quota: {{{resource}: 7}}}}]
"""), source="s", stack="dev")

    def program():
        provider = k8s.Provider("cluster-provider", kubeconfig="apiVersion: v1")
        GpuTenant("tenant-vision", GpuTenantArgs(objects=tenant_objects_by_role(stack, stack.tenants[0]),
                                                 provider=provider))

    quota = run_pulumi(program).get("kubernetes:core/v1:ResourceQuota", "tenant-vision-quota")
    assert quota.inputs["spec"] == {"hard": {hard: "7"}}


def test_dropping_a_tenant_leaves_its_namespace_and_workloads(recording):
    namespace = recording.get("kubernetes:core/v1:Namespace", "tenant-vision-namespace")
    assert namespace.retain_on_delete
    others = [r for r in children(recording, "tenant-vision") if r.name != "tenant-vision-namespace"]
    assert not any(r.retain_on_delete for r in others)
