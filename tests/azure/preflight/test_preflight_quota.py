"""Preflight's quota arithmetic on parsed region facts (no Azure): what a stack can use at most, per family."""

from __future__ import annotations

import dataclasses

from gpushare.azure.deployed import DeployedPool
from gpushare.azure.preflight.preflight_report import Verdict
from gpushare.azure.preflight.preflight_runs import evaluate
from gpushare.azure.region_offers import QuotaUsage
from gpushare.model.stack import Upgrade
from tests.azure.preflight.parsed_region import CONFIG, OFFERS, SUB, T4_FAMILY


def quota(report, subject: str):
    (check,) = [c for c in report.checks if c.check == "quota" and c.subject == subject]
    return check


def test_pools_of_one_family_add_up_at_their_most():
    report = evaluate(CONFIG, OFFERS, None, SUB)

    assert quota(report, T4_FAMILY).detail == (
        "needs 36 vCPUs at most (small 5 x 4; big 2 x 8); 100 free (limit 100, in use 0)")
    assert quota(report, "cores").detail.startswith(
        "needs 48 vCPUs at most (system pool 2 + 1 surge x 4; small 5 x 4; big 2 x 8)")


def test_a_pool_whose_size_changes_counts_in_full_and_a_shrinking_pool_frees_nothing():
    live = [
        DeployedPool("system", "Standard_D4ds_v5", count=2, mode="System"),
        DeployedPool("small", "standard_nc4as_t4_v3", count=7),  # more than the new max: counts 0, not -2
        DeployedPool("big", "Standard_NC4as_T4_v3", count=2),  # size changes: the new pool's 2 x 8 count
    ]

    report = evaluate(CONFIG, OFFERS, live, SUB)

    assert quota(report, T4_FAMILY).detail.startswith(
        "needs 16 vCPUs more than the cluster runs now (small 5 - 7 running x 4; big 2 (new Standard_NC8as_T4_v3 "
        "nodes) x 8)")
    # The system pool runs its 2 nodes: only AKS's default surge (10% of 2, rounded up: 1 node) is growth.
    assert quota(report, "standardDDSv5Family").detail.startswith(
        "needs 4 vCPUs more than the cluster runs now (system pool 2 + 1 surge - 2 running x 4)")


def test_quota_exactly_used_up_passes_and_one_more_fails():
    exact = dataclasses.replace(OFFERS, usages=(QuotaUsage("cores", None, 0, 1000),
                                                QuotaUsage("standardDDSv5Family", None, 0, 12),
                                                QuotaUsage(T4_FAMILY, None, 64, 100)))
    assert evaluate(CONFIG, exact, None, SUB).passed

    one_short = dataclasses.replace(exact, usages=(*exact.usages[:2], QuotaUsage(T4_FAMILY, None, 65, 100)))
    check = quota(evaluate(CONFIG, one_short, None, SUB), T4_FAMILY)
    assert check.verdict is Verdict.FAIL and check.detail.endswith("short by 1 vCPU in westeurope")


def test_gpu_pool_upgrade_surge_needs_quota_at_the_pools_largest_size():
    surging = dataclasses.replace(CONFIG.pools[0], upgrade=Upgrade(max_surge="50%", max_unavailable="0"))
    config = dataclasses.replace(CONFIG, pools=(surging, CONFIG.pools[1]))

    report = evaluate(config, OFFERS, None, SUB)

    # 50% of 5 nodes, rounded up: 3 extra NC4as_T4_v3 VMs while an upgrade runs.
    assert quota(report, T4_FAMILY).detail.startswith("needs 48 vCPUs at most (small 5 + 3 surge x 4; big 2 x 8)")
