"""Offline execution of Pulumi code under the SDK's mock engine, recording every registration.

The stock `MockResourceArgs` carries no resource options, so `RecordingMonitor` reads them from the raw
RegisterResource request (protect, dependencies, ignoreChanges, parent, provider). `GpushareMocks` stands in for
the providers: it echoes inputs and fills the outputs the program reads (names, ids, kubeconfig), because the
mock engine does no autonaming and a missing output silently drops downstream inputs.

SDK internals this module relies on, as they are at the version requirements.txt pins (pulumi==3.272.0; an
upgrade re-checks each, `tests/render/test_mock_engine_sdk.py` finds them by name at the installed version):
- `pulumi.runtime.mocks.MockMonitor`, subclassed: its `RegisterResource(request)` takes the raw
  `resource_pb2.RegisterResourceRequest` (fields read: `type`, `name`, `custom`, `object`, `dependencies`,
  `propertyDependencies`, `protect`, `parent`, `provider`, `ignoreChanges`, `replaceOnChanges`,
  `deleteBeforeReplace`, `retainOnDelete`, `aliases`) and calls `_ensure_event_loop()` in each executor thread;
  `mocks.set_mocks(..., monitor=, organization=)` and `mocks.test`;
- `pulumi.runtime.rpc.deserialize_properties`, `is_rpc_secret`, `unwrap_rpc_secret`: the request's inputs;
- `pulumi.runtime.settings.reset_options` (a fresh run per call) and `get_root_resource()`, whose `outputs` dict is
  what the program exported;
- patched for speed: `pulumi.resource.collapse_alias_to_urn` (imported into resource.py, called in
  `Resource.__init__`), `pulumi.runtime.resource.prepare_aliases` and `create_alias_spec`'s spec shape
  (`alias_pb2.Alias.Spec`), whose registrations `tests/render/test_alias_shortcuts.py` checks against the SDK's own;
  and `pulumi.runtime.resource._get_stack_trace` (`source_pb2.StackTrace`), which nothing here reads.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import gc
import json
import logging
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from unittest import mock

import pulumi
from pulumi.runtime import mocks, rpc, settings
from pulumi.runtime import resource as resource_runtime
from pulumi.runtime.proto import alias_pb2, source_pb2

MOCK_SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
YOUNG_COLLECTION_THRESHOLD = 50_000
MOCK_TENANT = "11111111-1111-1111-1111-111111111111"

MOCK_DEPLOYER_OBJECT_ID = "5c0f3e2a-8b71-4d9e-a6c4-2f1b7e9d3a58"
"""The object ID `getClientConfig` reports for the identity running Pulumi."""

# The user kubeconfig the mocked credentials invoke returns, shaped as AKS returns it for an Entra cluster (exec
# format, kubelogin with device-code login); no cluster answers at this address.
MOCK_KUBECONFIG = f"""apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: bW9jay1jbHVzdGVyLWNh
    server: https://mock-dns.hcp.westeurope.azmk8s.invalid:443
  name: mock
contexts:
- context:
    cluster: mock
    user: clusterUser_mock-rg_mock
  name: mock
current-context: mock
kind: Config
preferences: {{}}
users:
- name: clusterUser_mock-rg_mock
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - get-token
      - --environment
      - AzurePublicCloud
      - --server-id
      - 6dae42f8-4368-4678-94ff-3960e28e3630
      - --client-id
      - 80faf920-1908-4b52-b5ef-a8e7bedfc67a
      - --tenant-id
      - {MOCK_TENANT}
      - --login
      - devicecode
      command: kubelogin
      env: null
      installHint: |2

        kubelogin is not installed which is required to connect to AAD enabled cluster.
      provideClusterInfo: false
"""


MOCK_CLUSTER_PRINCIPAL_ID = "9d4c2b1a-6e5f-4a3b-8c7d-1e2f3a4b5c6d"
"""The object ID of a cluster's system-assigned identity."""


