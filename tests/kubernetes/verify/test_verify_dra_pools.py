"""`verify` on DRA pools: each Ready node of a DRA pool has one ResourceSlice of NVIDIA's DRA driver with the pool's
devices (the MIG profile, on each parent GPU) and no device plugin. The slices are the ones the control-plane tier
publishes for the fake nodes, shaped as the driver v0.5.0 publishes them (`tests/controlplane/dra_slices.py`, which
cites its source); the whole command runs against the kube stub (tests/kube_stub.py) with the real `kubernetes`
client."""

from __future__ import annotations

import copy
import json
from datetime import timedelta

import pytest
import yaml

from gpushare.cli import main
from gpushare.kubernetes.verify.expectations import (
    DEVICE_PLUGIN_DS,
    OPERATOR_DAEMONSETS,
    dra_pool_expectations,
    pool_expectations,
)
from gpushare.kubernetes.verify.verify_report import evaluate
from gpushare.kubernetes.verify.findings import Verdict
from gpushare.model.stack import DEVICE_PLUGIN_DEPLOY_LABEL
from gpushare.sharing.operator_values import operator_plan
from gpushare.stackfile.config import parse_config
from tests.cli.test_verify_command import AKS_GPU_LABELS, serve
from tests.controlplane.dra_slices import driver_devices, resource_slice
from tests.kube_stub import KubeStub, StubResponse, daemon_set, node, object_list, pod
from tests.kubernetes.verify.verify_stacks import NOW, snapshot
from tests.stack_files import write_stack

STACK_YAML = """\
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: gpushare-dra}
  gpushare:pools:
    - {name: h100mps, vmSize: Standard_NC40ads_H100_v5, mig: MIG3g, allocation: dra, count: 2,
       sharing: {strategy: mps, replicas: 2}}
    - {name: a100whole, vmSize: Standard_NC24ads_A100_v4, allocation: dra, count: 1}
    - {name: t4ts, vmSize: Standard_NC4as_T4_v3, count: 1, sharing: {strategy: time-slicing, replicas: 4}}
"""
H100 = ("aks-h100mps-31842-vmss000000", "aks-h100mps-31842-vmss000001")
A100 = "aks-a100whole-31842-vmss000000"
T4 = "aks-t4ts-31842-vmss000000"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
NS = "gpu-operator"


@pytest.fixture(scope="module")
def stack():
    return parse_config(yaml.safe_load(STACK_YAML)["config"], source="stacks/Pulumi.dra.yaml", stack="dra")


def pools(stack):
    return {p.name: p for p in stack.pools}


def dra_node(name: str, pool: str, **overrides) -> dict:
    """A DRA pool's node as AKS labels it from the plan (the device plugin's deploy label `false`): no GPU resource,
    no device-plugin config label."""
    labels = {**AKS_GPU_LABELS, "gpushare.io/pool": pool, DEVICE_PLUGIN_DEPLOY_LABEL: "false",
              **overrides.pop("labels", {})}
    return node(name, labels, overrides.pop("allocatable", {}), **overrides)


def t4_node(stack) -> dict:
    key = next(c.key for c in operator_plan(stack).configs if c.pool == "t4ts")
    return node(T4, {**AKS_GPU_LABELS, "gpushare.io/pool": "t4ts", "nvidia.com/device-plugin.config": key,
                     "nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.replicas": "4",
                     "nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/mig.strategy": "single"},
                {"nvidia.com/gpu.shared": "4"})


def slice_of(name: str, pool, index: int = 0, **spec) -> dict:
    """The driver's slice of node `name`, as the API server returns it (named, generateName resolved)."""
    found = resource_slice({"metadata": {"name": name, "uid": f"uid-{name}"}}, pool, index)
    found["metadata"]["name"] = found["metadata"].pop("generateName") + "x7k2p"
    found["spec"].update(spec)
    return found


def healthy(stack) -> tuple[list[dict], list[dict]]:
    """(nodes, slices) of a cluster as the plan expects it."""
    by_name = pools(stack)
    nodes = [dra_node(H100[0], "h100mps"), dra_node(H100[1], "h100mps"), dra_node(A100, "a100whole"), t4_node(stack)]
    slices = [slice_of(H100[0], by_name["h100mps"], 0), slice_of(H100[1], by_name["h100mps"], 1),
              slice_of(A100, by_name["a100whole"])]
    return nodes, slices


def operator_pods() -> list[dict]:
    """The operator's pods where it runs them: GFD and the validator on every GPU node, the device plugin on the
    device-plugin pool's only."""
    return [pod(NS, DEVICE_PLUGIN_DS, T4)] + [pod(NS, ds, name) for ds in OPERATOR_DAEMONSETS
                                              if ds != DEVICE_PLUGIN_DS for name in (*H100, A100, T4)]


