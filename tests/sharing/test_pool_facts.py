"""Per-pool facts: derived once per stack, and the same values every consumer used to derive on its own."""

from __future__ import annotations

import dataclasses

import pytest

from gpushare.kubernetes.tenants import pool_offers
from gpushare.model.catalog import MigProfile
from gpushare.model.stack import GPU_TAINT, MigStrategy, Tenant
from gpushare.sharing.operator_values import operator_plan, pool_tolerations, toleration
from gpushare.sharing.pool_facts import derive_pool_facts
from tests.builders import T4, pool, stack, time_slicing

A100 = pool("a100mig", "Standard_ND96asr_v4", mig=MigProfile.MIG1G)
T4_SHARED = pool("t4ts", T4, sharing=time_slicing(4))
T4_WHOLE = pool("t4", T4)


def fleet(mig_strategy: MigStrategy = MigStrategy.MIXED):
    """a100mig dedicated to team-a, t4ts listed by both teams, t4 by none."""
    return dataclasses.replace(
        stack(A100, T4_SHARED, T4_WHOLE, mig_strategy=mig_strategy),
        tenants=(Tenant("team-a", ("a100mig", "t4ts")), Tenant("team-b", ("t4ts",))),
    )


def test_each_pool_gets_its_capacity_config_labels_and_taints_in_stack_order():
    facts = derive_pool_facts(fleet())
    assert list(facts) == ["a100mig", "t4ts", "t4"]
    a100, t4ts, t4 = facts.values()
    assert (a100.capacity.resource, a100.capacity.per_node) == ("nvidia.com/mig-1g.5gb", 56)
    assert (t4ts.capacity.resource, t4ts.capacity.per_node) == ("nvidia.com/gpu.shared", 4)
    assert a100.dedicated_tenant == "team-a" and t4ts.dedicated_tenant is None and t4.dedicated_tenant is None
    assert a100.node_taints == (GPU_TAINT, "gpushare.io/tenant=team-a:NoSchedule")
    assert t4ts.node_taints == t4.node_taints == (GPU_TAINT,)
    assert a100.node_labels["gpushare.io/mig-strategy"] == "mixed" and "gpushare.io/mig-strategy" not in t4.node_labels


def test_the_config_key_the_nodes_are_labelled_with_is_a_key_of_the_configmap_with_that_config():
    config = fleet()
    data = operator_plan(config).config_map_data
    for facts in derive_pool_facts(config).values():
        assert facts.node_labels["nvidia.com/device-plugin.config"] == facts.config_key
        assert data[facts.config_key] == facts.device_config.text
        assert facts.config_key.startswith(f"{facts.pool.name}-")


def test_the_mig_strategy_of_the_stack_changes_the_facts_of_its_mig_pools():
    single, mixed = (derive_pool_facts(fleet(strategy))["a100mig"] for strategy in MigStrategy)
    assert single.capacity.resource == "nvidia.com/gpu" and mixed.capacity.resource == "nvidia.com/mig-1g.5gb"
    assert single.config_key != mixed.config_key


def test_consumers_read_the_facts():
    config = fleet()
    facts = derive_pool_facts(config)
    offers = {offer.pool: offer for offer in pool_offers(config, config.tenants[0])}
    assert offers["a100mig"].dedicated and not offers["t4ts"].dedicated
    assert offers["a100mig"].resource == facts["a100mig"].capacity.resource
    assert toleration("gpushare.io/tenant=team-a:NoSchedule") in pool_tolerations(config)


def test_derived_facts_are_read_only():
    facts = derive_pool_facts(fleet())
    with pytest.raises(TypeError):
        facts["t4"] = None  # type: ignore[index]
    with pytest.raises(TypeError):
        facts["t4"].node_labels["gpushare.io/pool"] = "other"  # type: ignore[index]
