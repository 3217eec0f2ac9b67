"""What the guard says: each violation's message with the ways forward (blue/green, `recreate: true`, retiring a
pool, adopting an owners' pool with `pulumi import`), and the warnings about `recreate: true` and removed pools."""

from __future__ import annotations

import json

from gpushare.azure.deployed import DeployedPool
from gpushare.azure.guard.create_only import CreateOnlyChange, why_fixed
from gpushare.azure.guard.guard_report import Violation
from gpushare.model.keys import POOLS_KEY
from gpushare.model.stack import POOL_LABEL, GpuPool, StackConfig
from gpushare.sharing.autoscaling import stack_pool_tags
from gpushare.sharing.pool_facts import PoolFactsByName, given_or_derived

AKS_POOL_NODE_LABEL = "kubernetes.azure.com/agentpool"
"""The label AKS puts on every node with its pool's name: selects a pool's nodes even without gpushare's labels."""


def _where(stack: StackConfig, pool: str) -> str:
    return f"stack {stack.stack}, cluster {stack.cluster.name}, pool {pool}"


def _retire_steps(stack: StackConfig, pool: str) -> str:
    return (
        f"drain it (kubectl drain -l {AKS_POOL_NODE_LABEL}={pool} --ignore-daemonsets --delete-emptydir-data), "
        f"set `count: 0` (instead of any `autoscale`) and `recreate: true` on it in {stack.source} and apply, "
        "then remove it from the stack and apply again"
    )


def change_message(stack: StackConfig, pool: str, field: str, deployed: str, wanted: str) -> str:
    return (
        f"{_where(stack, pool)}: {field} {deployed} -> {wanted}.\n"
        f"  {why_fixed(field)}: applying this would delete pool {pool} and every pod running on it, "
        "then create it again.\n"
        "  Ways forward:\n"
        f"  - blue/green: add a pool with a new name and {field} {wanted}, move the workloads to it, "
        f"then retire {pool}: {_retire_steps(stack, pool)};\n"
        f"  - or accept the outage: set `recreate: true` on pool {pool} in {stack.source} "
        "to delete and recreate it in the next run."
    )


_STACK_KEYS = {
    "osDiskType": "`osDisk.type`", "osDiskSizeGB": "`osDisk.sizeGb`", "maxPods": "`maxPods`",
    "scaleSetEvictionPolicy": "`spot.eviction`", "spotMaxPrice": "`spot.maxPrice`",
}
"""The pool key in the stack file that sets each create-only input a deployed file can leave unreported."""


def unreported_message(stack: StackConfig, pool: str, field: str, wanted: str, source: str) -> str:
    """A create-only input the program sends that the deployed pools do not report: Pulumi compares it with the
    value in its state, which the guard cannot see, so a change there would replace the pool."""
    cluster = stack.cluster
    return (
        f"{_where(stack, pool)}: {field} not reported -> {wanted}.\n"
        f"  {why_fixed(field)}, and Pulumi replaces the pool (deletes it and every pod on it, then creates it "
        f"again) when the {field} it sends differs from the one its state holds from the last run. The deployed "
        f"pools read from {source} do not report {field}, so the guard cannot show that pool {pool} keeps it.\n"
        "  Ways forward:\n"
        f"  - compare with what Azure reports: az aks nodepool list --resource-group {cluster.resource_group} "
        f"--cluster-name {cluster.name} -o json > FILE, then `--deployed FILE` (it reports {field});\n"
        f"  - keep the pool's input as it was: if it was created without {_STACK_KEYS.get(field, field)}, remove it "
        f"from pool {pool} in {stack.source} (a pool keeps what AKS gave it), otherwise keep its old value;\n"
        f"  - to change it, add a pool with a new name and {field} {wanted}, move the workloads to it, then retire "
        f"{pool}: {_retire_steps(stack, pool)}."
    )


def import_command(stack: StackConfig, pool: str, pool_id: str) -> str:
    """The one command that adopts a deployed agent pool as stack pool `pool`: its GpuNodePool component and its
    AgentPool child under the program's names (an import file may create the component parent, Pulumi 3.94+)."""
    document = json.dumps({"resources": [
        {"type": "gpushare:pool:GpuNodePool", "name": pool, "component": True},
        {"type": "azure-native:containerservice:AgentPool", "name": f"{pool}-agentpool", "id": pool_id,
         "parent": pool},
    ]}, separators=(",", ":"))
    return f"echo '{document}' > import-{pool}.json && pulumi import --stack {stack.stack} --file import-{pool}.json"


