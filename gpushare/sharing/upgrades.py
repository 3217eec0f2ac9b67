"""What a node-image or Kubernetes upgrade of a GPU pool costs, from its `upgradeSettings`.

AKS upgrades a pool a batch at a time: it adds `maxSurge` new nodes (extra VMs, which need spare quota), and with
`maxUnavailable` cordons, drains and reimages that many existing nodes in place. A percentage is of the pool's
nodes at upgrade time, fractions rounded up (AgentPoolUpgradeSettings in the AKS API, 2025-09-01 as
pulumi-azure-native 3.29.0 sends it). AKS's default surges 10%, at least one extra VM per pool: for a GPU pool that
is a GPU VM the subscription's quota may not have, so gpushare defaults to maxSurge 0, maxUnavailable 1.
"""

from __future__ import annotations

import math

from gpushare.model.stack import GpuPool
from gpushare.sharing.capacity import PoolCapacity


def nodes_at_once(setting: str, pool_nodes: int) -> int:
    """The nodes `setting` (`"2"` or `"33%"`) means for a pool of `pool_nodes` nodes."""
    if setting.endswith("%"):
        return math.ceil(int(setting[:-1]) * pool_nodes / 100)
    return int(setting)


def _nodes(count: int) -> str:
    return f"{count} node{'s' if count != 1 else ''}"


def upgrade_summary(pool: GpuPool, capacity: PoolCapacity) -> str:
    """One line for `plan`: how many nodes are offline at a time and how many extra VMs an upgrade needs, at the
    pool's largest size. `capacity` is the pool's (`gpushare.sharing.pool_facts`)."""
    size = pool.max_nodes
    settings = pool.upgrade_settings
    if settings is None:
        return ("upgrade: AKS's Spot pool upgrade, no extra VM: each node is cordoned and gets an eviction notice, "
                "not drained (no maxSurge or maxUnavailable on a Spot pool)")
    offline = min(nodes_at_once(settings.max_unavailable, size), size)
    surge = nodes_at_once(settings.max_surge, size)
    at = f" at {_nodes(size)}" if "%" in settings.max_unavailable + settings.max_surge else ""
    if offline == 0:
        down = "no node offline"
    elif offline >= size:
        down = f"{_nodes(offline)} at a time offline: the whole pool ({capacity.total(size)} x {capacity.resource})"
    else:
        down = f"{_nodes(offline)} at a time offline ({capacity.total(offline)} x {capacity.resource} fewer)"
    if surge == 0:
        extra = "no extra VM"
    else:
        vcpus = surge * pool.vm_size.vcpus
        extra = (f"{surge} extra {pool.vm_size.name} VM{'s' if surge != 1 else ''} at a time: needs {vcpus} spare "
                 f"vCPUs of {pool.vm_size.quota_family or 'its family' + chr(39) + 's'} quota")
    return f"upgrade{at}: {down}, {extra} (maxSurge {settings.max_surge}, maxUnavailable {settings.max_unavailable})"
