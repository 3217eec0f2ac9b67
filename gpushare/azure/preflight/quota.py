"""`quota`: per quota family, and for the regional total (`cores`), the vCPUs the stack can use at most (fixed count
or autoscale max, times the size's vCPUs, the system pool included) fit in `limit - currentValue`. When the cluster
exists, Azure's current usage already holds its pools, so only each pool's growth over its current node count is
needed (a pool whose VM size changes is a new pool: all of it). An upgrade's surge nodes count too: each GPU pool's
`upgrade.maxSurge` (gpushare's default 0) at its largest size, AKS's default 10% for the system pool. Spot pools
count in the regional low-priority bucket (`lowPriorityCores`), not in their family or `cores`. A fleet's members
that share a subscription and region share its quota: `shared_quota_checks` sums them and checks once."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpushare.azure.deployed import DeployedPool
from gpushare.azure.preflight.nodes import Node, family_of, growth, vcpus_of
from gpushare.azure.preflight.preflight_report import Check, Verdict
from gpushare.azure.region_offers import LOW_PRIORITY_CORES, REGIONAL_CORES, RegionOffers

PORTAL_QUOTAS = "in the Azure portal: Quotas > Compute, filtered to the region, 'New quota request'"


Counted = tuple[Node, int, str, int]
"""A pool as a quota counts it: the pool, the nodes it can add, how that was counted, its size's vCPUs."""


@dataclass
class _Tally:
    by_family: dict[str, list[Counted]] = field(default_factory=dict)
    spot: list[Counted] = field(default_factory=list)
    uncounted: list[str] = field(default_factory=list)

    def add(self, pools: list[Node], offers: RegionOffers, live: Mapping[str, DeployedPool] | None) -> None:
        for pool in pools:
            offer = offers.vm_size(pool.vm_size)
            family, vcpus = family_of(offer, pool), vcpus_of(offer, pool)
            if vcpus is None or (family is None and not pool.spot):
                self.uncounted.append(pool.label)
                continue
            nodes, how = growth(pool, live)
            (self.spot if pool.spot else self.by_family.setdefault(family, [])).append((pool, nodes, how, vcpus))


def quota_checks(pools: list[Node], offers: RegionOffers,
                  live: Mapping[str, DeployedPool] | None, subscription_id: str) -> list[Check]:
    tally = _Tally()
    tally.add(pools, offers, live)
    return _rows(tally, offers, subscription_id, "more than the cluster runs now" if live is not None else "at most")


def shared_quota_checks(members: Sequence[tuple[str, list[Node], Mapping[str, DeployedPool] | None]],
                        offers: RegionOffers, subscription_id: str) -> list[Check]:
    """One region's quota in one subscription, shared by several clusters (a fleet's members there): each family's
    and the regional total's need summed over every member's pools, each pool counted against its own cluster's
    current nodes, checked once against what is free. `members`: (stack, its pools, its cluster's live pools)."""
    tally = _Tally()
    for stack, pools, live in members:
        tally.add([dataclasses.replace(pool, label=f"{stack} {pool.label}") for pool in pools], offers, live)
    existing = any(live is not None for _, _, live in members)
    return _rows(tally, offers, subscription_id, "more than the clusters run now" if existing else "at most")


def _rows(tally: _Tally, offers: RegionOffers, subscription_id: str, what: str) -> list[Check]:
    checks = []
    total_need = 0
    total_parts = []
    for family, members in tally.by_family.items():
        need = sum(nodes * vcpus for _, nodes, _, vcpus in members)
        total_need += need
        parts = [f"{pool.label.removeprefix('pool ')} {how} x {vcpus}" for pool, _, how, vcpus in members]
        total_parts += parts
        usage = offers.usage(family)
        if usage is None:
            checks.append(Check(
                "quota", family, Verdict.FAIL,
                f"needs {need} vCPUs ({'; '.join(parts)}), but Azure reports no {family} quota in {offers.location}",
                _quota_fix(family, None, need, 0, offers.location, subscription_id)))
            continue
        checks.append(_quota_row(usage.name, usage.display_name, need, parts, usage.current, usage.limit,
                                 offers.location, subscription_id, what))
    cores = offers.usage(REGIONAL_CORES)
    if cores is not None:
        checks.append(_quota_row(cores.name, cores.display_name, total_need, total_parts, cores.current,
                                 cores.limit, offers.location, subscription_id, what))
    else:
        checks.append(Check("quota", REGIONAL_CORES, Verdict.WARN,
                            f"Azure reported no regional vCPU total ({REGIONAL_CORES}) for {offers.location}: "
                            "only the families were checked"))
    if tally.spot:
        checks.append(_spot_quota_row(tally.spot, offers, subscription_id, what))
    if tally.uncounted:
        checks.append(Check("quota", "uncounted", Verdict.WARN,
                            f"{', '.join(tally.uncounted)}: size not offered here and not in gpushare's catalog, so "
                            "its vCPUs are not counted",
                            "fix the vm-size row first"))
    return checks


def _spot_quota_row(members: list[Counted], offers: RegionOffers, subscription_id: str, what: str) -> Check:
    need = sum(nodes * vcpus for _, nodes, _, vcpus in members)
    parts = [f"{pool.label.removeprefix('pool ')} {how} x {vcpus}" for pool, _, how, vcpus in members]
    usage = offers.usage(LOW_PRIORITY_CORES)
    if usage is None:
        return Check("quota", LOW_PRIORITY_CORES, Verdict.FAIL,
                     f"Spot pools need {need} vCPUs ({'; '.join(parts)}), but Azure reports no Spot vCPU quota "
                     f"({LOW_PRIORITY_CORES}) in {offers.location}",
                     _quota_fix(LOW_PRIORITY_CORES, None, need, 0, offers.location, subscription_id))
    return _quota_row(usage.name, usage.display_name, need, parts, usage.current, usage.limit, offers.location,
                      subscription_id, what)


def _quota_row(name: str, display: str | None, need: int, parts: list[str], current: int, limit: int,
               region: str, subscription_id: str, what: str) -> Check:
    free = max(limit - current, 0)
    detail = (f"needs {need} vCPUs {what} ({'; '.join(parts) or 'nothing'}); {free} free "
              f"(limit {limit}, in use {current})")
    if need <= free:
        return Check("quota", name, Verdict.PASS, detail)
    short = need - free
    return Check("quota", name, Verdict.FAIL,
                 f"{detail}: short by {short} vCPU{'s' if short != 1 else ''} in {region}",
                 _quota_fix(name, display, need, current, region, subscription_id))


def _quota_fix(name: str, display: str | None, need: int, current: int, region: str, subscription_id: str) -> str:
    new_limit = current + need
    scope = f"/subscriptions/{subscription_id}/providers/Microsoft.Compute/locations/{region}"
    portal = f"{PORTAL_QUOTAS}" + (f" for '{display}'" if display else "")
    kind = "lowPriority" if name == LOW_PRIORITY_CORES else "dedicated"
    return (f"request a limit of at least {new_limit} vCPUs for {name} in {region}: az quota update "
            f"--resource-name {name} --scope {scope} --limit-object value={new_limit} --resource-type {kind} "
            f"(the quota CLI extension), or {portal}; or lower the pools' count / autoscale max")