MOCK_EXISTING_SUBNET = (f"/subscriptions/{MOCK_SUBSCRIPTION}/resourceGroups/rg-network/providers/Microsoft.Network/"
                        "virtualNetworks/vnet-spoke/subnets/snet-nodes")
"""The subnet of an existing cluster's system pool."""


def mock_existing_cluster(resource_group: str, name: str) -> dict[str, Any]:
    """What `getManagedCluster` returns (camelCase outputs) for a cluster gpushare did not create: Entra ID with
    Azure RBAC, its own system pool in a subnet of its own VNet."""
    cluster_id = (f"/subscriptions/{MOCK_SUBSCRIPTION}/resourceGroups/{resource_group}"
                  f"/providers/Microsoft.ContainerService/managedClusters/{name}")
    return {
        "id": cluster_id, "name": name, "location": "westeurope", "azureApiVersion": "2025-09-01",
        "aadProfile": {"managed": True, "enableAzureRBAC": True, "tenantID": MOCK_TENANT},
        "disableLocalAccounts": True,
        "identity": {"type": "SystemAssigned", "principalId": MOCK_CLUSTER_PRINCIPAL_ID, "tenantId": MOCK_TENANT},
        "oidcIssuerProfile": {"enabled": True, "issuerURL": f"https://oidc.mock.invalid/{name}/"},
        "agentPoolProfiles": [{"name": "system", "mode": "System", "vmSize": "Standard_D4ds_v5", "count": 3,
                               "vnetSubnetID": MOCK_EXISTING_SUBNET}],
    }


def mock_jwt(claims: dict[str, Any]) -> str:
    """An unsigned JWT with these claims: what Entra issues, minus a signature nobody here checks."""
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")
    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.signature"


MOCK_USER_TOKEN = mock_jwt({"aud": "6dae42f8-4368-4678-94ff-3960e28e3630", "oid": MOCK_DEPLOYER_OBJECT_ID,
                            "idtyp": "user", "scp": "user.read"})
"""What `getClientToken` returns: a person's (az login) Entra token for AKS's server application."""


@dataclass
class RecordedResource:
    """One registration as the engine would receive it."""

    type: str
    name: str
    urn: str
    custom: bool
    inputs: dict[str, Any]
    """Inputs under their camelCase wire names, numbers normalised, secrets unwrapped."""
    protect: bool = False
    depends_on: list[str] = field(default_factory=list)
    """Logical names this resource waits for: explicit depends_on plus resources its inputs came from."""
    parent: str | None = None
    provider: str | None = None
    ignore_changes: list[str] = field(default_factory=list)
    replace_on_changes: list[str] = field(default_factory=list)
    delete_before_replace: bool = False
    retain_on_delete: bool = False
    """Removing the resource from the program leaves the real object in place."""
    secret_inputs: list[str] = field(default_factory=list)
    """Top-level input keys that were marked secret."""
    aliases: list[dict[str, str]] = field(default_factory=list)
    """Earlier identities (`{"name", "parentUrn"}` of an alias spec, or `{"urn"}`); not part of plan JSON."""

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "name": self.name,
            "inputs": self.inputs,
            "protect": self.protect,
            "dependsOn": self.depends_on,
            "parent": self.parent,
            "provider": self.provider,
            "ignoreChanges": self.ignore_changes,
            "replaceOnChanges": self.replace_on_changes,
            "deleteBeforeReplace": self.delete_before_replace,
            "retainOnDelete": self.retain_on_delete,
            "secretInputs": self.secret_inputs,
        }


@dataclass
class Recording:
    resources: list[RecordedResource]
    warnings: list[str]
    exports: dict[str, Any]
    error: Exception | None = None
    """What the program raised, when run with `check=False`; everything registered before it is still recorded."""
    invokes: list[str] = field(default_factory=list)
    """The token of every provider function the program called (`azure-native:authorization:getClientToken`...)."""

    def by_type(self, type_: str) -> list[RecordedResource]:
        return [r for r in self.resources if r.type == type_]

    def get(self, type_: str, name: str) -> RecordedResource:
        for r in self.resources:
            if r.type == type_ and r.name == name:
                return r
        known = ", ".join(f"{r.type}::{r.name}" for r in self.resources)
        raise KeyError(f"no {type_} named {name!r}; registered: {known}")


