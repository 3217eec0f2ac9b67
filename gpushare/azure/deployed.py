"""The node pools as deployed on the AKS cluster: what the guard compares the stack against.

Two sources give the same `DeployedPool` objects:
- live: one ARM "list agent pools" call per cluster (`read_live`), through azure-identity and the
  azure-mgmt-containerservice client;
- file: the JSON `az aks nodepool list --resource-group RG --cluster-name NAME -o json` prints, or the ARM REST
  list body (`{"value": [...]}`) (`read_file`), so `plan --deployed FILE` runs without Azure credentials.

Both feed the same parser, which checks the type of every field the guard reads: a value of the wrong type must
fail loudly here rather than compare unequal (a false violation) or equal (a missed one) later.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from gpushare.azure.arm import (
    DEFAULT_ARM_URL,
    arm_code,
    client_settings,
    default_credential,
    describe,
    read_error,
    unexpected_body,
)
from gpushare.azure.remote_read import ReadBoundError
from gpushare.errors import AzureReadError, GpushareError
from gpushare.model.stack import DEVICE_PLUGIN_CONFIG_LABEL, StackConfig

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential
    from azure.mgmt.containerservice import ContainerServiceClient

T = TypeVar("T")

READ_ROLE_HINT = (
    "listing node pools needs 'Microsoft.ContainerService/managedClusters/agentPools/read', which the built-in "
    "Reader role has; 'Azure Kubernetes Service Cluster User Role' alone does not (it only has "
    "managedClusters/read and listClusterUserCredential). Grant Reader on the cluster or its resource group: "
    "az role assignment create --assignee <identity> --role Reader --scope <cluster resource id>"
)
SAVE_HINT = "save it with: az aks nodepool list --resource-group RG --cluster-name NAME -o json > FILE"


class DeployedFileError(GpushareError):
    """A `--deployed` file cannot be read or is not a node-pool list."""

    exit_code = 2


@dataclass(frozen=True)
class DeployedPool:
    """One agent pool as Azure reports it. Values are as deployed, not normalised: the guard decides equality."""

    name: str
    vm_size: str
    gpu_instance_profile: str | None = None
    gpu_driver: str | None = None
    """`gpuProfile.driver`; None when Azure reports none (AKS then installs the driver)."""
    gpu_management_mode: str | None = None
    """`gpuProfile.nvidia.managementMode`: `Managed` on an AKS-managed GPU pool (preview), where AKS runs the NVIDIA
    device plugin and DCGM exporter itself (aks-docs aks-managed-gpu-nodes.md); None or `Unmanaged` otherwise."""
    availability_zones: tuple[str, ...] = ()
    os_sku: str | None = None
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[str, ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)
    """The agent pool's Azure tags (`properties.tags`), which AKS copies to its scale set."""
    count: int | None = None
    min_count: int | None = None
    max_count: int | None = None
    enable_auto_scaling: bool = False
    mode: str | None = None
    """`System` or `User`."""
    orchestrator_version: str | None = None
    """The Kubernetes version the pool's nodes run: `currentOrchestratorVersion` (`1.33.2`), else
    `orchestratorVersion` (as requested: `1.33` or `1.33.2`)."""
    id: str | None = None
    """ARM resource id (`/subscriptions/../resourceGroups/RG/../managedClusters/NAME/agentPools/POOL`); both sources
    carry it, a hand-written file may not."""
    resource_group: str | None = None
    """`resourceGroup`, which `az aks nodepool list` adds; ARM's own body has only the id."""
    os_disk_type: str | None = None
    os_disk_size_gb: int | None = None
    max_pods: int | None = None
    scale_set_priority: str | None = None
    """`Spot` or `Regular`; None when Azure reports none (AKS's default, Regular)."""
    scale_set_eviction_policy: str | None = None
    spot_max_price: float | None = None
    """`spotMaxPrice` of a Spot pool: USD per node-hour, -1 for up to the on-demand price."""
    vnet_subnet_id: str | None = None
    """`vnetSubnetID` (the CLI prints `vnetSubnetId`): the subnet AKS put the pool's nodes in; None in a VNet AKS
    manages."""
    pod_subnet_id: str | None = None
    """`podSubnetID` (the CLI prints `podSubnetId`): the pod subnet of a pool on Azure CNI with dynamic pod IP
    allocation; None otherwise."""


