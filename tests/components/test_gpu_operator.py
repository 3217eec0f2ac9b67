"""GpuOperator under the mock engine: the ConfigMap and Helm release it sends, and what the release waits for."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pulumi
import pytest
import yaml

from gpushare.azure.agent_pool_request import agent_pool_request
from gpushare.components.aks_cluster import AksCluster, AksClusterArgs
from gpushare.components.cluster_access import ClusterAccess, ClusterAccessArgs
from gpushare.components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from gpushare.components.gpu_operator import GpuOperator, GpuOperatorArgs
from gpushare.model.catalog import MigProfile
from gpushare.model.stack import GPU_TAINT, Access, Autoscale, Deployer, DriverOwner, PrincipalKind, StackConfig
from gpushare.render.mock_engine import Recording, run_pulumi
from gpushare.sharing.operator_values import operator_plan
from gpushare.sharing.pool_facts import derive_pool_facts
from tests.builders import CASES, mps, pool, stack, time_slicing, with_pool

PROVIDER = "pulumi:providers:kubernetes"
NAMESPACE = "kubernetes:core/v1:Namespace"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
RELEASE = "kubernetes:helm.sh/v3:Release"
AGENT_POOL = "azure-native:containerservice:AgentPool"
GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden" / "device_plugin"
DEPLOYER = "5c0f3e2a-8b71-4d9e-a6c4-2f1b7e9d3a58"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
"""The form ExtendedResourceToleration writes (`sharing.operator_values.toleration`)."""


def deploy(config: StackConfig) -> Recording:
    """The stack as the program wires it: cluster, chained GPU pools, and the operator from the cluster's kubeconfig."""
    deployed_by = dataclasses.replace(config.cluster, access=Access(deployers=(Deployer(DEPLOYER, PrincipalKind.USER),)))

    def program():
        cluster = AksCluster("cluster", AksClusterArgs(cluster=deployed_by, location=config.location))
        access = ClusterAccess("cluster-access", ClusterAccessArgs(
            resource_group_name=cluster.resource_group_name, cluster_name=cluster.cluster_name,
            cluster_id=cluster.resource_id))
        operator = GpuOperator("gpu-operator", GpuOperatorArgs(
            plan=operator_plan(config), provider=access.provider, depends_on=cluster.deployer_access))
        previous = None
        for gpu_pool in config.pools:
            request = agent_pool_request(derive_pool_facts(config)[gpu_pool.name], config.operator.driver,
                                         cluster_name=config.cluster.name, resource_group_name="rg")
            node_pool = GpuNodePool(gpu_pool.name, GpuNodePoolArgs(
                request=request, cluster_name=cluster.cluster_name, resource_group_name=cluster.resource_group_name,
                after=previous, device_config=operator.config_map))
            previous = node_pool.agent_pool
        for output in ("chart_version", "config_hash", "config_map_name", "namespace", "release_name"):
            pulumi.export(output, getattr(operator, output))

    return run_pulumi(program)


def release_values(recording: Recording) -> dict:
    return recording.get(RELEASE, "gpu-operator-release").inputs["values"]


@pytest.fixture(scope="module")
def recordings() -> dict[str, Recording]:
    return {case: deploy(config) for case, config in CASES.items()}


# --- ConfigMap ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_configmap_holds_the_golden_configs(recordings, case):
    config_map = recordings[case].get(CONFIG_MAP, "gpu-operator-configmap")
    golden = yaml.safe_load((GOLDEN_DIR / f"{case}.yaml").read_text())["data"]
    assert config_map.inputs["data"] == golden
    label = recordings[case].get(AGENT_POOL, f"{CASES[case].pools[0].name}-agentpool").inputs["nodeLabels"]
    assert set(golden) == {"default-whole-gpu", label["nvidia.com/device-plugin.config"]}
    assert config_map.inputs["metadata"]["name"] == "gpushare-device-plugin-config"
    assert config_map.inputs["metadata"]["namespace"] == "gpu-operator"
    assert (config_map.parent, config_map.provider) == ("gpu-operator", "cluster-access-provider")


