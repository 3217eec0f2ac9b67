"""A real Kubernetes 1.36 control plane on loopback for the tests: etcd, kube-apiserver, kube-controller-manager and
kube-scheduler, built by `tools/controlplane/build` (cached outside the clone) and run as processes in a temporary
folder, on ports chosen at run time. No kubelet and no container runtime: Nodes are API objects (`register_nodes`),
so a pod the scheduler binds stays Pending on its node, and `spec.nodeName` is the scheduler's real placement.

- kube-apiserver: `--authorization-mode=Node,RBAC`; the upstream default admission plugins (NamespaceLifecycle,
  LimitRanger, ServiceAccount, ResourceQuota, PodSecurity, ValidatingAdmissionPolicy, ... stay on:
  `--enable-admission-plugins` adds to them) plus those AKS enables on top (AKS FAQ, "What Kubernetes admission
  controllers does AKS support?": ExtendedResourceToleration, PodNodeSelector, PodTolerationRestriction,
  NodeRestriction: ExtendedResourceToleration adds `{key: <resource>, operator: Exists, effect: NoSchedule}` to a pod
  requesting an extended resource, PodTolerationRestriction merges a pod's tolerations on every create and update);
  `--allow-privileged=true`, as on AKS, whose own DaemonSets (kube-proxy, the CSI drivers) and the GPU Operator's
  run privileged: a privileged pod is refused only by Pod Security where a namespace enforces `baseline` or
  `restricted` (aks-docs use-psa.md: Pod Security Admission is on, and a namespace without a label enforces
  nothing), not by the API server's validation; a self-signed serving certificate it makes itself (`--cert-dir`);
  service-account signing keys made here; users from a static token file (`--token-auth-file`): an admin
  (system:masters) and one user per tenant group, with the group's Entra object ID as its group, as AKS's Entra ID
  integration puts them in the token.
- kube-controller-manager: `--use-service-account-credentials` (each controller acts as its own service account, as
  on AKS), the workload controllers (ReplicaSet, Deployment, StatefulSet, DaemonSet, Job, CronJob) and the garbage
  collector, the controllers pods need (serviceaccount: without it ServiceAccount admission refuses every pod), the
  ones `edit` needs (clusterrole-aggregation fills the aggregated `edit` role's rules) and the one that type-checks
  ValidatingAdmissionPolicies into their status. No node lifecycle controller: the fake nodes never renew a Lease,
  and it would taint them unreachable and evict their pods.
- kube-scheduler, with its defaults.
- Nodes: one per node each GPU pool has at its largest (`max_nodes`), with the labels AKS, GFD and the device plugin
  give them, the pool's taints, its GPU resource allocatable (none on a DRA pool: its devices are in the
  ResourceSlice `dra_slices.publish_slices` publishes), and Ready; plus one untainted system node. The API
  server taints every new Node `node.kubernetes.io/not-ready`; with no node lifecycle controller to lift it once the
  node is Ready, `register_nodes` lifts it.
- An audit log of pod creates (`ControlPlane.pod_creators`): which user, e.g. the ReplicaSet controller's own
  service account, created each pod.

Go is needed: without it `unavailable_reason()` says so in one line and the tests skip, except under `CI=true`, where
they must run and a missing Go is an error. A failing build or a component that does not start is always an error,
with the component's log tail.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import cache
from pathlib import Path
from typing import Any

from tests import go_tools

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "tools" / "controlplane" / "build"
TESTS = "the control-plane tests"

ADMIN = "admin"
READER = "reader@example.com"
"""A user in no group: what it may read is what a test binds to it."""
AKS_ADMISSION_PLUGINS = ("ExtendedResourceToleration", "PodNodeSelector", "PodTolerationRestriction", "NodeRestriction")
CONTROLLERS = ("serviceaccount-controller", "serviceaccount-token-controller", "namespace-controller",
               "resourcequota-controller", "replicaset-controller", "deployment-controller", "job-controller",
               "daemonset-controller", "statefulset-controller", "cronjob-controller", "garbage-collector-controller",
               "clusterrole-aggregation-controller", "validatingadmissionpolicy-status-controller")
SERVICE_CIDR = "10.0.0.0/24"
START_TIMEOUT = 90


def group_user(group: str) -> str:
    """The test user who is in the Entra group `group` (and only in it)."""
    return f"member-of-{group}@example.com"


@cache
def unavailable_reason() -> str | None:
    """None when the control plane can be built here; else the one-line reason (Go is not installed), for
    `pytest.skip`. Under CI=true a missing Go raises instead: CI must run these tests."""
    return go_tools.unavailable_reason(BUILD, TESTS)


def binaries() -> Path:
    """The folder of the built binaries; skips the calling test when Go is missing, raises when the build fails."""
    folder = go_tools.built_or_skip(BUILD, TESTS, timeout=3600)
    missing = [b for b in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
               if not os.access(folder / b, os.X_OK)]
    if missing:
        raise RuntimeError(f"{BUILD.relative_to(ROOT)} printed {folder}, which lacks {', '.join(missing)}")
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ApiError(Exception):
    def __init__(self, status: int, body: dict[str, Any]):
        self.status, self.body = status, body
        self.message = body.get("message", "") if isinstance(body, dict) else str(body)
        super().__init__(f"{status}: {self.message}")


_CLUSTER_SCOPED = {"Namespace", "Node", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
                   "ClusterRole", "ClusterRoleBinding", "RuntimeClass", "SelfSubjectAccessReview",
                   "SubjectAccessReview"}


def resource_path(api_version: str, kind: str, namespace: str | None = None, name: str | None = None) -> str:
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    plural = kind.lower()
    plural = plural[:-1] + "ies" if plural.endswith("y") else plural + ("es" if plural.endswith("s") else "s")
    path = base + (f"/namespaces/{namespace}" if namespace and kind not in _CLUSTER_SCOPED else "") + f"/{plural}"
    return path + (f"/{name}" if name else "")


@dataclass
class Process:
    name: str
    popen: subprocess.Popen
    log: Path

    def tail(self) -> str:
        try:
            return go_tools.tail(self.log.read_text(errors="replace"))
        except OSError:
            return "(no log)"


@dataclass
class ControlPlane:
    folder: Path
    url: str = ""
    ca: Path | None = None
    tokens: dict[str, str] = field(default_factory=dict)
    """user name -> bearer token (`ADMIN` is system:masters)."""
    processes: list[Process] = field(default_factory=list)
    _ssl: ssl.SSLContext | None = None
    audit_log: Path | None = None
    nodes: dict[str, list[str]] = field(default_factory=dict)
    """pool name ("system" too) -> its Nodes' names (`register_nodes`)."""

    def kubeconfig(self, user: str = ADMIN) -> Path:
        """A kubeconfig reaching the API server as `user` (its bearer token, the server's CA)."""
        return _kubeconfig(self.folder / f"{user}.kubeconfig", self.url, self.ca, self.tokens[user])

    def pod_creators(self, namespace: str) -> dict[str, str]:
        """pod name -> the user whose create of it the API server accepted (the audit log)."""
        creators = {}
        for line in self.audit_log.read_text().splitlines():
            event = json.loads(line)
            ref = event.get("objectRef", {})
            if (event.get("verb") == "create" and ref.get("namespace") == namespace and ref.get("resource") == "pods"
                    and not ref.get("subresource") and event.get("responseStatus", {}).get("code") == 201):
                name = ref.get("name") or (event.get("responseObject") or {}).get("metadata", {}).get("name")
                creators[name or f"?{len(creators)}"] = event["user"]["username"]
        return creators

    # --- requests ------------------------------------------------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, user: str = ADMIN,
                content_type: str = "application/json") -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self.tokens[user]}", "Content-Type": content_type,
            "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, context=self._ssl, timeout=30) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = {"message": raw.decode(errors="replace")}
            raise ApiError(error.code, parsed) from None
        return json.loads(raw) if raw else {}

    def create(self, obj: dict[str, Any], namespace: str | None = None, user: str = ADMIN) -> dict[str, Any]:
        namespace = namespace or obj.get("metadata", {}).get("namespace")
        return self.request("POST", resource_path(obj["apiVersion"], obj["kind"], namespace), obj, user)

    def install_crds(self, crds: list[dict[str, Any]]) -> None:
        """Creates each CustomResourceDefinition (one already there is kept) and waits until the API server serves
        it; a schema the API server calls non-structural fails here, not in a later create."""
        for crd in crds:
            try:
                self.create(crd)
            except ApiError as error:
                if error.status != 409:
                    raise
        for name in [crd["metadata"]["name"] for crd in crds]:
            self.wait_for(f"CRD {name} established", lambda name=name: self._established(name))

    def _established(self, name: str) -> bool:
        crd = self.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
        conditions = (crd.get("status") or {}).get("conditions") or []
        problems = [c["message"] for c in conditions if c["type"] == "NonStructuralSchema" and c["status"] == "True"]
        assert not problems, problems
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None,
            user: str = ADMIN) -> dict[str, Any]:
        return self.request("GET", resource_path(api_version, kind, namespace, name), user=user)

    def list(self, api_version: str, kind: str, namespace: str | None = None, user: str = ADMIN,
             selector: str = "") -> list[dict[str, Any]]:
        query = f"?labelSelector={urllib.request.quote(selector)}" if selector else ""
        return self.request("GET", resource_path(api_version, kind, namespace) + query, user=user)["items"]

    def can_i(self, user: str, verb: str, resource: str, namespace: str | None = None, group: str = "",
              name: str = "") -> bool:
        attrs = {"verb": verb, "resource": resource, "group": group, "name": name,
                 **({"namespace": namespace} if namespace else {})}
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                  "spec": {"resourceAttributes": attrs}}
        return self.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review,
                            user)["status"]["allowed"]

    def wait_for(self, what: str, check, timeout: float = 120, interval: float = 0.2):
        """Generous: on a loaded 2-core machine the controllers took over 30 s to type-check every policy. A 404 or
        a 429 (a CRD's storage re-initialising after an update, e.g. Kueue's CA injected into it) is retried."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                result = check()
            except ApiError as error:
                if error.status not in (404, 429):
                    raise
                result = None
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}")
            time.sleep(interval)

    # --- processes -------------------------------------------------------------------------------------------

    def start(self, name: str, argv: list[str]) -> Process:
        log = self.folder / f"{name}.log"
        with open(log, "wb") as out:
            popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True, cwd=self.folder)
        process = Process(name, popen, log)
        self.processes.append(process)
        return process

    def wait_ready(self, process: Process, url: str, headers: dict[str, str] | None = None,
                   context: ssl.SSLContext | None = None, expect: bytes = b"ok") -> None:
        deadline = time.monotonic() + START_TIMEOUT
        last = ""
        while time.monotonic() < deadline:
            if process.popen.poll() is not None:
                raise RuntimeError(f"{process.name} exited {process.popen.returncode} while starting:\n"
                                   f"{process.tail()}")
            try:
                req = urllib.request.Request(url, headers=headers or {})
                with urllib.request.urlopen(req, context=context, timeout=5) as response:
                    body = response.read()
                    if expect in body:
                        return
                    last = body.decode(errors="replace")
            except (urllib.error.URLError, OSError) as error:
                last = str(error)
            time.sleep(0.25)
        raise RuntimeError(f"{process.name} was not ready at {url} after {START_TIMEOUT}s ({last[-300:]}):\n"
                           f"{process.tail()}")

    def stop(self) -> None:
        """Ends each process, the last started first, one at a time: kube-apiserver shuts down gracefully in a second
        while etcd is up, but waits about 10 s for an etcd that went first."""
        for process in reversed(self.processes):
            if process.popen.poll() is None:
                try:
                    os.killpg(process.popen.pid, 15)
                except ProcessLookupError:
                    pass
            try:
                process.popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(process.popen.pid, 9)
                except ProcessLookupError:
                    pass
                process.popen.wait()
        self.processes.clear()


def _write_service_account_keys(folder: Path) -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private, public = folder / "sa.key", folder / "sa.pub"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


def _kubeconfig(path: Path, url: str, ca: Path, token: str) -> Path:
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
              "clusters": [{"name": "c", "cluster": {"server": url, "certificate-authority": str(ca)}}],
              "users": [{"name": "u", "user": {"token": token}}],
              "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
    path.write_text(json.dumps(config))  # JSON is YAML
    return path


def start_control_plane(users: dict[str, list[str]], controllers: tuple[str, ...] = CONTROLLERS) -> ControlPlane:
    """Starts the control plane in a new temporary folder. `users`: name -> groups (besides the admin);
    `controllers`: those the controller manager runs. The caller stops it (`stop_control_plane`), on failure too."""
    bin_dir = binaries()
    folder = Path(tempfile.mkdtemp(prefix="gpushare-controlplane-"))
    plane = ControlPlane(folder)
    try:
        _start(plane, bin_dir, users, controllers)
    except BaseException:
        stop_control_plane(plane)
        raise
    return plane


def _start(plane: ControlPlane, bin_dir: Path, users: dict[str, list[str]],
           controllers: tuple[str, ...]) -> None:
    folder = plane.folder
    insecure = ssl.create_default_context()
    insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE

    # etcd: one member, loopback only, no fsync (a throwaway data dir).
    client, peer = free_port(), free_port()
    etcd = plane.start("etcd", [
        str(bin_dir / "etcd"), "--name=default", f"--data-dir={folder / 'etcd'}",
        f"--listen-client-urls=http://127.0.0.1:{client}", f"--advertise-client-urls=http://127.0.0.1:{client}",
        f"--listen-peer-urls=http://127.0.0.1:{peer}", f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
        f"--initial-cluster=default=http://127.0.0.1:{peer}", "--unsafe-no-fsync", "--log-level=warn"])
    plane.wait_ready(etcd, f"http://127.0.0.1:{client}/health", expect=b'"health":"true"')

    # Users: the static token file's CSV (token,user,uid,"group1,group2").
    plane.tokens = {ADMIN: secrets.token_hex(16), **{user: secrets.token_hex(16) for user in users}}
    rows = [f'{plane.tokens[ADMIN]},{ADMIN},uid-admin,"system:masters"']
    rows += [f'{plane.tokens[user]},{user},uid-{i},"{",".join(groups)}"' for i, (user, groups) in
             enumerate(users.items())]
    (folder / "tokens.csv").write_text("\n".join(rows) + "\n")
    # Audit: who created each pod (the ReplicaSet controller's own service account, with
    # --use-service-account-credentials), read back by `pod_creators`.
    (folder / "audit.yaml").write_text(json.dumps({
        "apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived", "ResponseStarted"],
        "rules": [{"level": "Metadata", "verbs": ["create"], "resources": [{"group": "", "resources": ["pods"]}]},
                  {"level": "None"}]}))
    plane.audit_log = folder / "audit.log"
    sa_key, sa_pub = _write_service_account_keys(folder)

    port = free_port()
    certs = folder / "apiserver-certs"
    apiserver = plane.start("kube-apiserver", [
        str(bin_dir / "kube-apiserver"), f"--etcd-servers=http://127.0.0.1:{client}",
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={port}", f"--cert-dir={certs}",
        "--authorization-mode=Node,RBAC", f"--token-auth-file={folder / 'tokens.csv'}",
        f"--enable-admission-plugins={','.join(AKS_ADMISSION_PLUGINS)}", "--allow-privileged=true",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={sa_pub}", f"--service-account-signing-key-file={sa_key}",
        f"--service-cluster-ip-range={SERVICE_CIDR}", f"--audit-policy-file={folder / 'audit.yaml'}",
        f"--audit-log-path={plane.audit_log}", "--audit-log-mode=blocking", "--profiling=false", "--v=1"])
    plane.url = f"https://127.0.0.1:{port}"
    admin = {"Authorization": f"Bearer {plane.tokens[ADMIN]}"}
    plane.wait_ready(apiserver, plane.url + "/readyz", admin, insecure)
    plane.ca = certs / "apiserver.crt"
    plane._ssl = ssl.create_default_context(cafile=str(plane.ca))
    kubeconfig = plane.kubeconfig(ADMIN)

    # kube-controller-manager serves /healthz only (no /readyz); kube-scheduler both. `--authentication-skip-lookup`:
    # the API server has no client CA, so it publishes no extension-apiserver-authentication ConfigMap to look up.
    def component(name: str, health: str, extra: list[str]) -> None:
        secure = free_port()
        process = plane.start(name, [
            str(bin_dir / name), f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}", "--authentication-skip-lookup", "--bind-address=127.0.0.1",
            f"--secure-port={secure}", f"--cert-dir={folder / (name + '-certs')}", "--leader-elect=false", "--v=1", *extra])
        plane.wait_ready(process, f"https://127.0.0.1:{secure}{health}", context=insecure)

    component("kube-controller-manager", "/healthz", [
        "--use-service-account-credentials", f"--service-account-private-key-file={sa_key}",
        f"--root-ca-file={plane.ca}", f"--controllers={','.join(controllers)}"])
    component("kube-scheduler", "/readyz", [])


def stop_control_plane(plane: ControlPlane) -> None:
    try:
        plane.stop()
    finally:
        shutil.rmtree(plane.folder, ignore_errors=True)


# --- nodes -------------------------------------------------------------------------------------------------------

SYSTEM_NODE = "aks-system-12345678-vmss000000"
"""Nodes are named as AKS names VMSS nodes, `aks-<pool>-<id>-vmss<instance>`: the admission policies read a node's
pool from its name (a DaemonSet's pods are pinned to their nodes by name)."""
DEFAULT_NODE_MEMORY_GIB = 64
READY_FOR = timedelta(hours=1)
"""How long before the session the fake nodes turned Ready (their Ready condition's lastTransitionTime): long enough
that `verify` judges a missing operator pod on one a failure, not a node still settling."""


def _taint(text: str) -> dict[str, str]:
    """`key=value:Effect` (or `key:Effect`) as a Node taint."""
    key_value, _, effect = text.rpartition(":")
    key, _, value = key_value.partition("=")
    return {"key": key, **({"value": value} if value else {}), "effect": effect}


def node_objects(stack) -> dict[str, list[dict[str, Any]]]:
    """pool name -> the Nodes its AKS pool would have at its largest (`max_nodes`), as AKS, GFD and the device
    plugin label, taint and size them; "system" -> one untainted system node."""
    from gpushare.model.stack import pool_node_taints
    from gpushare.sharing.pool_facts import derive_pool_facts

    def node(name: str, pool: str, vm_size: str, labels: dict[str, str], taints: list[str],
             resources: dict[str, str]) -> dict[str, Any]:
        return {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": vm_size, "kubernetes.azure.com/agentpool": pool,
                "agentpool": pool, **labels}},
            "spec": {"taints": [_taint(t) for t in taints]} if taints else {},
            "status": {"capacity": resources, "allocatable": resources,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "lastTransitionTime": ready_since,
                                       "message": "kubelet is posting ready status (a fake node)"}]},
        }

    facts = derive_pool_facts(stack)
    ready_since = (datetime.now(timezone.utc) - READY_FOR).strftime("%Y-%m-%dT%H:%M:%SZ")
    nodes: dict[str, list[dict[str, Any]]] = {"system": [node(SYSTEM_NODE, "system", "Standard_D4s_v5", {}, [], {
        "cpu": "4", "memory": "16Gi", "pods": "110"})]}
    for pool in stack.pools:
        pool_facts = facts[pool.name]
        resources = {"cpu": str(pool.vm_size.vcpus),
                     "memory": f"{pool.vm_size.memory_gib or DEFAULT_NODE_MEMORY_GIB}Gi", "pods": "110"}
        if pool_facts.device_config is not None:
            # A DRA pool's node advertises no GPU resource: the driver publishes its devices in a ResourceSlice
            # (`tests/controlplane/dra_slices.py`), and its capacity name is only ResourceQuota's count per class.
            resources[pool_facts.capacity.resource] = str(pool_facts.capacity.per_node)
        nodes[pool.name] = [
            node(f"aks-{pool.name}-12345678-vmss{i:06d}", pool.name, pool.vm_size.name, dict(pool_facts.carried_labels),
                 list(pool_node_taints(stack, pool)), resources)
            for i in range(pool.max_nodes)]
    return nodes


