"""What the program sends for each input AKS fixes at creation, against the deployed pool.

The settings are `gpushare.azure.agent_pool_request.CREATE_ONLY_INPUTS`, the table `replaceOnChanges` and
`ignoreChanges` read too, and the values compared are the request's own inputs (`pool_request`: the pool's subnets
on an existing cluster come from its system pool, as in the program), so a new create-only input cannot reach the
program without reaching the guard. Pulumi diffs the program's inputs against the inputs in its state, not against
Azure; the deployed pool stands in for the state, since AKS cannot have changed these since the last run set them:
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

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from gpushare.azure.agent_pool_request import CREATE_ONLY_INPUTS, AgentPoolRequest, CreateOnlyInput, agent_pool_request
from gpushare.azure.deployed import DeployedPool, system_pool
from gpushare.model.stack import SPOT_MARKET_PRICE, GpuPool, StackConfig, pool_subnet
from gpushare.sharing.pool_facts import stack_pool_facts

CREATE_ONLY: dict[str, str] = {entry.field: entry.why for entry in CREATE_ONLY_INPUTS}
"""Each create-only setting the guard compares, by the name it shows, with why AKS cannot change it in place."""

Shown = tuple[object, str]
"""A setting as (comparison key, text shown to people); normalised so that equal deployments compare equal: VM
sizes and enum-like values ignore case, zones are a set. A key of None: the deployed pools do not report it."""

NONE_SUBNET = "none (a VNet AKS manages)"
"""How a pool or cluster without a subnet of its own is shown."""
NOT_REPORTED: Shown = (None, "not reported")
"""A deployed setting Azure (or the saved file) does not report."""


def _text(value: str) -> Shown:
    return value.lower(), value


def _mig(profile: str | None) -> Shown:
    return (profile.lower(), profile) if profile else ("", "none (whole GPUs)")


def _zones(zones: Iterable[str] | None) -> Shown:
    ordered = tuple(sorted(set(zones or ())))
    return ordered, json.dumps(list(ordered))


def _number(value: int | None) -> Shown:
    return NOT_REPORTED if value is None else (value, str(value))


def _price(usd: float | None) -> Shown:
    if usd is None:
        return NOT_REPORTED
    return float(usd), "-1 (up to the on-demand price)" if usd == SPOT_MARKET_PRICE else f"{usd:g} USD per node-hour"


def _subnet(subnet_id: str | None) -> Shown:
    return (subnet_id.lower(), subnet_id) if subnet_id else ("", NONE_SUBNET)


def _reported_text(value: str | None) -> Shown:
    return _text(value) if value else NOT_REPORTED


def _spot_only(read: Callable[[DeployedPool], Shown]) -> Callable[[DeployedPool], Shown | None]:
    """A Spot pool's setting; None (not compared) on a Regular pool, whose `scaleSetPriority` carries the change."""
    return lambda live: read(live) if (live.scale_set_priority or "").lower() == "spot" else None


_SENT: dict[str, Callable[[Any], Shown]] = {
    "vmSize": _text,
    "gpuInstanceProfile": _mig,
    # No gpuProfile: AKS's default, Install.
    "gpuProfile.driver": lambda profile: _text(profile["driver"] if profile else "Install"),
    "availabilityZones": _zones,
    "osDiskType": _text,
    "osDiskSizeGB": _number,
    "maxPods": _number,
    # No priority: AKS's default, Regular.
    "scaleSetPriority": lambda priority: _text(priority or "Regular"),
    "scaleSetEvictionPolicy": _text,
    "spotMaxPrice": _price,
    "vnetSubnetID": _subnet,
    "podSubnetID": _subnet,
}
"""What each sent input means, by `CreateOnlyInput.field`."""

_ABSENT_COMPARED = frozenset({"gpuInstanceProfile", "gpuProfile.driver", "availabilityZones",
                              "scaleSetPriority"})
"""The inputs whose absence from the request is itself a setting (no MIG, AKS's driver, no zones, Regular): compared
when not sent too. Every other is compared only when sent (see the module docstring)."""

