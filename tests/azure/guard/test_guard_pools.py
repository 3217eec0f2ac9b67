"""The guard's decisions on whole pools: removed pools, pools gpushare does not manage, new pools, a first
deployment, and `recreate: true`."""

from __future__ import annotations

import dataclasses

from gpushare.azure.guard.messages import offline_warnings
from gpushare.azure.guard.guard_report import GuardReport, Violation
from gpushare.model.catalog import MigProfile, find_vm_size
from gpushare.model.stack import DEVICE_PLUGIN_CONFIG_LABEL, Autoscale
from tests.azure.guard_builders import MIG_POOL, SOURCE, SYSTEM_POOL, T4_POOL, deployed_like, gpu_stack, run

def test_rejects_removing_managed_pool_that_has_nodes():
    config = gpu_stack(MIG_POOL)
    removed = deployed_like(T4_POOL, count=3)

    report = run(config, [SYSTEM_POOL, deployed_like(MIG_POOL), removed])

    assert report.violations == (
        Violation(
            pool="t4ts",
            field="pool",
            deployed="deployed, 3 nodes",
            wanted="removed from the stack",
            message=(
                "stack dev, cluster gpushare-dev, pool t4ts: the pool is deployed (Standard_NC4as_T4_v3, 3 nodes) "
                "and managed by gpushare (label gpushare.io/pool), but the stack no longer lists it.\n"
                "  Applying this would delete pool t4ts and every pod running on it. If you renamed it: AKS cannot "
                "rename a pool, the new name is a new pool; keep the old one in the stack until its workloads have "
                "moved.\n"
                "  To remove it deliberately, keep it in the stack one more run and retire it: drain it (kubectl "
                "drain -l kubernetes.azure.com/agentpool=t4ts --ignore-daemonsets --delete-emptydir-data), set "
                "`count: 0` (instead of any `autoscale`) and `recreate: true` on it in stacks/Pulumi.dev.yaml and "
                "apply, then remove it from the stack and apply again."
            ),
        ),
    )


def test_removing_managed_pool_without_nodes_warns_that_protection_still_decides():
    report = run(gpu_stack(MIG_POOL), [SYSTEM_POOL, deployed_like(MIG_POOL), deployed_like(T4_POOL, count=0)])

    assert report.violations == ()
    assert report.notes == ()
    assert report.warnings == (
        "stack dev, cluster gpushare-dev, pool t4ts: the pool has no nodes and the stack no longer lists it. Pulumi "
        "deletes it only if an earlier run applied `recreate: true` on it (which lifted its protection in the "
        "state); otherwise this run stops with Pulumi's 'marked for protection' error and nothing is deleted: put "
        "the pool back in stacks/Pulumi.dev.yaml with `count: 0` and `recreate: true`, apply, then remove it and "
        "apply again.",
    )
    assert report.removed == ("t4ts",)
    assert report.headline == (
        "deletes empty pool t4ts only if an earlier run applied `recreate: true` on it, otherwise Pulumi stops on "
        "its protection"
    )


def test_removing_managed_pool_whose_node_count_is_unknown_is_refused():
    # `count: null` (Azure or a hand-written file did not say) may hide running nodes: never taken as empty.
    report = run(gpu_stack(MIG_POOL), [SYSTEM_POOL, deployed_like(MIG_POOL), deployed_like(T4_POOL, count=None)])

    assert [(v.pool, v.field, v.deployed) for v in report.violations] == [("t4ts", "pool", "deployed, node count unknown")]
    assert report.removed == ()
    assert report.headline == "1 change would delete running GPU pools"


def test_ignores_pools_gpushare_does_not_manage():
    by_hand = deployed_like(T4_POOL, name="batch", node_labels={DEVICE_PLUGIN_CONFIG_LABEL: "batch"}, count=4)

    report = run(gpu_stack(MIG_POOL), [SYSTEM_POOL, deployed_like(MIG_POOL), by_hand])

    assert report == GuardReport(SOURCE)


def test_compares_same_named_pool_even_without_gpushare_label():
    # A pool deployed before gpushare labelled its pools is still the pool Pulumi updates.
    deployed = deployed_like(MIG_POOL, node_labels={}, gpu_instance_profile="MIG7g")

    report = run(gpu_stack(MIG_POOL), [SYSTEM_POOL, deployed])

    assert [(v.field, v.deployed, v.wanted) for v in report.violations] == [("gpuInstanceProfile", "MIG7g", "MIG1g")]


def test_accepts_new_pool():
    config = gpu_stack(MIG_POOL, T4_POOL)

    report = run(config, [SYSTEM_POOL, deployed_like(MIG_POOL)])

    assert report == GuardReport(SOURCE)


def test_new_pool_does_not_stop_checking_the_pools_after_it():
    config = gpu_stack(T4_POOL, MIG_POOL)

    report = run(config, [SYSTEM_POOL, deployed_like(MIG_POOL, vm_size="Standard_ND96isr_H100_v5")])

    assert [(v.pool, v.field) for v in report.violations] == [("a100mig", "vmSize")]


