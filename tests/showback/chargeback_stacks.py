"""The stacks every chargeback surface is checked on: the four example stacks (stacks/*.yaml) and the adopter's
design of issue 41, in which two teams share an A100 MIG pool that costs $5,358.20 a month (2 x
Standard_NC24ads_A100_v4 at $3.67 an hour x 730) and each was charged $5,402 (its quota of 6 slices priced at the
dearest pools: the whole A100 pool, 4 slices, plus 2 T4 shares)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from gpushare.stackfile.config import load_stack_file, parse_config

STACKS = Path(__file__).resolve().parents[2] / "stacks"
EXAMPLE_STACKS = sorted(STACKS.glob("Pulumi.*.yaml"))
PRICES = {"Standard_NC24ads_A100_v4": 3.67, "Standard_NC40ads_H100_v5": 7.0, "Standard_NC4as_T4_v3": 0.526,
          "Standard_NC8as_T4_v3": 0.752, "Standard_NC64as_T4_v3": 4.352, "Standard_ND96asr_v4": 27.197,
          "Standard_D4ds_v5": 0.23}
"""Pay-as-you-go Linux list prices per node-hour for the sizes the stacks use (westeurope; the Spot meter the price
stub serves is 0.2 of each)."""

TWO_TEAMS_YAML = """
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: adopter}
  gpushare:queues: {enabled: true}
  gpushare:pools:
    - {name: a100mig, vmSize: Standard_NC24ads_A100_v4, mig: MIG3g, count: 2}
    - {name: h100mig, vmSize: Standard_NC40ads_H100_v5, mig: MIG1g, autoscale: {min: 0, max: 4}}
    - {name: t4spot, vmSize: Standard_NC4as_T4_v3, sharing: {strategy: time-slicing, replicas: 4}, spot: {},
       autoscale: {min: 0, max: 2}}
  gpushare:tenants:
    - {name: vision, pools: [a100mig, t4spot], quota: {nvidia.com/gpu: 6}}
    - {name: nlp, pools: [a100mig, t4spot], quota: {nvidia.com/gpu: 6}}
    - {name: speech, pools: [h100mig, t4spot]}
"""
"""a100mig: 2 A100s as MIG 3g.40gb, 4 slices, which vision and nlp share (guaranteed 2 each); h100mig: speech's
own, 0-4 nodes; t4spot: 8 Spot T4 shares everyone lists (guaranteed 2 each, 2 guaranteed to nobody). Any pool
autoscaling makes every pool advertise nvidia.com/gpu (migStrategy single)."""


def two_teams():
    return parse_config(yaml.safe_load(TWO_TEAMS_YAML)["config"], source="stacks/Pulumi.adopter.yaml",
                        stack="adopter")


def all_stacks() -> list[tuple[str, Any]]:
    """(name, StackConfig) of every stack the sum property is checked on."""
    return [(path.name, load_stack_file(path)) for path in EXAMPLE_STACKS] + [("two teams", two_teams())]


def cents(value: float) -> Decimal:
    return Decimal(str(value))


def assert_adds_up(split: dict[str, Any], total: float) -> None:
    """A `chargeback` object's tenants, other namespaces and idle line sum to `total`, to the cent."""
    parts = [*(t["amount"] for t in split["tenants"].values()), *(o["amount"] for o in split["others"].values()),
             split["idle"]]
    assert all(cents(p) == cents(p).quantize(Decimal("0.01")) for p in parts), parts
    assert sum(map(cents, parts)) == cents(split["total"]) == cents(total), (parts, split["total"], total)
