"""The guard: stop a stack edit that would delete a live GPU pool, and say why and what to do instead.

AKS fixes some node-pool settings when it creates the pool. pulumi-azure-native plans a change to them as a
replace, and its replaces are delete-before-create: the pool and every pod on it go first. `protect=True` turns
that into a terse engine error; the guard compares the stack with the deployed pools first and explains.

Create-only settings compared (`CREATE_ONLY`), by the ARM property path Pulumi's diff shows:
- `vmSize`, `gpuInstanceProfile`: in pulumi-azure-native's force-new list, so a change is a delete-and-recreate;
- `gpuProfile.driver`: AKS fixes it at creation; Pulumi may not mark it force-new, and then AKS rejects the update;
- `availabilityZones`: AKS docs: "You can't change the number of availability zones after you create a node pool".
- `osDiskType`, `osDiskSizeGB`, `maxPods`: fixed at creation ("May not be changed after creation", the API's
  `osDiskType`; aks-docs create-node-pools.md for max pods); compared only when the stack sets them.
- `scaleSetPriority`, `scaleSetEvictionPolicy`, `spotMaxPrice`: a pool is Spot or Regular from its creation, and
  "You can't change ScaleSetPriority or SpotMaxPrice after creation" (aks-docs spot-node-pool.md; Azure/AKS#4374
  asks for it); the eviction policy and the price are compared for Spot pools only.
- `vnetSubnetID`: the subnet AKS joined the pool's nodes to (REST 2025-09-01 `AgentPool.vnetSubnetID`); AKS cannot
  move a pool to another subnet. Compared only when the stack names the pool's subnet (its `subnetId` or the
  cluster's `network.subnetId`): a pool that names none takes whatever subnet AKS gives it.
Everything else the stack sets on a pool (node count, autoscale bounds, labels, taints) AKS changes in place.

Changes AKS makes in place that still disturb running pods are reported, never refused:
- `osSKU` (notes): AKS migrates a pool between Ubuntu and AzureLinux in place (`az aks nodepool update --os-sku`) by
  reimaging every node of the pool, one after another; the pool, its name and its settings stay. The one-OS-per-
  cluster rule (`gpushare.stackfile.config`) makes every GPU pool move together.
- sharing (notes): time-slicing/MPS replicas change in place but restart the device plugin; read from the
  `gpushare.io/sharing` node label (`SHARING_LABEL`) when the deployed pool carries it.
- `operator.migStrategy` (a warning): it renames the resource every MIG pool advertises (`nvidia.com/gpu` <->
  `nvidia.com/mig-<slice>`), so pod specs asking for the old name stop scheduling there; read from the
  `gpushare.io/mig-strategy` node label (`MIG_STRATEGY_LABEL`) of deployed MIG pools.

Pools are matched by name (the AKS agent pool name is `GpuPool.name`). A deployed pool with the
`gpushare.io/pool` label that the stack no longer lists would be deleted: a violation, unless it has no nodes left
(node count 0, never an unknown count). Even then Pulumi deletes it only if an earlier run applied `recreate: true`
on it, which lifted its protection; the guard says so in a warning. Pools without that label and not in the stack
(the system pool, pools made by hand, an existing cluster's own pools) are not gpushare's: ignored. On an existing
cluster (`existing: true`) a stack pool whose name is taken by such a pool is refused (`_taken_by_unmanaged`): Pulumi
would try to create a pool that exists there, or replace its owners' pool; the message gives the choice: another
name, or adopt it (`pulumi import` with the exact command, then the label). On a cluster gpushare created, a
same-named pool without the label is one deployed before gpushare labelled its pools, and is compared as its own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gpushare.azure.arm import AzureReads
from gpushare.azure.deployed import DeployedFileError, DeployedPool, live_source, read_file, read_live
from gpushare.azure.deployed_cluster import DeployedCluster
from gpushare.errors import AzureReadError, GuardViolationError
from gpushare.model.environment_variables import DEPLOYED_FILE_ENV, OFFLINE_ENV
from gpushare.model.keys import POOLS_KEY
from gpushare.model.stack import (
    MIG_STRATEGY_LABEL,
    POOL_LABEL,
    SHARING_LABEL,
    SPOT_MARKET_PRICE,
    DriverOwner,
    GpuPool,
    GuardMode,
    MigStrategy,
    StackConfig,
    pool_subnet,
    sharing_label,
)
from gpushare.sharing.autoscaling import stack_pool_tags
from gpushare.sharing.capacity import pool_capacity
from gpushare.sharing.pool_facts import stack_pool_facts

AKS_POOL_NODE_LABEL = "kubernetes.azure.com/agentpool"
"""The label AKS puts on every node with its pool's name: selects a pool's nodes even without gpushare's labels."""