def test_first_deployment_has_nothing_to_guard():
    report = run(gpu_stack(), None)

    assert report == GuardReport(
        SOURCE, notes=("cluster gpushare-dev does not exist yet: first deployment, nothing to guard",)
    )


def test_recreate_turns_violations_into_a_warning():
    wanted = dataclasses.replace(MIG_POOL, mig=MigProfile.MIG3G, vm_size=find_vm_size("Standard_ND96amsr_A100_v4"),
                                 recreate=True)

    report = run(gpu_stack(wanted), [SYSTEM_POOL, deployed_like(MIG_POOL)])

    assert report.violations == ()
    assert report.warnings == (
        "will delete and recreate pool a100mig (stack dev, cluster gpushare-dev, pool a100mig): vmSize "
        "Standard_ND96asr_v4 -> Standard_ND96amsr_A100_v4; gpuInstanceProfile MIG1g -> MIG3g. Every pod running on "
        "it is deleted (`recreate: true`); remove the flag once the pool has been recreated.",
    )


def test_recreate_headline_says_the_pool_is_deleted_and_recreated():
    wanted = dataclasses.replace(MIG_POOL, mig=MigProfile.MIG3G, recreate=True)

    report = run(gpu_stack(wanted, T4_POOL), [SYSTEM_POOL, deployed_like(MIG_POOL), deployed_like(T4_POOL)])

    assert report.recreated == ("a100mig",)
    assert report.headline == "deletes and recreates pool a100mig (`recreate: true`)"
    assert "no change deletes" not in report.headline


def test_headline_lists_violations_and_recreates_together():
    config = gpu_stack(dataclasses.replace(MIG_POOL, mig=MigProfile.MIG2G, recreate=True), T4_POOL)
    deployed = [SYSTEM_POOL, deployed_like(MIG_POOL), deployed_like(T4_POOL, vm_size="Standard_NC8as_T4_v3")]

    assert run(config, deployed).headline == (
        "1 change would delete running GPU pools; deletes and recreates pool a100mig (`recreate: true`)"
    )


def test_recreate_without_change_headline_says_protection_is_lifted():
    report = run(gpu_stack(dataclasses.replace(MIG_POOL, recreate=True)), [SYSTEM_POOL, deployed_like(MIG_POOL)])

    assert report.headline == "no change deletes a GPU pool; protection lifted on pool a100mig (`recreate: true`)"


def test_warns_about_recreate_on_a_pool_not_deployed_yet():
    report = run(gpu_stack(MIG_POOL, dataclasses.replace(T4_POOL, recreate=True)), [SYSTEM_POOL, deployed_like(MIG_POOL)])

    assert report.warnings == (
        "stack dev, cluster gpushare-dev, pool t4ts: `recreate: true` is set on a pool that is not deployed yet: it "
        "is created without protection, so a later edit or removal could delete it; remove the flag.",
    )
    assert report.recreated == ()


def test_offline_warnings_cover_every_recreate_flag():
    config = gpu_stack(dataclasses.replace(MIG_POOL, recreate=True), dataclasses.replace(T4_POOL, recreate=True))

    warnings = offline_warnings(config)

    assert [w.split(":")[0] for w in warnings] == [
        "stack dev, cluster gpushare-dev, pool a100mig", "stack dev, cluster gpushare-dev, pool t4ts"]
    assert all("`recreate: true` lifts the pool's protection for the next run" in w for w in warnings)
    assert offline_warnings(gpu_stack(MIG_POOL, T4_POOL)) == []


def test_warns_about_recreate_flag_without_create_only_change():
    report = run(gpu_stack(dataclasses.replace(MIG_POOL, recreate=True)), [SYSTEM_POOL, deployed_like(MIG_POOL)])

    assert report.violations == ()
    assert report.warnings == (
        "stack dev, cluster gpushare-dev, pool a100mig: `recreate: true` is set but no create-only setting changes, "
        "so nothing is recreated (unless an earlier run set osDiskType or osDiskSizeGB or maxPods, which the stack "
        "now leaves to AKS: under `recreate: true` the stored value is not kept, and the pool is recreated with "
        "AKS's default); the pool's protection is still lifted for this run. Remove the flag unless you are "
        "retiring the pool.",
    )


def test_recreate_on_one_pool_leaves_others_guarded():
    config = gpu_stack(dataclasses.replace(MIG_POOL, mig=MigProfile.MIG2G, recreate=True),
                       dataclasses.replace(T4_POOL, autoscale=Autoscale(0, 5)))
    deployed = [SYSTEM_POOL, deployed_like(MIG_POOL), deployed_like(T4_POOL, vm_size="Standard_NC8as_T4_v3")]

    report = run(config, deployed)

    assert [(v.pool, v.field) for v in report.violations] == [("t4ts", "vmSize")]
    assert len(report.warnings) == 1
    assert report.warnings[0].startswith("will delete and recreate pool a100mig ")
