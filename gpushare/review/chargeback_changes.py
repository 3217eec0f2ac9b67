"""What a change does to the chargeback, for `compare` (two plans' `cost.pools[].chargeback`, `plan --prices`): per
pool whose split changes, each tenant's charge, the idle line and the pool's cost before -> after, at each side's
list prices and most nodes. The split is the plan's own (`gpushare.showback.chargeback`), so each side's parts sum to
its pool's cost; this module only sets them side by side."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from gpushare.review.markdown import code, table
from gpushare.showback.cost import money

HEADERS = ("Pool", "Charged to", "Before", "After", "Change")
POOL_COST = "= pool cost"


def _splits(cost: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    return {str(pool.get("name")): pool["chargeback"] for pool in (cost or {}).get("pools") or ()
            if isinstance(pool, Mapping) and isinstance(pool.get("chargeback"), Mapping)}


def _parts(split: Mapping[str, Any] | None) -> dict[str, float]:
    """Party -> amount, the idle line and the pool's cost last; empty for a side without the pool."""
    if split is None:
        return {}
    parties = {**split.get("tenants", {}), **split.get("others", {})}
    return {**{name: part["amount"] for name, part in parties.items()}, "idle": split["idle"],
            POOL_COST: split["total"]}


def _delta(before: float | None, after: float | None, currency: str) -> str:
    change = float(Decimal(str(after or 0)) - Decimal(str(before or 0)))
    if not change:
        return "-"
    return money(change, currency, 2) if change < 0 else f"+{money(change, currency, 2)}"


def chargeback_section(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None,
                       currency: str) -> list[str]:
    """The section, or nothing when no pool's split changes (or neither plan carries one)."""
    old, new = _splits(before), _splits(after)
    rows = []
    for pool in dict.fromkeys([*old, *new]):
        was, now = _parts(old.get(pool)), _parts(new.get(pool))
        if was == now:
            continue
        parties = [p for p in dict.fromkeys([*was, *now]) if p not in ("idle", POOL_COST)] + ["idle", POOL_COST]
        rows += [[code(pool), party if party in ("idle", POOL_COST) else code(party),
                  money(was.get(party), currency, 2) if party in was else "-",
                  money(now.get(party), currency, 2) if party in now else "-",
                  _delta(was.get(party), now.get(party), currency)] for party in parties]
    if not rows:
        return []
    return ["#### Chargeback", "",
            "Each pool's month at its most nodes: each tenant charged its guarantee (a pool dedicated to it whole), "
            "the rest idle; each side's parts sum to its pool's cost (docs/cost.md).", "",
            *table(HEADERS, rows), ""]