def judge(stack, nodes, slices, pods=None):
    snap = snapshot(nodes, pods=operator_pods() if pods is None else pods, config=stack)
    snap = type(snap)(**{**snap.__dict__, "resource_slices": slices})
    return evaluate(pool_expectations(stack), snap, dra_pool_expectations(stack))


def dra_findings(report, pool: str) -> list[str]:
    (result,) = [p for p in report.dra_pools if p.expectation.pool == pool]
    return [f"{'pending' if f.pending else 'mismatch'}: {f.problem} | {f.cause}" for f in result.findings]


def test_expectations_name_the_profile_the_parent_gpus_and_the_class(stack):
    by_pool = {e.pool: e for e in dra_pool_expectations(stack)}
    h100, a100 = by_pool["h100mps"], by_pool["a100whole"]
    assert (h100.device_type, h100.mig_profile, h100.gpus_per_node, h100.devices_per_gpu) == ("mig", "3g.47gb", 1, 2)
    assert h100.device_class == "gpushare-h100-nvl-94gb-mig-3g.47gb"
    assert (a100.device_type, a100.mig_profile, a100.gpus_per_node, a100.devices_per_gpu) == ("gpu", None, 1, 1)
    assert [e.pool for e in pool_expectations(stack)] == ["t4ts"]


def test_a_cluster_as_planned_passes(stack):
    report = judge(stack, *healthy(stack))
    assert report.verdict is Verdict.PASS, report.findings
    (h100, a100) = report.dra_pools
    assert [n.devices for n in h100.nodes] == ["2 x mig 3g.47gb on each of 1 GPU(s)"] * 2
    assert [(n.slices, n.devices) for n in a100.nodes] == [(1, "1 whole GPU(s)")]
    document = report.to_json()
    assert [p["pool"] for p in document["draPools"]] == ["h100mps", "a100whole"]
    assert document["draPools"][0]["expected"] == {"type": "mig", "profile": "3g.47gb", "gpusPerNode": 1,
                                                   "devicesPerGpu": 2}


def test_a_mig_pool_whose_gpus_are_not_partitioned(stack):
    nodes, slices = healthy(stack)
    slices[0]["spec"]["devices"] = driver_devices(pools(stack)["a100whole"])  # one whole GPU
    report = judge(stack, nodes, slices)
    assert report.verdict is Verdict.MISMATCH
    assert dra_findings(report, "h100mps") == [
        f"mismatch: node {H100[0]}'s ResourceSlice publishes 1 whole GPU(s), expected 2 x mig 3g.47gb on each of 1 "
        "GPU(s) | MIG is not enabled on the node's GPUs (AKS partitions them when it creates a MIG pool)"]


def test_another_mig_profile_names_both(stack):
    nodes, slices = healthy(stack)
    for device in slices[1]["spec"]["devices"]:
        device["attributes"]["profile"] = {"string": "1g.12gb"}
    (finding,) = dra_findings(judge(stack, nodes, slices), "h100mps")
    assert finding.startswith(f"mismatch: node {H100[1]}'s ResourceSlice publishes 2 x mig 1g.12gb on each of 1 GPU(s)")
    assert "partitioned as 1g.12gb, the pool's profile gives 3g.47gb" in finding


def test_a_missing_mig_device_or_a_mig_device_on_a_whole_gpu_pool(stack):
    nodes, slices = healthy(stack)
    slices[0]["spec"]["devices"] = slices[0]["spec"]["devices"][:1]
    slices[2]["spec"]["devices"] = driver_devices(pools(stack)["h100mps"])
    report = judge(stack, nodes, slices)
    (missing,) = dra_findings(report, "h100mps")
    assert "publishes 1 x mig 3g.47gb on each of 1 GPU(s)" in missing and "fewer or other devices" in missing
    (mig,) = dra_findings(report, "a100whole")
    assert "publishes 2 x mig 3g.47gb" in mig and "MIG is enabled on the node's GPUs, and the pool has no `mig`" in mig


