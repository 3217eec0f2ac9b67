"""The plan between the stack file and the resources: one `plan` derives each fact once per process side (the CLI's
report and the program under the mock engine), the two sides' plans agree, and the program logs the plan's warnings,
each once, with nothing dropped or recomputed by the CLI."""

from __future__ import annotations

import ast
import contextlib
import cProfile
import io
import json
import pstats
from pathlib import Path

import pytest

from gpushare.azure.guard.guard_runs import check_file
from gpushare.cli import main
from gpushare.model.stack import Allocation
from gpushare.plan.stack_plan import build_plan, with_guard
from gpushare.render.mock_engine import run_program
from gpushare.render.user_program import observing_deploy
from gpushare.stackfile.config import encode_engine_config, parse_stack_file
from gpushare.stackfile.files import read_stack_file

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_STACKS = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))
QUEUED_STACK = ROOT / "tests" / "fixtures" / "showback" / "Pulumi.chargeback.yaml"
"""Tenants sharing pools through Kueue's queues, with showback rules: the queue and cost derivations run too."""
DRA_STACK = ROOT / "tests" / "fixtures" / "dra" / "Pulumi.dra.yaml"
"""A DRA MIG pool (MPS inside 3g devices) beside a device-plugin T4 pool: the DRA part is derived too."""
DERIVATIONS = ("derive_pool_facts", "stack_pool_tags", "operator_plan", "plugin_configs", "pool_plugin_configs",
               "tenant_objects_by_role", "build_plan", "plan_warnings", "parse_config", "dra_plan")
ONCE_PER_SIDE_IF_USED = ("queue_manifests", "deployed_cost", "showback_objects", "claim_templates", "device_classes",
                         "chart_values", "dra_warnings")
"""Derived once per side where the stack has queues or showback, else not at all (the CLI's report lists the queue
objects from its plan)."""
"""What `plan` derives from a stack, each expected once per side."""


def _calls(stats: pstats.Stats, name: str) -> dict[str, int]:
    """Calls of gpushare's function `name`, by caller."""
    found = {}
    for (path, _, function), (_, _, _, _, callers) in stats.stats.items():  # type: ignore[attr-defined]
        if function == name and "/gpushare/" in path:
            for (_, _, caller), (calls, *_rest) in callers.items():
                found[caller] = found.get(caller, 0) + calls
    return found


def profiled_plan(path: Path) -> tuple[pstats.Stats, dict]:
    profile = cProfile.Profile()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        profile.enable()
        code = main(["plan", str(path), "--json"])
        profile.disable()
    assert code == 0
    return pstats.Stats(profile), json.loads(out.getvalue())


@pytest.mark.parametrize("path", [*EXAMPLE_STACKS, QUEUED_STACK, DRA_STACK], ids=lambda p: p.name)
def test_one_plan_derives_each_fact_once_per_side(path):
    stats, document = profiled_plan(path)
    stack = parse_stack_file(read_stack_file(path))
    sides = 2  # the CLI's plan, and the program's under the mock engine
    for name in DERIVATIONS:
        per_tenant = len(stack.tenants) if name == "tenant_objects_by_role" else 1
        assert sum(_calls(stats, name).values()) == sides * per_tenant, (name, _calls(stats, name))
    for name in ONCE_PER_SIDE_IF_USED:
        assert sum(_calls(stats, name).values()) <= sides, (name, _calls(stats, name))
    # Each pool's capacity comes from its facts; only the stack file's tenant check reads one before a plan exists.
    capacity = _calls(stats, "pool_capacity")
    assert capacity.pop("derive_pool_facts") == sides * len(stack.pools)
    assert set(capacity) <= {"_parse_tenant"}
    # Each device-plugin config is validated once per side (the default config, then each device-plugin pool's; a
    # DRA pool has none).
    plugin_pools = [pool for pool in stack.pools if pool.allocation is Allocation.DEVICE_PLUGIN]
    assert sum(_calls(stats, "validate_config").values()) == sides * (len(plugin_pools) + 1)
    assert len(document["devicePluginConfigs"]) == len(plugin_pools) + 1


@pytest.mark.parametrize("path", [*EXAMPLE_STACKS, DRA_STACK], ids=lambda p: p.name)
def test_the_clis_plan_is_the_programs_plan_and_the_program_logs_its_warnings_once(path):
    stack_file = read_stack_file(path)
    stack = parse_stack_file(stack_file)
    with observing_deploy() as deployments:
        recording = run_program(stack.stack, encode_engine_config(stack_file.config), stack_file=path)
    (deployment,) = deployments
    assert deployment.plan == build_plan(stack)
    assert recording.warnings == list(deployment.plan.warnings)
    assert len(set(recording.warnings)) == len(recording.warnings)


def test_the_guards_read_changes_the_requests_and_warnings_not_the_facts(tmp_path):
    stack = parse_stack_file(read_stack_file(ROOT / "stacks" / "Pulumi.dev.yaml"))
    plan = build_plan(stack)
    pool = stack.pools[0]
    facts = plan.pools[pool.name].facts
    deployed = [{"name": pool.name, "vmSize": pool.vm_size.name, "count": 5, "enableAutoScaling": False,
                 "nodeLabels": dict(facts.node_labels), "nodeTaints": list(facts.node_taints),
                 "gpuInstanceProfile": pool.mig.value if pool.mig else None, "osSku": pool.os_sku.value,
                 "id": f"/subscriptions/s/resourceGroups/{stack.cluster.resource_group}/providers/"
                       f"Microsoft.ContainerService/managedClusters/{stack.cluster.name}/agentPools/{pool.name}"}]
    saved = tmp_path / "pools.json"
    saved.write_text(json.dumps(deployed))
    guarded = with_guard(plan, check_file(stack, saved, plan.pool_facts))
    assert guarded.pools[pool.name].facts is facts and guarded.operator is plan.operator
    assert guarded.deployed_config_keys == {pool.name: facts.config_key}
    assert plan.deployed_config_keys == {}


def test_deploy_reads_the_plan_and_imports_a_handful_of_domain_modules():
    """Validate, guard and preflight, build the plan, log its warnings, register: everything else is the plan's."""
    tree = ast.parse((ROOT / "components" / "deployment.py").read_text())
    runtime = [node for node in tree.body if isinstance(node, ast.ImportFrom)]
    domain = sorted(node.module for node in runtime
                    if node.module and node.module.startswith("gpushare.")
                    and not node.module.startswith("gpushare.components"))
    assert domain == ["gpushare.azure.program_checks", "gpushare.errors", "gpushare.model.stack",
                      "gpushare.plan.stack_plan", "gpushare.sharing.retained_configs", "gpushare.stackfile.config"]
    # One place logs warnings: the plan's, each once (the guard's and preflight's log as they read Azure).
    warns = [node for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == "warn"]
    assert len(warns) == 1