def taken_by_unmanaged(stack: StackConfig, pool: GpuPool, live: DeployedPool, facts: PoolFactsByName | None = None) -> Violation:
    cluster = stack.cluster
    pool_id = live.id or (f"/subscriptions/<subscription id>/resourceGroups/{cluster.resource_group}/providers/"
                          f"Microsoft.ContainerService/managedClusters/{cluster.name}/agentPools/{pool.name}")
    nodes = f"{live.count} node{'s' if live.count != 1 else ''}" if live.count is not None else "node count unknown"
    message = (
        f"{_where(stack, pool.name)}: a node pool named {pool.name} already exists ({live.vm_size}, {nodes}) and "
        f"gpushare did not create it (no {POOL_LABEL} label).\n"
        "  gpushare never takes over or replaces a pool it did not create. Either:\n"
        f"  - give the stack's pool another name in {stack.source} ({POOLS_KEY}, `name`); or\n"
        f"  - adopt it, if it is meant to be this pool: {import_command(stack, pool.name, pool_id)}; then mark it "
        f"gpushare's: az aks nodepool update -g {cluster.resource_group} --cluster-name {cluster.name} -n {pool.name} "
        f"--labels {POOL_LABEL}={pool.name} (note: --labels replaces the pool's labels). The next preview then "
        "compares its create-only settings (vmSize, mig, zones, driver, subnet) like any gpushare pool."
        + _adoption_replaces(stack, pool, live, facts)
    )
    return Violation(pool.name, "pool", f"exists, not gpushare's ({nodes})", "a gpushare pool of that name", message)


def _adoption_replaces(stack: StackConfig, pool: GpuPool, live: DeployedPool, facts: PoolFactsByName | None) -> str:
    """What the first `up` after an adoption sets over the owners' settings: AKS updates a pool's labels, taints, tags,
    scaling and OS in place, and gpushare sends each whole (a label or taint list replaces the pool's; an agent
    pool's `tags` replace its tags), so whatever the stack does not list goes. Empty when nothing differs."""
    by_pool = given_or_derived(stack, facts)
    pool_facts = by_pool[pool.name]
    lines = []
    labels = dict(pool_facts.node_labels)
    if dropped := [f"{k}={v}" for k, v in live.node_labels.items() if k not in labels]:
        lines.append(f"labels: removes {', '.join(dropped)} (list them in the pool's `labels` to keep them)")
    if changed := [f"{k} {live.node_labels[k]} -> {v}" for k, v in labels.items()
                   if k in live.node_labels and live.node_labels[k] != v]:
        lines.append(f"labels: changes {', '.join(changed)}")
    if dropped := [t for t in live.node_taints if t not in pool_facts.node_taints]:
        lines.append(f"taints: removes {', '.join(dropped)} (list them in the pool's `taints` to keep them)")
    if added := [t for t in pool_facts.node_taints if t not in live.node_taints]:
        lines.append(f"taints: adds {', '.join(added)}")
    tags = stack_pool_tags(stack, by_pool)[pool.name]
    if dropped := [f"{k}={v}" for k, v in live.tags.items() if k not in tags]:
        lines.append(f"tags: removes {', '.join(dropped)} (list them in the pool's `tags` to keep them)")
    if changed := [f"{k} {live.tags[k]} -> {v}" for k, v in tags.items() if k in live.tags and live.tags[k] != v]:
        lines.append(f"tags: changes {', '.join(changed)}")
    scaling = (f"autoscale {pool.autoscale.min}-{pool.autoscale.max}" if pool.autoscale else f"count {pool.count}")
    deployed = (f"autoscale {live.min_count}-{live.max_count}" if live.enable_auto_scaling else f"count {live.count}")
    if scaling != deployed:
        lines.append(f"scaling: {deployed} -> {scaling}")
    if live.os_sku and live.os_sku.lower() != pool.os_sku.value.lower():
        lines.append(f"osSku: {live.os_sku} -> {pool.os_sku.value} (AKS reimages every node of the pool)")
    if not lines:
        return ""
    return ("\n  The first `up` after adopting it sets the stack's settings over the pool's own:\n"
            + "\n".join(f"    - {line}" for line in lines))


def removal_violation(stack: StackConfig, live: DeployedPool) -> Violation:
    nodes = f"{live.count} node{'s' if live.count != 1 else ''}" if live.count is not None else "node count unknown"
    message = (
        f"{_where(stack, live.name)}: the pool is deployed ({live.vm_size}, {nodes}) and managed by gpushare "
        f"(label {POOL_LABEL}), but the stack no longer lists it.\n"
        f"  Applying this would delete pool {live.name} and every pod running on it. If you renamed it: AKS cannot "
        "rename a pool, the new name is a new pool; keep the old one in the stack until its workloads have moved.\n"
        "  To remove it deliberately, keep it in the stack one more run and retire it: "
        f"{_retire_steps(stack, live.name)}."
    )
    return Violation(live.name, "pool", f"deployed, {nodes}", "removed from the stack", message)


