"""What the stack's GPUs cost at list prices: per pool, per advertised device (a MIG slice, a time-sliced or MPS
replica), per tenant, and for the whole stack, from a `PriceSheet` (gpushare.azure.prices).

- A pool: node price per hour x nodes x 730 hours a month, at `count`, or at `autoscale.min` and `.max`.
- A device-hour: node price / devices the pool advertises per node (`capacity.per_node`), next to the isolation
  that device buys (docs/sharing-modes.md).
- Chargeback: each pool's month at its most nodes split among the tenants' guarantees and an idle line, summing to
  the pool's cost to the cent (`gpushare.showback.chargeback`, docs/cost.md); a tenant's `charge` is its parts.
- A tenant's quota ceiling (`shared`, `monthlyMin`/`monthlyMax`): every pool dedicated to it, whole; on its shared
  pools, what its quota lets it hold at once, each device priced once: its quota of a resource is one
  namespace-wide limit however many of its pools advertise it, so its units are spread over those pools, the
  dearest per device-hour first and none beyond what a pool advertises at its most nodes (x 730). A shared pool on
  which it has no quota is not priced (nothing bounds its use), and says so. It is the most the quota allows, not
  what the tenant is charged.
  With queues on, apart from that: what its queue may borrow from its cohort at once (`borrowable`), per pool at that
  pool's device-hour, at most what its quota of each resource leaves beyond its guarantee (the ResourceQuota refuses
  its pods beyond it, borrowed or not), the dearest pools first. It is what the tenant uses of the others' guarantee
  while they are idle, a ceiling on top of its charge, not in it.
- The stack: the system pool, every GPU pool at its fewest and its most nodes, and the Standard tier's cluster fee
  (the Free tier has none). On an existing cluster the system pools and the tier are the cluster's, priced as
  deployed (`--deployed`) and unknown without that, never gpushare's defaults.
A size or region the API has no meter for is unknown: it is left out of the sums, which then say they are partial.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gpushare.azure.deployed import DeployedPool
from gpushare.azure.prices import LIST_PRICE_NOTE, PriceSheet
from gpushare.kubernetes.queues import Borrowable, borrowable, flavor_quotas
from gpushare.model.stack import (
    SPOT_MARKET_PRICE,
    SYSTEM_POOL_NAME,
    Allocation,
    GpuPool,
    SharingStrategy,
    StackConfig,
    Tenant,
    Tier,
)
from gpushare.sharing.pool_facts import PoolFactsByName, given_or_derived
from gpushare.showback.chargeback import PoolChargeback, cents, pool_guarantees, split_pool_cost

HOURS_PER_MONTH = 730
"""Azure's pricing month (the pricing calculator's 730 hours)."""
SPOT_MAX_PRICE_CURRENCY = "USD"
"""A Spot cap (`spotMaxPrice`, the scale set's `billingProfile.maxPrice`) is in US dollars whatever the billing
currency (the compute API's BillingProfile: "This price is in US Dollars"): it compares with a USD price sheet only."""


def monthly(hourly: float, units: float) -> float:
    """What `units` nodes (or devices) cost a month at `hourly` each."""
    return hourly * units * HOURS_PER_MONTH


@dataclass(frozen=True)
class SystemPool:
    name: str
    vm_size: str
    count: int | None
    """None: the pool autoscales, or Azure reported no count (unknown, never zero)."""


def system_pools(stack: StackConfig, deployed: Iterable[DeployedPool] | None) -> tuple[SystemPool, ...] | None:
    """The cluster's system pools as the cost counts them: the stack's for a cluster gpushare creates; for an
    existing cluster those the deployed pools (`--deployed`, or Azure) report in mode System; None when that is not
    known (an existing cluster planned offline without a deployed file): never gpushare's default."""
    if not stack.cluster.existing:
        system = stack.cluster.system_pool
        return (SystemPool(SYSTEM_POOL_NAME, system.vm_size, system.count),)
    if deployed is None:
        return None
    return tuple(SystemPool(p.name, p.vm_size, p.count) for p in deployed if p.mode == "System")


def priced_vm_sizes(stack: StackConfig, deployed: Iterable[DeployedPool] | None = None) -> list[str]:
    """The VM sizes whose prices the stack's cost needs: every GPU pool's and the system pools'."""
    system = [pool.vm_size for pool in system_pools(stack, deployed) or ()]
    return list(dict.fromkeys([*(pool.vm_size.name for pool in stack.pools), *system]))


def priced_meters(stack: StackConfig, deployed: Iterable[DeployedPool] | None = None) -> dict[str, tuple[bool, bool]]:
    """Per VM size the cost prices: (reads its pay-as-you-go meter, reads its Spot meter); the system pools and
    on-demand GPU pools take the first, Spot pools the second (`pool_cost`, `_system_pools_cost`)."""
    system = {pool.vm_size for pool in system_pools(stack, deployed) or ()}
    meters: dict[str, tuple[bool, bool]] = {}
    for size in priced_vm_sizes(stack, deployed):
        gpu = [pool for pool in stack.pools if pool.vm_size.name == size]
        meters[size] = (size in system or any(p.spot is None for p in gpu), any(p.spot is not None for p in gpu))
    return meters


def needs_cluster_fee(stack: StackConfig) -> bool:
    """Whether the cost reads the Standard tier's fee meter: a cluster gpushare creates in that tier (an existing
    cluster's tier is not read offline, `_cluster_fee`)."""
    return not stack.cluster.existing and stack.cluster.tier is Tier.STANDARD


def isolation(pool: GpuPool) -> str:
    """What one advertised device of this pool isolates, as docs/sharing-modes.md's table says; on a DRA pool, what
    one claimed device (MIG slice or GPU, one pod's own) isolates."""
    if pool.allocation is Allocation.DRA:
        device = "MIG slice" if pool.mig else "whole GPU"
        shared = f", its containers sharing it by {pool.sharing.strategy.value}" if pool.sharing else ""
        return f"{device} claimed through DRA: one pod's own{shared}"
    if pool.sharing and pool.sharing.strategy is SharingStrategy.TIME_SLICING and pool.mig:
        # Time-slicing shares one MIG instance among pods; the instance itself keeps its own memory, cache and SMs.
        return ("time-sliced MIG slice: no memory or fault isolation between the pods sharing a slice; each slice "
                "isolated in hardware from the other slices")
    if pool.sharing and pool.sharing.strategy is SharingStrategy.TIME_SLICING:
        return "time-sliced: no memory or fault isolation"
    if pool.sharing and pool.sharing.strategy is SharingStrategy.MPS:
        return f"MPS: capped at 1/{pool.sharing.replicas} of memory and compute, no fault isolation"
    if pool.mig:
        return "MIG slice: memory, cache and compute isolated in hardware"
    return "whole GPU: full isolation"


def _round(value: float | None, places: int = 2) -> float | None:
    return None if value is None else round(value, places)


def slice_hourly(node_hourly: float | None, per_node: int | None) -> float | None:
    """The price of one allocatable device (a MIG slice, a time-sliced or MPS replica, a whole GPU): what one unit a
    pod requests costs an hour. The showback rules price a physical GPU or MIG instance instead
    (`gpushare.showback.rules.ShowbackPool.instance_hourly`)."""
    return None if node_hourly is None or not per_node else node_hourly / per_node


@dataclass(frozen=True)
class PoolCost:
    pool: str
    vm_size: str
    spot: bool
    node_hourly: float | None
    """None: no meter for this size in the region (unknown, never zero)."""
    resource: str
    per_node: int
    min_nodes: int
    max_nodes: int
    isolation: str
    meter: str | None
    spot_max_price: float | None = None
    """The pool's `spotMaxPrice` in USD per node-hour; None without a cap (-1: up to the on-demand price)."""
    currency: str = SPOT_MAX_PRICE_CURRENCY
    """The price sheet's currency, which `node_hourly` is in."""

    @property
    def runs_at_current_price(self) -> bool | None:
        """False when the sheet's Spot price is not below the pool's cap. The compute API's `billingProfile.maxPrice`:
        "the operation will only succeed if the maxPrice is greater than the current Azure Spot price" (creating
        or scaling the scale set fails with SpotPriceGreaterThanProvidedMaxPrice), and a node is evicted "if the
        current Azure Spot price goes beyond the maxPrice". None when it cannot be told: no cap, no price, or a
        sheet in another currency than the cap's."""
        if self.spot_max_price is None or self.node_hourly is None:
            return None
        return runs_under_cap(self.spot_max_price, self.node_hourly, self.currency)

    @property
    def slice_hourly(self) -> float | None:
        return slice_hourly(self.node_hourly, self.per_node)

    def monthly(self, nodes: int) -> float | None:
        return None if self.node_hourly is None else monthly(self.node_hourly, nodes)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.pool, "vmSize": self.vm_size, "spot": self.spot, "meter": self.meter,
            "nodeHourly": _round(self.node_hourly, 4), "resource": self.resource, "perNode": self.per_node,
            "deviceHourly": _round(self.slice_hourly, 4), "isolation": self.isolation,
            "minNodes": self.min_nodes, "maxNodes": self.max_nodes,
            "monthlyMin": _round(self.monthly(self.min_nodes)), "monthlyMax": _round(self.monthly(self.max_nodes)),
            "spotMaxPrice": self.spot_max_price, "runsAtCurrentPrice": self.runs_at_current_price,
        }


def pool_cost(stack: StackConfig, pool: GpuPool, sheet: PriceSheet, facts: PoolFactsByName | None = None) -> PoolCost:
    capacity = given_or_derived(stack, facts)[pool.name].capacity
    spot = pool.spot is not None
    meter = sheet.vm_meter(pool.vm_size.name, spot=spot)
    cap = pool.spot.max_price if pool.spot and pool.spot.max_price != SPOT_MARKET_PRICE else None
    return PoolCost(pool=pool.name, vm_size=pool.vm_size.name, spot=spot,
                    node_hourly=meter.hourly if meter else None, resource=capacity.resource,
                    per_node=capacity.per_node, min_nodes=pool.min_nodes, max_nodes=pool.max_nodes,
                    isolation=isolation(pool), meter=meter.meter_name if meter else None, spot_max_price=cap,
                    currency=sheet.currency)


def runs_under_cap(cap: float, spot_hourly: float, currency: str) -> bool | None:
    """Whether Spot nodes capped at `cap` (USD per node-hour) can run at `spot_hourly` in `currency`: None when the
    sheet is not in the cap's currency."""
    return spot_hourly < cap if currency == SPOT_MAX_PRICE_CURRENCY else None


def spot_cap_problem(pool: str, vm_size: str, cap: float, spot_hourly: float, price_date: str,
                     resource: str) -> str:
    """Why a Spot pool whose cap is not above the sheet's Spot price has none of the GPUs it lists."""
    return (f"cost: pool {pool}'s spotMaxPrice ${cap}/node-hour is not above the Spot price of {vm_size} in the "
            f"price sheet (${round(spot_hourly, 4)}/node-hour, prices of {price_date}): Azure refuses to create or "
            f"scale its nodes (SpotPriceGreaterThanProvidedMaxPrice) and evicts those it has while the price stays "
            f"there, so its {resource} are not there; raise its spot.maxPrice in gpushare:pools, or set it to -1 (pay "
            "up to the on-demand price, never evicted for price)")


def spot_cap_warnings(cost: Mapping[str, Any]) -> list[str]:
    """One warning per Spot pool whose cap is not above the Spot price the sheet quotes: its GPUs are not there
    while the price stays there, whatever the plan's capacity says."""
    return [spot_cap_problem(p["name"], p["vmSize"], p["spotMaxPrice"], p["nodeHourly"], cost["priceDate"],
                             p["resource"])
            for p in cost["pools"] if p.get("runsAtCurrentPrice") is False]


def _sum(values: list[float | None]) -> float:
    return sum(v for v in values if v is not None)


def _quota_share(resource: str, quota: int, offering: list[PoolCost], priced: list[PoolCost]) -> dict[str, Any]:
    """What a tenant's quota of `resource` can hold on the shared pools `offering` it, at most: the quota is one
    namespace-wide ResourceQuota (requests.<resource>), so each unit it allows is one device on one of those pools,
    priced once, and no pool holds more of them than it advertises at its most nodes. The dearest pools are filled
    first (the most the quota can cost); a pool without a price takes none, which `complete` says."""
    held, rows = 0, []
    for c in sorted(priced, key=lambda c: -(c.slice_hourly or 0.0)):
        units = min(quota - held, c.per_node * c.max_nodes)
        if units <= 0:
            break
        held += units
        rows.append({"pool": c.pool, "units": units, "deviceHourly": _round(c.slice_hourly, 4),
                     "monthly": _round(monthly(c.slice_hourly or 0.0, units))})
    dearest = rows[0]
    return {"pools": [c.pool for c in offering], "resource": resource, "quota": quota,
            "pricedAt": dearest["pool"], "deviceHourly": dearest["deviceHourly"],
            "monthly": _round(_sum([row["monthly"] for row in rows])),
            "units": held, "byPool": rows,
            "complete": len(priced) == len(offering) or held == quota}


def _tenant_cost(facts: PoolFactsByName, tenant_name: str, pools: list[str], quota: Mapping[str, int],
                 costs: Mapping[str, PoolCost]) -> dict[str, Any]:
    dedicated = [costs[name] for name in pools if facts[name].dedicated_tenant == tenant_name]
    shared = [costs[name] for name in pools if facts[name].dedicated_tenant != tenant_name]
    shares, unpriced = [], []
    for resource in dict.fromkeys(c.resource for c in shared):
        offering = [c for c in shared if c.resource == resource]
        units = quota.get(resource)
        priced = [c for c in offering if c.slice_hourly is not None]
        if units is None:
            unpriced += [{"pool": c.pool, "resource": resource,
                          "reason": f"no quota on {resource}: nothing bounds the tenant's share"} for c in offering]
        elif not priced:
            unpriced += [{"pool": c.pool, "resource": resource, "reason": "no price for its VM size"}
                         for c in offering]
        else:
            shares.append(_quota_share(resource, units, offering, priced))
    dedicated_min = _sum([c.monthly(c.min_nodes) for c in dedicated])
    dedicated_max = _sum([c.monthly(c.max_nodes) for c in dedicated])
    shared_total = _sum([s["monthly"] for s in shares])
    return {
        "name": tenant_name,
        "dedicated": [{"pool": c.pool, "monthlyMin": _round(c.monthly(c.min_nodes)),
                       "monthlyMax": _round(c.monthly(c.max_nodes))} for c in dedicated],
        "shared": shares,
        "unpriced": unpriced,
        "monthlyMin": _round(dedicated_min + shared_total),
        "monthlyMax": _round(dedicated_max + shared_total),
        "complete": (not unpriced and all(s["complete"] for s in shares)
                     and all(c.node_hourly is not None for c in dedicated)),
    }


def _borrowable_cost(rows: list[Borrowable], quota: Mapping[str, int], guaranteed: Mapping[str, int],
                     costs: Mapping[str, PoolCost]) -> dict[str, Any]:
    """`borrowable`, `borrowableMonthlyMax` and `borrowableComplete` of a tenant's cost: each pool its queue may
    borrow on, at that pool's device-hour; of a resource it has a quota of, no more units than the quota leaves
    beyond its own guarantee of the resource (`guaranteed`: its ResourceQuota counts its guaranteed pods too, and
    refuses a pod beyond it, borrowed or not), the dearest pools first (a pool without a price last). A missing
    price is unknown (`null`), never zero: the sum leaves it out and says it is partial, and is unknown when
    nothing it may borrow is priced."""
    priced: list[dict[str, Any]] = []
    for resource in dict.fromkeys(row.resource for row in rows):
        left = None if resource not in quota else max(0, quota[resource] - guaranteed.get(resource, 0))
        for row in sorted((r for r in rows if r.resource == resource),
                          key=lambda r: (costs[r.pool].slice_hourly is None, -(costs[r.pool].slice_hourly or 0.0))):
            units = row.units if left is None else min(row.units, left)
            if units <= 0:
                break
            if left is not None:
                left -= units
            hourly = costs[row.pool].slice_hourly
            priced.append({"pool": row.pool, "resource": resource, "units": units,
                           "deviceHourly": _round(hourly, 4),
                           "monthly": None if hourly is None else _round(monthly(hourly, units))})
    known = [row["monthly"] for row in priced if row["monthly"] is not None]
    complete = all(costs[row.pool].slice_hourly is not None for row in rows)
    return {"borrowable": priced,
            "borrowableMonthlyMax": _round(sum(known)) if known or complete else None,
            "borrowableComplete": complete}


def _guaranteed(stack: StackConfig, tenant: Tenant, facts: PoolFactsByName) -> dict[str, int]:
    """resource -> the units its queue guarantees the tenant (its nominal quotas of the resource)."""
    found: dict[str, int] = {}
    for quota in flavor_quotas(stack, tenant, facts):
        found[quota.resource] = found.get(quota.resource, 0) + quota.nominal
    return found


def _pool_chargeback(cost: PoolCost, guarantees: Mapping[str, int]) -> PoolChargeback | None:
    """The pool's month at its most nodes (the capacity the guarantees are written against) split by
    `chargeback.split_pool_cost`: each tenant its guarantee, the rest idle; None without a price."""
    month = cost.monthly(cost.max_nodes)
    if month is None:
        return None
    return split_pool_cost(cents(round(month, 2)), cost.per_node * cost.max_nodes, guarantees)


def _tenant_charge(tenant: str, splits: Mapping[str, PoolChargeback | None],
                   guarantees: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
    """`charge`: what the tenant is charged a month on each pool it holds a guarantee on (`chargeback`), and in all;
    `complete` false (the sum then a floor) when one of those pools has no price."""
    rows, unpriced = [], []
    for pool, split in splits.items():
        if not guarantees[pool].get(tenant):
            continue
        if split is None:
            unpriced.append(pool)
            continue
        charge = split.charges[tenant]
        rows.append({"pool": pool, "units": float(charge.units), "monthly": float(charge.amount)})
    return {"monthly": float(sum((Decimal(str(r["monthly"])) for r in rows), Decimal(0))), "pools": rows,
            "unpriced": unpriced, "complete": not unpriced}


def _system_pools_cost(pools: tuple[SystemPool, ...] | None, sheet: PriceSheet,
                       existing: bool) -> tuple[dict[str, Any], list[str]]:
    """`cost.systemPool` (the total of every system pool, each in `pools`) and what it leaves unknown."""
    source = "unknown" if pools is None else "deployed" if existing else "stack"
    if pools is None:
        return ({"vmSize": None, "count": None, "nodeHourly": None, "monthly": None, "source": source, "pools": []},
                ["the existing cluster's system pools (pass --deployed FILE, `az aks nodepool list -o json`)"])
    rows, unknown = [], []
    for pool in pools:
        meter = sheet.vm_meter(pool.vm_size)
        cost = monthly(meter.hourly, pool.count) if meter and pool.count is not None else None
        if cost is None:
            unknown.append(f"{pool.vm_size} (system pool {pool.name}"
                           + (", no node count)" if meter else ")"))
        rows.append({"name": pool.name, "vmSize": pool.vm_size, "count": pool.count,
                     "nodeHourly": _round(meter.hourly, 4) if meter else None, "monthly": _round(cost)})
    sizes = list(dict.fromkeys(row["vmSize"] for row in rows))
    counts = [row["count"] for row in rows]
    return ({"vmSize": sizes[0] if len(sizes) == 1 else (", ".join(sizes) or None),
             "count": sum(counts) if None not in counts else None,
             "nodeHourly": rows[0]["nodeHourly"] if len(rows) == 1 else None,
             "monthly": None if unknown else _round(_sum([row["monthly"] for row in rows])),
             "source": source, "pools": rows}, unknown)


def _cluster_fee(stack: StackConfig, sheet: PriceSheet, tier: Tier | None) -> tuple[dict[str, Any], list[str]]:
    """`cost.clusterFee`: the Standard tier's fee, none on Free; unknown for an existing cluster whose tier was not
    read (`tier` None)."""
    if stack.cluster.existing and tier is None:
        return ({"tier": None, "meter": None, "hourly": None, "monthly": None, "source": "unknown"},
                ["the existing cluster's tier fee (its tier is not read offline)"])
    tier = tier or stack.cluster.tier
    fee_meter = sheet.cluster_fee_meter() if tier is Tier.STANDARD else None
    # Free costs nothing; Premium (Standard plus long-term support) is not priced by gpushare, so it stays unknown.
    fee_hourly = (fee_meter.hourly if fee_meter else None) if tier is not Tier.FREE else 0.0
    fee_monthly = None if fee_hourly is None else monthly(fee_hourly, 1)
    return ({"tier": tier.value, "meter": fee_meter.meter_name if fee_meter else None,
             "hourly": _round(fee_hourly, 4), "monthly": _round(fee_monthly),
             "source": "deployed" if stack.cluster.existing else "stack"},
            [] if fee_monthly is not None else [f"the {tier.value} tier's cluster fee"])


def stack_cost(stack: StackConfig, sheet: PriceSheet, deployed: Iterable[DeployedPool] | None = None,
               tier: Tier | None = None, facts: PoolFactsByName | None = None) -> dict[str, Any]:
    """The `plan --json` `cost` object: numbers are numbers (rounded to cents, or 4 places per hour), in the sheet's
    currency; `null` wherever the API has no meter or a fact is unknown. `deployed`, `tier`: an existing cluster's
    pools and tier as read; the cluster's own parts (system pools, tier fee) are priced from them, never from
    gpushare's defaults, and are unknown without them."""
    facts = given_or_derived(stack, facts)
    costs = {pool.name: pool_cost(stack, pool, sheet, facts) for pool in stack.pools}
    system, system_unknown = _system_pools_cost(system_pools(stack, deployed), sheet, stack.cluster.existing)
    fee, fee_unknown = _cluster_fee(stack, sheet, tier)
    unknown = [f"{c.vm_size} (pool {c.pool})" for c in costs.values() if c.node_hourly is None]
    unknown += system_unknown + fee_unknown
    fixed = _sum([system["monthly"], fee["monthly"]])
    tenants = {t.name: t for t in stack.tenants}
    guarantees = pool_guarantees(stack, facts)
    splits = {name: _pool_chargeback(c, guarantees[name]) for name, c in costs.items()}
    return {
        "currency": sheet.currency,
        "priceDate": sheet.read_at[:10],
        "source": sheet.source,
        "note": LIST_PRICE_NOTE,
        "hoursPerMonth": HOURS_PER_MONTH,
        "pools": [c.to_json() | {"chargeback": None if splits[c.pool] is None
                                 else splits[c.pool].to_json() | {"nodes": c.max_nodes}}
                  for c in costs.values()],
        "systemPool": system,
        "clusterFee": fee,
        "tenants": [_tenant_cost(facts, t.name, list(t.pools), dict(t.quota), costs)
                    | {"charge": _tenant_charge(t.name, splits, guarantees)}
                    | (_borrowable_cost(borrowable(stack, t, facts), dict(t.quota), _guaranteed(stack, t, facts),
                                        costs)
                       if stack.queues.enabled else {})
                    for t in tenants.values()],
        "total": {
            "monthlyMin": _round(fixed + _sum([c.monthly(c.min_nodes) for c in costs.values()])),
            "monthlyMax": _round(fixed + _sum([c.monthly(c.max_nodes) for c in costs.values()])),
            "complete": not unknown,
        },
        "unknown": unknown,
    }


# --- text ------------------------------------------------------------------------------------------------------


def money(value: float | None, currency: str, places: int = 0) -> str:
    """`$4,380` in USD, `4,380 EUR` otherwise; `unknown` for a missing price."""
    if value is None:
        return "unknown"
    amount = f"{abs(value):,.{places}f}"
    sign = "-" if value < 0 else ""
    return f"{sign}${amount}" if currency == "USD" else f"{sign}{amount} {currency}"


def signed_money(value: float, currency: str) -> str:
    text = money(value, currency)
    return text if value < 0 else f"+{text}"


def money_span(low: float | None, high: float | None, currency: str) -> str:
    """`$5,095-$30,572`, one figure when both ends round to it, `unknown` without a price."""
    if low is None or high is None:
        return "unknown"
    low_text, high_text = money(low, currency), money(high, currency)
    return low_text if low_text == high_text else f"{low_text}-{high_text}"


def _spot_note(pool: Mapping[str, Any]) -> str:
    if not pool["spot"]:
        return ""
    if pool.get("spotMaxPrice") is None:
        return " (Spot)"
    below = ": not above the Spot price, no nodes" if pool.get("runsAtCurrentPrice") is False else ""
    return f" (Spot, at most ${pool['spotMaxPrice']}/node-hour{below})"


def cost_lines(cost: Mapping[str, Any]) -> list[str]:
    """The plan's text section for a `cost` object."""
    currency = cost["currency"]
    resources = {pool["name"]: pool["resource"] for pool in cost["pools"]}
    lines = [f"Cost ({cost['note']}; {currency}, prices of {cost['priceDate']}; {cost['hoursPerMonth']} h a month):"]
    for pool in cost["pools"]:
        per_device = (f"{money(pool['deviceHourly'], currency, 4)} per {pool['resource']}-hour"
                      if pool["deviceHourly"] is not None else f"{pool['resource']}: price unknown")
        lines.append(f"  {pool['name']}: {pool['vmSize']}{_spot_note(pool)} "
                     f"{money(pool['nodeHourly'], currency, 2)}/node-hour, "
                     f"{money_span(pool['monthlyMin'], pool['monthlyMax'], currency)}/month at "
                     f"{pool['minNodes']}{'' if pool['minNodes'] == pool['maxNodes'] else '-' + str(pool['maxNodes'])}"
                     f" node(s); {per_device} ({pool['isolation']})")
        if pool.get("chargeback") and cost["tenants"]:
            lines.append(f"    {_split_text(pool['chargeback'], currency)}")
    system, fee = cost["systemPool"], cost["clusterFee"]
    if system.get("source") == "unknown":
        lines.append("  system pool: unknown (the existing cluster's own; plan --deployed FILE prices what it has)")
    else:
        read = " (as deployed)" if system.get("source") == "deployed" else ""
        pools = system.get("pools") or [{"count": system["count"], "vmSize": system["vmSize"]}]
        shown = " + ".join(f"{p['count'] if p['count'] is not None else '?'} x {p['vmSize']}" for p in pools) or "none"
        lines.append(f"  system pool: {shown}{read}, {money(system['monthly'], currency)}/month")
    if fee.get("source") == "unknown":
        lines.append("  cluster fee: unknown (the existing cluster's tier is not read offline)")
    else:
        lines.append(f"  cluster fee ({fee['tier']} tier): {money(fee['monthly'], currency)}/month")
    for tenant in cost["tenants"]:
        lines.append(f"  tenant {tenant['name']}: {_charge_text(tenant, resources, currency)}"
                     f"{_borrowable_text(tenant, currency)}")
    total = cost["total"]
    partial = "" if total["complete"] else f" (partial: no price for {', '.join(cost['unknown'])})"
    lines.append(f"  stack: {money(total['monthlyMin'], currency)}/month at the fewest nodes, "
                 f"{money(total['monthlyMax'], currency)} at the most{partial}")
    lines.append("  (a tenant is charged its guarantee on each pool, a pool dedicated to it whole, at the pool's most "
                 "nodes; what no tenant is guaranteed is the pool's idle line; the parts sum to the pool's cost: "
                 "docs/cost.md)")
    if any("borrowable" in tenant for tenant in cost["tenants"]):
        lines.append("  (what a tenant may borrow is the most its queue can take from its cohort's idle guarantees at "
                     "once, at each pool's device-hour: a ceiling beside its own figure, not in it)")
    return lines


def _units_text(units: float) -> str:
    return f"{units:g}"


def _split_text(split: Mapping[str, Any], currency: str) -> str:
    """`chargeback of a month at 2 node(s): vision $2,679.00 + nlp $2,679.00 + idle $0.00 = $5,358.00`."""
    parts = [f"{name} {money(part['amount'], currency, 2)}"
             for name, part in [*split["tenants"].items(), *split["others"].items()]]
    parts.append(f"idle {money(split['idle'], currency, 2)}")
    return (f"chargeback of a month at {split['nodes']} node(s): {' + '.join(parts)} = "
            f"{money(split['total'], currency, 2)}")


def _charge_text(tenant: Mapping[str, Any], resources: Mapping[str, str], currency: str) -> str:
    """`charged $2,722.90/month (guaranteed 2 x nvidia.com/gpu on a100mig $2,679.10, ...)`."""
    charge = tenant["charge"]
    parts = [f"{_units_text(row['units'])} x {resources[row['pool']]} on {row['pool']} "
             f"{money(row['monthly'], currency, 2)}" for row in charge["pools"]]
    parts += [f"{pool} not priced" for pool in charge["unpriced"]]
    if not parts:
        return "charged nothing (no guarantee on any pool)"
    total = money(charge["monthly"], currency, 2)
    if not charge["complete"]:
        total = f"at least {total}" if charge["pools"] else "unknown"
    return f"charged {total}/month (guaranteed {', '.join(parts)})"


def _borrowable_text(tenant: Mapping[str, Any], currency: str) -> str:
    """`; may borrow up to $X/month more (2 x nvidia.com/gpu.shared on t4ts $219)`, or nothing with queues off."""
    if "borrowable" not in tenant:
        return ""
    rows = tenant["borrowable"]
    if not rows:
        return "; borrows nothing (its queue has no cohort or nothing is lent on its pools)"
    total = money(tenant["borrowableMonthlyMax"], currency)
    if not tenant["borrowableComplete"] and tenant["borrowableMonthlyMax"] is not None:
        total = f"at least {total}"
    shown = ", ".join(f"{r['units']} x {r['resource']} on {r['pool']} {money(r['monthly'], currency)}" for r in rows)
    return f"; may borrow up to {total}/month more ({shown})"
