"""Each GPU pool's node labels, derived from the whole stack."""

from __future__ import annotations

import dataclasses

import pytest

from gpushare.model.catalog import MigProfile
from gpushare.model.stack import MigStrategy
from gpushare.sharing.node_labels import pool_node_labels
from gpushare.sharing.operator_values import operator_plan
from tests.builders import T4, mps, pool, stack, time_slicing

A100 = "Standard_ND96asr_v4"


@pytest.mark.parametrize("strategy", list(MigStrategy), ids=[s.value for s in MigStrategy])
def test_labels_name_the_pools_configmap_key_ownership_sharing_and_mig_strategy(strategy):
    config = stack(pool("a100mig", A100, mig=MigProfile.MIG1G, sharing=time_slicing(2)),
                   pool("t4mps", T4, sharing=mps(4)) if strategy is MigStrategy.SINGLE else pool("t4", T4),
                   mig_strategy=strategy)
    keys = {c.pool: c.key for c in operator_plan(config).configs}
    mig, other = (pool_node_labels(config, p) for p in config.pools)
    assert mig == {"nvidia.com/device-plugin.config": keys["a100mig"], "gpushare.io/pool": "a100mig",
                   "gpushare.io/sharing": "time-slicing-2", "gpushare.io/mig-strategy": strategy.value}
    # Only MIG pools carry the strategy: it renames only what MIG pools advertise.
    assert "gpushare.io/mig-strategy" not in other
    assert other["nvidia.com/device-plugin.config"] == keys[config.pools[1].name]


def test_a_migstrategy_change_shows_in_the_mig_pools_labels():
    single = stack(pool("a100mig", A100, mig=MigProfile.MIG1G))
    mixed = dataclasses.replace(single, operator=dataclasses.replace(single.operator, mig_strategy=MigStrategy.MIXED))
    assert pool_node_labels(single, single.pools[0])["gpushare.io/mig-strategy"] == "single"
    assert pool_node_labels(mixed, mixed.pools[0])["gpushare.io/mig-strategy"] == "mixed"
