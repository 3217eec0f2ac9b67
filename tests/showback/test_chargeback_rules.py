"""The deployed showback rules' chargeback, judged by `promtool test rules` on hand-worked series: each namespace's
cost on a pool and the pool's unallocated cost add up to the pool's cost at every evaluation, with borrowed shares
charged to the borrower and credited to the lender (issue 41, items 5 and 6; docs/cost.md).

The stack is tests/fixtures/showback/Pulumi.chargeback.yaml: t4ts, 2 nodes of 4 time-sliced T4 shares at $0.526 a
node-hour ($0.1315 a share-hour, $1.052 an hour for the pool), vision and nlp guaranteed 3 shares each, 2 to nobody;
spare, 1 whole T4 ($0.526 an hour) no tenant lists. `batch` is a namespace of no tenant."""

from __future__ import annotations

from decimal import Decimal

import pytest
import yaml

from gpushare.model.metrics import Metrics
from gpushare.showback.chargeback import pool_guarantees, split_pool_cost
from gpushare.showback.rules import rule_file, showback_pools
from gpushare.stackfile.config import load_stack_file
from tests.showback.chargeback_stacks import PRICES, all_stacks
from tests.showback.showback_scenario import STACK_FILE, Pod, Scenario, selector, series
from tests.showback.test_rules import promtool

CHARGEBACK_STACK = STACK_FILE.parent / "Pulumi.chargeback.yaml"
T4TS_0, T4TS_1 = "aks-t4ts-12345678-vmss000000", "aks-t4ts-12345678-vmss000001"
SPARE = "aks-spare-12345678-vmss000000"
NODES = {T4TS_0: "t4ts", T4TS_1: "t4ts", SPARE: "spare"}
ALLOCATABLE = {T4TS_0: ("nvidia_com_gpu_shared", 4), T4TS_1: ("nvidia_com_gpu_shared", 4),
               SPARE: ("nvidia_com_gpu", 1)}
COST = {"currency": "USD", "priceDate": "2026-12-01",
        "pools": [{"name": "t4ts", "nodeHourly": 0.526}, {"name": "spare", "nodeHourly": 0.526}]}
POOL_LABELS = {"t4ts": {"resource": "nvidia.com/gpu.shared", "slice": "time-slicing x4", "sharing": "time-slicing"},
               "spare": {"resource": "nvidia.com/gpu", "slice": "whole GPU", "sharing": "none"}}

BORROWING_FROM_BOTH = Scenario(NODES, ALLOCATABLE, pods=(
    Pod("vision", "train-0", T4TS_0, "nvidia_com_gpu_shared", 2),
    Pod("vision", "train-1", T4TS_0, "nvidia_com_gpu_shared", 2),
    Pod("vision", "train-2", T4TS_1, "nvidia_com_gpu_shared", 1),
    Pod("nlp", "serve-0", T4TS_1, "nvidia_com_gpu_shared", 1),
    Pod("batch", "job-0", T4TS_1, "nvidia_com_gpu_shared", 1),
), devices=())
"""vision holds 5 (borrows 2), nlp 1 (leaves 2 unused), batch 1 (borrows 1): 3 borrowed, nlp's 2 unused all lent,
the third from the 2 shares nobody is guaranteed. Charged: vision 3 + 2 = 5, nlp 3 - 2 = 1, batch 1; unallocated
8 - 7 = 1. spare: nobody, all unallocated."""

LENDING_HALF = Scenario(NODES, ALLOCATABLE, pods=(
    *(Pod("vision", f"train-{i}", T4TS_0, "nvidia_com_gpu_shared", 1) for i in range(4)),
    Pod("nlp", "serve-0", T4TS_1, "nvidia_com_gpu_shared", 1),
    Pod("batch", "job-0", SPARE, "nvidia_com_gpu", 1),
), devices=())
"""vision holds 4 (borrows 1), nlp 1 (leaves 2 unused): half of nlp's unused 2 is lent. Charged: vision 4, nlp
3 - 1 = 2; unallocated 8 - 6 = 2. spare: batch holds its one T4 (borrowed from nobody's guarantee), none left."""

SHARE_HOUR = 0.1315
WANT = {
    "borrowing from both": (BORROWING_FROM_BOTH, {
        ("t4ts", "vision"): 5, ("t4ts", "nlp"): 1, ("t4ts", "batch"): 1}, {"t4ts": 1, "spare": 1}),
    "lending half": (LENDING_HALF, {
        ("t4ts", "vision"): 4, ("t4ts", "nlp"): 2, ("spare", "batch"): 1}, {"t4ts": 2, "spare": 0}),
}
"""scenario, (pool, namespace) -> slices charged, pool -> slices unallocated."""
PRICE = {"t4ts": SHARE_HOUR, "spare": 0.526}