def unlisted_nodes(stack: StackConfig, deployed: Iterable[DeployedPool] | None) -> int | None:
    """The nodes of the deployed pools the stack does not list (an existing cluster's system pool and its owners'
    pools); None when the pools were not read or one's count is unknown."""
    if deployed is None:
        return None
    listed = {pool.name for pool in stack.pools}
    counts = [pool.count for pool in deployed if pool.name not in listed]
    return None if None in counts else sum(counts)


def system_pool(pools: Iterable[DeployedPool]) -> DeployedPool | None:
    """The pool whose subnets a GPU pool on an existing cluster takes when the stack names none: the first System
    pool, else the first pool (the rule `components/existing_cluster.py` `_system_pool_field` applies to the
    cluster's `agentPoolProfiles`, the same pools)."""
    pools = list(pools)
    return next((pool for pool in pools if (pool.mode or "").lower() == "system"), pools[0] if pools else None)


def deployed_config_keys(pools: Iterable[DeployedPool]) -> dict[str, str]:
    """pool -> the device-plugin config key its nodes name now (their `nvidia.com/device-plugin.config` label, as
    the guard's agent-pool read reports it). AKS sets a pool's labels on its nodes when the pool's update
    completes, so a label read here is what the nodes carry until this run's update of that pool."""
    return {pool.name: pool.node_labels[DEVICE_PLUGIN_CONFIG_LABEL] for pool in pools
            if pool.node_labels.get(DEVICE_PLUGIN_CONFIG_LABEL)}


class _Malformed(Exception):
    """A node-pool document does not have the shape or types Azure gives it; the message says where."""


def live_source(subscription_id: str, resource_group: str, cluster: str) -> str:
    """How a live read is named in reports: the cluster's ARM resource id."""
    return (
        f"azure:/subscriptions/{subscription_id}/resourceGroups/{resource_group}"
        f"/providers/Microsoft.ContainerService/managedClusters/{cluster}"
    )


def read_live(
    subscription_id: str,
    resource_group: str,
    cluster: str,
    *,
    credential: TokenCredential | None = None,
    base_url: str | None = None,
    **client_kwargs: object,
) -> list[DeployedPool] | None:
    """The cluster's node pools from ARM, or None when the cluster (or its resource group) does not exist yet.

    Makes exactly one list call (the pager may follow `nextLink` pages). `credential` defaults to
    `DefaultAzureCredential`; `base_url` and `client_kwargs` (e.g. `retry_total`, `connection_verify`) go to the
    `ContainerServiceClient` over `CLIENT_DEFAULTS` (`arm.client_settings`, which also takes the run's `deadline`).
    Every failure becomes an `AzureReadError` naming the cluster and the fix.
    """
    what = (
        f"could not read the node pools of AKS cluster {cluster} "
        f"(resource group {resource_group}, subscription {subscription_id})"
    )
    documents = read_cluster_resource(
        what, subscription_id,
        lambda client: [pool.as_dict() for pool in client.agent_pools.list(resource_group, cluster)], READ_ROLE_HINT,
        credential=credential, base_url=base_url, client_kwargs=client_kwargs,
    )
    if documents is None:
        return None
    try:
        return _parse_pools(documents)
    except _Malformed as err:
        raise AzureReadError(f"{what}: Azure answered with an unexpected node pool list: {err}") from None