def register_nodes(plane: ControlPlane, stack) -> dict[str, list[str]]:
    """Creates the stack's Nodes (`node_objects`) with their status; pool name -> node names."""
    placed: dict[str, list[str]] = {}
    for pool, nodes in node_objects(stack).items():
        for obj in nodes:
            placed.setdefault(pool, []).append(register_node(plane, obj))
    return placed


def register_node(plane: ControlPlane, obj: dict[str, Any]) -> str:
    """Creates one Node of `node_objects` and writes its status, Ready and schedulable; returns its name."""
    obj = dict(obj)
    status = obj.pop("status")
    created = plane.create(obj)
    created["status"] = status
    path = f"/api/v1/nodes/{obj['metadata']['name']}"
    updated = plane.request("PUT", path + "/status", created)
    # The API server taints every new Node node.kubernetes.io/not-ready:NoSchedule (the Node registry's
    # PrepareForCreate, TaintNodesByCondition); the node lifecycle controller lifts it once the kubelet reports
    # Ready. That controller is off here (no kubelet renews the Leases), so it is lifted as it would.
    updated["spec"]["taints"] = [t for t in updated["spec"].get("taints", [])
                                 if t["key"] != "node.kubernetes.io/not-ready"]
    plane.request("PUT", path, updated)
    return obj["metadata"]["name"]


