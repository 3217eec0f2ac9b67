"""`python -m gpushare verify STACK`: the real `kubernetes` client against a local HTTPS Kubernetes API stub.

The healthy cluster below is written out literally from the device plugin's and GFD's documented behaviour
(resource names, counts, labels), not from gpushare's own expectations, so a wrong expectation fails here. Only the
device-plugin config keys come from the plan: they are content-addressed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpushare.cli import main
from gpushare.cli import verify as verify_command
from gpushare.kubernetes import cluster_read
from gpushare.sharing.operator_values import operator_plan
from gpushare.stackfile.config import parse_stack_file, read_stack_file
from tests.kube_stub import (
    FAKE_TOKEN,
    KubeStub,
    StubResponse,
    config_map,
    container_status,
    daemon_set,
    node,
    object_list,
    pod,
    status,
)

NS = "gpu-operator"
NODES = "/api/v1/nodes"
CONFIG_MAP = f"/api/v1/namespaces/{NS}/configmaps/gpushare-device-plugin-config"
DAEMON_SETS = f"/apis/apps/v1/namespaces/{NS}/daemonsets"
PODS = f"/api/v1/namespaces/{NS}/pods"
DEVICE_PLUGIN, GFD, MPS, VALIDATOR = (
    "nvidia-device-plugin-daemonset", "gpu-feature-discovery", "nvidia-device-plugin-mps-control-daemon",
    "nvidia-operator-validator",
)

DEV_STACK = """\
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: gpushare-dev}
  gpushare:pools:
    - name: t4ts
      vmSize: Standard_NC4as_T4_v3
      sharing: {strategy: time-slicing, replicas: 4}
      autoscale: {min: 1, max: 3}
    - name: t4mps
      vmSize: Standard_NC8as_T4_v3
      sharing: {strategy: mps, replicas: 4}
      count: 1
    - name: t4
      vmSize: Standard_NC4as_T4_v3
      autoscale: {min: 0, max: 2}
"""
MIG_STACK = """\
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: gpushare-prod}
  gpushare:operator: {migStrategy: mixed}
  gpushare:pools:
    - name: a100mig
      vmSize: Standard_ND96asr_v4
      mig: MIG1g
      count: 1
