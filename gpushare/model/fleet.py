"""The validated fleet description (`gpushare.stackfile.fleet_config`): member stacks of one project, their update
roles, the member that dispatches (MultiKueue's manager), the update order and the tenants declared fleet-wide."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any


class AutoUpgradeChannel(str, Enum):
    """A Fleet auto-upgrade profile's `channel` (API 2024-05-02-preview: Stable, Rapid, NodeImage; learn.microsoft.com
    azure/kubernetes-fleet/update-automation, "channel"). NodeImage runs only node-image upgrades: what refreshes the
    GPU driver AKS ships in the node image, without a Kubernetes upgrade."""

    STABLE = "Stable"
    RAPID = "Rapid"
    NODE_IMAGE = "NodeImage"


class NodeImageSelection(str, Enum):
    """Which node image an auto-upgrade run applies (the SDK's `AutoUpgradeNodeImageSelectionType`): the latest in
    each region, or one consistent across the fleet's regions."""

    LATEST = "Latest"
    CONSISTENT = "Consistent"


@dataclass(frozen=True)
class FleetMember:
    """One member: a stack file of the project (`Pulumi.<stack>.yaml` beside the fleet file) and its update role."""

    stack: str
    name: str
    """The FleetMember's name (the stack's name unless `name:` is given)."""
    group: str
    """Its update group: members of one group update one after another, groups of a stage in parallel."""
    canary: bool = False
    """Updated in the first stage, before every other member."""


@dataclass(frozen=True)
class AutoUpgrade:
    channel: AutoUpgradeChannel
    node_image_selection: NodeImageSelection = NodeImageSelection.LATEST


@dataclass(frozen=True)
class FleetTenant:
    """A tenant declared once for the fleet: its groups, and per member the tenant entry it gets there."""

    name: str
    groups: tuple[str, ...]
    members: Mapping[str, Mapping[str, Any]]
    """stack -> the rest of the tenant's entry in that member (`pools`, and optionally `quota`, `queue`,
    `guaranteed`), as a stack file's `gpushare:tenants` entry holds them."""

    def entry(self, stack: str) -> dict[str, Any]:
        """The `gpushare:tenants` entry the tenant adds to member `stack`'s config."""
        return {"name": self.name, **({"groups": list(self.groups)} if self.groups else {}), **self.members[stack]}


@dataclass(frozen=True)
class FleetConfig:
    source: str
    directory: Path
    """Where the member stack files are (the fleet file's directory)."""
    name: str
    resource_group: str
    location: str
    resource_group_exists: bool
    members: tuple[FleetMember, ...]
    manager: str
    """The stack whose cluster dispatches tenants' jobs to the others (MultiKueue's manager)."""
    canary_wait_seconds: int
    auto_upgrade: AutoUpgrade | None
    tenants: tuple[FleetTenant, ...]

    def stack_file(self, stack: str) -> Path:
        return self.directory / f"Pulumi.{stack}.yaml"