def read_cluster_resource(
    what: str,
    subscription_id: str,
    fetch: Callable[[ContainerServiceClient], T],
    role_hint: str,
    *,
    credential: TokenCredential | None,
    base_url: str | None,
    client_kwargs: Mapping[str, object],
) -> T | None:
    """`fetch(client)` through one `ContainerServiceClient`, or None when the cluster (or its resource group) does
    not exist yet: a first deployment, nothing to guard. Every failure is an `AzureReadError` saying `what` failed
    and the fix (`role_hint` for a 403). `credential` defaults to `DefaultAzureCredential` (closed afterwards)."""
    # Imported on use, like azure-identity (arm.default_credential): an offline `plan` reads nothing.
    from azure.core.exceptions import AzureError, ResourceNotFoundError
    from azure.mgmt.containerservice import ContainerServiceClient

    owned = credential is None
    token_source = default_credential() if owned else credential
    try:
        with ContainerServiceClient(token_source, subscription_id, base_url=base_url,
                                    **client_settings(client_kwargs)) as client:
            return fetch(client)
    except ReadBoundError as err:
        raise AzureReadError(f"{what}: {err}") from None
    except ResourceNotFoundError as err:
        if arm_code(err) != "SubscriptionNotFound":
            return None
        raise AzureReadError(
            f"{what}: Azure does not know the subscription ({describe(err)}); check the subscription id, "
            "and that the credentials belong to its tenant"
        ) from None
    except AzureError as err:
        raise read_error(what, err, base_url or DEFAULT_ARM_URL, role_hint) from None
    except (AttributeError, TypeError, ValueError) as err:
        # Only SDK code runs inside this `try`: the body is not in the shape the SDK's models expect.
        raise unexpected_body(what, err) from None
    finally:
        if owned:
            token_source.close()


def get_json(client: ContainerServiceClient, path: str, params: Mapping[str, str]) -> Any | None:
    """A plain ARM GET of `path` through `client`'s own pipeline (its credential, retries, timeouts and endpoint),
    for what the SDK has no operation for (a subnet, role assignments): the JSON body, or None on 404."""
    from azure.core.rest import HttpRequest

    response = client.send_request(HttpRequest("GET", path, params=dict(params)))
    if response.status_code == 404:
        return None
    response.raise_for_status()
    return response.json()


def read_file(path: str | Path) -> list[DeployedPool]:
    """The node pools in a saved `az aks nodepool list -o json` output, or an ARM `{"value": [...]}` body."""
    try:
        # bytes, so json detects UTF-16 with a BOM too: what `>` writes in Windows PowerShell 5.
        document = json.loads(Path(path).read_bytes())
    except OSError as err:
        raise DeployedFileError(f"{path}: cannot read it: {err.strerror or err}; {SAVE_HINT}") from None
    except json.JSONDecodeError as err:
        where = f"line {err.lineno}, column {err.colno}"
        raise DeployedFileError(f"{path}: not valid JSON ({where}: {err.msg}); {SAVE_HINT}") from None
    except RecursionError:  # the decoder recurses per level; no node pool list is nested that deep
        raise DeployedFileError(f"{path}: nested too deeply to be node pools (over {sys.getrecursionlimit()} "
                                f"levels); {SAVE_HINT}") from None
    except UnicodeDecodeError as err:
        raise DeployedFileError(f"{path}: not a text file ({err.reason}); {SAVE_HINT}") from None
    if isinstance(document, dict) and "value" in document:
        document = document["value"]
    if not isinstance(document, list):
        raise DeployedFileError(
            f"{path}: expected a JSON list of node pools (or an ARM body with a `value` list), "
            f"got {_json_type(document)}; {SAVE_HINT}"
        )
    try:
        return _parse_pools(document)
    except _Malformed as err:
        raise DeployedFileError(f"{path}: {err}; {SAVE_HINT}") from None


def _parse_pools(documents: list[object]) -> list[DeployedPool]:
    if not documents:
        # AKS cannot run a cluster without a system pool, so an empty list is a truncated answer or the wrong file.
        raise _Malformed("the list has no node pools, but every AKS cluster has at least its system pool")
    return [_parse_pool(index, document) for index, document in enumerate(documents)]


def pool_profile(document: dict[str, Any]) -> DeployedPool:
    """One pool of a managed cluster's `agentPoolProfiles` (a pool's properties with its name, as the CLI prints a
    pool), read as the agent pool reads are; ValueError says what is malformed."""
    try:
        return _parse_pool(0, document)
    except _Malformed as err:
        raise ValueError(str(err)) from None


