"""`gpushare usage`'s MIG advice (`gpushare.showback.usage`) when several smaller profiles would hold a MIG
pool's work: it picks the one with the most instances per node. The figures are what the window's PromQL gives
(tests/cli/test_usage_command.py runs the queries on a real Prometheus); here they are set directly."""

from __future__ import annotations

import pytest

from gpushare.model.catalog import MigProfile
from gpushare.showback.rules import showback_pools
from gpushare.showback.usage import PoolPlan, _recommendation
from tests.builders import pool, stack

HELD_HOURS = 100.0


def figures(framebuffer_mib: float, busy: float) -> dict[str, float]:
    """A week on one ND96asr_v4 node under MIG7g (8 instances of 7g.40gb): 4 held at most, `busy` of the held hours
    busy, and their framebuffer peaking at `framebuffer_mib`."""
    return {"utilisation": busy, "allocatedPeak": 4, "allocatablePeak": 8, "pendingPeak": 0, "allocatedShare": 0.5,
            "framebufferPeak": framebuffer_mib, "allocatedHours": HELD_HOURS, "usedHours": busy * HELD_HOURS}


@pytest.mark.parametrize("busy, profile, slice_, per_node", [
    # 0.7 of the 7 compute slices: 1g.5gb (56 per node), 2g.10gb (24) and 3g.20gb (16) all hold it.
    (0.1, "MIG1g", "1g.5gb", 56),
    # 0.9 compute slices: over 80% of a 1g's one, so 2g.10gb (24) and 3g.20gb (16) are left.
    (0.9 / 7, "MIG2g", "2g.10gb", 24),
])
def test_mig_advice_picks_the_fitting_profile_with_the_most_instances_per_node(busy, profile, slice_, per_node):
    (showback,) = showback_pools(stack(pool("a100", "Standard_ND96asr_v4", mig=MigProfile.MIG7G)))
    advice = _recommendation(showback, PoolPlan(count=1, min_nodes=1, max_nodes=1), figures(3000, busy), 10, 168)
    assert advice["profile"] == {"before": "MIG7g", "after": profile, "slice": slice_, "resource": "nvidia.com/gpu"}
    assert advice["edit"] == f"new pool: mig MIG7g -> {profile}" and advice["newPool"] is True
    assert advice["capacity"] == {"before": 8, "after": per_node}