CREATE_ONLY: dict[str, str] = {
    "vmSize": "AKS cannot change the VM size of an existing node pool",
    "gpuInstanceProfile": "AKS cannot change the MIG profile (gpuInstanceProfile) of an existing node pool",
    "gpuProfile.driver": "AKS fixes the GPU driver setting (gpuProfile.driver) when it creates a node pool",
    "availabilityZones": "AKS cannot change the availability zones of an existing node pool",
    "osDiskType": "AKS fixes the OS disk type (osDiskType) when it creates a node pool",
    "osDiskSizeGB": "AKS fixes the OS disk size (osDiskSizeGB) when it creates a node pool",
    "maxPods": "AKS fixes the maximum pods per node (maxPods) when it creates a node pool",
    "scaleSetPriority": "AKS cannot turn an existing node pool into a Spot pool or back (scaleSetPriority)",
    "scaleSetEvictionPolicy": "AKS fixes a Spot pool's eviction policy (scaleSetEvictionPolicy) when it creates it",
    "spotMaxPrice": "AKS fixes a Spot pool's maximum price (spotMaxPrice) when it creates it",
    "vnetSubnetID": "AKS cannot move an existing node pool to another subnet (vnetSubnetID)",
}
"""Each create-only setting, by ARM property path, with why AKS cannot apply a change to it in place."""


@dataclass(frozen=True)
class Violation:
    """One create-only setting (or a whole pool, `field == "pool"`) the stack would change on a live pool."""

    pool: str
    field: str
    deployed: str
    wanted: str
    message: str


@dataclass(frozen=True)
class GuardReport:
    source: str
    """Where the deployed pools came from: `azure:/subscriptions/.../managedClusters/<name>` or a file path."""
    violations: tuple[Violation, ...] = ()
    notes: tuple[str, ...] = ()
    """Changes AKS makes in place that still disturb running pods (sharing), and other facts worth reading."""
    warnings: tuple[str, ...] = ()
    """Accepted recreates (`recreate: true`), removed empty pools, a migStrategy change that renames MIG pools'
    resources, and Azure being unreadable under `gpushare:guard: warn`."""
    deployed: tuple[DeployedPool, ...] | None = field(default=None, compare=False)
    """The agent pools the guard compared against (its one read, shared with the program and preflight); None when
    the cluster does not exist yet or Azure could not be read. Input, not a finding: reports compare without it."""
    recreated: tuple[str, ...] = ()
    """Deployed pools this run deletes and recreates (`recreate: true` and a create-only setting changes)."""
    unprotected: tuple[str, ...] = ()
    """Pools whose protection `recreate: true` lifts for this run, recreated or not."""
    removed: tuple[str, ...] = ()
    """Empty gpushare pools the stack no longer lists: deleted if an earlier run lifted their protection."""
    compared: bool = True
    """False when nothing was compared (Azure unreadable under `gpushare:guard: warn`)."""
    cluster: DeployedCluster | None = field(default=None, compare=False)
    """The managed cluster as the cluster guard read it (None: not read, or not there yet): preflight's baseline
    findings for an existing cluster come from it. Input, like `deployed`."""

    @property
    def headline(self) -> str:
        """One line that agrees with the findings: what this run deletes, or that it deletes no GPU pool."""
        if not self.compared:
            return "not compared: the deployed pools could not be read; only pool protection stops a replace"
        parts = []
        if self.violations:
            count = len(self.violations)
            parts.append(f"{count} change{'s' if count != 1 else ''} would delete running GPU pools")
        if self.recreated:
            parts.append(f"deletes and recreates {_pools(self.recreated)} (`recreate: true`)")
        if self.removed:
            parts.append(f"deletes empty {_pools(self.removed)} only if an earlier run applied `recreate: true` "
                         "on it, otherwise Pulumi stops on its protection")
        if not parts:
            parts.append("no change deletes a GPU pool")
        kept = [name for name in self.unprotected if name not in self.recreated]
        if kept:
            parts.append(f"protection lifted on {_pools(kept)} (`recreate: true`)")
        return "; ".join(parts)

    def settled(self, stack: StackConfig, pool: GpuPool) -> tuple[str, ...]:
        """The create-only settings (wire names) the stack sends only optionally and here sets to exactly what the
        deployed pool already has (see `settled_settings`); empty when the pool is not deployed or Azure unread."""
        live = next((p for p in self.deployed or () if p.name == pool.name), None)
        return settled_settings(stack, pool, live) if live else ()

    def live_count(self, pool: str) -> int | None:
        """The deployed node count of `pool`; None when unknown (not deployed, cluster absent, Azure unread)."""
        return next((p.count for p in self.deployed or () if p.name == pool), None)

    def to_json(self) -> dict:
        return {
            "source": self.source,
            "headline": self.headline,
            "violations": [asdict(v) for v in self.violations],
            "notes": list(self.notes),
            "warnings": list(self.warnings),
        }


