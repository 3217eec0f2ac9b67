"""Reads (and, for `--smoke`, short-lived writes) against a live cluster with the official `kubernetes` client.

The kubeconfig is found as kubectl finds it: `--kubeconfig`, else `KUBECONFIG` (paths joined by `:`), else
`~/.kube/config`. Responses are kept as the API's JSON (`_preload_content=False`), which `gpushare.kubernetes.verify` reads.
Every failure to reach the API server or to be let in becomes a `ClusterAccessError` (exit 4) naming which one. Each
API call keeps the read deadline (`GPUSHARE_READ_DEADLINE`; per call, since `verify --wait` and `--smoke` poll for
as long as they are told) and a bounded body (`gpushare.azure.remote_read`): a silent or dripping API server, a
body cut short, too large or nested too deep is one such error too.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from gpushare.azure.remote_read import ReadBoundError, ReadDeadline, load_json, read_body
from gpushare.errors import ClusterAccessError
from gpushare.kubernetes.gpu_software import GpuSoftware
from gpushare.kubernetes.verify.api_json import ClusterSnapshot
from gpushare.kubernetes.verify.expectations import MPS_DS, OPERATOR_DAEMONSETS, PoolExpectation
from gpushare.kubernetes.verify.smoke import SMOKE_LABELS, SMOKE_NAMESPACE_PREFIX, SmokeResult, SmokeTarget
from gpushare.kubernetes.verify.tenant_drift import (
    FORBIDDEN,
    RBAC_CLUSTER_ADMIN,
    RBAC_READER,
    Forbidden,
    ObjectRef,
    object_ref,
)
from gpushare.model.stack import POOL_LABEL
from gpushare.sharing.dra import DRIVER_NAME as DRA_DRIVER
from gpushare.sharing.operator_values import CONFIG_MAP_NAME, NAMESPACE

DEFAULT_KUBECONFIG = "~/.kube/config"
REQUEST_TIMEOUT = (10, 60)
"""(connect, read) seconds per API call, each within the read deadline."""
MAX_ANSWER_BYTES = 128 * 1024 * 1024
"""The largest answer read: a node list of AKS's largest cluster (5,000 nodes of 5 to 15 KB each, their image lists
included) stays below this."""
CREDENTIALS_HINT = (
    "for an AKS cluster with Entra ID: `az aks get-credentials --resource-group RG --name CLUSTER` and, if the "
    "kubeconfig runs kubelogin, `kubelogin convert-kubeconfig -l azurecli` (kubelogin must be on PATH)"
)
_APPS = ",".join((*OPERATOR_DAEMONSETS, MPS_DS))


def kubeconfig_paths(flag: Path | None) -> list[Path]:
    if flag is not None:
        return [flag]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    return [Path(DEFAULT_KUBECONFIG).expanduser()]


def api_client(kubeconfig: Path | None, context: str | None) -> tuple[client.ApiClient, str]:
    """An ApiClient for the kubeconfig's context (`context` or its current one), and the context's name."""
    paths = kubeconfig_paths(kubeconfig)
    existing = [p for p in paths if p.is_file()]
    if not existing:
        error = ClusterAccessError(f"no kubeconfig at {', '.join(str(p) for p in paths)}")
        error.hint = f"pass --kubeconfig FILE or set KUBECONFIG; {CREDENTIALS_HINT}"
        raise error
    joined = os.pathsep.join(str(p) for p in existing)
    try:
        contexts, current = config.list_kube_config_contexts(config_file=joined)
        names = [c["name"] for c in contexts]
        chosen = context or (current or {}).get("name")
        if chosen not in names:
            error = ClusterAccessError(f"{joined}: no context {chosen!r}")
            error.hint = f"contexts in the kubeconfig: {', '.join(names) or 'none'}; pick one with --context NAME"
            raise error
        # urllib3's default retries (3) would wait out a silent server's read timeout four times; a read is not
        # retried, so a call ends within the read deadline. Connecting is still retried.
        configuration = type.__call__(client.Configuration)
        configuration.retries = urllib3.Retry(total=3, read=0)
        with _logged_errors() as errors:
            api = config.new_client_from_config(config_file=joined, context=chosen, persist_config=False,
                                                client_configuration=configuration)
        if errors:
            error = ClusterAccessError(f"the credential plugin of context {chosen} in {joined} failed: {errors[0]}")
            error.hint = CREDENTIALS_HINT
            raise error
        return api, chosen
    except (ConfigException, yaml.YAMLError) as exc:
        # A kubeconfig that is not YAML, or not a kubeconfig.
        error = ClusterAccessError(f"the kubeconfig {joined} cannot be used: {exc}")
        error.hint = CREDENTIALS_HINT
        raise error from None


@contextlib.contextmanager
def _logged_errors() -> Iterator[list[str]]:
    """Errors the kubernetes client logs instead of raising: a failing exec plugin (kubelogin missing, not logged
    in) is only logged (`KubeConfigLoader._load_from_exec_plugin`), and the calls would then go out without a token."""
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    handler = Collect(logging.ERROR)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield messages
    finally:
        root.removeHandler(handler)


def _server(api: client.ApiClient) -> str:
    return api.configuration.host


def _access_error(api: client.ApiClient, what: str, exc: Exception) -> ClusterAccessError:
    server = _server(api)
    if isinstance(exc, ApiException) and exc.status == 401:
        error = ClusterAccessError(f"the API server {server} refused the credentials (401 Unauthorized) to {what}")
        error.hint = f"the token is missing or expired; {CREDENTIALS_HINT}"
    elif isinstance(exc, ApiException) and exc.status == 403:
        error = ClusterAccessError(
            f"the API server {server} accepted the credentials but may not {what} (403 Forbidden)")
        error.hint = (
            f"verify lists nodes (cluster-scoped, which {RBAC_READER} does not cover: {RBAC_CLUSTER_ADMIN}, or a "
            "custom role with Microsoft.ContainerService/managedClusters/nodes/read), and reads pods, DaemonSets and "
            f"the ConfigMap in namespace {NAMESPACE} ({RBAC_READER} there); `--smoke` creates a namespace and pods "
            f"({RBAC_CLUSTER_ADMIN}); tenants' objects it may not read are skipped, each naming its role. New role "
            "assignments take up to five minutes to apply"
        )
    elif isinstance(exc, ApiException) and exc.status:
        error = ClusterAccessError(f"the API server {server} answered {exc.status} {exc.reason} to {what}: "
                                   f"{_api_message(exc)}")
        error.hint = "retry; if it persists, check the cluster's health in the Azure portal"
    else:
        reason = getattr(exc, "reason", None) or exc
        error = ClusterAccessError(f"cannot reach the API server {server} to {what}: {reason}")
        error.hint = (
            "check the server address in the kubeconfig and your network path to it (a private cluster is reachable "
            f"only from its virtual network); {CREDENTIALS_HINT}"
        )
    return error


def _api_message(exc: ApiException) -> str:
    try:
        return str(load_json(exc.body, "the error").get("message", ""))[:300]
    except (TypeError, ValueError, AttributeError, ReadBoundError):
        return str(exc.body or "")[:200]


def call(api: client.ApiClient, what: str, request: Callable[..., Any], *args: Any,
         missing_ok: bool = False, forbidden_ok: bool = False, **kwargs: Any) -> Any:
    """One API call returning its JSON (None for a 404 when `missing_ok`, FORBIDDEN for a 403 when `forbidden_ok`);
    failures become ClusterAccessError."""
    deadline = ReadDeadline.from_environ(os.environ)
    try:
        response = _send(api, what, request, *args, missing_ok=missing_ok, deadline=deadline, **kwargs)
    except _Forbidden:
        if forbidden_ok:
            return FORBIDDEN
        raise
    body = _body(api, what, response, deadline)
    try:
        return load_json(body, f"the API server {_server(api)} to {what}") if body else None
    except ReadBoundError as exc:
        raise _bound_error(api, what, exc) from None
    except ValueError:
        error = ClusterAccessError(f"the API server {_server(api)} answered {what} with a body that is not JSON "
                                   f"({body[:80]!r})")
        error.hint = "is the kubeconfig's server a Kubernetes API server? a proxy there answers in another shape"
        raise error from None


def _body(api: client.ApiClient, what: str, response: Any, deadline: ReadDeadline) -> bytes:
    """The answer's body, read as it arrives within `deadline` and `MAX_ANSWER_BYTES` (b"" for no answer)."""
    if response is None:
        return b""
    try:
        return read_body(response, limit=MAX_ANSWER_BYTES, deadline=deadline, what=f"the API server to {what}",
                         timeouts=(urllib3.exceptions.ReadTimeoutError,),
                         cut_short=(urllib3.exceptions.ProtocolError,), decode_content=True)
    except ReadBoundError as exc:
        raise _bound_error(api, what, exc) from None