def recreate_warning(stack: StackConfig, pool: str, changes: list[CreateOnlyChange],
                     left_to_aks: tuple[str, ...] = ()) -> str:
    """`left_to_aks`: the create-only inputs the stack leaves to AKS, which `recreate: true` does not keep."""
    if not changes:
        unless = (f" (unless an earlier run set {' or '.join(left_to_aks)}, which the stack now leaves to AKS: under "
                  "`recreate: true` the stored value is not kept, and the pool is recreated with AKS's default)"
                  if left_to_aks else "")
        return (
            f"{_where(stack, pool)}: `recreate: true` is set but no create-only setting changes, so nothing is "
            f"recreated{unless}; the pool's protection is still lifted for this run. Remove the flag unless you are "
            "retiring the pool."
        )
    what = "; ".join(f"{change.field} {change.deployed} -> {change.wanted}" for change in changes)
    return (
        f"will delete and recreate pool {pool} ({_where(stack, pool)}): {what}. Every pod running on it is deleted "
        "(`recreate: true`); remove the flag once the pool has been recreated."
    )


def new_pool_recreate_warning(stack: StackConfig, pool: str) -> str:
    return (
        f"{_where(stack, pool)}: `recreate: true` is set on a pool that is not deployed yet: it is created without "
        "protection, so a later edit or removal could delete it; remove the flag."
    )


def empty_removal_warning(stack: StackConfig, pool: str) -> str:
    return (
        f"{_where(stack, pool)}: the pool has no nodes and the stack no longer lists it. Pulumi deletes it only if "
        "an earlier run applied `recreate: true` on it (which lifted its protection in the state); otherwise this run "
        f"stops with Pulumi's 'marked for protection' error and nothing is deleted: put the pool back in "
        f"{stack.source} with `count: 0` and `recreate: true`, apply, then remove it and apply again."
    )


def offline_warnings(stack: StackConfig) -> list[str]:
    """What `plan` without deployed pools says about `recreate: true`: it cannot tell what would be recreated, only
    that the flag lifts the pool's protection for the next run."""
    return [
        f"{_where(stack, pool.name)}: `recreate: true` lifts the pool's protection for the next run: if a "
        "create-only setting (vmSize, mig, zones, the driver, the OS disk, maxPods, Spot) differs from the deployed "
        "pool, that run deletes the "
        "pool and every pod on it, then creates it again. This offline plan did not compare with the deployed pools "
        "(`--deployed FILE` does); remove the flag once the pool has been recreated."
        for pool in stack.pools if pool.recreate
    ]


DRA_MIGRATION = 'docs/dra-pools.md "Moving a pool from the device plugin to DRA"'


def allocation_effect(deployed: str, wanted: str) -> str:
    """What changing a live pool's allocation does, in the direction asked."""
    if wanted == "dra":
        return ("AKS relabels its nodes in place: the GPU Operator's device plugin leaves them, so the "
                "nvidia.com/gpu (or MIG/shared) resource its running pods were given vanishes from the nodes' "
                "allocatable, every pod asking for it stays Pending there, and its workloads must name a "
                "ResourceClaim (the tenant's ResourceClaimTemplate) instead")
    return ("AKS relabels its nodes in place: the device plugin comes back and the DRA driver's kubelet plugin "
            "leaves them, so claims allocated on the pool's devices cannot be prepared again, and its workloads must "
            "ask for the device plugin's resource instead of a ResourceClaim")


def allocation_message(stack: StackConfig, pool: str, deployed: str, wanted: str) -> str:
    return (
        f"{_where(stack, pool)}: allocation {deployed} -> {wanted}.\n"
        f"  {allocation_effect(deployed, wanted)}.\n"
        "  Ways forward:\n"
        f"  - migrate ({DRA_MIGRATION}): add a pool with a new name and allocation {wanted}, move the workloads to "
        f"it, then retire {pool}: {_retire_steps(stack, pool)};\n"
        f"  - or accept the disruption: set `recreate: true` on pool {pool} in {stack.source}, and the next run "
        "relabels it in place."
    )


def allocation_warning(stack: StackConfig, pool: str, deployed: str, wanted: str) -> str:
    return (f"{_where(stack, pool)}: allocation {deployed} -> {wanted}, accepted by `recreate: true`: "
            f"{allocation_effect(deployed, wanted)}; change the workloads with it ({DRA_MIGRATION})")
