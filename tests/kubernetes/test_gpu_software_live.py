"""`preflight --kubeconfig` on an existing cluster: another GPU Operator or NVIDIA device plugin already there, read
with the real `kubernetes` client from the local API server stub, and the cluster's own AKS-managed GPU pools, read
with the real Azure SDK from the ARM stub. Two device plugins on one node break it: refused, with the fix; one that
stays off gpushare's pools is a warning."""

from __future__ import annotations

import json

import pytest

from gpushare.cli import main
from tests.azure.preflight_region import REGION, T4, serve_region
from tests.azure_stub import StubResponse, arm_agent_pool, reached_arm, serve_existing_cluster
from tests.kube_stub import KubeStub, object_list, status
from tests.stack_files import write_stack

SUB = "3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3"
CLUSTER, RG = "platform-aks", "rg-platform"
DAEMON_SETS, POLICIES = "/apis/apps/v1/daemonsets", "/apis/nvidia.com/v1/clusterpolicies"
NAMESPACE = "/api/v1/namespaces/gpu-operator"
NOT_FOUND = StubResponse(404, status(404, "NotFound", "the server could not find the requested resource"))


def device_plugin(namespace: str, name: str, tolerations: list[dict], **pod_spec: object) -> dict:
    return {"kind": "DaemonSet", "apiVersion": "apps/v1",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"name": name}}, "template": {
                "metadata": {"labels": {"name": name}},
                "spec": {"tolerations": tolerations, **pod_spec, "containers": [
                    {"name": "nvidia-device-plugin-ctr", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}]}}}}


# NVIDIA's static manifest (k8s-device-plugin nvidia-device-plugin.yml): tolerates nvidia.com/gpu with Exists.
NVIDIA_STATIC = device_plugin("kube-system", "nvidia-device-plugin-daemonset",
                              [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
# AKS's documented copy (aks-docs use-nvidia-gpu.md): tolerates the `sku=gpu` taint AKS's docs put on GPU pools.
AKS_DOCS = device_plugin("gpu-resources", "nvidia-device-plugin-daemonset",
                         [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}])
# NVIDIA's Helm chart: tolerates nvidia.com/gpu, and requires an NVIDIA node by NFD's or GFD's labels.
NVIDIA_HELM = device_plugin(
    "nvidia-device-plugin", "nvdp-nvidia-device-plugin",
    [{"key": "CriticalAddonsOnly", "operator": "Exists"},
     {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "feature.node.kubernetes.io/pci-10de.present", "operator": "In",
                               "values": ["true"]}]},
        {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]}]}}})


def cluster_policy(release: str, namespace: str) -> dict:
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {
        "name": "cluster-policy", "labels": {"app.kubernetes.io/managed-by": "Helm"},
        "annotations": {"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": namespace}}}


def namespace(managed_by: str | None) -> dict:
    labels = {"app.kubernetes.io/managed-by": managed_by} if managed_by else {}
    return {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "gpu-operator", "labels": labels}}


@pytest.fixture
def arm(monkeypatch):
    with reached_arm(monkeypatch, SUB) as stub:
        yield stub


@pytest.fixture
def kube():
    with KubeStub() as stub:
        yield stub


def stack_file(tmp_path) -> str:
    path = write_stack(tmp_path, 
        f"config:\n  azure-native:location: {REGION}\n  gpushare:cluster:\n    name: {CLUSTER}\n"
        f"    resourceGroup: {RG}\n    existing: true\n  gpushare:pools:\n"
        f"    - {{name: t4ts, vmSize: {T4}, autoscale: {{min: 1, max: 8}}}}\n", "Pulumi.existing.yaml")
    return str(path)


def preflight(arm, kube, tmp_path, capsys, *, daemon_sets=(), policies=None, gpushare_namespace=None,
              owner_pools=(), expect: int = 0, kubeconfig: bool = True) -> dict[str, dict]:
    serve_region(arm, SUB, RG, CLUSTER, pools=StubResponse(200, {"value": [
        arm_agent_pool(SUB, RG, CLUSTER, "system", vmSize="Standard_D8ds_v5", count=3, mode="System"),
        *owner_pools]}))
    serve_existing_cluster(arm, SUB, RG, CLUSTER)
    kube.route("GET", DAEMON_SETS, StubResponse(200, object_list("DaemonSetList", *daemon_sets,
                                                                 api_version="apps/v1")))
    kube.route("GET", POLICIES, NOT_FOUND if policies is None else StubResponse(200, object_list(
        "ClusterPolicyList", *policies, api_version="nvidia.com/v1")))
    kube.route("GET", NAMESPACE, NOT_FOUND if gpushare_namespace is None else StubResponse(200, gpushare_namespace))
    args = ["preflight", stack_file(tmp_path), "--json"]
    if kubeconfig:
        args += ["--kubeconfig", str(kube.kubeconfig(tmp_path))]
    assert main(args) == expect
    return {c["subject"]: c for c in json.loads(capsys.readouterr().out)["checks"] if c["check"] == "gpu-software"}


def test_nvidias_device_plugin_already_on_the_cluster_is_refused_naming_the_pool_and_the_fix(
        arm, kube, tmp_path, capsys):
    rows = preflight(arm, kube, tmp_path, capsys, daemon_sets=[NVIDIA_STATIC], expect=1)

    row = rows["DaemonSet kube-system/nvidia-device-plugin-daemonset"]
    assert row["verdict"] == "fail"
    assert "admit the nodes of pool t4ts: each would run it beside the GPU Operator's device plugin" in row["detail"]
    assert row["fix"].startswith("remove it (kubectl delete daemonset -n kube-system nvidia-device-plugin-daemonset;")
    assert kube.count("GET", DAEMON_SETS) == kube.count("GET", POLICIES) == 1