def _bound_error(api: client.ApiClient, what: str, exc: ReadBoundError) -> ClusterAccessError:
    error = ClusterAccessError(f"{_server(api)}: {exc}")
    error.hint = "check the cluster's health in the Azure portal, and your network path to its API server"
    return error


class _Forbidden(ClusterAccessError):
    """A 403: a ClusterAccessError that `call(..., forbidden_ok=True)` turns into FORBIDDEN."""

    def __init__(self, error: ClusterAccessError) -> None:
        super().__init__(str(error))
        self.hint = error.hint


def _send(api: client.ApiClient, what: str, request: Callable[..., Any], *args: Any,
          missing_ok: bool = False, deadline: ReadDeadline | None = None, **kwargs: Any) -> Any:
    deadline = deadline or ReadDeadline.from_environ(os.environ)
    remaining = deadline.remaining()
    timeout = tuple(min(seconds, remaining) for seconds in REQUEST_TIMEOUT)
    try:
        return request(*args, _preload_content=False, _request_timeout=timeout, **kwargs)
    except ApiException as exc:
        if missing_ok and exc.status == 404:
            return None
        if exc.status == 403:
            raise _Forbidden(_access_error(api, what, exc)) from None
        raise _access_error(api, what, exc) from None
    except (urllib3.exceptions.HTTPError, OSError, ConfigException) as exc:
        if deadline.remaining() <= 0:
            raise _bound_error(api, what, deadline.exceeded(f"the API server to {what}")) from None
        raise _access_error(api, what, exc) from None


