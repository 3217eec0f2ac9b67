"""`verify --smoke` on DRA pools: in the smoke namespace, the ResourceClaimTemplate gpushare renders for a tenant of the
pool (`dra.claim_template`) and a pod on the pool's nodes that claims it; each DRA pool's result beside the
device-plugin pools' (text and --json), and the namespace deleted afterwards, also on a timeout, a refusal or a failed
call. The whole command runs against the kube stub (tests/kube_stub.py) with the real `kubernetes` client; that the
shared admission policy admits these objects on a pool no tenant lists is tests/kubernetes/admission/
test_dra_smoke_admission.py."""

from __future__ import annotations

import json

import pytest
import yaml

from gpushare.cli import main
from gpushare.kubernetes import cluster_read
from gpushare.kubernetes.tenant_objects import tenant_manifests
from gpushare.sharing import dra
from gpushare.stackfile.config import parse_config
from tests.cli.test_verify_command import _API_PATHS, as_served
from tests.kube_stub import KubeStub, StubResponse, status
from tests.kubernetes.verify.test_verify_dra_pools import A100, H100, STACK_YAML, T4, healthy, serve_dra
from tests.stack_files import write_stack

SMOKE_NS = "gpushare-smoke-d4a001"
PODS = f"/api/v1/namespaces/{SMOKE_NS}/pods"
TEMPLATES = f"/apis/resource.k8s.io/v1/namespaces/{SMOKE_NS}/resourceclaimtemplates"
NAMESPACE = f"/api/v1/namespaces/{SMOKE_NS}"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
LOGS = {"h100mps": "GPU 0: NVIDIA H100 NVL (UUID: GPU-1)\n  MIG 3g.47gb      Device  0: (UUID: MIG-2)\n",
        "a100whole": "GPU 0: NVIDIA A100 80GB PCIe (UUID: GPU-3)\n",
        "t4ts": "GPU 0: Tesla T4 (UUID: GPU-4)\n"}
NODES = {"h100mps": H100[0], "a100whole": A100, "t4ts": T4}


@pytest.fixture(scope="module")
def stack():
    return parse_config(yaml.safe_load(STACK_YAML)["config"], source="stacks/Pulumi.dra.yaml", stack="dra")


@pytest.fixture
def kube(monkeypatch):
    monkeypatch.setattr(cluster_read, "smoke_namespace", lambda: SMOKE_NS)
    with KubeStub() as stub:
        yield stub