def _normalise(value: Any) -> Any:
    """Protobuf Struct turns every number into a float (give integral ones back as int) and does not keep key
    order (sort keys, so the same program gives the same plan)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    return value


def _urn_name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def _parent_name(parent_urn: str) -> str | None:
    """The parent's logical name; None for top-level resources (whose parent is the root stack)."""
    if not parent_urn or parent_urn.split("::")[2].endswith("pulumi:pulumi:Stack"):
        return None
    return _urn_name(parent_urn)


def _alias(alias: Any) -> dict[str, str]:
    if alias.HasField("urn"):
        return {"urn": alias.urn}
    return {"name": alias.spec.name, "parentUrn": alias.spec.parentUrn}


class RecordingMonitor(mocks.MockMonitor):
    def __init__(self, mocks_: mocks.Mocks):
        super().__init__(mocks_)
        self.recorded: list[RecordedResource] = []

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type == "pulumi:pulumi:Stack":
            return response
        raw = rpc.deserialize_properties(request.object)
        secret_keys = sorted(k for k, v in raw.items() if rpc.is_rpc_secret(v))
        inputs = {k: rpc.unwrap_rpc_secret(v) if k in secret_keys else v for k, v in raw.items()}
        dependencies = list(request.dependencies)
        for deps in request.propertyDependencies.values():
            dependencies.extend(deps.urns)
        depends_on = sorted({_urn_name(u) for u in dependencies})
        self.recorded.append(
            RecordedResource(
                type=request.type,
                name=request.name,
                urn=response.urn,
                custom=bool(request.custom),
                inputs=_normalise({k: v for k, v in inputs.items() if not k.startswith("__")}),
                protect=bool(request.protect),
                depends_on=depends_on,
                parent=_parent_name(request.parent),
                # A provider reference is "<provider urn>::<provider id>".
                provider=_urn_name(request.provider.rsplit("::", 1)[0]) if request.provider else None,
                ignore_changes=list(request.ignoreChanges),
                replace_on_changes=list(request.replaceOnChanges),
                delete_before_replace=bool(request.deleteBeforeReplace),
                retain_on_delete=bool(request.retainOnDelete),
                secret_inputs=secret_keys,
                aliases=[_alias(a) for a in request.aliases],
            )
        )
        return response