"""
T4TS_NODE, T4MPS_NODE, T4_NODE = "aks-t4ts-31842-vmss000000", "aks-t4mps-31842-vmss000000", "aks-t4-31842-vmss000000"
A100_NODE = "aks-a100mig-31842-vmss000000"


def config_keys(stack_path: Path) -> dict[str, str]:
    """pool -> its device-plugin ConfigMap key, and the ConfigMap data, as the plan renders them."""
    plan = operator_plan(parse_stack_file(read_stack_file(stack_path)))
    return {c.pool: c.key for c in plan.configs if c.pool}, plan.config_map_data


AKS_GPU_LABELS = {"kubernetes.azure.com/accelerator": "nvidia"}
"""What AKS puts on every GPU node (the cluster autoscaler's Azure GPU label)."""


def t4ts_node(key: str, **overrides) -> dict:
    # The stack autoscales a pool, so its shares are advertised as nvidia.com/gpu (renameByDefault false); GFD then
    # suffixes the product with -SHARED.
    labels = {
        **AKS_GPU_LABELS, "gpushare.io/pool": "t4ts", "nvidia.com/device-plugin.config": key,
        "nvidia.com/gpu.product": "Tesla-T4-SHARED", "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/mig.strategy": "single",
        "nvidia.com/mps.capable": "false",
    }
    allocatable = overrides.pop("allocatable", {"nvidia.com/gpu": "4"})
    return node(T4TS_NODE, overrides.pop("labels", labels), allocatable, **overrides)


def t4mps_node(key: str) -> dict:
    return node(T4MPS_NODE, {
        **AKS_GPU_LABELS, "gpushare.io/pool": "t4mps", "nvidia.com/device-plugin.config": key,
        "nvidia.com/gpu.product": "Tesla-T4-SHARED", "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/mig.strategy": "single", "nvidia.com/mps.capable": "true",
    }, {"nvidia.com/gpu": "4"})


def t4_node(key: str) -> dict:
    return node(T4_NODE, {
        **AKS_GPU_LABELS, "gpushare.io/pool": "t4", "nvidia.com/device-plugin.config": key,
        "nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.replicas": "1", "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.sharing-strategy": "none", "nvidia.com/mig.strategy": "single",
        "nvidia.com/mps.capable": "false",
    }, {"nvidia.com/gpu": "1"})


def a100_node(key: str, allocatable: dict | None = None) -> dict:
    return node(A100_NODE, {
        **AKS_GPU_LABELS, "gpushare.io/pool": "a100mig", "nvidia.com/device-plugin.config": key,
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.count": "8",
        "nvidia.com/mig-1g.5gb.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "nvidia.com/mig-1g.5gb.count": "56",
        "nvidia.com/mig-1g.5gb.replicas": "1", "nvidia.com/mig-1g.5gb.sharing-strategy": "none",
        "nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.capable": "true",
    }, allocatable or {"nvidia.com/mig-1g.5gb": "56"})


def operator_pods(*node_names: str, mps_nodes: tuple[str, ...] = ()) -> list[dict]:
    pods = [pod(NS, app, name) for name in node_names for app in (DEVICE_PLUGIN, GFD, VALIDATOR)]
    return pods + [pod(NS, MPS, name) for name in mps_nodes]


def operator_daemon_sets(count: int, mps: int = 0) -> dict:
    sets = [daemon_set(NS, name, count, count) for name in (DEVICE_PLUGIN, GFD, VALIDATOR)]
    if mps:
        sets.append(daemon_set(NS, MPS, mps, mps))
    return object_list("DaemonSetList", *sets, api_version="apps/v1")


def serve(kube: KubeStub, nodes, data: dict, pods: list[dict], daemon_sets: dict) -> None:
    node_responses = nodes if isinstance(nodes, tuple) else (nodes,)
    kube.route("GET", NODES, *(StubResponse(200, object_list("NodeList", *n)) for n in node_responses))
    kube.route("GET", CONFIG_MAP, StubResponse(200, config_map(NS, "gpushare-device-plugin-config", data)))
    kube.route("GET", DAEMON_SETS, StubResponse(200, daemon_sets))
    kube.route("GET", PODS, StubResponse(200, object_list("PodList", *pods)))


@pytest.fixture
def kube():
    with KubeStub() as stub:
        yield stub


@pytest.fixture
def dev(tmp_path) -> tuple[Path, dict[str, str], dict[str, str]]:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(DEV_STACK)
    keys, data = config_keys(path)
    return path, keys, data


@pytest.fixture
def mig(tmp_path) -> tuple[Path, dict[str, str], dict[str, str]]:
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(MIG_STACK)
    keys, data = config_keys(path)
    return path, keys, data


def verify(kube: KubeStub, stack: Path, tmp_path: Path, *extra: str) -> list[str]:
    return ["verify", str(stack), "--kubeconfig", str(kube.kubeconfig(tmp_path)), *extra]


def healthy_dev(kube: KubeStub, keys: dict[str, str], data: dict[str, str]) -> None:
    serve(kube, [t4ts_node(keys["t4ts"]), t4mps_node(keys["t4mps"]), t4_node(keys["t4"])], data,
          operator_pods(T4TS_NODE, T4MPS_NODE, T4_NODE, mps_nodes=(T4MPS_NODE,)), operator_daemon_sets(3, mps=1))


def test_all_good(kube, dev, tmp_path, capsys):
    stack, keys, data = dev
    healthy_dev(kube, keys, data)
    assert main(verify(kube, stack, tmp_path)) == 0
    out = capsys.readouterr().out
    assert (f"pool t4ts: nodes 1/1 ready, expected nvidia.com/gpu: 4 per node, "
            f"found nvidia.com/gpu: 4 on {T4TS_NODE} -> PASS") in out
    assert "pool t4mps: nodes 1/1 ready" in out and out.rstrip().endswith("verdict: PASS")
    assert "mismatch" not in out
    assert ("cluster autoscaler: every GPU node advertises nvidia.com/gpu; 0 of 3 nodes unready, it stops above 3 "
            "and 45% -> acting") in out
    # The kubeconfig's bearer token reached the API server; only the operator's pods were listed, and every node
    # (the autoscaler's threshold is a share of all of them).
    nodes_request = next(r for r in kube.requests if r.path == NODES)
    assert nodes_request.headers["authorization"] == f"Bearer {FAKE_TOKEN}"
    assert "labelSelector" not in nodes_request.query
    pods_request = next(r for r in kube.requests if r.path == PODS)
    assert VALIDATOR in pods_request.query["labelSelector"][0]


def test_all_good_json(kube, dev, tmp_path, capsys):
    stack, keys, data = dev
    healthy_dev(kube, keys, data)
    assert main(verify(kube, stack, tmp_path, "--json")) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["verdict"] == "pass"
    assert [(p["pool"], p["resource"], p["perNode"], p["verdict"]) for p in document["pools"]] == [
        ("t4ts", "nvidia.com/gpu", 4, "pass"), ("t4mps", "nvidia.com/gpu", 4, "pass"),
        ("t4", "nvidia.com/gpu", 1, "pass"),
    ]
    assert document["operator"]["daemonSets"][MPS] == "1/1"
    assert document["autoscaler"] == {"runs": True, "gpuUnreadyNodes": [], "unreadyNodes": [], "nodes": 3,
                                      "healthy": True, "okTotalUnreadyCount": 3, "maxTotalUnreadyPercentage": 45.0,
                                      "findings": []}


def test_node_on_the_default_config_advertises_whole_gpus(kube, dev, tmp_path, capsys):
    stack, keys, data = dev
    labels = {"gpushare.io/pool": "t4ts", "nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.replicas": "1",
              "nvidia.com/gpu.sharing-strategy": "none", "nvidia.com/mig.strategy": "single"}
    whole_gpu = t4ts_node(keys["t4ts"], labels=labels, allocatable={"nvidia.com/gpu": "1"})
    serve(kube, [whole_gpu, t4mps_node(keys["t4mps"])], data,
          operator_pods(T4TS_NODE, T4MPS_NODE, mps_nodes=(T4MPS_NODE,)), operator_daemon_sets(2, mps=1))
    assert main(verify(kube, stack, tmp_path)) == 1
    out = capsys.readouterr().out
    assert (f"mismatch: pool t4ts: node {T4TS_NODE} advertises nvidia.com/gpu: 1, "
            f"expected nvidia.com/gpu: 4") in out
    assert "cause: it has no nvidia.com/device-plugin.config label: the device plugin falls back to the default " \
           "config default-whole-gpu (whole GPUs, no sharing)" in out
    assert f"nvidia.com/device-plugin.config={keys['t4ts']}" in out
    assert "pool t4mps: nodes 1/1 ready" in out and "-> PASS" in out and out.rstrip().endswith("verdict: MISMATCH")


def test_mig_node_with_the_wrong_profile_under_mixed(kube, mig, tmp_path, capsys):
    stack, keys, data = mig
    serve(kube, [a100_node(keys["a100mig"], {"nvidia.com/mig-2g.10gb": "24"})], data, operator_pods(A100_NODE),
          operator_daemon_sets(1))
    assert main(verify(kube, stack, tmp_path)) == 1
    out = capsys.readouterr().out
    assert "advertises nvidia.com/mig-2g.10gb: 24, expected nvidia.com/mig-1g.5gb: 56" in out
    assert "partitioned as 2g.10gb, the pool's profile gives 1g.5gb" in out


def test_mig_pool_as_planned_passes_with_mixed_labels(kube, mig, tmp_path, capsys):
    stack, keys, data = mig
    serve(kube, [a100_node(keys["a100mig"])], data, operator_pods(A100_NODE), operator_daemon_sets(1))
    assert main(verify(kube, stack, tmp_path)) == 0, capsys.readouterr().out


def test_pool_with_no_nodes_yet_is_pending_not_a_failure(kube, dev, tmp_path, capsys):
    stack, keys, data = dev
    serve(kube, [t4ts_node(keys["t4ts"]), t4mps_node(keys["t4mps"])], data,
          operator_pods(T4TS_NODE, T4MPS_NODE, mps_nodes=(T4MPS_NODE,)), operator_daemon_sets(2, mps=1))
    assert main(verify(kube, stack, tmp_path)) == 0
    captured = capsys.readouterr()
    assert "pool t4: nodes 0/0 ready, expected nvidia.com/gpu: 1 per node, found - -> PENDING" in captured.out
    assert "pending: pool t4: no nodes yet\n  cause: the pool autoscales from 0" in captured.out
    assert captured.out.rstrip().endswith("verdict: PENDING")
    assert "pending is not a failure" in captured.err


def test_config_label_missing_from_the_config_map(kube, dev, tmp_path, capsys):
    stack, keys, data = dev
    stale = {k: v for k, v in data.items() if k != keys["t4ts"]}
    broken_plugin = pod(NS, DEVICE_PLUGIN, T4TS_NODE, ready=False, phase="Pending", init_containers=[
        container_status("config-manager-init", waiting="CrashLoopBackOff", restarts=4)], containers=[])
    pods = [p for p in operator_pods(T4TS_NODE, T4MPS_NODE, mps_nodes=(T4MPS_NODE,))
            if not (p["metadata"]["labels"]["app"] == DEVICE_PLUGIN and p["spec"]["nodeName"] == T4TS_NODE)]
    serve(kube, [t4ts_node(keys["t4ts"], allocatable={}), t4mps_node(keys["t4mps"])], stale,
          [*pods, broken_plugin], operator_daemon_sets(2, mps=1))
    assert main(verify(kube, stack, tmp_path)) == 1
    out = capsys.readouterr().out
    assert (f"node {T4TS_NODE} advertises no nvidia.com resource, expected nvidia.com/gpu: 4\n"
            f"  cause: its config label {keys['t4ts']} is not in ConfigMap gpu-operator/gpushare-device-plugin-config"
            ) in out
    assert f"ConfigMap gpu-operator/gpushare-device-plugin-config has no key {keys['t4ts']}" in out
    assert "config-manager-init CrashLoopBackOff" in out


def test_operator_pods_not_ready(kube, dev, tmp_path, capsys):
    stack, keys, data = dev
    validator = pod(NS, VALIDATOR, T4MPS_NODE, ready=False, phase="Pending", init_containers=[
        container_status("driver-validation", exit_code=0), container_status("toolkit-validation", exit_code=0),
        container_status("cuda-validation", waiting="CrashLoopBackOff", restarts=3),
        container_status("plugin-validation", waiting="PodInitializing"),
    ], containers=[container_status(VALIDATOR, waiting="PodInitializing")])
    mps_starting = pod(NS, MPS, T4MPS_NODE, ready=False, phase="Pending",
                       containers=[container_status("mps-control-daemon-ctr", waiting="ContainerCreating")])
    pods = [p for p in operator_pods(T4TS_NODE, T4MPS_NODE)
            if not (p["metadata"]["labels"]["app"] == VALIDATOR and p["spec"]["nodeName"] == T4MPS_NODE)]
    serve(kube, [t4ts_node(keys["t4ts"]), t4mps_node(keys["t4mps"])], data, [*pods, validator, mps_starting],
          operator_daemon_sets(2, mps=1))
    assert main(verify(kube, stack, tmp_path)) == 1
    out = capsys.readouterr().out
    assert (f"mismatch: pool t4mps: node {T4MPS_NODE}: {VALIDATOR} pod {VALIDATOR}-00000 is not Ready: "
            "cuda-validation CrashLoopBackOff\n  cause: a CUDA workload could not run on the node") in out
    assert f"pending: pool t4mps: node {T4MPS_NODE}: {MPS} pod {MPS}-00000 is not Ready yet (ContainerCreating)" in out
    assert "pool t4ts: nodes 1/1 ready" in out and "-> PASS" in out


def test_missing_daemon_set_is_one_operator_finding(kube, dev, tmp_path, capsys):
    stack, keys, data = dev
    sets = object_list("DaemonSetList", *(daemon_set(NS, n, 2, 2) for n in (DEVICE_PLUGIN, GFD, VALIDATOR)),
                       api_version="apps/v1")
    serve(kube, [t4ts_node(keys["t4ts"]), t4mps_node(keys["t4mps"])], data, operator_pods(T4TS_NODE, T4MPS_NODE), sets)
    assert main(verify(kube, stack, tmp_path)) == 1
    out = capsys.readouterr().out
    assert out.count(f"DaemonSet gpu-operator/{MPS} not found") == 1
    assert f"{MPS} missing" in out


def test_401_is_exit_4_naming_the_credentials(kube, dev, tmp_path, capsys):
    stack, _, _ = dev
    kube.route("GET", NODES, StubResponse(401, status(401, "Unauthorized", "Unauthorized")))
    assert main(verify(kube, stack, tmp_path)) == 4
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (f"error: the API server {kube.server} refused the credentials (401 Unauthorized) to list nodes"
            in captured.err)
    assert "az aks get-credentials" in captured.err and "kubelogin convert-kubeconfig -l azurecli" in captured.err
    assert "Traceback" not in captured.err


def test_403_is_exit_4_naming_the_permission(kube, dev, tmp_path, capsys):
    stack, _, _ = dev
    kube.route("GET", NODES, StubResponse(403, status(403, "Forbidden", 'nodes is forbidden: User "ci" cannot list')))
    assert main(verify(kube, stack, tmp_path)) == 4
    err = capsys.readouterr().err
    assert "accepted the credentials but may not list nodes (403 Forbidden)" in err and "RBAC" in err


def test_unreachable_api_server_is_exit_4(kube, dev, tmp_path, capsys):
    stack, _, _ = dev
    closed = KubeStub()  # bound, never started, then closed: nothing listens on its port
    server = closed.server
    closed._server.server_close()
    config = kube.kubeconfig(tmp_path, server=server)
    assert main(["verify", str(stack), "--kubeconfig", str(config)]) == 4
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"error: cannot reach the API server {server} to list nodes" in captured.err
    assert "Traceback" not in captured.err


def test_no_kubeconfig_is_exit_4_with_the_way_to_get_one(dev, tmp_path, capsys, monkeypatch):
    stack, _, _ = dev
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    assert main(["verify", str(stack)]) == 4
    err = capsys.readouterr().err
    assert f"error: no kubeconfig at {tmp_path / 'missing'}" in err and "az aks get-credentials" in err


def test_kubeconfig_env_and_unknown_context(kube, dev, tmp_path, capsys, monkeypatch):
    stack, _, _ = dev
    monkeypatch.setenv("KUBECONFIG", str(kube.kubeconfig(tmp_path)))
    assert main(["verify", str(stack), "--context", "prod"]) == 4
    err = capsys.readouterr().err
    assert "no context 'prod'" in err and "contexts in the kubeconfig: stub-cluster" in err
    assert kube.requests == []


def test_wait_polls_until_the_node_is_ready(kube, dev, tmp_path, capsys, monkeypatch):
    stack, keys, data = dev
    joining = [t4ts_node(keys["t4ts"]), node(T4MPS_NODE, {"gpushare.io/pool": "t4mps"}, {}, ready=False),
               t4_node(keys["t4"])]
    ready = [t4ts_node(keys["t4ts"]), t4mps_node(keys["t4mps"]), t4_node(keys["t4"])]
    serve(kube, (joining, joining, ready), data,
          operator_pods(T4TS_NODE, T4MPS_NODE, T4_NODE, mps_nodes=(T4MPS_NODE,)), operator_daemon_sets(3, mps=1))
    # The command runs with the cyclic collector off (run_as_command): a wait of many polls must not pile up what
    # each poll leaves in cycles, so it collects between polls.
    collections = []
    monkeypatch.setattr(verify_command.gc, "collect", lambda: collections.append(1) or 0)
    assert main(verify(kube, stack, tmp_path, "--wait", "30", "--poll-interval", "0.01")) == 0
    captured = capsys.readouterr()
    assert kube.count("GET", NODES) == 3
    assert captured.err.count("verify: 0 mismatch(es), 1 pending; polling again") == 2
    assert captured.out.rstrip().endswith("verdict: PASS")
    assert len(collections) == 2


def test_wait_gives_up_with_the_last_state(kube, dev, tmp_path, capsys):
    stack, keys, data = dev
    joining = [t4ts_node(keys["t4ts"]), node(T4MPS_NODE, {"gpushare.io/pool": "t4mps"}, {}, ready=False)]
    serve(kube, joining, data, operator_pods(T4TS_NODE), operator_daemon_sets(2, mps=1))
    assert main(verify(kube, stack, tmp_path, "--wait", "1", "--poll-interval", "0.05")) == 0
    out = capsys.readouterr().out
    assert f"pending: pool t4mps: node {T4MPS_NODE} is NotReady" in out and "verdict: PENDING" in out
    assert kube.count("GET", NODES) >= 2


SMOKE_NS = "gpushare-smoke-test01"
SMOKE_PODS = f"/api/v1/namespaces/{SMOKE_NS}/pods"


def smoke_pod_status(pool: str, phase: str, node_name: str | None = None, message: str | None = None) -> dict:
    body = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": f"smoke-{pool}", "namespace": SMOKE_NS},
            "spec": {"nodeName": node_name} if node_name else {}, "status": {"phase": phase}}
    if message:
        body["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                         "message": message}]
    return body


@pytest.fixture
def smoke_namespace(monkeypatch):
    monkeypatch.setattr(cluster_read, "smoke_namespace", lambda: SMOKE_NS)


def test_smoke_runs_a_pod_per_pool_shows_its_log_and_deletes_the_namespace(kube, mig, tmp_path, capsys,
                                                                            smoke_namespace):
    stack, keys, data = mig
    serve(kube, [a100_node(keys["a100mig"])], data, operator_pods(A100_NODE), operator_daemon_sets(1))
    kube.route("POST", "/api/v1/namespaces", StubResponse(201, {"kind": "Namespace", "metadata": {"name": SMOKE_NS}}))
    kube.route("POST", SMOKE_PODS, StubResponse(201, smoke_pod_status("a100mig", "Pending")))
    kube.route("GET", f"{SMOKE_PODS}/smoke-a100mig", StubResponse(200, smoke_pod_status("a100mig", "Pending")),
               StubResponse(200, smoke_pod_status("a100mig", "Succeeded", A100_NODE)))
    log = "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-1)\n  MIG 1g.5gb      Device  0: (UUID: MIG-2)\n"
    kube.route("GET", f"{SMOKE_PODS}/smoke-a100mig/log", StubResponse(200, log))
    kube.route("DELETE", f"/api/v1/namespaces/{SMOKE_NS}", StubResponse(200, {"kind": "Status", "status": "Success"}))
    assert main(verify(kube, stack, tmp_path, "--smoke", "--poll-interval", "0.01")) == 0
    out = capsys.readouterr().out
    assert f"smoke a100mig: Succeeded on {A100_NODE} -> PASS\n  | GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-1)" in out
    created = next(r.body for r in kube.requests if r.method == "POST" and r.path == SMOKE_PODS)
    spec = created["spec"]
    assert spec["nodeSelector"] == {"gpushare.io/pool": "a100mig"}
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present",
                                    "effect": "NoSchedule"}]
    assert spec["containers"][0]["resources"] == {"limits": {"nvidia.com/mig-1g.5gb": "1"}}
    assert spec["containers"][0]["command"] == ["nvidia-smi", "-L"]
    assert kube.count("DELETE", f"/api/v1/namespaces/{SMOKE_NS}") == 1


