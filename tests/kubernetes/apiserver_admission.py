"""Admission judged by the API server's own ValidatingAdmissionPolicy plugin: `tools/vapcheck`, a Go program running
k8s.io/apiserver's plugin over fake clients, built once per Kubernetes minor and cached outside the clone
(`tools/vapcheck/build`). `KUBERNETES_MINORS`: the newest minor the project targets (tools/vapcheck/go.mod, the
control-plane tier's) and the oldest a stack may pin (tools/vapcheck/go.<minor>.mod), one source built at each.

`PluginCluster(manifests).admit(...)` answers with a `Decision`. The plugin builds the CEL `request`,
`namespaceObject`, `object` and `oldObject` itself, through the API server's code:
optional request fields (`subResource`, `namespace`, `name`, `userInfo.*`) are absent when empty, quantities are
canonical, and every binding, selector, matchCondition, variable, validation and messageExpression is the API server's.

Before the plugin, `admit` applies to a Pod what the API server applies before validating admission, in its order:
1. on CREATE, requests defaulted from limits (`SetDefaults_Pod`) and
2. the LimitRanger plugin's defaults from the namespace's LimitRange (both `default_pod`);
3. on CREATE and UPDATE, the ExtendedResourceToleration plugin (enabled on AKS; `extended_resource_tolerations`).
vapcheck then does what the handlers and registry do to every object (namespace from the request, metadata system
fields; a Namespace's `kubernetes.io/metadata.name` label) and creates every namespace a request names that the
manifests lack, with that label.

Go is needed: without it `unavailable_reason()` says so in one line and the tests skip, except under `CI=true`, where
they must run and a missing Go is an error. A failing build is always an error.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import tempfile
import threading
import weakref
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests import go_tools


ROOT = Path(__file__).resolve().parents[2]
VAPCHECK = ROOT / "tools" / "vapcheck"
BUILD = VAPCHECK / "build"
DEFAULT_USER = {"username": "alice@example.com", "groups": ["system:authenticated"]}

_build_lock = threading.Lock()


def kubernetes_minor(go_mod: Path) -> str:
    """The Kubernetes minor a vapcheck go.mod builds: k8s.io/apiserver v0.<n>.<patch> is released with 1.<n>."""
    found = re.search(r"^\s*k8s\.io/apiserver v0\.(\d+)\.", go_mod.read_text(), re.MULTILINE)
    if found is None:
        raise RuntimeError(f"{go_mod.relative_to(ROOT)} requires no k8s.io/apiserver")
    return f"1.{found[1]}"


NEWEST_KUBERNETES = kubernetes_minor(VAPCHECK / "go.mod")
"""The minor `plugin_cluster` judges on unless told otherwise."""
KUBERNETES_MINORS = (NEWEST_KUBERNETES, *sorted((kubernetes_minor(p) for p in VAPCHECK.glob("go.1.*.mod")),
                                                  key=lambda minor: int(minor.split(".")[1])))
"""Every minor vapcheck builds: the newest first, then the older ones (`build --kubernetes <minor>`)."""


@dataclass
class Decision:
    allowed: bool
    messages: list[str]


def _all_containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("containers", []), *spec.get("initContainers", [])]


def default_pod(pod: dict[str, Any], limit_range: dict[str, Any] | None) -> dict[str, Any]:
    """A Pod CREATE's defaulting before admission: requests from limits (k8s.io/kubernetes `pkg/apis/core/v1/
    defaults.go` SetDefaults_Pod), then the LimitRanger plugin's container `default` limits and `defaultRequest`
    requests (`plugin/pkg/admission/limitranger`), on a copy."""
    pod = copy.deepcopy(pod)
    item = next((i for i in (limit_range or {}).get("spec", {}).get("limits", []) if i["type"] == "Container"), {})
    for container in _all_containers(pod["spec"]):
        resources = container.setdefault("resources", {})
        limits, requests = resources.get("limits", {}), resources.get("requests", {})
        for name, value in limits.items():
            requests.setdefault(name, value)
        for name, value in item.get("default", {}).items():
            limits.setdefault(name, value)
        for name, value in item.get("defaultRequest", {}).items():
            requests.setdefault(name, value)
        if limits:
            resources["limits"] = limits
        if requests:
            resources["requests"] = requests
    return pod


@cache
def unavailable_reason() -> str | None:
    """None when vapcheck can be built here; else the one-line reason (Go is not installed), for `pytest.skip`.
    Under CI=true a missing Go raises instead: CI must run these tests."""
    return go_tools.unavailable_reason(BUILD, "the API server admission tests")


@cache
def _built(kubernetes: str) -> Path:
    path = go_tools.built(BUILD, timeout=1800, args=("--kubernetes", kubernetes))
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise RuntimeError(f"{BUILD.relative_to(ROOT)} printed {path}, which is not an executable")
    return path


def vapcheck_binary(kubernetes: str = NEWEST_KUBERNETES) -> Path:
    """The vapcheck binary of Kubernetes `kubernetes` (one of `KUBERNETES_MINORS`), built at most once per process
    (the build script caches it across processes). Skips the calling test when Go is missing (see
    `unavailable_reason`); a failed build raises RuntimeError."""
    if kubernetes not in KUBERNETES_MINORS:
        raise ValueError(f"vapcheck builds Kubernetes {', '.join(KUBERNETES_MINORS)}, not {kubernetes}")
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with _build_lock:
        return _built(kubernetes)


def is_extended_resource_name(name: str) -> bool:
    """k8s.io/kubernetes `pkg/apis/core/helper/helpers.go` IsExtendedResourceName: not native (IsNativeResource: no
    '/', or containing `kubernetes.io/` anywhere), not `requests.`-prefixed, and `requests.<name>` a qualified name
    (k8s.io/apimachinery `pkg/util/validation` IsQualifiedName: an optional DNS-1123 subdomain prefix of at most 253
    characters and '/', then a name of at most 63 characters)."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    parts = f"requests.{name}".split("/")
    if len(parts) != 2:
        return False
    prefix, rest = parts
    return (0 < len(prefix) <= 253 and _DNS1123_SUBDOMAIN.fullmatch(prefix) is not None
            and 0 < len(rest) <= 63 and _QUALIFIED_NAME.fullmatch(rest) is not None)


_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def extended_resource_tolerations(pod: dict[str, Any]) -> dict[str, Any]:
    """The ExtendedResourceToleration admission plugin (k8s.io/kubernetes
    `plugin/pkg/admission/extendedresourcetoleration/admission.go`), on a copy of `pod`. As there:
    - it handles CREATE and UPDATE (`admission.NewHandler(admission.Create, admission.Update)`) of `pods` itself, not
      its subresources;
    - it reads the *names* in `resources.requests` of `containers` and `initContainers` (not ephemeral containers, not
      the pod-level `spec.resources`, not `limits`: a limit counts through the request defaulted from it), so a zero
      quantity (`nvidia.com/gpu: 0`) counts too;
    - for each extended resource name, in sorted order, `helper.AddOrUpdateTolerationInPod` with
      `{key: <name>, operator: Exists, effect: NoSchedule}`: a toleration with the same key, operator, value and
      effect (`Toleration.MatchToleration`) that is not exactly it (e.g. it has tolerationSeconds) is replaced by it in
      place; an equal one leaves the pod unchanged; with no match it is appended."""
    pod = copy.deepcopy(pod)
    spec = pod.setdefault("spec", {})
    names = sorted({name for c in [*spec.get("containers", []), *spec.get("initContainers", [])]
                    for name in ((c.get("resources") or {}).get("requests") or {}) if is_extended_resource_name(name)})
    for name in names:
        wanted = {"key": name, "operator": "Exists", "effect": "NoSchedule"}
        existing = spec.get("tolerations") or []
        fields = ("key", "operator", "value", "effect")
        matches = [all((t.get(f) or "") == (wanted.get(f) or "") for f in fields) for t in existing]
        if any(m and t == wanted for m, t in zip(matches, existing)):
            continue
        if any(matches):
            spec["tolerations"] = [dict(wanted) if m else t for m, t in zip(matches, existing)]
        else:
            spec["tolerations"] = [*existing, dict(wanted)]
    return pod


def _terminate(process: subprocess.Popen, stderr) -> None:
    try:
        if process.stdin:
            process.stdin.close()
        process.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        process.kill()
        process.wait()
    finally:
        if process.stdout:
            process.stdout.close()
        stderr.close()


class PluginCluster:
    """The ValidatingAdmissionPolicies, bindings, Namespaces and LimitRanges of `manifests`, judged by one
    `vapcheck --serve` process of Kubernetes `kubernetes` (two plugin instances in it: one decides, one lists every
    failing validation)."""

    def __init__(self, manifests: list[dict[str, Any]], kubernetes: str = NEWEST_KUBERNETES):
        binary = vapcheck_binary(kubernetes)
        by_kind: dict[str, list[dict[str, Any]]] = {}
        for m in manifests:
            by_kind.setdefault(m.get("kind", ""), []).append(m)
        self.limit_ranges = {m["metadata"]["namespace"]: m for m in by_kind.get("LimitRange", [])}
        setup = {"policies": by_kind.get("ValidatingAdmissionPolicy", []),
                 "bindings": by_kind.get("ValidatingAdmissionPolicyBinding", []),
                 "namespaces": by_kind.get("Namespace", [])}
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self._process = subprocess.Popen([str(binary), "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self._stderr, text=True, bufsize=1)
        # Ends the process when this object goes, or at interpreter exit (finalize registers with atexit).
        self._finalizer = weakref.finalize(self, _terminate, self._process, self._stderr)
        self._lock = threading.Lock()
        ready = self._exchange(setup)
        if not ready.get("ready"):
            self.close()
            raise RuntimeError(f"vapcheck --serve did not start: {ready}")
        self.compile_errors: list[dict[str, str]] = ready.get("compileErrors") or []
        """What creating the policies would refuse ({policy, error}), as the API server's validation compiles them."""

    def _exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if not self._finalizer.alive:
                raise RuntimeError("this PluginCluster is closed")
            try:
                self._process.stdin.write(json.dumps(message) + "\n")
                self._process.stdin.flush()
                line = self._process.stdout.readline()
            except (BrokenPipeError, OSError):
                line = ""
            if not line:
                self._process.wait(timeout=10)
                self._stderr.seek(0)
                raise RuntimeError(f"vapcheck --serve exited {self._process.returncode}: "
                                   f"{go_tools.tail(self._stderr.read(), 5)}")
            return json.loads(line)

    def request(self, obj: dict[str, Any] | None, namespace: str, operation: str = "CREATE",
                old: dict[str, Any] | None = None, subresource: str = "", user: str | None = None,
                groups: list[str] | None = None, kind: dict[str, str] | None = None) -> dict[str, Any]:
        """vapcheck's full result ({id, allowed, messages, evalErrors, warnings, denial}) for one request, after the
        API server's mutations (see the module's docstring). `kind`: the request's kind when it is not the object's
        (a subresource's, e.g. policy/v1 Eviction); vapcheck derives the resource from it."""
        subject = obj if obj is not None else old
        if subject is None:
            raise ValueError("a request needs an object or an old object")
        if obj is not None and obj.get("kind") == "Pod" and not subresource:
            if operation == "CREATE":
                obj = default_pod(obj, self.limit_ranges.get(namespace))
            if operation in ("CREATE", "UPDATE"):
                obj = extended_resource_tolerations(obj)
        if operation == "UPDATE" and old is None:
            old = obj  # the stored object is the object itself: an update that changes nothing
        if kind is None:
            group, _, version = subject["apiVersion"].rpartition("/")
            kind = {"group": group, "version": version, "kind": subject["kind"]}
        request: dict[str, Any] = {
            "id": f"{operation} {subject['kind']} {namespace}/{subject.get('metadata', {}).get('name', '')}",
            "operation": operation, "namespace": namespace, "subResource": subresource, "kind": kind,
            "object": obj, "oldObject": old if operation in ("UPDATE", "DELETE") else None,
            "userInfo": {"username": user if user is not None else DEFAULT_USER["username"],
                         "groups": list(groups) if groups is not None else list(DEFAULT_USER["groups"])}}
        result = self._exchange(request)
        if result.get("error"):
            raise ValueError(f"vapcheck refused the request: {result['error']}")
        return result

    def admit(self, obj: dict[str, Any], namespace: str, operation: str = "CREATE",
              old: dict[str, Any] | None = None, subresource: str = "", user: str | None = None,
              groups: list[str] | None = None) -> Decision:
        """`old`: the stored object an UPDATE replaces (the object itself when not given), not mutated;
        `subresource`: e.g. `ephemeralcontainers`; `user`, `groups`: the requester (alice@example.com, authenticated).
        messages: every failing validation's message, then the evaluation errors."""
        result = self.request(obj, namespace, operation, old, subresource, user, groups)
        return Decision(allowed=result["allowed"], messages=[*result["messages"], *result["evalErrors"]])

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> PluginCluster:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def plugin_cluster(manifests: list[dict[str, Any]], kubernetes: str = NEWEST_KUBERNETES) -> PluginCluster:
    """A new `PluginCluster` of `manifests` on Kubernetes `kubernetes`; skips the calling test when Go is missing
    (`unavailable_reason`). Each call starts its own `vapcheck --serve`, ended by `close()`, when the object is
    collected, or at exit."""
    return PluginCluster(manifests, kubernetes)
