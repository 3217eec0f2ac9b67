"""`python -m gpushare verify STACK`: the real `kubernetes` client against a local HTTPS Kubernetes API stub, for what
the real control plane of tests/controlplane/ cannot show: what a kubelet would do (a smoke pod's run and log), a
cluster that changes between polls (`--wait`), an API server failing midway, and the client's side (kubeconfig,
credential plugin, an unreachable server).

Verify on a healthy cluster and each fault it names (labels, allocatable, config keys, operator pods and DaemonSets,
tenants' objects, 401, 403, a smoke pod refused by admission) run against the real API server in
tests/controlplane/test_verify_on_a_real_control_plane.py, which also shows the stub's shapes (tests/kube_stub.py's
builders) give the same `verify --json` report as the real server for the same cluster.

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
from tests.stack_files import write_stack

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
    path = write_stack(tmp_path, DEV_STACK, "Pulumi.dev.yaml")
    keys, data = config_keys(path)
    return path, keys, data


@pytest.fixture
def mig(tmp_path) -> tuple[Path, dict[str, str], dict[str, str]]:
    path = write_stack(tmp_path, MIG_STACK, "Pulumi.prod.yaml")
    keys, data = config_keys(path)
    return path, keys, data


def verify(kube: KubeStub, stack: Path, tmp_path: Path, *extra: str) -> list[str]:
    return ["verify", str(stack), "--kubeconfig", str(kube.kubeconfig(tmp_path)), *extra]


def healthy_dev(kube: KubeStub, keys: dict[str, str], data: dict[str, str]) -> None:
    serve(kube, [t4ts_node(keys["t4ts"]), t4mps_node(keys["t4mps"]), t4_node(keys["t4"])], data,
          operator_pods(T4TS_NODE, T4MPS_NODE, T4_NODE, mps_nodes=(T4MPS_NODE,)), operator_daemon_sets(3, mps=1))


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
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
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


TENANT_STACK = """\
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: gpushare-prod, kubernetesVersion: "1.36"}
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
    from gpushare.kubernetes.tenant_objects import tenant_manifests
    path = write_stack(tmp_path, TENANT_STACK, "Pulumi.prod.yaml")
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
    assert "kubernetes-sigs/cluster-autoscaler#92, not merged, would lift this" in finding["cause"]

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
