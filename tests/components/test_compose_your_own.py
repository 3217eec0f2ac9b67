"""Composing the components yourself: README's "compose your own" program runs as written and registers, for the GPU
Operator and the tenant, exactly what `deploy()` registers for the same mapping; and each component registers from
hand-written args alone, with no stack file or stack mapping behind them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpushare.azure.agent_pool_request import AgentPoolRequest
from gpushare.components import (
    GpuNodePool,
    GpuNodePoolArgs,
    GpuOperator,
    GpuOperatorArgs,
    GpuTenant,
    GpuTenantArgs,
    KueueQueues,
    KueueQueuesArgs,
    SharedGpuPools,
    SharedGpuPoolsArgs,
)
from gpushare.components.showback import Showback, ShowbackArgs
from gpushare.kubernetes.queues import KueueRelease
from gpushare.kubernetes.tenant_objects import TenantObjects
from gpushare.model.metrics import Metrics
from gpushare.render.mock_engine import Recording, run_program, run_pulumi
from gpushare.sharing.operator_values import OperatorPlan
from gpushare.showback.deployed_objects import ShowbackObjects
from gpushare.stackfile.config import encode_engine_config

README = Path(__file__).resolve().parents[2] / "README.md"
START, END = "<!-- compose-example:start -->\n```python\n", "```\n<!-- compose-example:end -->"


def readme_program() -> str:
    text = README.read_text()
    return text[text.index(START) + len(START):text.index(END)]


def by_name(recording: Recording) -> dict[str, Any]:
    return {r.name: r for r in recording.resources}


def test_readme_compose_program_registers_the_operator_and_tenant_deploy_registers():
    namespace: dict[str, Any] = {"__name__": "__main__"}
    composed = by_name(run_pulumi(lambda: exec(compile(readme_program(), "README.md", "exec"), namespace),
                                  stack="ml", config={"gpushare:kubeconfig": "apiVersion: v1"}, secret_keys=(
                                      "gpushare:kubeconfig",)))
    plan = namespace["plan"]
    mapping = {"azure-native:location": "westeurope", "gpushare:cluster": dict(
        name="ml-platform", existing=True, resourceGroup="ml-rg"), "gpushare:pools": [
        {"name": "t4ts", "vmSize": "Standard_NC4as_T4_v3", "count": 1,
         "sharing": {"strategy": "time-slicing", "replicas": 4}}],
        "gpushare:tenants": [{"name": "vision", "pools": ["t4ts"]}]}
    assert plan.stack.pools[0].name == "t4ts" and list(plan.tenants) == ["vision"]
    deployed = by_name(run_program("ml", encode_engine_config(mapping)))
    shared = [name for name in composed if name.startswith(("gpu-operator-", "tenant-vision-"))]
    assert {"gpu-operator-release", "gpu-operator-configmap", "tenant-vision-namespace", "tenant-vision-policy",
            "tenant-vision-policy-binding"} <= set(shared)
    for name in shared:
        assert composed[name].type == deployed[name].type, name
        assert composed[name].inputs == deployed[name].inputs, name




def test_each_component_registers_from_hand_written_args():
    """No stack, no mapping: the args are all a component needs."""
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": "p"}, "spec": {"validations": [{"expression": "true"}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": "p"}, "spec": {"policyName": "p", "validationActions": ["Deny"]}}

    def program():
        provider = k8s.Provider("cluster", kubeconfig="apiVersion: v1")
        GpuNodePool("t4", GpuNodePoolArgs(
            request=AgentPoolRequest(inputs={"agent_pool_name": "t4", "vm_size": "Standard_NC4as_T4_v3",
                                             "count": 2, "mode": "User"},
                                     protect=True, ignore_changes=(), replace_on_changes=("vmSize",)),
            cluster_name="ml", resource_group_name="ml-rg"))
        operator = GpuOperator("gpu-operator", GpuOperatorArgs(plan=OperatorPlan(
            chart_version="v26.7.0", chart="gpu-operator", repository="https://helm.ngc.nvidia.com/nvidia",
            configs=(), config_map_data={"default": "version: v1\n"}, config_hash="0" * 64,
            values={"driver": {"enabled": False}}, changed_values=(), summary=()), provider=provider))
        tenant = GpuTenant("tenant-team", GpuTenantArgs(objects=TenantObjects(
            namespace={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}, quota=None,
            limit_range={"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "l", "namespace": "team"},
                         "spec": {"limits": []}}, edit_bindings={}, policy=policy, policy_binding=binding),
            provider=provider))
        SharedGpuPools("shared", SharedGpuPoolsArgs(policies=[(policy, binding)], provider=provider, tenants=[tenant]))
        KueueQueues("kueue", KueueQueuesArgs(
            release=KueueRelease(chart="oci://registry.k8s.io/kueue/charts/kueue", version="0.19.2",
                                 namespace="kueue-system", name="kueue", values={}),
            manifests=[{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "t4"},
                        "spec": {}}], provider=provider, tenants={}))
        Showback("showback", ShowbackArgs(
            objects=ShowbackObjects(metrics=Metrics(prometheus="http://prometheus:9090", operator=True),
                                    group={"name": "g", "interval": "1m", "rules": []}, description="d",
                                    location="westeurope", prometheus_rule={
                                        "apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
                                        "metadata": {"name": "g", "namespace": "monitoring"}, "spec": {"groups": []}},
                                    pod_monitor=None, dashboard=None),
            provider=provider, cluster_id="/subscriptions/s/x", cluster_name="ml", resource_group_name="ml-rg",
            operator_namespace=operator.kubernetes_namespace))
        pulumi.export("done", True)

    registered = by_name(run_pulumi(program))
    pool = registered["t4-agentpool"]
    assert pool.inputs["resourceName"] == "ml" and pool.inputs["vmSize"] == "Standard_NC4as_T4_v3"
    assert pool.protect and pool.replace_on_changes == ["vmSize"]
    assert registered["gpu-operator-configmap"].inputs["data"] == {"default": "version: v1\n"}
    assert registered["gpu-operator-release"].inputs["values"] == {"driver": {"enabled": False}}
    assert registered["tenant-team-namespace"].inputs["metadata"]["name"] == "team"
    assert "tenant-team-quota" not in registered
    assert registered["shared-binding"].depends_on == ["shared-policy", "tenant-team-policy-binding"]
    assert registered["kueue-resourceflavor-t4"].type == "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
    assert registered["showback-prometheus-rule"].inputs["metadata"]["namespace"] == "monitoring"



def test_a_pool_request_naming_the_existing_clusters_subnets_is_refused_until_wired():
    """On an existing cluster the plan's request names the cluster's subnets, which only the cluster's read gives."""
    from gpushare.azure.agent_pool_request import EXISTING_CLUSTER_SUBNET

    request = AgentPoolRequest(inputs={"agent_pool_name": "t4", "vnet_subnet_id": EXISTING_CLUSTER_SUBNET},
                               protect=True, ignore_changes=(), replace_on_changes=("vnetSubnetID",))
    recording = run_pulumi(lambda: GpuNodePool("t4", GpuNodePoolArgs(request=request, cluster_name="ml",
                                                                     resource_group_name="ml-rg")), check=False)
    assert isinstance(recording.error, ValueError) and "subnet_id=ExistingCluster.default_subnet_id" in str(
        recording.error)
    assert recording.resources == []
    wired = run_pulumi(lambda: GpuNodePool("t4", GpuNodePoolArgs(
        request=request, cluster_name="ml", resource_group_name="ml-rg", subnet_id="/subscriptions/s/subnets/a")))
    assert wired.get("azure-native:containerservice:AgentPool", "t4-agentpool").inputs["vnetSubnetID"] == (
        "/subscriptions/s/subnets/a")