def read_snapshot(api: client.ApiClient, dra: bool = False) -> ClusterSnapshot:
    """The cluster's nodes (gpushare's pools' apart), the device-plugin ConfigMap, the operator's DaemonSets and
    pods; with `dra` (a stack with DRA pools), the DRA driver's ResourceSlices too."""
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    # Every node: the cluster autoscaler's unready threshold is a share of all of them (`verify.autoscaler_view`).
    nodes = call(api, "list nodes", core.list_node).get("items") or []
    config_map = call(api, f"read ConfigMap {NAMESPACE}/{CONFIG_MAP_NAME}", core.read_namespaced_config_map,
                      CONFIG_MAP_NAME, NAMESPACE, missing_ok=True)
    daemon_sets = call(api, f"list DaemonSets in {NAMESPACE}", apps.list_namespaced_daemon_set, NAMESPACE)
    pods = call(api, f"list pods in {NAMESPACE}", core.list_namespaced_pod, NAMESPACE,
                label_selector=f"app in ({_APPS})")
    slices: list[dict] | None = []
    if dra:
        # Cluster-scoped; the API server filters by driver (ResourceSlice's field selectors: spec.driver,
        # spec.nodeName, spec.pool.name). A 404: no resource.k8s.io/v1 served.
        found = call(api, "list ResourceSlices (resource.k8s.io/v1)",
                     client.CustomObjectsApi(api).list_cluster_custom_object, "resource.k8s.io", "v1",
                     "resourceslices", field_selector=f"spec.driver={DRA_DRIVER}", missing_ok=True)
        slices = None if found is None else found.get("items") or []
    return ClusterSnapshot(
        resource_slices=slices,
        nodes=[n for n in nodes if POOL_LABEL in ((n.get("metadata") or {}).get("labels") or {})],
        other_nodes=[n for n in nodes if POOL_LABEL not in ((n.get("metadata") or {}).get("labels") or {})],
        config_map=config_map,
        daemon_sets=daemon_sets.get("items") or [],
        pods=pods.get("items") or [],
        now=datetime.now(timezone.utc),
    )


