"""A local HTTPS stand-in for the Kubernetes API server, for tests that drive the real `kubernetes` client.

The server is `tests/https_stub.HttpsStub`: 127.0.0.1 only, TLS with a certificate from a throwaway `trustme` CA
(the kubeconfig carries the CA, as AKS's does), canned responses per method and path, a log of every request, and
400 with a Kubernetes `Status` for a route nobody registered, so a wrong URL never passes for "not found". Objects are in the
API's JSON shape (`node(...)`, `pod(...)`, ...). Nothing here touches the internet.

Use:

    with KubeStub() as kube:
        kube.route("GET", "/api/v1/nodes", StubResponse(200, node_list(node("aks-t4-0", ...))))
        main(["verify", "dev", "--kubeconfig", str(kube.kubeconfig(tmp_path))])
        assert kube.count("GET", "/api/v1/nodes") == 1
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml

from tests.https_stub import HttpsStub, RecordedRequest, StubResponse

__all__ = ["KubeStub", "RecordedRequest", "StubResponse"]

FAKE_TOKEN = "stub-kube-token"
CONTEXT = "stub-cluster"
READY_SINCE = "2026-11-30T08:00:00Z"
"""Nodes Ready since long before any test runs: a missing operator pod on them is a failure, not pending."""


class KubeStub(HttpsStub):
    """Routes are (method, exact path), query ignored; the last response repeats."""

    text_content_type = "text/plain"

    @property
    def server(self) -> str:
        return self.url

    def kubeconfig(self, directory: Path, token: str = FAKE_TOKEN, server: str | None = None) -> Path:
        """A kubeconfig whose current context reaches this stub with the stub's CA and a bearer token."""
        path = directory / "kubeconfig"
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": CONTEXT, "cluster": {"server": server or self.server,
                                                       "certificate-authority": self.ca_path}}],
            "users": [{"name": "stub-user", "user": {"token": token}}],
            "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": "stub-user"}}],
            "current-context": CONTEXT,
        }))
        return path

    def route_key(self, method: str, path: str) -> tuple[str, str]:
        return method, path

    def route(self, method: str, path: str, *responses: StubResponse) -> None:
        """Serve `responses` in order on `method path`; once exhausted the last one repeats."""
        self._set_route((method, path), responses)

    def count(self, method: str, path: str) -> int:
        return sum(1 for r in self.requests if r.method == method and r.path == path)

    def no_route(self, method: str, path: str) -> StubResponse:
        return StubResponse(400, status(400, "BadRequest", f"the stub has no route for {method} {path}"))


# --- Kubernetes API shapes --------------------------------------------------------------------------------


def status(code: int, reason: str, message: str) -> dict:
    """The API server's error body (`Status`)."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


def object_list(kind: str, *items: dict, api_version: str = "v1") -> dict:
    return {"kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": "1"}, "items": list(items)}


def node(name: str, labels: Mapping[str, str], allocatable: Mapping[str, str], *, ready: bool = True,
         ready_since: str = READY_SINCE) -> dict:
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": {"cpu": "3860m", "memory": "24Gi", "pods": "110", **allocatable},
            "capacity": {"cpu": "4", "memory": "28Gi", "pods": "110", **allocatable},
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "lastTransitionTime": ready_since},
                {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": ready_since,
                 "reason": "KubeletReady" if ready else "KubeletNotReady"},
            ],
        },
    }


def config_map(namespace: str, name: str, data: Mapping[str, str]) -> dict:
    return {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": name, "namespace": namespace},
            "data": dict(data)}


def daemon_set(namespace: str, name: str, desired: int, ready: int) -> dict:
    return {
        "kind": "DaemonSet", "apiVersion": "apps/v1",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {"selector": {"matchLabels": {"app": name}}},
        "status": {"desiredNumberScheduled": desired, "currentNumberScheduled": desired, "numberReady": ready,
                   "numberAvailable": ready},
    }


def pod(namespace: str, app: str, node_name: str, *, ready: bool = True, phase: str = "Running",
        init_containers: list[dict] | None = None, containers: list[dict] | None = None) -> dict:
    """A pod of DaemonSet `app` on `node_name`. `containers`/`init_containers` are container statuses."""
    return {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": f"{app}-{node_name[-5:]}", "namespace": namespace, "labels": {"app": app}},
        "spec": {"nodeName": node_name, "containers": [{"name": app, "image": f"nvcr.io/nvidia/{app}"}]},
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "initContainerStatuses": init_containers or [],
            "containerStatuses": containers if containers is not None else [
                {"name": app, "ready": ready, "restartCount": 0, "image": f"nvcr.io/nvidia/{app}", "imageID": "",
                 "state": {"running": {"startedAt": READY_SINCE}}}],
        },
    }


def container_status(name: str, *, waiting: str | None = None, exit_code: int | None = None,
                     ready: bool = False, restarts: int = 0) -> dict:
    state: dict = {"running": {"startedAt": READY_SINCE}}
    if waiting:
        state = {"waiting": {"reason": waiting, "message": f"{name} {waiting}"}}
    elif exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error"}}
    return {"name": name, "ready": ready, "restartCount": restarts, "image": "nvcr.io/nvidia/x", "imageID": "",
            "state": state}