def pod_status(pool: str, phase: str, node_name: str | None = None, message: str | None = None) -> dict:
    body = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": f"smoke-{pool}", "namespace": SMOKE_NS},
            "spec": {"nodeName": node_name} if node_name else {}, "status": {"phase": phase}}
    if message:
        body["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                         "message": message}]
    return body


def serve_smoke(kube, stack, pools=("h100mps", "a100whole", "t4ts")) -> None:
    """A healthy cluster whose smoke pods all succeed, each listing its GPU."""
    serve_dra(kube, stack, *healthy(stack))
    kube.route("POST", "/api/v1/namespaces", StubResponse(201, {"kind": "Namespace", "metadata": {"name": SMOKE_NS}}))
    kube.route("POST", TEMPLATES, StubResponse(201, {"kind": "ResourceClaimTemplate"}))
    kube.route("POST", PODS, StubResponse(201, pod_status("x", "Pending")))
    for pool in pools:
        kube.route("GET", f"{PODS}/smoke-{pool}", StubResponse(200, pod_status(pool, "Pending")),
                   StubResponse(200, pod_status(pool, "Succeeded", NODES[pool])))
        kube.route("GET", f"{PODS}/smoke-{pool}/log", StubResponse(200, LOGS[pool]))
    kube.route("DELETE", NAMESPACE, StubResponse(200, {"kind": "Status", "status": "Success"}))


def verify(kube, tmp_path, *extra: str, text: str = STACK_YAML) -> list[str]:
    path = write_stack(tmp_path, text, "Pulumi.dra.yaml")
    return ["verify", str(path), "--kubeconfig", str(kube.kubeconfig(tmp_path)), "--smoke", "--poll-interval", "0.01",
            *extra]


def posted(kube, path: str) -> list[dict]:
    return [r.body for r in kube.requests if r.method == "POST" and r.path == path]


def test_each_dra_pool_gets_the_rendered_claim_template_and_a_pod_that_claims_it(kube, stack, tmp_path, capsys):
    serve_smoke(kube, stack)
    assert main(verify(kube, tmp_path)) == 0
    out = capsys.readouterr().out
    for pool in ("h100mps", "a100whole", "t4ts"):
        assert f"smoke {pool}: Succeeded on {NODES[pool]} -> PASS\n  | {LOGS[pool].splitlines()[0]}" in out
    pools = {p.name: p for p in stack.pools}
    # The templates are exactly the ones gpushare renders for a tenant of each pool, in the smoke namespace.
    assert posted(kube, TEMPLATES) == [dra.claim_template(SMOKE_NS, pools["h100mps"]),
                                       dra.claim_template(SMOKE_NS, pools["a100whole"])]
    mps = posted(kube, TEMPLATES)[0]["spec"]["spec"]["devices"]
    assert mps["requests"][0]["exactly"] == {"deviceClassName": "gpushare-h100-nvl-94gb-mig-3g.47gb", "count": 1}
    assert mps["config"][0]["opaque"]["parameters"]["sharing"]["strategy"] == "MPS"
    pods = {p["metadata"]["name"]: p for p in posted(kube, PODS)}
    assert sorted(pods) == ["smoke-a100whole", "smoke-h100mps", "smoke-t4ts"]
    spec = pods["smoke-h100mps"]["spec"]
    assert spec["nodeSelector"] == {"gpushare.io/pool": "h100mps"} and spec["tolerations"] == [GPU_TOLERATION]
    assert spec["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "h100mps"}]
    (container,) = spec["containers"]
    assert container["resources"] == {"claims": [{"name": "gpu"}]} and container["command"] == ["nvidia-smi", "-L"]
    assert container["env"] == [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]
    # The device-plugin pool's pod is as before: one unit of its resource, no claim.
    assert pods["smoke-t4ts"]["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu.shared": "1"}}
    assert "resourceClaims" not in pods["smoke-t4ts"]["spec"]
    # Each pool's template is created before its pod, and the namespace (with them) deleted once.
    order = [(r.path, (r.body or {}).get("metadata", {}).get("name")) for r in kube.requests if r.method == "POST"]
    assert order.index((TEMPLATES, "a100whole")) < order.index((PODS, "smoke-a100whole"))
    assert kube.count("DELETE", NAMESPACE) == 1


def test_json_reports_each_dra_pools_smoke_result(kube, stack, tmp_path, capsys):
    serve_smoke(kube, stack)
    assert main(verify(kube, tmp_path, "--json")) == 0
    smoke = {r["pool"]: r for r in json.loads(capsys.readouterr().out)["smoke"]}
    assert smoke["a100whole"] == {"pool": "a100whole", "phase": "Succeeded", "node": A100, "log": LOGS["a100whole"],
                                  "detail": "", "passed": True, "allocation": "dra"}
    assert smoke["h100mps"]["allocation"] == "dra" and smoke["t4ts"]["allocation"] == "device-plugin"


def test_a_dra_smoke_pod_that_never_gets_its_device_is_a_mismatch_and_the_namespace_goes(kube, stack, tmp_path,
                                                                                         capsys):
    serve_smoke(kube, stack)
    unallocated = "0/4 nodes are available: 1 cannot allocate all claims."
    kube.route("GET", f"{PODS}/smoke-a100whole", StubResponse(200, pod_status("a100whole", "Pending",
                                                                              message=unallocated)))
    assert main(verify(kube, tmp_path, "--smoke-timeout", "0.05")) == 1
    out = capsys.readouterr().out
    assert "smoke a100whole: Pending -> MISMATCH" in out
    assert (f"mismatch: pool a100whole: the smoke pod did not finish in time (still Pending: {unallocated})") in out
    assert "a pod claiming one of the pool's devices did not get a working device" in out
    assert kube.count("GET", f"{PODS}/smoke-a100whole/log") == 0
    assert kube.count("DELETE", NAMESPACE) == 1


def test_a_refused_claim_template_is_a_finding_with_no_pod_and_the_namespace_goes(kube, stack, tmp_path, capsys):
    serve_smoke(kube, stack)
    refusal = ("admission webhook denied the request: ResourceClaimTemplate h100mps: claims outside tenant "
               "namespaces must not ask for a DeviceClass of tenants' DRA pools only")
    kube.route("POST", TEMPLATES, StubResponse(422, status(422, "Invalid", refusal)),
               StubResponse(201, {"kind": "ResourceClaimTemplate"}))
    assert main(verify(kube, tmp_path)) == 1
    out = capsys.readouterr().out
    assert "smoke h100mps: Rejected -> MISMATCH" in out
    assert f"the API server refused the smoke pod or its ResourceClaimTemplate: {refusal}" in out
    assert f"smoke a100whole: Succeeded on {A100} -> PASS" in out
    assert [p["metadata"]["name"] for p in posted(kube, PODS)] == ["smoke-a100whole", "smoke-t4ts"]
    assert kube.count("DELETE", NAMESPACE) == 1


def test_a_failed_call_creating_a_claim_template_still_deletes_the_namespace(kube, stack, tmp_path, capsys):
    serve_smoke(kube, stack)
    kube.route("POST", TEMPLATES, StubResponse(403, status(403, "Forbidden", "resourceclaimtemplates is forbidden")))
    assert main(verify(kube, tmp_path)) == 4
    assert f"may not create a ResourceClaimTemplate in {SMOKE_NS} (403 Forbidden)" in capsys.readouterr().err
    assert posted(kube, PODS) == [] and kube.count("DELETE", NAMESPACE) == 1


def test_a_dra_pool_a_tenant_lists_gets_no_smoke_pod(kube, stack, tmp_path, capsys):
    tenanted = yaml.safe_load(STACK_YAML)
    tenanted["config"]["gpushare:tenants"] = [{"name": "vision", "pools": ["h100mps"]}]
    serve_smoke(kube, stack, pools=("a100whole", "t4ts"))
    for manifest in tenant_manifests(parse_config(tenanted["config"], source="stacks/Pulumi.dra.yaml", stack="dra")):
        if manifest["kind"] in _API_PATHS:
            kube.route("GET", _API_PATHS[manifest["kind"]].format(**manifest["metadata"]),
                       StubResponse(200, as_served(manifest)))
    code = main(verify(kube, tmp_path, "--json", text=yaml.safe_dump(tenanted)))
    out, err = capsys.readouterr()
    assert code == 0, err
    smoke = {r["pool"]: r for r in json.loads(out)["smoke"]}
    assert smoke["h100mps"]["phase"] == "Skipped" and smoke["h100mps"]["allocation"] == "dra"
    assert smoke["h100mps"]["detail"] == ("pool of tenant vision: the admission policy admits GPU pods on it only in "
                                          "its tenants' namespaces")
    assert smoke["a100whole"]["passed"] and smoke["t4ts"]["passed"]
    assert [t["metadata"]["name"] for t in posted(kube, TEMPLATES)] == ["a100whole"]
    assert kube.count("GET", f"{PODS}/smoke-h100mps") == 0 and kube.count("DELETE", NAMESPACE) == 1
