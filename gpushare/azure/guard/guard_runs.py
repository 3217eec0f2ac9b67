"""The guard's runs: `evaluate` (the stack against the deployed pools), live from Azure (`check_live`), against a
saved `az aks nodepool list -o json` (`check_file`), and as the Pulumi program runs it (`check_for_program`); and
`gpushare:guard`'s rule for Azure that cannot be read, shared with the cluster guard and preflight."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from gpushare.azure.arm import AzureReads
from gpushare.azure.deployed import DeployedFileError, DeployedPool, live_source, read_file, read_live
from gpushare.azure.guard.create_only import create_only_changes, left_to_aks
from gpushare.azure.guard.guard_report import ALLOCATION_FIELD, GuardReport, Violation
from gpushare.azure.guard.in_place import allocation_change, mig_strategy_warning, os_sku_note, sharing_note
from gpushare.azure.guard.messages import (
    allocation_message,
    allocation_warning,
    change_message,
    empty_removal_warning,
    new_pool_recreate_warning,
    recreate_warning,
    removal_violation,
    taken_by_unmanaged,
    unreported_message,
)
from gpushare.errors import AzureReadError
from gpushare.model.environment_variables import DEPLOYED_FILE_ENV, OFFLINE_ENV
from gpushare.model.stack import POOL_LABEL, GuardMode, StackConfig
from gpushare.sharing.pool_facts import PoolFactsByName, given_or_derived


def evaluate(stack: StackConfig, deployed: Iterable[DeployedPool] | None, source: str, facts: PoolFactsByName | None = None) -> GuardReport:
    """Compare what the stack wants with the deployed pools (None: the cluster does not exist yet)."""
    if deployed is None:
        return GuardReport(
            source, notes=(f"cluster {stack.cluster.name} does not exist yet: first deployment, nothing to guard",)
        )
    deployed = tuple(deployed)
    facts = given_or_derived(stack, facts)
    by_name = {pool.name: pool for pool in deployed}
    violations: list[Violation] = []
    notes: list[str] = []
    warnings: list[str] = []
    recreated: list[str] = []
    for pool in stack.pools:
        live = by_name.get(pool.name)
        if live is None:
            if pool.recreate:
                warnings.append(new_pool_recreate_warning(stack, pool.name))
            continue  # a new pool: creating it deletes nothing
        if stack.cluster.existing and POOL_LABEL not in live.node_labels:
            violations.append(taken_by_unmanaged(stack, pool, live, facts))
            continue
        changes = create_only_changes(stack, pool, live, deployed, facts)
        if pool.recreate:
            warnings.append(recreate_warning(stack, pool.name, changes, left_to_aks(stack, pool, deployed, facts)))
            if changes:
                recreated.append(pool.name)
        else:
            violations += [
                Violation(pool.name, change.field, change.deployed, change.wanted,
                          change_message(stack, pool.name, change.field, change.deployed, change.wanted)
                          if change.reported else unreported_message(stack, pool.name, change.field, change.wanted,
                                                                     source))
                for change in changes
            ]
        if moved := allocation_change(pool, live):
            deployed_mode, wanted_mode = (mode.value for mode in moved)
            if pool.recreate:
                warnings.append(allocation_warning(stack, pool.name, deployed_mode, wanted_mode))
            else:
                violations.append(Violation(pool.name, ALLOCATION_FIELD, deployed_mode, wanted_mode,
                                            allocation_message(stack, pool.name, deployed_mode, wanted_mode)))
        notes += [note for note in (os_sku_note(pool, live), sharing_note(pool, live)) if note]
    renames = mig_strategy_warning(stack, by_name)
    if renames:
        warnings.append(renames)
    wanted = {pool.name for pool in stack.pools}
    removed: list[str] = []
    for live in sorted(deployed, key=lambda p: p.name):
        if POOL_LABEL not in live.node_labels or live.name in wanted:
            continue
        # Only a count Azure reported as 0 is empty: an unknown count (null) may hide running nodes.
        if live.count == 0:
            warnings.append(empty_removal_warning(stack, live.name))
            removed.append(live.name)
        else:
            violations.append(removal_violation(stack, live))
    return GuardReport(
        source, tuple(violations), tuple(notes), tuple(warnings), tuple(deployed), recreated=tuple(recreated),
        unprotected=tuple(pool.name for pool in stack.pools if pool.recreate), removed=tuple(removed),
    )


def raise_or_warn_on_read_error(stack: StackConfig, err: AzureReadError, warn_does: str, warning: str) -> str:
    """`gpushare:guard`'s rule for Azure that cannot be read, the same for the pool guard, the cluster guard and
    preflight: `strict` raises `err`, saying what `warn` would do instead (`warn_does`); `warn` returns the warning
    to carry on with, `err` followed by `warning`."""
    if stack.guard is GuardMode.STRICT:
        raise AzureReadError(f"{err}. (gpushare:guard is strict; `gpushare:guard: warn` {warn_does}.)") from None
    return f"{err}. {warning}"


def check_live(stack: StackConfig, subscription_id: str, facts: PoolFactsByName | None = None, **read_kwargs: object) -> GuardReport:
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
    return evaluate(stack, deployed, source, facts)


def check_file(stack: StackConfig, path: str | Path, facts: PoolFactsByName | None = None) -> GuardReport:
    """Evaluate against a saved `az aks nodepool list -o json` (for `plan --deployed FILE`; needs no credentials).

    Raises `DeployedFileError` (exit 2) when the file's pools say they belong to another cluster or resource group
    than the stack's: comparing them would pass or refuse edits on the strength of the wrong cluster."""
    deployed = read_file(path)
    _check_origin(stack, deployed, path)
    return evaluate(stack, deployed, str(path), facts)


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


def check_for_program(stack: StackConfig, environ: Mapping[str, str], azure: Callable[[], AzureReads],
                      facts: PoolFactsByName | None = None) -> GuardReport | None:
    """The guard as the Pulumi program runs it: live from Azure under `pulumi preview`/`up`, against a file or
    not at all when `plan` renders offline (see DEPLOYED_FILE_ENV, OFFLINE_ENV). `azure` is called only for a
    live read."""
    if environ.get(DEPLOYED_FILE_ENV):
        return check_file(stack, environ[DEPLOYED_FILE_ENV], facts)
    if environ.get(OFFLINE_ENV):
        return None
    reads = azure()
    return check_live(stack, reads.target.subscription_id, facts, **reads.read_kwargs())