@pytest.mark.parametrize(
    ("case", "resource", "sharing"),
    [("mig-single", None, None),
     ("mig-mixed-time-slicing", "nvidia.com/mig-2g.24gb", "timeSlicing"),
     ("t4-time-slicing", "nvidia.com/gpu", "timeSlicing"),
     ("t4-mps", "nvidia.com/gpu", "mps"),
     ("whole-gpu", None, None)],
    ids=list(CASES),
)
def test_pool_key_selects_its_sharing(recordings, case, resource, sharing):
    """The key is the pool's device-plugin.config node label; its config shares the resource the pool advertises."""
    config = CASES[case]
    agent_pool = recordings[case].get(AGENT_POOL, f"{config.pools[0].name}-agentpool")
    key = agent_pool.inputs["nodeLabels"]["nvidia.com/device-plugin.config"]
    doc = yaml.safe_load(recordings[case].get(CONFIG_MAP, "gpu-operator-configmap").inputs["data"][key])
    assert doc["flags"]["migStrategy"] == config.operator.mig_strategy.value
    if sharing is None:
        assert "sharing" not in doc
    else:
        assert list(doc["sharing"]) == [sharing]
        replicas = config.pools[0].sharing.replicas
        assert doc["sharing"][sharing]["resources"] == [{"name": resource, "replicas": replicas}]


