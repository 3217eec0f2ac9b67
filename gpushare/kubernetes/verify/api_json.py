"""Reading the Kubernetes API's JSON: what `gpushare.kubernetes.cluster_read` read, and the fields verify reads from
it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from gpushare.kubernetes.verify.expectations import NVIDIA_PREFIX
from gpushare.model.quantity import parse_quantity


@dataclass(frozen=True)
class ClusterSnapshot:
    """What `gpushare.kubernetes.cluster_read` read, as the API's JSON."""

    nodes: list[dict]
    """Nodes labelled `gpushare.io/pool`."""
    config_map: dict | None
    daemon_sets: list[dict]
    pods: list[dict]
    """The operator's pods (device plugin, GFD, MPS daemon, validator) in the release namespace."""
    now: datetime
    other_nodes: list[dict] = field(default_factory=list)
    """The cluster's other nodes (system pool, pools gpushare does not own): the autoscaler counts them too."""
    resource_slices: list[dict] | None = field(default_factory=list)
    """The ResourceSlices of NVIDIA's DRA driver (read only for a stack with DRA pools); None where the cluster serves
    no `resource.k8s.io/v1`."""



def object_name(obj: Mapping) -> str:
    return obj.get("metadata", {}).get("name", "?")


def object_labels(obj: Mapping) -> Mapping[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def _ready_condition(node: Mapping) -> Mapping | None:
    for condition in node.get("status", {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition
    return None


def node_ready(node: Mapping) -> bool:
    condition = _ready_condition(node)
    return bool(condition and condition.get("status") == "True")


def ready_since(node: Mapping) -> datetime | None:
    condition = _ready_condition(node)
    stamp = condition.get("lastTransitionTime") if condition else None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None


def _device_count(value: object) -> int:
    """Device-plugin resources are whole devices ("4"; the API server writes 1000 as "1k"); anything else counts
    as 0."""
    quantity = parse_quantity(value)
    return int(quantity) if quantity is not None and quantity == quantity.to_integral_value() else 0


def nvidia_resources(node: Mapping) -> dict[str, int]:
    """The node's allocatable `nvidia.com/*` resources above 0."""
    allocatable = node.get("status", {}).get("allocatable") or {}
    found = {name: _device_count(value) for name, value in allocatable.items() if name.startswith(NVIDIA_PREFIX)}
    return {name: count for name, count in sorted(found.items()) if count > 0}


def describe_resources(resources: Mapping[str, int]) -> str:
    return ", ".join(f"{name}: {count}" for name, count in resources.items()) or "no nvidia.com resource"
