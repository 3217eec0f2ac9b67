"""Chargeback that adds up to the bill: one pool's cost for one period split among the tenants that hold a promise
on it or use it, and the pool's idle line, so the parts sum to the pool's cost to the cent (docs/cost.md).

- Each tenant is charged its guarantee on the pool (its nominal quota on the pool's Kueue flavor, `queues.
  flavor_quotas`; the whole pool when the pool is dedicated to it) whether it uses it or not: the promise keeps the
  capacity for it. Guarantees above what the pool holds are scaled down to it, each in proportion.
- What a namespace holds beyond its guarantee is borrowed: charged to it, and credited to the tenants whose guarantee
  sat unused, in proportion to what each left unused, never beyond it (what the borrowing did not take from them came
  from capacity nobody is guaranteed).
- Idle is the rest: capacity nobody is guaranteed and nobody used.
Money is split by the largest remainder method (Hamilton's): each part is its exact share of the pool's cost in
cents, rounded down; the cents left over go one each to the parts with the largest remainders (ties: in the order
the parties were given, idle last). The parts are then whole cents that sum to the pool's cost exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Any

from gpushare.kubernetes.queues import flavor_quotas
from gpushare.model.stack import StackConfig
from gpushare.sharing.pool_facts import PoolFactsByName, given_or_derived

CENT = Decimal("0.01")


def cents(amount: float | Decimal) -> Decimal:
    """An amount as whole cents, half up; a float by its shortest decimal form (0.1, not 0.1000000000000000055)."""
    return Decimal(str(amount) if isinstance(amount, float) else amount).quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class Charge:
    """One party's part of a pool's cost, in the pool's units (slices, or slice-hours over a window)."""

    guaranteed: Fraction
    """Its guarantee, scaled to the pool when the guarantees promise more than it holds."""
    held: Fraction
    borrowed: Fraction
    """Held beyond its guarantee."""
    lent: Fraction
    """Of its unused guarantee, what others borrowed: credited to it."""
    units: Fraction
    """What it is charged for: guaranteed + borrowed - lent."""
    amount: Decimal

    def to_json(self) -> dict[str, Any]:
        return {"guaranteed": _units(self.guaranteed), "held": _units(self.held), "borrowed": _units(self.borrowed),
                "lent": _units(self.lent), "units": _units(self.units), "amount": float(self.amount)}


@dataclass(frozen=True)
class PoolChargeback:
    cost: Decimal
    capacity: Fraction
    charges: dict[str, Charge]
    idle_units: Fraction
    idle: Decimal

    def to_json(self, tenants: frozenset[str] | None = None) -> dict[str, Any]:
        """`tenants`: the parties that are tenants (`tenants`); the others are namespaces of no tenant (`others`).
        tenants + others + idle = total."""
        chosen = tenants if tenants is not None else frozenset(self.charges)
        return {"tenants": {n: c.to_json() for n, c in self.charges.items() if n in chosen},
                "others": {n: c.to_json() for n, c in self.charges.items() if n not in chosen},
                "idleUnits": _units(self.idle_units), "idle": float(self.idle), "capacity": _units(self.capacity),
                "total": float(self.cost)}


def _units(value: Fraction) -> float:
    return round(float(value), 4)


def split_pool_cost(cost: Decimal, capacity: Fraction | int, guarantees: Mapping[str, Fraction | int],
                    held: Mapping[str, Fraction | int | float] | None = None) -> PoolChargeback:
    """`cost` (whole cents) of a pool that offered `capacity` units, split among the parties: `guarantees` (party ->
    units promised) and `held` (party -> units its pods held, as measured; None: a plan, where each holds its
    guarantee). Every part is a whole cent and tenants' amounts plus `idle` equal `cost`."""
    capacity = Fraction(capacity)
    promised = {name: Fraction(units) for name, units in guarantees.items() if units}
    total_promised = sum(promised.values(), Fraction(0))
    scale = min(Fraction(1), capacity / total_promised) if total_promised else Fraction(1)
    parties = list(dict.fromkeys([*guarantees, *(held or {})]))
    guaranteed = {name: promised.get(name, Fraction(0)) * scale for name in parties}
    holding = guaranteed if held is None else {name: Fraction(held.get(name, 0)) for name in parties}
    borrowed = {name: max(Fraction(0), holding[name] - guaranteed[name]) for name in parties}
    unused = {name: max(Fraction(0), guaranteed[name] - holding[name]) for name in parties}
    total_borrowed, total_unused = sum(borrowed.values(), Fraction(0)), sum(unused.values(), Fraction(0))
    taken = min(Fraction(1), total_borrowed / total_unused) if total_unused else Fraction(0)
    lent = {name: unused[name] * taken for name in parties}
    charged = {name: guaranteed[name] + borrowed[name] - lent[name] for name in parties}
    # Measured holdings above the pool (a pod counted on a node already gone) leave no idle, never a negative one.
    whole = max(capacity, sum(charged.values(), Fraction(0)))
    idle_units = whole - sum(charged.values(), Fraction(0))
    amounts = largest_remainder(cost, [*charged.values(), idle_units] if whole else [*(0 for _ in parties), 1])
    return PoolChargeback(
        cost=cost, capacity=capacity, idle_units=idle_units, idle=amounts[-1],
        charges={name: Charge(guaranteed[name], holding[name], borrowed[name], lent[name], charged[name], amount)
                 for name, amount in zip(parties, amounts)})


def largest_remainder(total: Decimal, weights: list[Fraction | int]) -> list[Decimal]:
    """`total` (whole cents) split in proportion to `weights` (not all zero), as whole cents summing to `total`."""
    total_cents = int(total / CENT)
    whole = sum(weights, Fraction(0))
    exact = [Fraction(total_cents) * weight / whole for weight in weights]
    parts = [int(share // 1) for share in exact]
    left = total_cents - sum(parts)
    by_remainder = sorted(range(len(exact)), key=lambda i: (-(exact[i] - parts[i]), i))
    for i in by_remainder[:left]:
        parts[i] += 1
    return [Decimal(part) * CENT for part in parts]


def pool_guarantees(stack: StackConfig, facts: PoolFactsByName | None = None) -> dict[str, dict[str, int]]:
    """pool -> tenant -> the units guaranteed to it there, in stack order: a pool dedicated to a tenant is wholly
    its own (its taint keeps the others off); on a shared pool, the tenant's nominal quota on the pool's flavor
    (`queues.flavor_quotas`, which places a tenant's promise on its pools whether or not Kueue enforces it). A pool
    no tenant lists guarantees nothing."""
    facts = given_or_derived(stack, facts)
    found: dict[str, dict[str, int]] = {name: {} for name in facts}
    for tenant in stack.tenants:
        for quota in flavor_quotas(stack, tenant, facts):
            found[quota.pool][tenant.name] = quota.capacity if quota.dedicated else quota.nominal
    return found