# --- Helm release ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_release_installs_the_pinned_chart_with_stack_derived_values(recordings, case):
    config = CASES[case]
    release = recordings[case].get(RELEASE, "gpu-operator-release")
    inputs = release.inputs
    assert (inputs["chart"], inputs["version"], inputs["name"]) == ("gpu-operator", "v26.7.0", "gpu-operator")
    assert inputs["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
    assert inputs["namespace"] == "gpu-operator"
    assert "createNamespace" not in inputs
    assert (release.parent, release.provider) == ("gpu-operator", "cluster-access-provider")
    values = inputs["values"]
    assert values["mig"] == {"strategy": config.operator.mig_strategy.value}
    assert values["migManager"] == {"enabled": False}
    assert values["devicePlugin"]["config"] == {"name": "gpushare-device-plugin-config", "default": "default-whole-gpu"}
    assert "create" not in values["devicePlugin"]["config"]
    assert values["daemonsets"]["tolerations"] == [GPU_TOLERATION]
    assert values["node-feature-discovery"]["worker"]["tolerations"] == [GPU_TOLERATION]


@pytest.mark.parametrize(
    ("driver", "driver_enabled", "runtime_class", "gpu_profile"),
    [(DriverOwner.AKS, False, "nvidia-container-runtime", None),
     (DriverOwner.OPERATOR, True, "nvidia", {"driver": "None"})],
    ids=["aks-owns-driver", "operator-owns-driver"],
)
def test_driver_ownership_is_coherent_between_pools_and_chart(driver, driver_enabled, runtime_class, gpu_profile):
    config = dataclasses.replace(CASES["t4-mps"], operator=dataclasses.replace(CASES["t4-mps"].operator, driver=driver))
    recording = deploy(config)
    values = release_values(recording)
    assert values["driver"] == {"enabled": driver_enabled}
    assert values["toolkit"] == {"enabled": driver_enabled}
    assert values["operator"] == {"runtimeClass": runtime_class}
    assert recording.get(AGENT_POOL, "t4mps-agentpool").inputs.get("gpuProfile") == gpu_profile


def test_gpu_taint_on_pools_is_what_the_operator_tolerates(recordings):
    recording = recordings["mig-single"]
    taints = recording.get(AGENT_POOL, "a100mig-agentpool").inputs["nodeTaints"]
    assert taints == [GPU_TAINT]
    key, effect = taints[0].split("=")[0], taints[0].rsplit(":", 1)[1]
    assert release_values(recording)["daemonsets"]["tolerations"] == [
        {"key": key, "operator": "Exists", "effect": effect}]


# --- config rollout: content-addressed keys -------------------------------------------------------------------

BASE = stack(
    pool("a100mig", "Standard_ND96asr_v4", mig=MigProfile.MIG1G, sharing=time_slicing(2)),
    pool("t4mps", "Standard_NC64as_T4_v3", sharing=mps(10)),
)


def _labels(recording: Recording) -> dict[str, str]:
    """Each agent pool's device-plugin.config label, checked to name a key of the ConfigMap sent with it."""
    data = recording.get(CONFIG_MAP, "gpu-operator-configmap").inputs["data"]
    labels = {r.inputs["agentPoolName"]: r.inputs["nodeLabels"]["nvidia.com/device-plugin.config"]
              for r in recording.by_type(AGENT_POOL)}
    assert set(labels.values()) <= set(data)
    return labels


@pytest.mark.parametrize(
    ("change", "relabelled"),
    [(lambda c: with_pool(c, 1, count=None, autoscale=Autoscale(1, 6)), set()),
     (lambda c: with_pool(c, 0, count=3), set()),
     (lambda c: with_pool(c, 1, sharing=mps(12)), {"t4mps"}),
     (lambda c: with_pool(c, 0, sharing=time_slicing(4)), {"a100mig"})],
    ids=["same-on-autoscale", "same-on-count", "relabels-on-mps-replicas", "relabels-on-time-slicing-replicas"],
)
def test_a_config_change_relabels_exactly_the_changed_pool(change, relabelled):
    """The config-manager sidecars reload the plugin, GFD and MPS daemon on a label change, and only then: the
    nodes of a changed pool get a new label, every other node keeps its label and its running plugin."""
    base, changed = deploy(BASE), deploy(change(BASE))
    before, after = _labels(base), _labels(changed)
    assert {name for name in before if before[name] != after[name]} == relabelled
    values = release_values(changed)
    assert "env" not in values["devicePlugin"] and "gfd" not in values  # nothing restarts every GPU node
    assert values == release_values(base)


def test_pools_wait_for_the_configmap_their_label_names():
    """A label naming a key the ConfigMap lacks fails the config-manager (k8s-device-plugin v0.20.0
    cmd/config-manager `updateConfigName`: "specified config ... does not exist"), so the pool update comes after."""
    recording = deploy(BASE)
    for agent_pool in recording.by_type(AGENT_POOL):
        assert "gpu-operator-configmap" in agent_pool.depends_on, agent_pool.name
    assert recording.exports["config_hash"] == hashlib.sha256(json.dumps(
        recording.get(CONFIG_MAP, "gpu-operator-configmap").inputs["data"], sort_keys=True,
        separators=(",", ":")).encode()).hexdigest()


# --- dependency graph, provider, outputs ---------------------------------------------------------------------

def test_release_waits_for_configmap_and_cluster_not_for_gpu_pools(recordings):
    recording = recordings["t4-mps"]
    release = recording.get(RELEASE, "gpu-operator-release")
    assert "gpu-operator-configmap" in release.depends_on
    assert "gpu-operator-namespace" in release.depends_on
    pools = {r.name for r in recording.by_type(AGENT_POOL)} | {"t4mps"}
    assert pools & set(release.depends_on) == set()
    # The only way to the cluster is the provider, built from the cluster's credentials.
    provider = recording.get(PROVIDER, "cluster-access-provider")
    assert "cluster-aks" in provider.depends_on
    assert pools & set(provider.depends_on) == set()
    config_map = recording.get(CONFIG_MAP, "gpu-operator-configmap")
    assert "gpu-operator-namespace" in config_map.depends_on
    assert pools & set(config_map.depends_on) == set()


def test_every_kubernetes_object_waits_for_the_deployers_role_assignment(recordings):
    """Without the assignment the API server answers 403, which pulumi-kubernetes does not retry during `up`."""
    recording = recordings["t4-mps"]
    in_cluster = [r for r in recording.resources if r.custom and r.type.startswith("kubernetes:")]
    assert {r.type for r in in_cluster} == {NAMESPACE, CONFIG_MAP, RELEASE}
    for resource in in_cluster:
        assert f"cluster-deployer-{DEPLOYER}" in resource.depends_on, resource.name


def test_children_and_outputs(recordings):
    recording = recordings["t4-time-slicing"]
    children = [(r.type, r.name) for r in recording.resources if r.parent == "gpu-operator"]
    assert children == [(NAMESPACE, "gpu-operator-namespace"), (CONFIG_MAP, "gpu-operator-configmap"),
                        (RELEASE, "gpu-operator-release")]
    component = recording.get("gpushare:operator:GpuOperator", "gpu-operator")
    assert component.parent is None
    namespace = recording.get(NAMESPACE, "gpu-operator-namespace").inputs["metadata"]
    assert namespace["name"] == "gpu-operator"
    # Where Pod Security Admission enforces baseline/restricted, the operator's privileged DaemonSets need this.
    assert namespace["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    exports = recording.exports
    assert {k: v for k, v in exports.items() if k != "config_hash"} == {
        "chart_version": "v26.7.0", "config_map_name": "gpushare-device-plugin-config",
        "namespace": "gpu-operator", "release_name": "gpu-operator"}
    assert len(exports["config_hash"]) == 64