def read_gpu_software(api: client.ApiClient) -> GpuSoftware:
    """Every DaemonSet, every GPU Operator ClusterPolicy (none when its CRD is not installed) and gpushare's operator
    namespace: three reads, for `gpu_software.gpu_software_checks`."""
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    custom = client.CustomObjectsApi(api)
    daemon_sets = call(api, "list DaemonSets in all namespaces", apps.list_daemon_set_for_all_namespaces)
    policies = call(api, "list ClusterPolicies (nvidia.com/v1)", custom.list_cluster_custom_object,
                    "nvidia.com", "v1", "clusterpolicies", missing_ok=True)
    namespace = call(api, f"read namespace {NAMESPACE}", core.read_namespace, NAMESPACE, missing_ok=True)
    return GpuSoftware(daemon_sets=daemon_sets.get("items") or [],
                       cluster_policies=(policies or {}).get("items") or [], gpushare_namespace=namespace)


def _pod_detail(pod: dict) -> str:
    """The scheduler's or kubelet's reason a pod is not running yet."""
    status = pod.get("status") or {}
    for condition in status.get("conditions") or []:
        if condition.get("status") == "False" and condition.get("message"):
            return condition["message"]
    for container in status.get("containerStatuses") or []:
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            return f"{waiting['reason']}: {waiting.get('message', '')}".rstrip(": ")
    return ""


def smoke_namespace() -> str:
    """A fresh name per run, so two runs never share (or delete) each other's namespace."""
    return SMOKE_NAMESPACE_PREFIX + secrets.token_hex(3)


_REJECTIONS = ("denied the request", "denied request", "exceeded quota")
"""Words of a 403 that come from admission (webhook, ValidatingAdmissionPolicy with reason Forbidden) or a quota,
not from RBAC: the pod was refused, the credentials were fine."""


def _create_smoke_object(api: client.ApiClient, core: client.CoreV1Api, namespace: str,
                         manifest: dict) -> str | None:
    """None when the object (a Pod, or a DRA pool's ResourceClaimTemplate) was created; the API server's message when
    admission or a quota refused it (422, or a 403 that says so)."""
    kind = manifest["kind"]
    what = f"create a {'pod' if kind == 'Pod' else kind} in {namespace}"
    try:
        if kind == "Pod":
            core.create_namespaced_pod(namespace, manifest, _preload_content=False, _request_timeout=REQUEST_TIMEOUT)
        else:
            group, _, version = manifest["apiVersion"].rpartition("/")
            client.CustomObjectsApi(api).create_namespaced_custom_object(
                group, version, namespace, f"{kind.lower()}s", manifest, _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT)
    except ApiException as exc:
        message = _api_message(exc)
        if exc.status == 422 or (exc.status == 403 and any(words in message for words in _REJECTIONS)):
            return message
        raise _access_error(api, what, exc) from None
    except (urllib3.exceptions.HTTPError, OSError, ConfigException) as exc:
        raise _access_error(api, what, exc) from None
    return None


def run_smoke(api: client.ApiClient, targets: list[SmokeTarget], timeout: float, poll_interval: float,
              progress: Callable[[str], None], skip: Mapping[str, str] | None = None,
              clock: Callable[[], float] = time.monotonic,
              sleep: Callable[[float], None] = time.sleep) -> list[SmokeResult]:
    """One smoke pod per pool (on a DRA pool with the ResourceClaimTemplate it claims) in a namespace created for the
    run and deleted afterwards, also on failure: the namespace takes its objects with it. Pools in `skip`
    (pool -> why) get no pod."""
    skip = skip or {}
    skipped = [SmokeResult(t.pool, "Skipped", None, "", skip[t.pool], t.allocation) for t in targets if t.pool in skip]
    targets = [t for t in targets if t.pool not in skip]
    if not targets:
        return skipped
    return skipped + _run_smoke(api, targets, timeout, poll_interval, progress, clock, sleep)