def _parse_pool(index: int, document: object) -> DeployedPool:
    where = f"node pool [{index}]"
    if not isinstance(document, dict):
        raise _Malformed(f"{where}: expected an object, got {_json_type(document)}")
    name = document.get("name")
    if not isinstance(name, str) or not name:
        raise _Malformed(f"{where}: `name` must be a non-empty string, got {_json_type(name)}")
    where = f"node pool [{index}] {name}"
    if "properties" in document:  # ARM shape: envelope + properties; the CLI prints the properties flattened
        properties = document["properties"]
        if not isinstance(properties, dict):
            raise _Malformed(f"{where}: `properties` must be an object, got {_json_type(properties)}")
    else:
        properties = document
    fields = _Fields(where, properties)
    gpu_profile = fields.get("gpuProfile", dict)
    nvidia = _Fields(f"{where} gpuProfile", gpu_profile).get("nvidia", dict) if gpu_profile else None
    return DeployedPool(
        name=name,
        vm_size=fields.require("vmSize", str),
        gpu_instance_profile=fields.get("gpuInstanceProfile", str),
        gpu_driver=_Fields(f"{where} gpuProfile", gpu_profile).get("driver", str) if gpu_profile else None,
        gpu_management_mode=(_Fields(f"{where} gpuProfile.nvidia", nvidia).get("managementMode", str)
                             if nvidia else None),
        availability_zones=fields.get_strings("availabilityZones"),
        # ARM's wire name is osSKU; the CLI prints osSku.
        os_sku=fields.get("osSKU", str) if "osSKU" in properties else fields.get("osSku", str),
        node_labels=fields.get_map("nodeLabels"),
        node_taints=fields.get_strings("nodeTaints"),
        tags=fields.get_map("tags"),
        count=fields.get("count", int),
        min_count=fields.get("minCount", int),
        max_count=fields.get("maxCount", int),
        enable_auto_scaling=bool(fields.get("enableAutoScaling", bool)),
        mode=fields.get("mode", str),
        orchestrator_version=fields.get("currentOrchestratorVersion", str) or fields.get("orchestratorVersion", str),
        id=_Fields(where, document).get("id", str),
        resource_group=_Fields(where, document).get("resourceGroup", str),
        os_disk_type=fields.get("osDiskType", str),
        # ARM's wire name is osDiskSizeGB; the CLI prints osDiskSizeGb.
        os_disk_size_gb=fields.get("osDiskSizeGB", int) if "osDiskSizeGB" in properties else fields.get(
            "osDiskSizeGb", int),
        max_pods=fields.get("maxPods", int),
        scale_set_priority=fields.get("scaleSetPriority", str),
        scale_set_eviction_policy=fields.get("scaleSetEvictionPolicy", str),
        spot_max_price=fields.get_number("spotMaxPrice"),
        vnet_subnet_id=fields.get("vnetSubnetID", str) if "vnetSubnetID" in properties
        else fields.get("vnetSubnetId", str),
        pod_subnet_id=fields.get("podSubnetID", str) if "podSubnetID" in properties
        else fields.get("podSubnetId", str),
    )


class _Fields:
    """Typed access to one JSON object's keys; a missing key and null are the same (both mean "not set")."""

    def __init__(self, where: str, document: dict) -> None:
        self._where = where
        self._document = document

    def get(self, key: str, kind: type) -> Any:
        value = self._document.get(key)
        # bool is an int in Python; JSON true is never a count.
        if value is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
            raise _Malformed(f"{self._where}: `{key}` must be {_KIND_NAMES[kind]}, got {_json_type(value)}")
        return value

    def get_number(self, key: str) -> float | None:
        """A JSON number, whole (`-1`) or not (`0.5`)."""
        value = self._document.get(key)
        if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)):
            raise _Malformed(f"{self._where}: `{key}` must be a number, got {_json_type(value)}")
        return None if value is None else float(value)

    def require(self, key: str, kind: type) -> Any:
        value = self.get(key, kind)
        if value is None:
            raise _Malformed(f"{self._where}: `{key}` is missing")
        return value

    def get_strings(self, key: str) -> tuple[str, ...]:
        items = self.get(key, list) or []
        for item in items:
            if not isinstance(item, str):
                raise _Malformed(f"{self._where}: `{key}` must be a list of strings, got {_json_type(item)} in it")
        return tuple(items)

    def get_map(self, key: str) -> dict[str, str]:
        mapping = self.get(key, dict) or {}
        for label, value in mapping.items():
            if not isinstance(value, str):
                raise _Malformed(f"{self._where}: `{key}.{label}` must be a string, got {_json_type(value)}")
        return mapping


_KIND_NAMES = {str: "a string", int: "an integer", bool: "true or false", list: "a list", dict: "an object"}


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {str: "a string", int: "a number", float: "a number", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__
    )