def test_smoke_timeout_is_a_mismatch_and_still_deletes_the_namespace(kube, mig, tmp_path, capsys, smoke_namespace):
    stack, keys, data = mig
    serve(kube, [a100_node(keys["a100mig"])], data, operator_pods(A100_NODE), operator_daemon_sets(1))
    kube.route("POST", "/api/v1/namespaces", StubResponse(201, {"kind": "Namespace", "metadata": {"name": SMOKE_NS}}))
    kube.route("POST", SMOKE_PODS, StubResponse(201, smoke_pod_status("a100mig", "Pending")))
    unschedulable = "0/3 nodes are available: 3 Insufficient nvidia.com/mig-1g.5gb."
    kube.route("GET", f"{SMOKE_PODS}/smoke-a100mig",
               StubResponse(200, smoke_pod_status("a100mig", "Pending", message=unschedulable)))
    kube.route("DELETE", f"/api/v1/namespaces/{SMOKE_NS}", StubResponse(200, {"kind": "Status", "status": "Success"}))
    argv = verify(kube, stack, tmp_path, "--smoke", "--smoke-timeout", "0.05", "--poll-interval", "0.01")
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert f"the smoke pod did not finish in time (still Pending: {unschedulable})" in out
    assert kube.count("DELETE", f"/api/v1/namespaces/{SMOKE_NS}") == 1
    assert kube.count("GET", f"{SMOKE_PODS}/smoke-a100mig/log") == 0