def test_a_node_without_a_slice_fails_once_settled_and_is_pending_while_new(stack):
    nodes, slices = healthy(stack)
    report = judge(stack, nodes, slices[1:])
    assert dra_findings(report, "h100mps") == [
        f"mismatch: node {H100[0]} has no ResourceSlice of the DRA driver gpu.nvidia.com | the driver's kubelet "
        "plugin does not run on the node, or has not published its GPUs yet"]
    new = (NOW - timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    nodes[0] = dra_node(H100[0], "h100mps", ready_since=new)
    report = judge(stack, nodes, slices[1:])
    assert report.verdict is Verdict.PENDING
    assert dra_findings(report, "h100mps")[0].startswith("pending: ")


def test_a_device_plugin_on_a_dra_node_is_a_mismatch(stack):
    nodes, slices = healthy(stack)
    nodes[2] = dra_node(A100, "a100whole", labels={DEVICE_PLUGIN_DEPLOY_LABEL: "true"},
                        allocatable={"nvidia.com/gpu": "1"})
    report = judge(stack, nodes, slices, pods=[*operator_pods(), pod(NS, DEVICE_PLUGIN_DS, A100)])
    (finding,) = dra_findings(report, "a100whole")
    assert finding.startswith(
        f"mismatch: node {A100} is a DRA node with the device plugin on it ({DEVICE_PLUGIN_DEPLOY_LABEL}=true; "
        f"{DEVICE_PLUGIN_DS} pod {DEVICE_PLUGIN_DS}-00000 runs there; it advertises nvidia.com/gpu: 1)")


def test_two_slices_of_one_generation_fail_and_an_older_generation_is_ignored(stack):
    nodes, slices = healthy(stack)
    older = copy.deepcopy(slices[2])
    older["spec"]["pool"]["generation"] = 0
    older["spec"]["devices"] = []
    assert judge(stack, nodes, [*slices, older]).verdict is Verdict.PASS
    twin = copy.deepcopy(slices[2])
    (finding,) = dra_findings(judge(stack, nodes, [*slices, twin]), "a100whole")
    assert finding.startswith(f"mismatch: node {A100} has 2 ResourceSlices of gpu.nvidia.com, expected one")


# --- the whole command, against the kube stub ------------------------------------------------------------------


@pytest.fixture
def kube():
    with KubeStub() as stub:
        yield stub


def serve_dra(kube, stack, nodes, slices) -> None:
    sets = object_list("DaemonSetList", *(daemon_set(NS, ds, 4, 4) for ds in OPERATOR_DAEMONSETS),
                       api_version="apps/v1")
    serve(kube, nodes, operator_plan(stack).config_map_data, operator_pods(), sets)
    kube.route("GET", SLICES, StubResponse(200, object_list("ResourceSliceList", *slices,
                                                            api_version="resource.k8s.io/v1")))


def test_verify_reads_the_drivers_slices_and_passes_a_cluster_as_planned(kube, stack, tmp_path, capsys):
    path = write_stack(tmp_path, STACK_YAML, "Pulumi.dra.yaml")
    serve_dra(kube, stack, *healthy(stack))
    assert main(["verify", str(path), "--kubeconfig", str(kube.kubeconfig(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert ("pool h100mps (DRA): nodes 2/2 ready, expected one ResourceSlice of gpu.nvidia.com per node with 2 x mig "
            f"3g.47gb on each of 1 GPU(s), no device plugin, found 2 x mig 3g.47gb on each of 1 GPU(s) on {H100[0]}, "
            f"{H100[1]} -> PASS") in out
    assert "pool t4ts: nodes 1/1 ready" in out and out.rstrip().endswith("verdict: PASS")
    (request,) = [r for r in kube.requests if r.path == SLICES]
    assert request.query == {"fieldSelector": ["spec.driver=gpu.nvidia.com"]}


def test_verify_json_names_the_dra_pools_fault(kube, stack, tmp_path, capsys):
    path = write_stack(tmp_path, STACK_YAML, "Pulumi.dra.yaml")
    nodes, slices = healthy(stack)
    serve_dra(kube, stack, nodes, slices[:2])
    assert main(["verify", str(path), "--kubeconfig", str(kube.kubeconfig(tmp_path)), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    (a100,) = [p for p in document["draPools"] if p["pool"] == "a100whole"]
    assert a100["verdict"] == "mismatch" and a100["nodes"] == [
        {"name": A100, "ready": True, "slices": 0, "devices": "-"}]
    assert a100["findings"][0]["problem"] == f"node {A100} has no ResourceSlice of the DRA driver gpu.nvidia.com"


def test_a_stack_without_dra_pools_reads_no_slices(kube, tmp_path, capsys):
    plain = yaml.safe_load(STACK_YAML)
    plain["config"]["gpushare:pools"] = plain["config"]["gpushare:pools"][2:]
    stack = parse_config(plain["config"], source="stacks/Pulumi.dev.yaml", stack="dev")
    path = write_stack(tmp_path, yaml.safe_dump(plain), "Pulumi.dev.yaml")
    sets = object_list("DaemonSetList", *(daemon_set(NS, ds, 1, 1) for ds in OPERATOR_DAEMONSETS),
                       api_version="apps/v1")
    serve(kube, [t4_node(stack)], operator_plan(stack).config_map_data,
          [pod(NS, ds, T4) for ds in OPERATOR_DAEMONSETS], sets)
    assert main(["verify", str(path), "--kubeconfig", str(kube.kubeconfig(tmp_path)), "--json"]) == 0
    assert kube.count("GET", SLICES) == 0 and "draPools" not in json.loads(capsys.readouterr().out)
