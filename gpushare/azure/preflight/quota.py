"""`quota`: per quota family, and for the regional total (`cores`), the vCPUs the stack can use at most (fixed count
or autoscale max, times the size's vCPUs, the system pool included) fit in `limit - currentValue`. When the cluster
exists, Azure's current usage already holds its pools, so only each pool's growth over its current node count is
needed (a pool whose VM size changes is a new pool: all of it). An upgrade's surge nodes count too: each GPU pool's
`upgrade.maxSurge` (gpushare's default 0) at its largest size, AKS's default 10% for the system pool. Spot pools
count in the regional low-priority bucket (`lowPriorityCores`), not in their family or `cores`."""

from __future__ import annotations

from collections.abc import Mapping

from gpushare.azure.deployed import DeployedPool
from gpushare.azure.preflight.nodes import Node, family_of, growth, vcpus_of
from gpushare.azure.preflight.preflight_report import Check, Verdict
from gpushare.azure.region_offers import LOW_PRIORITY_CORES, REGIONAL_CORES, RegionOffers

PORTAL_QUOTAS = "in the Azure portal: Quotas > Compute, filtered to the region, 'New quota request'"


def quota_checks(pools: list[Node], offers: RegionOffers,
                  live: Mapping[str, DeployedPool] | None, subscription_id: str) -> list[Check]:
    by_family: dict[str, list[tuple[Node, int, str, int]]] = {}
    spot: list[tuple[Node, int, str, int]] = []
    uncounted = []
    for pool in pools:
        offer = offers.vm_size(pool.vm_size)
        family, vcpus = family_of(offer, pool), vcpus_of(offer, pool)
        if vcpus is None or (family is None and not pool.spot):
            uncounted.append(pool.label)
            continue
        nodes, how = growth(pool, live)
        (spot if pool.spot else by_family.setdefault(family, [])).append((pool, nodes, how, vcpus))
    checks = []
    total_need = 0
    total_parts = []
    for family, members in by_family.items():
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
                                 offers.location, subscription_id, live is not None))
    cores = offers.usage(REGIONAL_CORES)
    if cores is not None:
        checks.append(_quota_row(cores.name, cores.display_name, total_need, total_parts, cores.current,
                                 cores.limit, offers.location, subscription_id, live is not None))
    else:
        checks.append(Check("quota", REGIONAL_CORES, Verdict.WARN,
                            f"Azure reported no regional vCPU total ({REGIONAL_CORES}) for {offers.location}: "
                            "only the families were checked"))
    if spot:
        checks.append(_spot_quota_row(spot, offers, live, subscription_id))
    if uncounted:
        checks.append(Check("quota", "uncounted", Verdict.WARN,
                            f"{', '.join(uncounted)}: size not offered here and not in gpushare's catalog, so its "
                            "vCPUs are not counted",
                            "fix the vm-size row first"))
    return checks


def _spot_quota_row(members: list[tuple[Node, int, str, int]], offers: RegionOffers,
                    live: Mapping[str, DeployedPool] | None, subscription_id: str) -> Check:
    need = sum(nodes * vcpus for _, nodes, _, vcpus in members)
    parts = [f"{pool.label.removeprefix('pool ')} {how} x {vcpus}" for pool, _, how, vcpus in members]
    usage = offers.usage(LOW_PRIORITY_CORES)
    if usage is None:
        return Check("quota", LOW_PRIORITY_CORES, Verdict.FAIL,
                     f"Spot pools need {need} vCPUs ({'; '.join(parts)}), but Azure reports no Spot vCPU quota "
                     f"({LOW_PRIORITY_CORES}) in {offers.location}",
                     _quota_fix(LOW_PRIORITY_CORES, None, need, 0, offers.location, subscription_id))
    return _quota_row(usage.name, usage.display_name, need, parts, usage.current, usage.limit, offers.location,
                      subscription_id, live is not None)


def _quota_row(name: str, display: str | None, need: int, parts: list[str], current: int, limit: int,
               region: str, subscription_id: str, existing: bool) -> Check:
    free = max(limit - current, 0)
    what = "more than the cluster runs now" if existing else "at most"
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