def test_smoke_deletes_the_namespace_when_the_api_fails_midway(kube, mig, tmp_path, capsys, smoke_namespace):
    stack, keys, data = mig
    serve(kube, [a100_node(keys["a100mig"])], data, operator_pods(A100_NODE), operator_daemon_sets(1))
    kube.route("POST", "/api/v1/namespaces", StubResponse(201, {"kind": "Namespace", "metadata": {"name": SMOKE_NS}}))
    kube.route("POST", SMOKE_PODS, StubResponse(403, status(403, "Forbidden", "pods is forbidden")))
    kube.route("DELETE", f"/api/v1/namespaces/{SMOKE_NS}", StubResponse(200, {"kind": "Status", "status": "Success"}))
    assert main(verify(kube, stack, tmp_path, "--smoke")) == 4
    assert "may not create a pod in gpushare-smoke-test01 (403 Forbidden)" in capsys.readouterr().err
    assert kube.count("DELETE", f"/api/v1/namespaces/{SMOKE_NS}") == 1


def test_a_failing_credential_plugin_is_exit_4_before_any_call(kube, dev, tmp_path, capsys):
    stack, _, _ = dev
    config = kube.kubeconfig(tmp_path)
    text = config.read_text().replace(f"token: {FAKE_TOKEN}", (
        "exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: " + str(tmp_path / "kubelogin")
        + ", args: [get-token, --login, azurecli], interactiveMode: Never}"))
    config.write_text(text)
    assert main(["verify", str(stack), "--kubeconfig", str(config)]) == 4
    err = capsys.readouterr().err
    assert "error: the credential plugin of context stub-cluster" in err and "kubelogin" in err
    assert kube.requests == []