def _sample(labels: dict[str, str], value: float) -> dict:
    return {"labels": "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}", "value": value}


def _micro(expr: str) -> str:
    return f"round(({expr}) * 1000000)"


def _tests(charged: dict[tuple[str, str], int], unallocated: dict[str, int]) -> list[dict]:
    def at(expr: str, samples: list[dict]) -> dict:
        return {"expr": expr, "eval_time": "30m", "exp_samples": samples}

    pool_cost = {"t4ts": 8 * SHARE_HOUR, "spare": 0.526}
    return [
        at(_micro("gpushare:namespace_slices_charged:sum"),
           [_sample({"pool": p, "namespace": ns, **POOL_LABELS[p]}, units * 1e6)
            for (p, ns), units in charged.items()]),
        at(_micro("gpushare:namespace_cost:hourly"),
           [_sample({"pool": p, "namespace": ns, **POOL_LABELS[p]}, round(units * PRICE[p] * 1e6))
            for (p, ns), units in charged.items()]),
        at(_micro("gpushare:pool_unallocated_cost:hourly"),
           [_sample({"pool": p, **POOL_LABELS[p]}, round(units * PRICE[p] * 1e6)) for p, units in unallocated.items()]),
        at(_micro("gpushare:pool_cost:hourly"),
           [_sample({"pool": p, **POOL_LABELS[p]}, round(cost * 1e6)) for p, cost in pool_cost.items()]),
        # The sum property itself: the namespaces' costs and the unallocated cost are the pool's cost.
        at("abs((sum by (pool) (gpushare:namespace_cost:hourly) or sum by (pool) (gpushare:pool_cost:hourly) * 0)"
           " + on (pool) sum by (pool) (gpushare:pool_unallocated_cost:hourly)"
           " - on (pool) sum by (pool) (gpushare:pool_cost:hourly)) < bool 1e-9",
           [_sample({"pool": p}, 1) for p in pool_cost]),
        at(_micro("gpushare:tenant_cost:hourly"),
           [_sample({"tenant": t}, round(charged.get(("t4ts", t), 0) * SHARE_HOUR * 1e6)) for t in ("vision", "nlp")]),
    ]


@pytest.mark.parametrize("case", sorted(WANT))
def test_promtool_finds_each_namespaces_chargeback_and_the_unallocated_cost_summing_to_the_pools(tmp_path, case):
    scenario, charged, unallocated = WANT[case]
    rules = tmp_path / "rules.yml"
    rules.write_text(rule_file(load_stack_file(CHARGEBACK_STACK), Metrics(prometheus="managed", window="1h",
                                                                            idle_below=30), COST))
    inputs = [{"series": selector(metric, labels), "values": f"{value}+0x12"}
              for metric, labels, value in series(scenario)]
    test_file = tmp_path / "chargeback-test.yml"
    test_file.write_text(yaml.safe_dump({
        "rule_files": [str(rules)], "evaluation_interval": "5m",
        "tests": [{"interval": "5m", "input_series": inputs, "promql_expr_test": _tests(charged, unallocated)}]},
        sort_keys=False))
    result = promtool("test", "rules", str(test_file))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_showback_scenarios_chargeback_sums_to_each_pools_cost(tmp_path):
    """tests/showback/showback_scenario.py: every pool dedicated to one tenant, `batch` borrowing on research's t4ts."""
    from tests.showback.showback_scenario import price_cost

    rules = tmp_path / "rules.yml"
    rules.write_text(rule_file(load_stack_file(STACK_FILE), Metrics(prometheus="managed", window="1h",
                                                                     idle_below=30), price_cost()))
    inputs = [{"series": selector(metric, labels), "values": f"{value}+0x12"} for metric, labels, value in series()]
    # research is guaranteed all 8 of t4ts (its own pool) and holds 3; batch's 1 is lent from it: 7 and 1, none idle.
    charged = {("a100mig", "vision"): 16, ("t4ts", "research"): 7, ("t4ts", "batch"): 1, ("t4mps", "nlp"): 4}
    tests = [{"expr": "gpushare:namespace_slices_charged:sum + 0", "eval_time": "30m", "exp_samples": [
        _sample({"pool": p, "namespace": ns, **_showback_labels(p)}, units) for (p, ns), units in charged.items()]},
        {"expr": "abs(sum by (pool) (gpushare:namespace_cost:hourly) + on (pool) sum by (pool) "
                 "(gpushare:pool_unallocated_cost:hourly) - on (pool) sum by (pool) (gpushare:pool_cost:hourly))"
                 " < bool 1e-9", "eval_time": "30m",
         "exp_samples": [_sample({"pool": p}, 1) for p in ("a100mig", "t4ts", "t4mps")]}]
    test_file = tmp_path / "showback-chargeback-test.yml"
    test_file.write_text(yaml.safe_dump({
        "rule_files": [str(rules)], "evaluation_interval": "5m",
        "tests": [{"interval": "5m", "input_series": inputs, "promql_expr_test": tests}]}, sort_keys=False))
    result = promtool("test", "rules", str(test_file))
    assert result.returncode == 0, result.stdout + result.stderr