# --- the kubelet's part ------------------------------------------------------------------------------------------

MERGE_PATCH = "application/merge-patch+json"


def kubelet_status(pod: dict[str, Any], phase: str) -> dict[str, Any]:
    """The status a kubelet writes for the pod's containers once they run (`Running`) or all exited 0
    (`Succeeded`)."""
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    running = phase == "Running"
    state = {"running": {"startedAt": now}} if running else {
        "terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}}
    return {"phase": phase, "startTime": now,
            "conditions": [{"type": "Ready", "status": str(running), "lastTransitionTime": now,
                            **({} if running else {"reason": "PodCompleted"})}],
            "containerStatuses": [{"name": c["name"], "image": c["image"], "imageID": "", "ready": running,
                                   "restartCount": 0, "started": running, "state": state}
                                  for c in pod["spec"]["containers"]]}


def set_pod_phase(plane: ControlPlane, pod: dict[str, Any], phase: str) -> None:
    """Writes `kubelet_status` through the pod's `status` subresource, as the kubelet of its node does."""
    meta = pod["metadata"]
    plane.request("PATCH", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status",
                  {"status": kubelet_status(pod, phase)}, content_type=MERGE_PATCH)


def finish_deletion(plane: ControlPlane, namespace: str, name: str) -> None:
    """What the kubelet does for a pod marked for deletion once its containers stopped: it deletes it for good
    (grace period 0); a pod that still has finalizers stays until they are removed."""
    try:
        plane.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}",
                      {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
    except ApiError as error:
        if error.status != 404:
            raise


# --- what the plan renders --------------------------------------------------------------------------------------

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
"""Not applied: the GPU Operator's chart cannot be fetched offline (and would need the operator's images and a
kubelet to do anything). Every other Kubernetes resource of the plan is."""
ENFORCEMENT_PROBE_NAMESPACE = "gpushare-probe"
"""A namespace the shared-pool policy binds, to see it enforced."""


def rendered_objects(plan_document: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the plan's Kubernetes resources but Helm releases, their manifests): a pulumi-kubernetes resource's inputs
    are the object's own fields (apiVersion, kind, metadata, spec, data, ...)."""
    resources = [r for r in plan_document["resources"] if r["type"].startswith("kubernetes:")
                 and r["type"] != HELM_RELEASE]
    return resources, [r["inputs"] for r in resources]


def ensure_namespace(plane: ControlPlane, name: str) -> None:
    try:
        plane.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    except ApiError as error:
        if error.status != 409:
            raise
    plane.wait_for(f"the default ServiceAccount of {name}", lambda: plane.get("v1", "ServiceAccount", "default", name))


def refused_by_a_policy(plane: ControlPlane, namespace: str) -> bool:
    """A dry-run pod that every gpushare policy refuses (it names every GPU of its node) is refused by one."""
    probe = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "enforcement-probe"}, "spec": {"containers": [
        {"name": "c", "image": "busybox", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]}}
    try:
        plane.request("POST", resource_path("v1", "Pod", namespace) + "?dryRun=All", probe)
    except ApiError as error:
        return "ValidatingAdmissionPolicy" in str(error.body.get("message", ""))
    return False


def apply_rendered(plane: ControlPlane, stack, plan_document: dict[str, Any]):
    """Creates every object `rendered_objects` lists, as the admin, in the plan's order (namespaces before what is in
    them, each policy before its binding); waits until each namespace has its default ServiceAccount, each quota its
    status and each tenant's (and the shared-pool) policy refuses a probe pod: a new binding reaches the admission
    plugin through its informers a moment after it is stored, and until then a test could see it admit what it will
    refuse. Returns (resources, manifests, the created objects)."""
    resources, manifests = rendered_objects(plan_document)
    created = [plane.create(obj) for obj in manifests]
    for obj in manifests:
        meta = obj["metadata"]
        if obj["kind"] == "Namespace":
            plane.wait_for(f"the default ServiceAccount of {meta['name']}",
                           lambda: plane.get("v1", "ServiceAccount", "default", meta["name"]))
        elif obj["kind"] == "ResourceQuota":
            plane.wait_for(f"quota {meta['name']}'s status", lambda: plane.get(
                "v1", "ResourceQuota", meta["name"], meta["namespace"]).get("status", {}).get("hard"))
    ensure_namespace(plane, ENFORCEMENT_PROBE_NAMESPACE)
    for namespace in [*(tenant.name for tenant in stack.tenants), ENFORCEMENT_PROBE_NAMESPACE]:
        plane.wait_for(f"the policy bound to namespace {namespace}",
                       lambda namespace=namespace: refused_by_a_policy(plane, namespace))
    return resources, manifests, created