def test_kubeconfig_from_a_kubeconfig_path_list(kube, dev, tmp_path, capsys, monkeypatch):
    stack, keys, data = dev
    healthy_dev(kube, keys, data)
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing'}:{kube.kubeconfig(other)}")
    assert main(["verify", str(stack), "--context", "stub-cluster"]) == 0
    assert "cluster context stub-cluster" in capsys.readouterr().out


@pytest.mark.parametrize("text", ["clusters: [\n", "apiVersion: v1\nkind: Config\n"])
def test_a_broken_kubeconfig_is_exit_4_without_traceback(dev, tmp_path, capsys, text):
    stack, _, _ = dev
    config = tmp_path / "kubeconfig"
    config.write_text(text)
    assert main(["verify", str(stack), "--kubeconfig", str(config)]) == 4
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(config) in err and "Traceback" not in err


def test_smoke_pod_refused_by_admission_is_a_finding_not_exit_4(kube, mig, tmp_path, capsys, smoke_namespace):
    stack, keys, data = mig
    serve(kube, [a100_node(keys["a100mig"])], data, operator_pods(A100_NODE), operator_daemon_sets(1))
    kube.route("POST", "/api/v1/namespaces", StubResponse(201, {"kind": "Namespace", "metadata": {"name": SMOKE_NS}}))
    denied = ("pods \"smoke-a100mig\" is forbidden: ValidatingAdmissionPolicy 'gpushare-shared-pools' with binding "
              "'gpushare-shared-pools' denied request: GPU pods are allowed only in tenant namespaces")
    kube.route("POST", SMOKE_PODS, StubResponse(422, status(422, "Invalid", denied)))
    kube.route("DELETE", f"/api/v1/namespaces/{SMOKE_NS}", StubResponse(200, {"kind": "Status", "status": "Success"}))
    assert main(verify(kube, stack, tmp_path, "--smoke")) == 1
    out = capsys.readouterr().out
    assert "smoke a100mig: Rejected -> MISMATCH" in out
    assert f"mismatch: pool a100mig: the API server refused the smoke pod: {denied}" in out
    assert kube.count("DELETE", f"/api/v1/namespaces/{SMOKE_NS}") == 1