def _run_smoke(api: client.ApiClient, targets: list[SmokeTarget], timeout: float, poll_interval: float,
               progress: Callable[[str], None], clock: Callable[[], float],
               sleep: Callable[[float], None]) -> list[SmokeResult]:
    core = client.CoreV1Api(api)
    namespace = smoke_namespace()
    call(api, f"create namespace {namespace}", core.create_namespace, {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": dict(SMOKE_LABELS)},
    })
    try:
        rejected = {}
        for target in targets:
            # The pod comes last: a DRA pool's pod names its claim template, and a refused template means no pod.
            for manifest in target.manifests(namespace):
                if (message := _create_smoke_object(api, core, namespace, manifest)) is not None:
                    rejected[target.pool] = message
                    break
        progress(f"smoke: {len(targets) - len(rejected)} pod(s) in namespace {namespace}, up to {timeout:.0f}s")
        deadline = clock() + timeout
        pending = {t.pool: f"smoke-{t.pool}" for t in targets if t.pool not in rejected}
        finished: dict[str, dict] = {}
        last: dict[str, dict] = {}
        while True:
            for pool, name in list(pending.items()):
                pod = call(api, f"read pod {namespace}/{name}", core.read_namespaced_pod, name, namespace)
                last[pool] = pod
                if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                    finished[pool] = pod
                    del pending[pool]
            if not pending or clock() >= deadline:
                break
            progress(f"smoke: waiting for {', '.join(sorted(pending))}")
            sleep(poll_interval)
        results = []
        for target in targets:
            if target.pool in rejected:
                results.append(SmokeResult(target.pool, "Rejected", None, "", rejected[target.pool],
                                           target.allocation))
                continue
            pod = last[target.pool]
            name = f"smoke-{target.pool}"
            phase = (pod.get("status") or {}).get("phase") or "Pending"
            log = ""
            if target.pool in finished:
                what = f"read the log of pod {namespace}/{name}"
                deadline = ReadDeadline.from_environ(os.environ)
                response = _send(api, what, core.read_namespaced_pod_log, name, namespace, deadline=deadline)
                log = _body(api, what, response, deadline).decode(errors="replace")
            results.append(SmokeResult(target.pool, phase, (pod.get("spec") or {}).get("nodeName"), log,
                                       "" if target.pool in finished else _pod_detail(pod), target.allocation))
        return results
    finally:
        try:
            call(api, f"delete namespace {namespace}", core.delete_namespace, namespace)
        except ClusterAccessError as exc:
            progress(f"smoke: could not delete namespace {namespace}: {exc}; delete it with "
                     f"`kubectl delete namespace {namespace}`")


_READERS: dict[tuple[str, str], tuple[type, str]] = {
    ("v1", "Namespace"): (client.CoreV1Api, "read_namespace"),
    ("v1", "ResourceQuota"): (client.CoreV1Api, "read_namespaced_resource_quota"),
    ("v1", "LimitRange"): (client.CoreV1Api, "read_namespaced_limit_range"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): (client.RbacAuthorizationV1Api, "read_namespaced_role_binding"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"):
        (client.AdmissionregistrationV1Api, "read_validating_admission_policy"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"):
        (client.AdmissionregistrationV1Api, "read_validating_admission_policy_binding"),
}
"""The kinds gpushare renders for tenants, each read by name with its typed API."""


def read_objects(api: client.ApiClient, manifests: list[dict]) -> dict[ObjectRef, dict | None | Forbidden]:
    """The live object for each manifest (None when it does not exist, FORBIDDEN when the identity may not read
    it: RBAC Reader reads namespaces, quotas and LimitRanges but not RoleBindings or admission policies)."""
    live: dict[ObjectRef, dict | None | Forbidden] = {}
    for manifest in manifests:
        api_version, kind, namespace, name = ref = object_ref(manifest)
        api_class, method = _READERS[(api_version, kind)]
        args = (name, namespace) if namespace else (name,)
        where = f"{namespace}/{name}" if namespace else name
        live[ref] = call(api, f"read {kind} {where}", getattr(api_class(api), method), *args, missing_ok=True,
                         forbidden_ok=True)
    return live