def _pools(names: Iterable[str]) -> str:
    names = list(names)
    return f"pool{'s' if len(names) != 1 else ''} {', '.join(names)}"


def evaluate(stack: StackConfig, deployed: Iterable[DeployedPool] | None, source: str) -> GuardReport:
    """Compare what the stack wants with the deployed pools (None: the cluster does not exist yet)."""
    if deployed is None:
        return GuardReport(
            source, notes=(f"cluster {stack.cluster.name} does not exist yet: first deployment, nothing to guard",)
        )
    deployed = tuple(deployed)
    by_name = {pool.name: pool for pool in deployed}
    violations: list[Violation] = []
    notes: list[str] = []
    warnings: list[str] = []
    recreated: list[str] = []
    for pool in stack.pools:
        live = by_name.get(pool.name)
        if live is None:
            if pool.recreate:
                warnings.append(_new_pool_recreate_warning(stack, pool.name))
            continue  # a new pool: creating it deletes nothing
        if stack.cluster.existing and POOL_LABEL not in live.node_labels:
            violations.append(_taken_by_unmanaged(stack, pool, live))
            continue
        changes = _create_only_changes(stack, pool, live)
        if pool.recreate:
            warnings.append(_recreate_warning(stack, pool.name, changes))
            if changes:
                recreated.append(pool.name)
        else:
            violations += [
                Violation(pool.name, field, was, wants, _change_message(stack, pool.name, field, was, wants))
                for field, was, wants in changes
            ]
        notes += [note for note in (_os_sku_note(pool, live), _sharing_note(pool, live)) if note]
    renames = _mig_strategy_warning(stack, by_name)
    if renames:
        warnings.append(renames)
    wanted = {pool.name for pool in stack.pools}
    removed: list[str] = []
    for live in sorted(deployed, key=lambda p: p.name):
        if POOL_LABEL not in live.node_labels or live.name in wanted:
            continue
        # Only a count Azure reported as 0 is empty: an unknown count (null) may hide running nodes.
        if live.count == 0:
            warnings.append(_empty_removal_warning(stack, live.name))
            removed.append(live.name)
        else:
            violations.append(_removal(stack, live))
    return GuardReport(
        source, tuple(violations), tuple(notes), tuple(warnings), tuple(deployed), recreated=tuple(recreated),
        unprotected=tuple(pool.name for pool in stack.pools if pool.recreate), removed=tuple(removed),
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


def raise_or_warn_on_read_error(stack: StackConfig, err: AzureReadError, warn_does: str, warning: str) -> str:
    """`gpushare:guard`'s rule for Azure that cannot be read, the same for the pool guard, the cluster guard and
    preflight: `strict` raises `err`, saying what `warn` would do instead (`warn_does`); `warn` returns the warning
    to carry on with, `err` followed by `warning`."""
    if stack.guard is GuardMode.STRICT:
        raise AzureReadError(f"{err}. (gpushare:guard is strict; `gpushare:guard: warn` {warn_does}.)") from None
    return f"{err}. {warning}"


def check_live(stack: StackConfig, subscription_id: str, **read_kwargs: object) -> GuardReport:
    """Read the stack's cluster from Azure (one list call) and evaluate; for the Pulumi program, before GPU pools.

    When Azure cannot be read, `gpushare:guard: strict` raises the `AzureReadError` (saying what failed, the fix,
    and that `warn` exists); `warn` carries on with a warning: the pools' `protect` still stops a replace, only
    with Pulumi's terse error instead of this guard's.
    `read_kwargs` go to `read_live` (credential, base_url, SDK client settings).
    """
    cluster = stack.cluster
    source = live_source(subscription_id, cluster.resource_group, cluster.name)
    try:
        deployed = read_live(subscription_id, cluster.resource_group, cluster.name, **read_kwargs)
    except AzureReadError as err:
        warning = raise_or_warn_on_read_error(
            stack, err, "deploys on pool protection alone",
            "Continuing because gpushare:guard is warn, relying on pool protection: a change AKS cannot make in "
            "place will fail with Pulumi's 'marked for protection' error instead",
        )
        return GuardReport(source, compared=False, warnings=(warning,))
    return evaluate(stack, deployed, source)


def check_file(stack: StackConfig, path: str | Path) -> GuardReport:
    """Evaluate against a saved `az aks nodepool list -o json` (for `plan --deployed FILE`; needs no credentials).

    Raises `DeployedFileError` (exit 2) when the file's pools say they belong to another cluster or resource group
    than the stack's: comparing them would pass or refuse edits on the strength of the wrong cluster."""
    deployed = read_file(path)
    _check_origin(stack, deployed, path)
    return evaluate(stack, deployed, str(path))


_ARM_CLUSTER_ID = re.compile(
    r"/resourcegroups/(?P<group>[^/]+)/providers/microsoft\.containerservice/managedclusters/(?P<cluster>[^/]+)",
    re.IGNORECASE,
)


def _check_origin(stack: StackConfig, deployed: list[DeployedPool], path: str | Path) -> None:
    """Refuse a file saved from another cluster. Pools without `id` or `resourceGroup` (written by hand) pass."""
    cluster = stack.cluster
    for pool in deployed:
        found = _ARM_CLUSTER_ID.search(pool.id or "")
        group = found["group"] if found else pool.resource_group
        name = found["cluster"] if found else None
        # ARM names of resource groups and clusters are case-insensitive; `az` lowercases `resourcegroups`.
        other_group = group is not None and group.lower() != cluster.resource_group.lower()
        other_cluster = name is not None and name.lower() != cluster.name.lower()
        if other_group or other_cluster:
            where = f"AKS cluster {name}" if name else "an AKS cluster"
            where += f" in resource group {group}" if group else ""
            raise DeployedFileError(
                f"{path}: node pool {pool.name} is from {where} (its `{'id' if found else 'resourceGroup'}`), but "
                f"stack {stack.stack} deploys cluster {cluster.name} in resource group {cluster.resource_group}; "
                f"the guard would compare the stack with the wrong cluster. Save this stack's pools: az aks nodepool "
                f"list --resource-group {cluster.resource_group} --cluster-name {cluster.name} -o json > FILE"
            )


def check_for_program(stack: StackConfig, environ: Mapping[str, str],
                      azure: Callable[[], AzureReads]) -> GuardReport | None:
    """The guard as the Pulumi program runs it: live from Azure under `pulumi preview`/`up`, against a file or
    not at all when `plan` renders offline (see DEPLOYED_FILE_ENV, OFFLINE_ENV). `azure` is called only for a
    live read."""
    if environ.get(DEPLOYED_FILE_ENV):
        return check_file(stack, environ[DEPLOYED_FILE_ENV])
    if environ.get(OFFLINE_ENV):
        return None
    reads = azure()
    return check_live(stack, reads.target.subscription_id, **reads.read_kwargs())


def raise_for_violations(report: GuardReport) -> None:
    """Raise one `GuardViolationError` listing every violation, if there is any."""
    if not report.violations:
        return
    count = len(report.violations)
    lines = [
        f"{count} change{'s' if count != 1 else ''} would delete running GPU pools "
        f"(deployed pools read from {report.source}):"
    ]
    for violation in report.violations:
        lines += ["", violation.message]
    raise GuardViolationError("\n".join(lines))


# Each setting as (comparison key, text shown to people). Normalised so that equal deployments compare equal:
# VM sizes and enum-like values ignore case, an unset driver is AKS's default Install, and zones are a set (null
# and [] both mean no zones).


def _text(value: str) -> tuple[str, str]:
    return value.lower(), value


def _mig(profile: str | None) -> tuple[str, str]:
    return (profile.lower(), profile) if profile else ("", "none (whole GPUs)")


def _zones(zones: Iterable[str]) -> tuple[tuple[str, ...], str]:
    ordered = tuple(sorted(set(zones)))
    return ordered, json.dumps(list(ordered))


def _number(value: int | None) -> tuple[object, str]:
    return value, "AKS's default" if value is None else str(value)


def _price(usd: float) -> tuple[float, str]:
    return usd, "-1 (up to the on-demand price)" if usd == SPOT_MARKET_PRICE else f"{usd:g} USD per node-hour"


NONE_SUBNET = "none (a VNet AKS manages)"
"""How a pool or cluster without a subnet of its own is shown."""
NOT_REPORTED = (None, "not reported")
"""A deployed setting Azure does not report: never compared (the cluster guard too)."""


def _subnet(subnet_id: str | None) -> tuple[str, str]:
    return (subnet_id.lower(), subnet_id) if subnet_id else ("", NONE_SUBNET)


def _wanted_settings(stack: StackConfig, pool: GpuPool) -> dict[str, tuple[object, str]]:
    """What the stack wants; a setting the stack leaves to AKS is absent (nothing to compare)."""
    wanted = {
        "vmSize": _text(pool.vm_size.name),
        "gpuInstanceProfile": _mig(pool.mig.value if pool.mig else None),
        "gpuProfile.driver": _text("None" if stack.operator.driver is DriverOwner.OPERATOR else "Install"),
        "availabilityZones": _zones(pool.zones),
        "scaleSetPriority": _text("Spot" if pool.spot else "Regular"),
    }
    if pool.os_disk.type is not None:
        wanted["osDiskType"] = _text(pool.os_disk.type.value)
    if pool.os_disk.size_gb is not None:
        wanted["osDiskSizeGB"] = _number(pool.os_disk.size_gb)
    if pool.max_pods is not None:
        wanted["maxPods"] = _number(pool.max_pods)
    if pool.spot:
        wanted["scaleSetEvictionPolicy"] = _text(pool.spot.eviction.value)
        wanted["spotMaxPrice"] = _price(pool.spot.max_price)
    if pool_subnet(stack, pool):
        wanted["vnetSubnetID"] = _subnet(pool_subnet(stack, pool))
    return wanted


def _deployed_settings(live: DeployedPool) -> dict[str, tuple[object, str]]:
    return {
        "vmSize": _text(live.vm_size),
        "gpuInstanceProfile": _mig(live.gpu_instance_profile),
        "gpuProfile.driver": _text(live.gpu_driver or "Install"),
        "availabilityZones": _zones(live.availability_zones),
        "osDiskType": _text(live.os_disk_type) if live.os_disk_type else (None, "AKS's default"),
        "osDiskSizeGB": _number(live.os_disk_size_gb),
        "maxPods": _number(live.max_pods),
        "scaleSetPriority": _text(live.scale_set_priority or "Regular"),
        "scaleSetEvictionPolicy": _text(live.scale_set_eviction_policy or "Delete"),
        "spotMaxPrice": _price(live.spot_max_price) if live.spot_max_price is not None else NOT_REPORTED,
        "vnetSubnetID": _subnet(live.vnet_subnet_id),
    }


OPTIONAL_CREATE_ONLY = ("osDiskType", "osDiskSizeGB", "maxPods", "vnetSubnetID")
"""Create-only settings gpushare sends only when the stack sets them (AKS's own default otherwise)."""


def settled_settings(stack: StackConfig, pool: GpuPool, live: DeployedPool) -> tuple[str, ...]:
    """The optional create-only settings the stack sets to what the deployed pool already has. The engine compares
    a resource's new inputs with those in its state, not with Azure: a pool created without `maxPods` (AKS's
    default, 250) that the stack now sets to 250 has a new input on a `replaceOnChanges` key, so Pulumi plans a
    replace (delete first) of a pool whose setting does not change. These go in the pool's `ignoreChanges`: the
    stored value stands, and Azure already has the one the stack wants (a different one is the guard's refusal)."""
    wanted, deployed = _wanted_settings(stack, pool), _deployed_settings(live)
    return tuple(field for field in OPTIONAL_CREATE_ONLY
                 if field in wanted and deployed.get(field, (None,))[0] is not None
                 and deployed[field][0] == wanted[field][0])


def _create_only_changes(stack: StackConfig, pool: GpuPool, live: DeployedPool) -> list[tuple[str, str, str]]:
    """(field, deployed, wanted) for every create-only setting that differs, in `CREATE_ONLY` order. A setting
    the stack leaves unset (an OS disk, max pods, a pool's subnet), or Azure does not report, is not compared."""
    wanted, deployed = _wanted_settings(stack, pool), _deployed_settings(live)
    return [
        (field, deployed[field][1], wanted[field][1])
        for field in CREATE_ONLY
        if field in wanted and deployed[field][0] is not None and deployed[field][0] != wanted[field][0]
    ]


def _where(stack: StackConfig, pool: str) -> str:
    return f"stack {stack.stack}, cluster {stack.cluster.name}, pool {pool}"


def _retire_steps(stack: StackConfig, pool: str) -> str:
    return (
        f"drain it (kubectl drain -l {AKS_POOL_NODE_LABEL}={pool} --ignore-daemonsets --delete-emptydir-data), "
        f"set `count: 0` (instead of any `autoscale`) and `recreate: true` on it in {stack.source} and apply, "
        "then remove it from the stack and apply again"
    )


def _change_message(stack: StackConfig, pool: str, field: str, deployed: str, wanted: str) -> str:
    return (
        f"{_where(stack, pool)}: {field} {deployed} -> {wanted}.\n"
        f"  {CREATE_ONLY[field]}: applying this would delete pool {pool} and every pod running on it, "
        "then create it again.\n"
        "  Ways forward:\n"
        f"  - blue/green: add a pool with a new name and {field} {wanted}, move the workloads to it, "
        f"then retire {pool}: {_retire_steps(stack, pool)};\n"
        f"  - or accept the outage: set `recreate: true` on pool {pool} in {stack.source} "
        "to delete and recreate it in the next run."
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


def _taken_by_unmanaged(stack: StackConfig, pool: GpuPool, live: DeployedPool) -> Violation:
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
        + _adoption_replaces(stack, pool, live)
    )
    return Violation(pool.name, "pool", f"exists, not gpushare's ({nodes})", "a gpushare pool of that name", message)


def _adoption_replaces(stack: StackConfig, pool: GpuPool, live: DeployedPool) -> str:
    """What the first `up` after an adoption sets over the owners' settings: AKS updates a pool's labels, taints, tags,
    scaling and OS in place, and gpushare sends each whole (a label or taint list replaces the pool's; an agent
    pool's `tags` replace its tags), so whatever the stack does not list goes. Empty when nothing differs."""
    facts = stack_pool_facts(stack)[pool.name]
    lines = []
    labels = dict(facts.node_labels)
    if dropped := [f"{k}={v}" for k, v in live.node_labels.items() if k not in labels]:
        lines.append(f"labels: removes {', '.join(dropped)} (list them in the pool's `labels` to keep them)")
    if changed := [f"{k} {live.node_labels[k]} -> {v}" for k, v in labels.items()
                   if k in live.node_labels and live.node_labels[k] != v]:
        lines.append(f"labels: changes {', '.join(changed)}")
    if dropped := [t for t in live.node_taints if t not in facts.node_taints]:
        lines.append(f"taints: removes {', '.join(dropped)} (list them in the pool's `taints` to keep them)")
    if added := [t for t in facts.node_taints if t not in live.node_taints]:
        lines.append(f"taints: adds {', '.join(added)}")
    tags = stack_pool_tags(stack)[pool.name]
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


def _removal(stack: StackConfig, live: DeployedPool) -> Violation:
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


def _recreate_warning(stack: StackConfig, pool: str, changes: list[tuple[str, str, str]]) -> str:
    if not changes:
        return (
            f"{_where(stack, pool)}: `recreate: true` is set but no create-only setting changes, so nothing is "
            "recreated; the pool's protection is still lifted for this run. Remove the flag unless you are retiring "
            "the pool."
        )
    what = "; ".join(f"{field} {deployed} -> {wanted}" for field, deployed, wanted in changes)
    return (
        f"will delete and recreate pool {pool} ({_where(stack, pool)}): {what}. Every pod running on it is deleted "
        "(`recreate: true`); remove the flag once the pool has been recreated."
    )


def _new_pool_recreate_warning(stack: StackConfig, pool: str) -> str:
    return (
        f"{_where(stack, pool)}: `recreate: true` is set on a pool that is not deployed yet: it is created without "
        "protection, so a later edit or removal could delete it; remove the flag."
    )


def _empty_removal_warning(stack: StackConfig, pool: str) -> str:
    return (
        f"{_where(stack, pool)}: the pool has no nodes and the stack no longer lists it. Pulumi deletes it only if "
        "an earlier run applied `recreate: true` on it (which lifted its protection in the state); otherwise this run "
        f"stops with Pulumi's 'marked for protection' error and nothing is deleted: put the pool back in "
        f"{stack.source} with `count: 0` and `recreate: true`, apply, then remove it and apply again."
    )


def _os_sku_note(pool: GpuPool, live: DeployedPool) -> str | None:
    deployed = live.os_sku or "Ubuntu"  # AKS's Linux default when Azure reports none
    if deployed.lower() == pool.os_sku.value.lower():
        return None
    return (
        f"pool {pool.name}: osSKU {deployed} -> {pool.os_sku.value}. AKS migrates the OS in place (as `az aks "
        "nodepool update --os-sku` does): it reimages every node of the pool, one after another, so each node is "
        "drained and its pods restart; the pool and its name stay. Every GPU pool changes OS together (the GPU "
        "Operator supports one OS per cluster)."
    )


def _mig_strategy_warning(stack: StackConfig, by_name: Mapping[str, DeployedPool]) -> str | None:
    """The MIG pools whose advertised resource changes because `operator.migStrategy` changed since they were
    deployed (their `MIG_STRATEGY_LABEL`). A pool without the label, or with a value gpushare does not know,
    cannot be compared: nothing is said about it."""
    wanted = stack.operator.mig_strategy
    renames = []
    for pool in stack.pools:
        live = by_name.get(pool.name)
        label = live.node_labels.get(MIG_STRATEGY_LABEL) if live else None
        if pool.mig is None or label is None or label == wanted.value:
            continue
        try:
            deployed = MigStrategy(label)
        except ValueError:
            continue
        old, new = pool_capacity(pool, deployed).resource, pool_capacity(pool, wanted).resource
        renames.append(f"{pool.name} {old} -> {new} (deployed with {deployed.value})")
    if not renames:
        return None
    return (
        f"stack {stack.stack}, cluster {stack.cluster.name}: gpushare:operator.migStrategy is {wanted.value}, which "
        f"renames the resource these MIG pools advertise: {'; '.join(renames)}. The device plugin switches in place "
        "and running pods keep their devices, but every pod created or restarted with the old resource name stays "
        "Pending: change the workloads' resource requests to the new names together with this change."
    )


def _sharing_note(pool: GpuPool, live: DeployedPool) -> str | None:
    deployed = live.node_labels.get(SHARING_LABEL)
    wanted = sharing_label(pool.sharing)
    if deployed is None or deployed == wanted:
        return None  # a pool deployed before the label carries none: its sharing cannot be compared
    return (
        f"pool {pool.name}: sharing {deployed} -> {wanted}. AKS applies this in place, no node is replaced, but the "
        "NVIDIA device plugin on the pool's nodes restarts with the new configuration and the number of GPU slots "
        "pods can request changes."
    )