TENANT_STACK = """\
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: gpushare-prod, kubernetesVersion: "1.33"}
  gpushare:operator: {migStrategy: mixed}
  gpushare:pools:
    - name: a100mig
      vmSize: Standard_ND96asr_v4
      mig: MIG1g
      count: 1
    - name: t4
      vmSize: Standard_NC4as_T4_v3
      count: 1
  gpushare:tenants:
    - name: nlp
      pools: [a100mig]
      quota: {nvidia.com/mig-1g.5gb: 56}
      groups: [3f2504e0-4f89-41d3-9a0c-0305e82c3301]
"""
_API_PATHS = {
    "Namespace": "/api/v1/namespaces/{name}",
    "ResourceQuota": "/api/v1/namespaces/{namespace}/resourcequotas/{name}",
    "LimitRange": "/api/v1/namespaces/{namespace}/limitranges/{name}",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings/{name}",
    "ValidatingAdmissionPolicy": "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{name}",
    "ValidatingAdmissionPolicyBinding":
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/{name}",
}


def as_served(manifest: dict) -> dict:
    """The object as the API server returns it: uid and defaults added, quantities as strings."""
    served = json.loads(json.dumps(manifest))
    served["metadata"] = {**served["metadata"], "uid": "0d9c", "resourceVersion": "12"}
    if served["kind"] == "ResourceQuota":
        served["spec"]["hard"] = {k: str(v) for k, v in served["spec"]["hard"].items()}
    if served["kind"] == "ValidatingAdmissionPolicy":
        served["spec"]["matchConstraints"]["matchPolicy"] = "Equivalent"
    return served