def test_nvidias_helm_chart_selecting_nvidia_nodes_by_nfd_labels_is_refused(arm, kube, tmp_path, capsys):
    rows = preflight(arm, kube, tmp_path, capsys, daemon_sets=[NVIDIA_HELM], expect=1)

    assert rows["DaemonSet nvidia-device-plugin/nvdp-nvidia-device-plugin"]["verdict"] == "fail"


def test_a_device_plugin_kept_off_gpushares_pools_is_a_warning(arm, kube, tmp_path, capsys):
    elsewhere = device_plugin("kube-system", "owners-device-plugin",
                              [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                              nodeSelector={"kubernetes.azure.com/agentpool": "ownersgpu"})
    by_affinity = device_plugin(
        "kube-system", "owners-affine-plugin", [{"operator": "Exists"}],
        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "gpushare.io/pool", "operator": "DoesNotExist"}]}]}}})
    rows = preflight(arm, kube, tmp_path, capsys, daemon_sets=[AKS_DOCS, elsewhere, by_affinity])

    assert {subject: row["verdict"] for subject, row in rows.items()} == {
        "DaemonSet gpu-resources/nvidia-device-plugin-daemonset": "warn",
        "DaemonSet kube-system/owners-device-plugin": "warn",
        "DaemonSet kube-system/owners-affine-plugin": "warn"}


def test_gpu_feature_discovery_from_the_device_plugins_image_is_no_device_plugin(arm, kube, tmp_path, capsys):
    gfd = device_plugin("nvidia-device-plugin", "nvdp-gpu-feature-discovery",
                        [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    gfd["spec"]["template"]["spec"]["containers"][0].update(name="gpu-feature-discovery-ctr",
                                                             command=["/usr/bin/gpu-feature-discovery"])
    rows = preflight(arm, kube, tmp_path, capsys, daemon_sets=[gfd])

    assert [(s, r["verdict"]) for s, r in rows.items()] == [("cluster", "pass")]


def test_another_gpu_operator_is_refused_and_gpushares_own_is_not(arm, kube, tmp_path, capsys):
    rows = preflight(arm, kube, tmp_path, capsys, policies=[cluster_policy("gpu-operator-1712", "gpu-operator")],
                     gpushare_namespace=namespace(None), expect=1)

    row = rows["ClusterPolicy cluster-policy"]
    assert row["verdict"] == "fail"
    assert row["detail"].startswith("a GPU Operator is already installed (Helm release gpu-operator-1712 in namespace "
                                    "gpu-operator)")
    assert row["fix"].startswith("remove it before the first `up` (helm uninstall gpu-operator-1712 -n gpu-operator)")

    # After gpushare's first `up`: its release's ClusterPolicy and device plugin, in its own namespace.
    ours = device_plugin("gpu-operator", "nvidia-device-plugin-daemonset",
                         [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    rows = preflight(arm, kube, tmp_path, capsys, daemon_sets=[ours],
                     policies=[cluster_policy("gpu-operator", "gpu-operator")],
                     gpushare_namespace=namespace("gpushare"))
    assert [(s, r["verdict"]) for s, r in rows.items()] == [("cluster", "pass")]


def test_without_a_kubeconfig_preflight_says_it_did_not_look(arm, kube, tmp_path, capsys):
    rows = preflight(arm, kube, tmp_path, capsys, daemon_sets=[NVIDIA_STATIC], kubeconfig=False)

    assert rows["cluster"]["verdict"] == "warn" and "--kubeconfig" in rows["cluster"]["fix"]
    assert kube.requests == []


def managed_pool(**properties: object) -> dict:
    return arm_agent_pool(SUB, RG, CLUSTER, "ownersgpu", vmSize="Standard_NC6s_v3", count=2, mode="User",
                          gpuProfile={"driver": "Install", "nvidia": {"managementMode": "Managed"}}, **properties)


def test_an_untainted_aks_managed_gpu_pool_is_refused(arm, kube, tmp_path, capsys):
    rows = preflight(arm, kube, tmp_path, capsys, owner_pools=[managed_pool()], expect=1)

    row = rows["pool ownersgpu (Standard_NC6s_v3)"]
    assert row["verdict"] == "fail"
    assert "AKS runs the NVIDIA device plugin on its nodes" in row["detail"]
    assert (f"az aks nodepool update -g {RG} --cluster-name {CLUSTER} -n ownersgpu --node-taints sku=gpu:NoSchedule"
            in row["fix"])


def test_an_aks_managed_gpu_pool_tainted_as_aks_documents_passes(arm, kube, tmp_path, capsys):
    rows = preflight(arm, kube, tmp_path, capsys, owner_pools=[managed_pool(nodeTaints=["sku=gpu:NoSchedule"])])

    assert rows["pool ownersgpu (Standard_NC6s_v3)"]["verdict"] == "pass"


def test_an_owners_untainted_gpu_pool_is_warned_about(arm, kube, tmp_path, capsys):
    plain = arm_agent_pool(SUB, RG, CLUSTER, "ownersgpu", vmSize="Standard_NC6s_v3", count=2, mode="User")
    rows = preflight(arm, kube, tmp_path, capsys, owner_pools=[plain])

    assert rows["pool ownersgpu (Standard_NC6s_v3)"]["verdict"] == "warn"
