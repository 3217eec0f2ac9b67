"""What gpushare says a tenant's queue may borrow (`gpushare.kubernetes.queues.borrowable`, which the cost prices)
agrees with Kueue v0.19.2's own scheduler cache: `tools/kueueborrow` loads the compiled ResourceFlavors, Cohort and
ClusterQueues into `sigs.k8s.io/kueue/pkg/cache/scheduler` and reads each queue's `PotentialAvailable` (the most it
can be admitted with the cohort idle); that minus its nominal quota is what Kueue lets it borrow. gpushare bounds it
once more by what the pool's nodes hold, which Kueue does not see."""

from __future__ import annotations

import json
import subprocess
from functools import cache
from pathlib import Path

import pytest
import yaml

from gpushare.kubernetes.queues import borrowable, flavor_quotas, queue_manifests
from gpushare.stackfile.config import parse_config
from tests import go_tools
from tests.kubernetes.test_pool_quotas import adopter_stack
from tests.kubernetes.test_queues import QUEUE_STACK_YAML, TWO_POOLS_YAML, load

BUILD = Path(__file__).resolve().parents[2] / "tools" / "kueueborrow" / "build"


@cache
def kueueborrow() -> Path:
    return go_tools.built_or_skip(BUILD, "the Kueue borrowing tests", timeout=1800)


def kueue_borrows(stack) -> dict[tuple[str, str], int]:
    """(tenant, pool) -> what Kueue's scheduler cache lets its ClusterQueue borrow there (GPU resources only)."""
    result = subprocess.run([str(kueueborrow())], input=json.dumps(queue_manifests(stack)), capture_output=True,
                            text=True, timeout=60, check=True)
    gpu = {(t.name, q.pool) for t in stack.tenants for q in flavor_quotas(stack, t)}
    return {(r["clusterQueue"], r["flavor"]): int(r["potentialAvailable"]) - int(r["nominal"])
            for r in json.loads(result.stdout) if (r["clusterQueue"], r["flavor"]) in gpu}


def ours(stack) -> dict[tuple[str, str], int]:
    return {(t.name, b.pool): b.units for t in stack.tenants for b in borrowable(stack, t)}


def variant(edit=None):
    raw = yaml.safe_load(QUEUE_STACK_YAML)["config"]
    if edit:
        edit(raw["gpushare:tenants"])
    return parse_config(raw, source="stacks/Pulumi.queues.yaml", stack="queues")


def limit_above_lending(ts):
    ts[0]["queue"]["borrowingLimit"] = {"nvidia.com/gpu.shared": 5}


def no_limits(ts):
    del ts[0]["queue"]["borrowingLimit"]
    del ts[1]["queue"]["lendingLimit"]


def speech_lends_one(ts):
    ts[2]["queue"]["lendingLimit"] = {"nvidia.com/gpu": 1}


@pytest.mark.parametrize("edit", [None, limit_above_lending, no_limits, speech_lends_one])
def test_what_a_queue_may_borrow_is_what_kueues_scheduler_cache_lets_it(edit):
    stack = variant(edit)
    kueue = kueue_borrows(stack)
    assert {key: units for key, units in kueue.items() if units} == ours(stack)
    assert kueue[("vision", "h100mig")] == 0 and kueue[("nlp", "a100")] == 0  # dedicated pools lend nothing


def test_kueue_would_lend_beyond_the_pool_and_gpushare_stops_at_its_nodes():
    def over_guaranteed(ts):
        no_limits(ts)
        ts[1]["queue"] = {"nominal": {"nvidia.com/gpu.shared": 10}}

    stack = variant(over_guaranteed)
    # nlp guarantees itself 10 of t4ts's 12 shares and lends them all: Kueue's quotas let vision (6 of its own)
    # borrow the 10, but the pool's nodes hold only 6 more.
    assert kueue_borrows(stack)[("vision", "t4ts")] == 10
    assert ours(stack)[("vision", "t4ts")] == 6


def test_two_pools_of_one_resource_each_let_the_queue_borrow_what_is_lent_there():
    """Kueue bounds borrowing per flavor: vision may borrow 4 on t4a and 6 on t4b (nlp's 4, and the cohort's own 2
    that no guarantee covers there: 8 - vision's 2 - nlp's 4), 10 in all, beyond its quota of 6 (which the cost
    therefore caps, tests/showback/test_borrowed_cost.py)."""
    stack = load(TWO_POOLS_YAML)
    kueue = kueue_borrows(stack)
    assert (kueue[("vision", "t4a")], kueue[("vision", "t4b")]) == (4, 6)
    assert {key: units for key, units in kueue.items() if units} == ours(stack)


def test_per_pool_promises_and_the_cohorts_own_quota_lend_what_kueues_cache_lends():
    """The adopter's design (tests/kubernetes/test_pool_quotas.py): per-pool guarantees, and t4spot's 2 shares no
    tenant is guaranteed held by the cohort; Kueue's cache lets each tenant borrow what gpushare says."""
    stack = adopter_stack()
    kueue = kueue_borrows(stack)
    assert {key: units for key, units in kueue.items() if units} == ours(stack)
    # t4spot: the other two tenants' 2 + 2 and the cohort's 2.
    assert kueue[("vision", "t4spot")] == 6 and kueue[("speech", "h100mig")] == 0
