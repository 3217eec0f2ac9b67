"""The count sent for a pool: fixed count, or the live count clamped to the autoscale bounds."""

from __future__ import annotations

import pytest

from gpushare.azure.guard.guard_runs import evaluate
from gpushare.model.stack import Autoscale
from gpushare.sharing.node_count import count_to_send
from tests.azure.guard_builders import SYSTEM_POOL, deployed_like, gpu_stack
from tests.builders import T4, pool


@pytest.mark.parametrize(
    ("live", "expected"),
    [(None, 2), (0, 2), (2, 2), (3, 3), (5, 5), (9, 5)],
    ids=["unknown-sends-min", "below-min", "at-min", "inside", "at-max", "above-max"],
)
def test_autoscaled_pool_sends_the_live_count_clamped(live, expected):
    assert count_to_send(pool("t4", T4, count=None, autoscale=Autoscale(2, 5)), live) == expected


@pytest.mark.parametrize("live", [None, 0, 7])
def test_fixed_pool_sends_its_count(live):
    assert count_to_send(pool("t4", T4, count=3), live) == 3


def test_guard_report_carries_the_pools_it_read_and_their_live_counts():
    t4 = pool("t4", T4, count=None, autoscale=Autoscale(0, 4))
    deployed = [SYSTEM_POOL, deployed_like(t4, count=3)]
    report = evaluate(gpu_stack(t4), deployed, "file.json")
    assert report.deployed == tuple(deployed)
    assert report.live_count("t4") == 3
    assert report.live_count("system") == 2
    assert report.live_count("newpool") is None


def test_no_cluster_means_no_deployed_pools():
    report = evaluate(gpu_stack(pool("t4", T4)), None, "azure:/...")
    assert report.deployed is None and report.live_count("t4") is None