class GpushareMocks(mocks.Mocks):
    """Provider stand-ins: echo inputs, add the outputs a real provider computes and the program reads."""

    client_token = MOCK_USER_TOKEN
    """What `getClientToken` answers (a test may patch it, e.g. with a service principal's token)."""
    client_object_id = MOCK_DEPLOYER_OBJECT_ID
    """The object ID `getClientConfig` answers: who runs the program (a test may patch it)."""
    stack_outputs: dict[str, Any] = {}
    """What a `StackReference` reads: the outputs of the stack's last completed update (a test may patch it)."""
    user_kubeconfig = MOCK_KUBECONFIG
    """What `listManagedClusterUserCredentials` answers (a test may patch it, e.g. with a local account's)."""
    existing_cluster: dict[str, Any] | None = None
    """Overrides of what `getManagedCluster` answers for an existing cluster (`existing: true`), by top-level key."""

    def __init__(self) -> None:
        self.invokes: list[str] = []
        """The token of every provider function called, in order."""

    def new_resource(self, args: mocks.MockResourceArgs):
        state = dict(args.inputs)
        if args.typ == "pulumi:pulumi:StackReference":
            return args.resource_id or args.name, {**state, "outputs": dict(self.stack_outputs)}
        physical = (
            args.inputs.get("agentPoolName")
            or args.inputs.get("resourceName")
            or args.inputs.get("resourceGroupName")
            or args.inputs.get("name")
            or args.name
        )
        if args.typ.startswith("azure-native:"):
            state.setdefault("name", physical)
            resource_id = f"/subscriptions/{MOCK_SUBSCRIPTION}/mock/{args.typ.rsplit(':', 1)[-1]}/{physical}"
            state["azureApiVersion"] = "2025-09-01"
            if args.typ == "azure-native:containerservice:ManagedCluster":
                state["oidcIssuerProfile"] = {"enabled": True, "issuerURL": f"https://oidc.mock.invalid/{physical}/"}
                state["fqdn"] = f"{physical}.hcp.mock.invalid"
                state["identity"] = {**(state.get("identity") or {}), "principalId": MOCK_CLUSTER_PRINCIPAL_ID}
            return resource_id, state
        if args.typ.startswith("kubernetes:"):
            metadata = dict(state.get("metadata") or {})
            metadata.setdefault("name", args.name)
            state["metadata"] = metadata
            return f"{metadata.get('namespace', '')}/{metadata['name']}".lstrip("/"), state
        return f"{args.name}-id", state

    def call(self, args: mocks.MockCallArgs):
        self.invokes.append(args.token)
        if args.token == "azure-native:containerservice:listManagedClusterUserCredentials":
            value = base64.b64encode(self.user_kubeconfig.encode()).decode()
            return {"kubeconfigs": [{"name": "clusterUser", "value": value}]}
        if args.token == "azure-native:containerservice:getManagedCluster":
            return {**mock_existing_cluster(args.args["resourceGroupName"], args.args["resourceName"]),
                    **(self.existing_cluster or {})}
        if args.token == "azure-native:resources:getResourceGroup":
            name = args.args["resourceGroupName"]
            return {"id": f"/subscriptions/{MOCK_SUBSCRIPTION}/resourceGroups/{name}", "name": name,
                    "location": "westeurope", "azureApiVersion": "2024-03-01"}
        if args.token == "azure-native:authorization:getClientConfig":
            return {"clientId": "04b07795-8ddb-461a-bbee-02f9e1bf7b46", "objectId": self.client_object_id,
                    "subscriptionId": MOCK_SUBSCRIPTION, "tenantId": MOCK_TENANT}
        if args.token == "azure-native:authorization:getClientToken":
            return {"token": self.client_token}
        return {}


