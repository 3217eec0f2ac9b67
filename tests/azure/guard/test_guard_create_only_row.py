"""A new create-only pool setting is one row of `CREATE_ONLY_INPUTS`: with that row alone, the pool guard refuses a
change of it, the pool's `replaceOnChanges` lists it, and the cluster guard compares it on the system pool."""

from __future__ import annotations

import dataclasses

import pytest

import gpushare.azure.agent_pool_request as agent_pool
from gpushare.azure.agent_pool_request import CreateOnlyInput, shown_text
from gpushare.azure.deployed import DeployedPool
from gpushare.azure.guard.cluster import cluster_violations
from gpushare.azure.guard.create_only import pool_request
from tests.azure.guard.test_guard_network import CLUSTER_AS_WANTED
from tests.azure.guard_builders import MIG_POOL, SYSTEM_POOL, deployed_like, gpu_stack, run

# AgentPool.osType (REST 2025-09-01): both the GPU pools' request and the cluster's system pool profile send it
# (`Linux`). The deployed pools do not read it, so the row's reader stands in for an Azure that reports Windows.
OS_TYPE = CreateOnlyInput("osType", "os_type", "osType", "AKS fixes a node pool's OS type (osType) when it creates it",
                          shown_text, lambda live: shown_text("Windows"))

STACK = gpu_stack(MIG_POOL)
DEPLOYED = [SYSTEM_POOL, deployed_like(MIG_POOL)]
CLUSTER = dataclasses.replace(CLUSTER_AS_WANTED, system_pool=SYSTEM_POOL)
"""The cluster as the stack wants it, its system pool included."""


def known_by_each_reader() -> tuple[list[str], bool, list[str]]:
    """(the pool guard's violations, whether `replaceOnChanges` has osType, the cluster guard's violations)."""
    return ([v.field for v in run(STACK, DEPLOYED).violations],
            "osType" in pool_request(STACK, MIG_POOL, DEPLOYED).replace_on_changes,
            [v.field for v in cluster_violations(STACK, CLUSTER)])


def test_without_the_row_no_reader_knows_the_setting():
    assert known_by_each_reader() == ([], False, [])


def test_one_added_row_reaches_the_pool_guard_replace_on_changes_and_the_cluster_guard(monkeypatch):
    monkeypatch.setattr(agent_pool, "CREATE_ONLY_INPUTS", (*agent_pool.CREATE_ONLY_INPUTS, OS_TYPE))

    assert known_by_each_reader() == (["osType"], True, ["agentPoolProfiles[system].osType"])
    (pool_refusal,) = run(STACK, DEPLOYED).violations
    assert (pool_refusal.pool, pool_refusal.deployed, pool_refusal.wanted) == (MIG_POOL.name, "Windows", "Linux")
    assert "AKS fixes a node pool's OS type (osType) when it creates it: applying this would delete pool" in (
        pool_refusal.message)
    (cluster_refusal,) = cluster_violations(STACK, CLUSTER)
    assert (cluster_refusal.deployed, cluster_refusal.wanted) == ("Windows", "Linux")
    assert "AKS fixes a node pool's OS type (osType) when it creates it: this stack cannot be applied" in (
        cluster_refusal.message)


@pytest.mark.parametrize("entry", agent_pool.CREATE_ONLY_INPUTS, ids=lambda entry: entry.key)
def test_the_cluster_guard_compares_the_system_pool_on_exactly_the_rows_its_profile_declares(entry):
    """Every row of the table whose input the system pool profile declares is one the cluster guard compares."""
    declared = agent_pool.system_pool_inputs(STACK.cluster)
    fields = {v.field for v in cluster_violations(STACK, dataclasses.replace(
        CLUSTER, system_pool=DeployedPool(name="system", vm_size="Standard_E2s_v5", vnet_subnet_id="/x/subnets/y")))}
    assert (f"agentPoolProfiles[system].{entry.field}" in fields) == (entry.keyword in declared)