@pytest.fixture
def tenant_cluster(kube, tmp_path):
    from gpushare.kubernetes.tenants import tenant_manifests
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(TENANT_STACK)
    stack = parse_stack_file(read_stack_file(path))
    keys, data = config_keys(path)
    t4 = node(T4_NODE, {"gpushare.io/pool": "t4", "nvidia.com/device-plugin.config": keys["t4"],
                        "nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.replicas": "1",
                        "nvidia.com/gpu.sharing-strategy": "none", "nvidia.com/mig.strategy": "mixed"},
              {"nvidia.com/gpu": "1"})
    serve(kube, [a100_node(keys["a100mig"]), t4], data, operator_pods(A100_NODE, T4_NODE), operator_daemon_sets(2))
    manifests = tenant_manifests(stack)
    for manifest in manifests:
        path_ = _API_PATHS[manifest["kind"]].format(**manifest["metadata"])
        kube.route("GET", path_, StubResponse(200, as_served(manifest)))
    return path, manifests


def test_tenant_objects_as_rendered(kube, tenant_cluster, tmp_path, capsys):
    stack, manifests = tenant_cluster
    assert {m["kind"] for m in manifests} == set(_API_PATHS)
    assert main(verify(kube, stack, tmp_path)) == 0
    out = capsys.readouterr().out
    assert f"tenants: {len(manifests)} objects (namespaces, quotas, policies, bindings), all as rendered" in out


def test_missing_and_changed_tenant_objects(kube, tenant_cluster, tmp_path, capsys):
    stack, manifests = tenant_cluster
    policy = next(m for m in manifests if m["kind"] == "ValidatingAdmissionPolicy")
    kube.route("GET", _API_PATHS["ValidatingAdmissionPolicy"].format(**policy["metadata"]),
               StubResponse(404, status(404, "NotFound", "not found")))
    quota = next(m for m in manifests if m["kind"] == "ResourceQuota")
    changed = as_served(quota)
    changed["spec"]["hard"]["requests.nvidia.com/mig-1g.5gb"] = "8"
    kube.route("GET", _API_PATHS["ResourceQuota"].format(**quota["metadata"]), StubResponse(200, changed))
    assert main(verify(kube, stack, tmp_path)) == 1
    out = capsys.readouterr().out
    assert f"mismatch: tenants: ValidatingAdmissionPolicy {policy['metadata']['name']} not found" in out
    assert ("mismatch: tenants: ResourceQuota nlp/gpushare-gpu-quota differs from the plan: "
            "spec.hard.requests.nvidia.com/mig-1g.5gb: '8' in the cluster, '56' rendered") in out


def test_smoke_skips_a_tenant_pool(kube, tenant_cluster, tmp_path, capsys, smoke_namespace):
    stack, _ = tenant_cluster
    kube.route("POST", "/api/v1/namespaces", StubResponse(201, {"kind": "Namespace", "metadata": {"name": SMOKE_NS}}))
    kube.route("POST", SMOKE_PODS, StubResponse(201, smoke_pod_status("t4", "Pending")))
    kube.route("GET", f"{SMOKE_PODS}/smoke-t4", StubResponse(200, smoke_pod_status("t4", "Succeeded", T4_NODE)))
    kube.route("GET", f"{SMOKE_PODS}/smoke-t4/log", StubResponse(200, "GPU 0: Tesla T4 (UUID: GPU-3)\n"))
    kube.route("DELETE", f"/api/v1/namespaces/{SMOKE_NS}", StubResponse(200, {"kind": "Status", "status": "Success"}))
    assert main(verify(kube, stack, tmp_path, "--smoke", "--poll-interval", "0.01")) == 0
    out = capsys.readouterr().out
    assert ("smoke a100mig: skipped (pool of tenant nlp: the admission policy admits GPU pods on it only in its "
            "tenants' namespaces)") in out
    assert f"smoke t4: Succeeded on {T4_NODE} -> PASS" in out
    assert kube.count("POST", SMOKE_PODS) == 1