_DEPLOYED: dict[str, Callable[[DeployedPool], Shown | None]] = {
    "vmSize": lambda live: _text(live.vm_size),
    "gpuInstanceProfile": lambda live: _mig(live.gpu_instance_profile),
    "gpuProfile.driver": lambda live: _text(live.gpu_driver or "Install"),
    "availabilityZones": lambda live: _zones(live.availability_zones),
    "osDiskType": lambda live: _reported_text(live.os_disk_type),
    "osDiskSizeGB": lambda live: _number(live.os_disk_size_gb),
    "maxPods": lambda live: _number(live.max_pods),
    "scaleSetPriority": lambda live: _text(live.scale_set_priority or "Regular"),
    "scaleSetEvictionPolicy": _spot_only(lambda live: _reported_text(live.scale_set_eviction_policy)),
    "spotMaxPrice": _spot_only(lambda live: _price(live.spot_max_price)),
    "vnetSubnetID": lambda live: _subnet(live.vnet_subnet_id),
    "podSubnetID": lambda live: _subnet(live.pod_subnet_id),
}
"""Each setting as the deployed pool reports it; None: not compared."""

SETTLED = ("osDiskType", "osDiskSizeGB", "maxPods", "vnetSubnetID", "podSubnetID")
"""Inputs a stack may start sending for a pool that already has that value (a disk or max pods written down, a
subnet named, an older gpushare that sent no subnet): equal to the deployed value, they are ignored (`settled`)."""


class CreateOnlyChange(NamedTuple):
    """One create-only input the program would send differently from what the deployed pool has."""

    field: str
    deployed: str
    wanted: str
    reported: bool = True
    """False: the deployed pools do not report the setting, so the guard cannot show it unchanged."""


def pool_request(stack: StackConfig, pool: GpuPool, deployed: Iterable[DeployedPool]) -> AgentPoolRequest:
    """The agent pool request the program sends for `pool` (`components/deployment.py`), as far as the create-only
    inputs go: on an existing cluster a pool whose stack names no subnet takes its system pool's subnets."""
    system = system_pool(deployed) if stack.cluster.existing else None
    return agent_pool_request(
        stack_pool_facts(stack)[pool.name], stack.operator.driver, cluster_name=stack.cluster.name,
        resource_group_name=stack.cluster.resource_group,
        subnet_id=pool_subnet(stack, pool) or (system.vnet_subnet_id if system else None),
        pod_subnet_id=system.pod_subnet_id if system else None)


def _compared(entry: CreateOnlyInput, inputs: Mapping[str, Any], live: DeployedPool) -> tuple[Shown, Shown] | None:
    """(sent, deployed) for one input, or None when it is not compared."""
    sent = inputs.get(entry.keyword)
    if sent is None and entry.field not in _ABSENT_COMPARED:
        return None
    deployed = _DEPLOYED[entry.field](live)
    return None if deployed is None else (_SENT[entry.field](sent), deployed)


def input_changes(inputs: Mapping[str, Any], live: DeployedPool) -> list[CreateOnlyChange]:
    """Every create-only input in `inputs` (an `AgentPoolRequest.inputs`) that differs from `live`, or that `live`
    does not report, in `CREATE_ONLY_INPUTS` order."""
    changes = []
    for entry in CREATE_ONLY_INPUTS:
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
                        deployed: Iterable[DeployedPool]) -> list[CreateOnlyChange]:
    """The create-only inputs the program would send for `pool` that differ from deployed `live` (or that it does
    not report); `deployed` is every pool read, for an existing cluster's system pool."""
    return input_changes(pool_request(stack, pool, deployed).inputs, live)


def left_to_aks(stack: StackConfig, pool: GpuPool, deployed: Iterable[DeployedPool]) -> tuple[str, ...]:
    """The create-only inputs (wire names) the program leaves to AKS for `pool`: not sent."""
    inputs = pool_request(stack, pool, deployed).inputs
    return tuple(entry.key for entry in CREATE_ONLY_INPUTS if entry.left_to_aks and inputs.get(entry.keyword) is None)


def settled_settings(stack: StackConfig, pool: GpuPool, live: DeployedPool,
                     deployed: Iterable[DeployedPool]) -> tuple[str, ...]:
    """The `SETTLED` inputs (wire names) the program sends with exactly the value the deployed pool has. The engine
    compares a resource's new inputs with those in its state, not with Azure: a pool created without `maxPods` (AKS's
    default, 250) that the stack now sets to 250 has a new input on a `replaceOnChanges` key, so Pulumi plans a
    replace (delete first) of a pool whose setting does not change. These go in the pool's `ignoreChanges`: the
    stored value stands, and Azure already has the one the stack wants (a different one is the guard's refusal)."""
    inputs = pool_request(stack, pool, deployed).inputs
    settled = []
    for entry in CREATE_ONLY_INPUTS:
        compared = _compared(entry, inputs, live) if entry.key in SETTLED else None
        if compared and inputs.get(entry.keyword) is not None and compared[1][0] == compared[0][0]:
            settled.append(entry.key)
    return tuple(settled)