def _showback_labels(pool: str) -> dict[str, str]:
    from tests.showback.test_rules import _pool_labels

    return _pool_labels(pool)



def _held(guarantees: dict[str, int], capacity: int) -> dict[str, int]:
    """Holdings that borrow: the first tenant holds its guarantee and 1 more, the others half theirs, and `batch`
    (no tenant) 1 share, as far as the pool holds."""
    held, left = {}, capacity
    for i, (tenant, units) in enumerate(guarantees.items()):
        held[tenant] = min(left, units + 1 if i == 0 else units // 2)
        left -= held[tenant]
    held["batch"] = min(left, 1)
    return {name: units for name, units in held.items() if units}


@pytest.mark.parametrize("name", [name for name, _ in all_stacks()])
def test_on_every_example_stack_the_rules_charge_what_the_chargeback_model_does_and_sum_to_each_pool(tmp_path, name):
    stack = dict(all_stacks())[name]
    guarantees = pool_guarantees(stack)
    cost = {"currency": "USD", "priceDate": "2026-12-01",
            "pools": [{"name": p.name, "nodeHourly": PRICES[p.vm_size.name]} for p in stack.pools]}
    nodes, allocatable, pods, want = {}, {}, [], []
    for pool in showback_pools(stack, cost):
        facts = next(p for p in stack.pools if p.name == pool.name)
        node = f"aks-{pool.name}-12345678-vmss000000"
        count = max(facts.max_nodes, 1)
        nodes[node] = pool.name
        allocatable[node] = (pool.ksm_resource, pool.per_node * count)
        held = _held(guarantees[pool.name], pool.per_node * count)
        pods += [Pod(namespace, f"{namespace}-0", node, pool.ksm_resource, units) for namespace, units in held.items()]
        # The model, in slices (a plan's split is the same function over a month): the rules must charge the same.
        split = split_pool_cost(Decimal("1.00"), pool.per_node * count, guarantees[pool.name], held)
        want += [_sample({"pool": pool.name, "namespace": namespace, **_labels(pool)}, round(float(charge.units), 6))
                 for namespace, charge in split.charges.items()]
    rules = tmp_path / "rules.yml"
    rules.write_text(rule_file(stack, Metrics(prometheus="managed", window="1h", idle_below=30), cost))
    inputs = [{"series": selector(metric, labels), "values": f"{value}+0x12"}
              for metric, labels, value in series(Scenario(nodes, allocatable, tuple(pods), devices=()))]
    tests = [
        {"expr": "round(gpushare:namespace_slices_charged:sum, 0.000001)", "eval_time": "30m", "exp_samples": want},
        {"expr": "abs((sum by (pool) (gpushare:namespace_cost:hourly) or sum by (pool) (gpushare:pool_cost:hourly) * 0)"
                 " + on (pool) sum by (pool) (gpushare:pool_unallocated_cost:hourly)"
                 " - on (pool) sum by (pool) (gpushare:pool_cost:hourly)) < bool 1e-9", "eval_time": "30m",
         "exp_samples": [_sample({"pool": p.name}, 1) for p in stack.pools]},
    ]
    test_file = tmp_path / "stack-chargeback-test.yml"
    test_file.write_text(yaml.safe_dump({
        "rule_files": [str(rules)], "evaluation_interval": "5m",
        "tests": [{"interval": "5m", "input_series": inputs, "promql_expr_test": tests}]}, sort_keys=False))
    result = promtool("test", "rules", str(test_file))
    assert result.returncode == 0, result.stdout + result.stderr


def _labels(pool) -> dict[str, str]:
    return {"resource": pool.resource, "slice": pool.slice, "sharing": pool.sharing}