def test_tenant_objects_a_reader_may_not_read_are_skipped_with_the_role_that_would(kube, tenant_cluster, tmp_path,
                                                                                   capsys):
    """AKS RBAC Reader reads namespaces, quotas and LimitRanges, not RoleBindings or admission policies: those
    checks are skipped (naming the role), the verdict stays what the readable objects say."""
    stack, manifests = tenant_cluster
    forbidden = [m for m in manifests if m["kind"] in ("RoleBinding", "ValidatingAdmissionPolicy",
                                                        "ValidatingAdmissionPolicyBinding")]
    for manifest in forbidden:
        kube.route("GET", _API_PATHS[manifest["kind"]].format(**manifest["metadata"]),
                   StubResponse(403, status(403, "Forbidden", "forbidden: User \"reader\" cannot get")))
    assert main(verify(kube, stack, tmp_path)) == 0
    out = capsys.readouterr().out
    assert (f"tenants: {len(manifests)} objects (namespaces, quotas, policies, bindings), all as rendered of "
            f"{len(manifests) - len(forbidden)} checked, {len(forbidden)} skipped") in out
    binding = next(m for m in forbidden if m["kind"] == "RoleBinding")["metadata"]
    assert (f"  skipped RoleBinding {binding['namespace']}/{binding['name']}: may not read it (403); needs Azure "
            "Kubernetes Service RBAC Admin on the namespace, or Azure Kubernetes Service RBAC Cluster Admin") in out
    assert "skipped ValidatingAdmissionPolicy gpushare-tenant-nlp: may not read it (403); needs Azure Kubernetes " \
           "Service RBAC Cluster Admin" in out
    assert "mismatch" not in out

    assert main(verify(kube, stack, tmp_path) + ["--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["verdict"] == "pass" and document["tenants"]["findings"] == []
    assert {s["object"].split()[0] for s in document["tenants"]["skipped"]} == {
        "RoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}


def system_node(name: str, ready: bool = True) -> dict:
    return node(name, {"kubernetes.azure.com/agentpool": "system"}, {}, ready=ready)


def test_nodes_the_autoscaler_counts_unready_and_its_cluster_wide_stop(kube, dev, tmp_path, capsys):
    """Nodes still advertising nvidia.com/gpu.shared (deployed before the default changed) count unready to the
    cluster autoscaler; with two NotReady system nodes that is 4 of 5, past its threshold: verify says it stops."""
    stack, keys, data = dev
    renamed_ts = t4ts_node(keys["t4ts"], allocatable={"nvidia.com/gpu.shared": "4"})
    renamed_mps = t4mps_node(keys["t4mps"])
    renamed_mps["status"]["allocatable"] = {"nvidia.com/gpu.shared": "4"}
    nodes = [renamed_ts, renamed_mps, system_node("aks-system-0", ready=False), system_node("aks-system-1", False),
             system_node("aks-system-2")]
    serve(kube, nodes, data, operator_pods(T4TS_NODE, T4MPS_NODE, mps_nodes=(T4MPS_NODE,)),
          operator_daemon_sets(2, mps=1))
    assert main(verify(kube, stack, tmp_path, "--json")) == 1
    autoscaler = json.loads(capsys.readouterr().out)["autoscaler"]
    assert autoscaler["gpuUnreadyNodes"] == [T4MPS_NODE, T4TS_NODE]
    assert autoscaler["unreadyNodes"] == ["aks-system-0", "aks-system-1", T4MPS_NODE, T4TS_NODE]
    assert (autoscaler["nodes"], autoscaler["healthy"]) == (5, False)
    (finding,) = autoscaler["findings"]
    assert finding["problem"].startswith("the cluster autoscaler counts 4 of 5 nodes unready, more than 3 and more "
                                         "than 45%: it stops scaling every pool")
    assert "2 of them carry kubernetes.azure.com/accelerator but advertise no nvidia.com/gpu" in finding["cause"]

    # One fewer NotReady node: 3 of 5 is within the threshold; the GPU nodes are still listed, and nothing fails
    # on the autoscaler's account (the pools' own findings say the resource is wrong).
    kube.requests.clear()
    nodes[3] = system_node("aks-system-1")
    serve(kube, nodes, data, operator_pods(T4TS_NODE, T4MPS_NODE, mps_nodes=(T4MPS_NODE,)),
          operator_daemon_sets(2, mps=1))
    main(verify(kube, stack, tmp_path))
    out = capsys.readouterr().out
    assert (f"cluster autoscaler: 2 GPU node(s) without nvidia.com/gpu it counts unready ({T4MPS_NODE}, "
            f"{T4TS_NODE}); 3 of 5 nodes unready, it stops above 3 and 45% -> acting") in out
    assert "mismatch: autoscaler" not in out
