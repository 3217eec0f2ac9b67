"""What the program sends for each input AKS fixes at creation, against the deployed pool.

The settings are `gpushare.azure.agent_pool_request.CREATE_ONLY_INPUTS`, the table `replaceOnChanges` and
`ignoreChanges` read too, each row with how its sent and deployed values compare; the values compared are the
request's own inputs (`pool_request`: the pool's subnets on an existing cluster come from its system pool, as in the
program), so a new create-only input cannot reach the program without reaching the guard. Pulumi diffs the
program's inputs against the inputs in its state, not against Azure; the deployed pool stands in for the state, since
AKS cannot have changed these since the last run set them:
- a value the request sends that differs from the deployed one replaces the pool: a violation;
- a value the request sends where the deployed pools do not report one (a saved file without `maxPods`, a Spot pool
  without `spotMaxPrice`) may replace it: the state may hold another value or none, so the guard cannot show the
  pool unchanged and refuses, saying what to read or keep (`CreateOnlyChange.reported` False);
- an OS disk or max pods the stack leaves to AKS is not sent and is in `ignoreChanges`: the stored value stands, so
  leaving out one an earlier run set replaces nothing, and AKS's own default (max pods by network plugin, an
  ephemeral or managed OS disk by VM size) is never compared;
- an input sent only when set (a Spot price, a subnet, a pod subnet) and now not sent leaves `replaceOnChanges`;
  a pool leaving Spot is refused for its `scaleSetPriority`.
Absent values AKS itself reports as absent have a meaning: no MIG profile, the driver installed (`Install`), no
zones, a Regular pool, no subnet of one's own (a VNet AKS manages). Everything else the stack sets on a pool (node
count, autoscale bounds, labels, taints, tags, the OS) AKS changes in place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import gpushare.azure.agent_pool_request as agent_pool
from gpushare.azure.agent_pool_request import AgentPoolRequest, CreateOnlyInput, Shown, agent_pool_request
from gpushare.azure.deployed import DeployedPool, system_pool
from gpushare.model.stack import GpuPool, StackConfig, pool_subnet
from gpushare.sharing.pool_facts import PoolFactsByName, given_or_derived

# The table is read through its module (`agent_pool.CREATE_ONLY_INPUTS`) each time the guard runs, so every row
# reaches the guard, one a test adds too.


def why_fixed(field: str) -> str:
    """Why AKS cannot change the create-only setting the guard shows as `field` in place."""
    return next(entry.why for entry in agent_pool.CREATE_ONLY_INPUTS if entry.field == field)


class CreateOnlyChange(NamedTuple):
    """One create-only input the program would send differently from what the deployed pool has."""

    field: str
    deployed: str
    wanted: str
    reported: bool = True
    """False: the deployed pools do not report the setting, so the guard cannot show it unchanged."""


def pool_request(stack: StackConfig, pool: GpuPool, deployed: Iterable[DeployedPool], facts: PoolFactsByName | None = None
                 ) -> AgentPoolRequest:
    """The agent pool request the program sends for `pool` (`components/deployment.py`), as far as the create-only
    inputs go: on an existing cluster a pool whose stack names no subnet takes its system pool's subnets."""
    system = system_pool(deployed) if stack.cluster.existing else None
    return agent_pool_request(
        given_or_derived(stack, facts)[pool.name], stack.operator.driver, cluster_name=stack.cluster.name,
        resource_group_name=stack.cluster.resource_group,
        subnet_id=pool_subnet(stack, pool) or (system.vnet_subnet_id if system else None),
        pod_subnet_id=system.pod_subnet_id if system else None)


def _compared(entry: CreateOnlyInput, inputs: Mapping[str, Any], live: DeployedPool) -> tuple[Shown, Shown] | None:
    """(sent, deployed) for one input, or None when it is not compared."""
    sent = inputs.get(entry.keyword)
    if sent is None and not entry.absent_compared:
        return None
    deployed = entry.deployed(live)
    return None if deployed is None else (entry.sent(sent), deployed)


def input_changes(inputs: Mapping[str, Any], live: DeployedPool) -> list[CreateOnlyChange]:
    """Every create-only input in `inputs` (an `AgentPoolRequest.inputs`) that differs from `live`, or that `live`
    does not report, in `CREATE_ONLY_INPUTS` order."""
    changes = []
    for entry in agent_pool.CREATE_ONLY_INPUTS:
        compared = _compared(entry, inputs, live)
        if compared is None:
            continue
        (wanted, wanted_text), (deployed, deployed_text) = compared
        if deployed is None:
            changes.append(CreateOnlyChange(entry.field, deployed_text, wanted_text, reported=False))
        elif deployed != wanted:
            changes.append(CreateOnlyChange(entry.field, deployed_text, wanted_text))
    return changes


def create_only_changes(stack: StackConfig, pool: GpuPool, live: DeployedPool,
                        deployed: Iterable[DeployedPool], facts: PoolFactsByName | None = None) -> list[CreateOnlyChange]:
    """The create-only inputs the program would send for `pool` that differ from deployed `live` (or that it does
    not report); `deployed` is every pool read, for an existing cluster's system pool."""
    return input_changes(pool_request(stack, pool, deployed, facts).inputs, live)


def left_to_aks(stack: StackConfig, pool: GpuPool, deployed: Iterable[DeployedPool], facts: PoolFactsByName | None = None
                ) -> tuple[str, ...]:
    """The create-only inputs (wire names) the program leaves to AKS for `pool`: not sent."""
    inputs = pool_request(stack, pool, deployed, facts).inputs
    return tuple(entry.key for entry in agent_pool.CREATE_ONLY_INPUTS
                 if entry.left_to_aks and inputs.get(entry.keyword) is None)


def settled_settings(stack: StackConfig, pool: GpuPool, live: DeployedPool,
                     deployed: Iterable[DeployedPool], facts: PoolFactsByName | None = None) -> tuple[str, ...]:
    """The inputs marked `settled` (wire names) the program sends with exactly the value the deployed pool has. The
    engine compares a resource's new inputs with those in its state, not with Azure: a pool created without `maxPods`
    (AKS's default, 250) that the stack now sets to 250 has a new input on a `replaceOnChanges` key, so Pulumi plans
    a replace (delete first) of a pool whose setting does not change. These go in the pool's `ignoreChanges`: the
    stored value stands, and Azure already has the one the stack wants (a different one is the guard's refusal)."""
    inputs = pool_request(stack, pool, deployed, facts).inputs
    settled = []
    for entry in agent_pool.CREATE_ONLY_INPUTS:
        compared = _compared(entry, inputs, live) if entry.settled else None
        if compared and inputs.get(entry.keyword) is not None and compared[1][0] == compared[0][0]:
            settled.append(entry.key)
    return tuple(settled)