class _WarningCollector(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _alias_left_uncollapsed(alias: Any, *_: Any) -> Any:
    """Stands in for the SDK's `collapse_alias_to_urn` in `Resource.__init__` (pulumi 3.272 resource.py), which
    turns every alias into a URN Output as the resource is constructed. Those Outputs (`Resource._aliases`) are read
    only by `all_aliases`, when the engine lacks alias specs; the mock monitor supports them (`SupportsFeature` says yes
    to all but outputValues), so `prepare_aliases` sends `opts.aliases` as specs and nothing reads them. The typed
    azure-native classes give every resource one type alias per earlier API version (110 on an AgentPool): collapsing
    them was over half the program's time, and the engine receives the same aliases without it."""
    return alias


def _is_type_only(alias: Any) -> bool:
    return (isinstance(alias, pulumi.Alias) and isinstance(alias.type_, str) and alias.name is ...
            and alias.parent is ... and alias.stack is ... and alias.project is ...)


_sdk_prepare_aliases = resource_runtime.prepare_aliases


@functools.cache
def _type_alias_spec(type_: str) -> alias_pb2.Alias:
    """The spec of a type-only alias, built once per type: every AgentPool names the same 110 earlier types, and the
    request copies the message it is given (protobuf's repeated message fields copy on construction)."""
    return alias_pb2.Alias(spec=alias_pb2.Alias.Spec(name="", type=type_, stack="", project="", parentUrn=""))


async def _prepare_aliases(resource: Any, options: pulumi.ResourceOptions | None, supports_alias_specs: bool) -> list:
    """The SDK's `prepare_aliases` (pulumi 3.272 runtime/resource.py), with the specs of type-only aliases (the
    typed classes' `pulumi.Alias(type_=...)`) built directly: the SDK lifts each into an Output and awaits it, about
    a fifth of the program's time for 5,884 plain values. The spec is the one `create_alias_spec` builds for such an
    alias, field for field (an empty `parentUrn`, set: the parent is the resource's own); any other alias goes
    through the SDK."""
    if not supports_alias_specs or options is None or not options.aliases:
        return await _sdk_prepare_aliases(resource, options, supports_alias_specs)
    aliases = []
    for alias in options.aliases:
        if _is_type_only(alias):
            aliases.append(_type_alias_spec(alias.type_))
        else:
            aliases += await _sdk_prepare_aliases(resource, pulumi.ResourceOptions(aliases=[alias]), True)
    return aliases


@contextlib.contextmanager
def _alias_shortcuts() -> Iterator[None]:
    """What the SDK does with aliases that the mock monitor never reads, skipped; what it sends, built directly.
    `tests/render/test_alias_shortcuts.py` checks every registration's aliases against the SDK's own."""
    with mock.patch.object(pulumi.resource, "collapse_alias_to_urn", _alias_left_uncollapsed), \
            mock.patch.object(resource_runtime, "prepare_aliases", _prepare_aliases):
        yield


def _no_stack_trace() -> source_pb2.StackTrace:
    """What the SDK's `_get_stack_trace` returns when it finds no frames."""
    return source_pb2.StackTrace()


@contextlib.contextmanager
def _untraced_registrations() -> Iterator[None]:
    """Each registration's stack trace and source position (pulumi 3.272 runtime/resource.py `_get_stack_trace`),
    which the engine shows beside a resource's errors, left empty: neither the SDK's mock monitor nor ours reads
    them, and the SDK builds one per resource from the whole call stack (about 25 frames under `plan`, each with
    its source line and a file URI), 0.08 s of a 50-pool plan."""
    with mock.patch.object(resource_runtime, "_get_stack_trace", _no_stack_trace):
        yield


@contextlib.contextmanager
def _closed_event_loops() -> Iterator[None]:
    """A run on an event loop of its own, closed at its end together with the loops the SDK's mock monitor makes in
    the executor's threads (`MockMonitor.RegisterResource` calls `_ensure_event_loop()` in each worker thread). A
    loop left open is closed by its `__del__` at interpreter exit, possibly after its self-pipe socket was
    finalized: "Exception ignored in BaseEventLoop.__del__ ... Invalid file descriptor: -1" on stderr, seen under
    `plan STACK | head -1`. Set before the mocks, which register the root stack on the current loop."""
    worker_loops: list[asyncio.AbstractEventLoop] = []
    lock = threading.Lock()

    def worker_loop() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        with lock:
            worker_loops.append(loop)

    loop = asyncio.new_event_loop()
    executor = ThreadPoolExecutor(thread_name_prefix="asyncio", initializer=worker_loop)
    loop.set_default_executor(executor)
    asyncio.set_event_loop(loop)
    try:
        yield
    finally:
        executor.shutdown(wait=True)
        for each in (*worker_loops, loop):
            each.close()
        asyncio.set_event_loop(None)  # the SDK's `_ensure_event_loop` makes a new one for a later run


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """The program imports the providers' SDKs (tens of thousands of classes and typing objects) and builds
    thousands of Outputs and futures, nearly all of them alive until the run ends: the cyclic garbage collector's
    default (a young-generation pass every 700 allocations, a full pass over everything every 100 of those) spends
    its time re-scanning them. Objects alive before the run are frozen out of collection and young passes come every
    50,000 allocations; both restored afterwards."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(threshold[0], YOUNG_COLLECTION_THRESHOLD), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def run_pulumi(
    fn: Callable[[], Any],
    *,
    stack: str = "dev",
    config: dict[str, str] | None = None,
    secret_keys: tuple[str, ...] = (),
    preview: bool = False,
    check: bool = True,
    existing_cluster: dict[str, Any] | None = None,
) -> Recording:
    """Run `fn` (which constructs resources) under mocks and return everything it registered.

    `config` maps full keys (`gpushare:pools`) to the strings the CLI would pass (objects JSON-encoded), decrypted;
    `secret_keys` are those the engine would list as secret.
    Mocks are installed before `fn` runs: a resource constructed earlier would never register.
    An exception from `fn` propagates, or with `check=False` is returned in `Recording.error`.
    `existing_cluster`: top-level keys of what an existing cluster's read answers (`plan` passes the pools it read).
    """
    with _closed_event_loops():
        return _run_under_mocks(fn, stack, config, secret_keys, preview, check, existing_cluster)


def _run_under_mocks(fn: Callable[[], Any], stack: str, config: dict[str, str] | None, secret_keys: tuple[str, ...],
                     preview: bool, check: bool, existing_cluster: dict[str, Any] | None = None) -> Recording:
    settings.reset_options(project="gpushare", stack=stack, preview=preview)
    pulumi.runtime.set_all_config(dict(config or {}), list(secret_keys))
    provider_mocks = GpushareMocks()
    if existing_cluster:
        provider_mocks.existing_cluster = {**(GpushareMocks.existing_cluster or {}), **existing_cluster}
    monitor = RecordingMonitor(provider_mocks)
    logger = logging.getLogger("gpushare.mock")
    logger.propagate = False
    collector = _WarningCollector()
    logger.addHandler(collector)
    # "organization": what a DIY backend calls every stack's organization.
    mocks.set_mocks(monitor.mocks, project="gpushare", stack=stack, preview=preview, logger=logger, monitor=monitor,
                    organization="organization")
    exports: dict[str, Any] = {}

    @mocks.test
    def body():
        fn()
        root = settings.get_root_resource()
        outputs = getattr(root, "outputs", None) or {}
        return pulumi.Output.all(**outputs).apply(exports.update) if outputs else None

    error = None
    try:
        with _alias_shortcuts(), _untraced_registrations(), _fewer_collections():
            body()
    except Exception as exc:
        if check:
            raise
        error = exc
    finally:
        logger.removeHandler(collector)
    return Recording(resources=monitor.recorded, warnings=collector.messages, exports=_normalise(exports), error=error,
                     invokes=list(provider_mocks.invokes))


def run_program(
    stack: str,
    config: dict[str, str],
    *,
    stack_file: Path | None = None,
    deployed: Path | None = None,
    live_guard: bool = False,
    secret_keys: tuple[str, ...] = (),
    preview: bool = True,
    check: bool = True,
    existing_cluster: dict[str, Any] | None = None,
) -> Recording:
    """Run gpushare's real Pulumi program (`gpushare.components.program.program`, what the project's
    `__main__.py` calls) under mocks, as `pulumi preview` would run it.

    The guard checks against `deployed` (an `az aks nodepool list -o json` file) when given, and is skipped
    otherwise; `live_guard=True` lets it read Azure as under the real engine (tests replace the reader).
    `stack_file` is the file messages name.
    """
    # Imported here, not with the engine: `run_pulumi` alone (the benchmark's bare registrations, component tests)
    # needs neither the program nor the providers' typed SDKs.
    from gpushare.components.program import program
    from gpushare.model.environment_variables import DEPLOYED_FILE_ENV, OFFLINE_ENV, STACK_FILE_ENV

    environ = {
        STACK_FILE_ENV: str(stack_file) if stack_file else None,
        DEPLOYED_FILE_ENV: str(deployed) if deployed else None,
        OFFLINE_ENV: None if deployed or live_guard else "1",
    }
    with mock.patch.dict(os.environ):
        for key, value in environ.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        return run_pulumi(program, stack=stack, config=config, secret_keys=secret_keys, preview=preview, check=check,
                          existing_cluster=existing_cluster)


__all__ = ["RecordedResource", "Recording", "run_pulumi", "run_program", "MOCK_SUBSCRIPTION", "MOCK_DEPLOYER_OBJECT_ID",
           "MOCK_KUBECONFIG", "MOCK_USER_TOKEN", "mock_jwt"]
