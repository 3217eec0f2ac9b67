"""`report --prices`'s chargeback section, from a preview's agent pools, tenant policies and Kueue ClusterQueues:
each pool's month at its most nodes split by the tenants' guarantees on each side, each side summing to its pool's
cost; a pool several tenants list without their ClusterQueues is not split, and says why (issue 41, item 5)."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal

from gpushare.kubernetes.queues import KUEUE_API
from gpushare.review.preview_report.digest import parse_preview
from gpushare.review.preview_report.pr_comment import render_report
from tests.review import preview_builders as b
from tests.review.test_chargeback_changes import rows
from tests.review.test_preview_cost import cluster_step, sheet
from tests.showback.chargeback_stacks import EXAMPLE_STACKS, STACKS, TWO_TEAMS_YAML
from tests.showback.chargeback_stacks import PRICES as STACK_PRICES

ROOT = STACKS.parent

PRICES = {"Standard_NC24ads_A100_v4": 3.67, "Standard_NC4as_T4_v3": 0.526, "Standard_D4ds_v5": 0.23}


def cluster_queue(tenant: str, nominal: dict[str, int]) -> dict:
    return {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": tenant},
            "spec": {"cohortName": "gpushare-vision", "resourceGroups": [
                {"coveredResources": ["nvidia.com/gpu"], "flavors": [
                    {"name": pool, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": units}]}
                    for pool, units in nominal.items()]},
                {"coveredResources": ["cpu", "memory"], "flavors": [{"name": "gpushare-cpu-memory", "resources": [
                    {"name": "cpu", "nominalQuota": "20"}, {"name": "memory", "nominalQuota": "100Gi"}]}]}]}}


def queue_step(op: str, tenant: str, old: dict | None, new: dict | None) -> dict:
    return b.step(op, f"kubernetes:{KUEUE_API}:ClusterQueue", f"kueue-clusterqueue-{tenant}",
                  old and cluster_queue(tenant, old), new and cluster_queue(tenant, new),
                  parent="gpushare:queues:KueueQueues")


def preview(queues: bool = True) -> dict:
    """a100mig (2 A100s as MIG 3g.40gb: 4 slices, $5,358.20 a month) shared by vision and nlp, whose guarantees move
    from 2 and 2 to 3 and 1; t4 (1 whole T4) vision's alone."""
    a100 = b.pool_inputs("a100mig", "Standard_NC24ads_A100_v4", mig="MIG3g", count=2)
    t4 = b.pool_inputs("t4", "Standard_NC4as_T4_v3", count=1)
    steps = [b.pool_step("same", "a100mig", a100, a100), b.pool_step("same", "t4", t4, t4),
             b.config_map_step("same", b.DEFAULT_CONFIG, b.DEFAULT_CONFIG), cluster_step(),
             b.policy_step("same", "vision", ["a100mig", "t4"], ["a100mig", "t4"]),
             b.policy_step("same", "nlp", ["a100mig"], ["a100mig"])]
    if queues:
        steps += [queue_step("update", "vision", {"a100mig": 2, "t4": 1}, {"a100mig": 3, "t4": 1}),
                  queue_step("update", "nlp", {"a100mig": 2}, {"a100mig": 1})]
    return b.preview(steps)


def report(document: dict) -> str:
    return render_report(parse_preview(json.dumps(document), "preview.json"), None, prices=sheet(PRICES))


def test_a_guarantee_moving_between_two_teams_moves_their_charges_and_each_side_sums_to_the_pool():
    found = rows(report(preview()))
    assert found == [
        ["`a100mig`", "`vision`", "$2,679.10", "$4,018.65", "+$1,339.55"],
        ["`a100mig`", "`nlp`", "$2,679.10", "$1,339.55", "-$1,339.55"],
        ["`a100mig`", "idle", "$0.00", "$0.00", "-"],
        ["`a100mig`", "= pool cost", "$5,358.20", "$5,358.20", "-"],
    ]  # t4 stays vision's, whole: no row
    for side in (2, 3):
        *parts, total = [Decimal(r[side].strip("$").replace(",", "")) for r in found]
        assert sum(parts) == total


def test_a_shared_pool_without_the_tenants_queues_is_not_split_and_the_report_says_why():
    text = report(preview(queues=False))
    assert "#### Chargeback" not in text
    assert ("_Chargeback: not split for `a100mig`: several tenants list it and the preview has no ClusterQueue with "
            "their guarantees") in text


def test_on_every_example_stack_and_the_adopters_the_report_splits_each_pool_as_the_plan_does(tmp_path):
    """A preview of each stack's first deployment, its steps the resources `plan --json` registers: the report's
    split of each pool is the plan's (`cost.pools[].chargeback`), and sums to the pool's cost."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(sheet(STACK_PRICES).to_json()))
    two_teams = tmp_path / "Pulumi.adopter.yaml"
    two_teams.write_text(TWO_TEAMS_YAML)
    for path in [*EXAMPLE_STACKS, two_teams]:
        result = subprocess.run([sys.executable, "-m", "gpushare", "plan", str(path), "--json", "--prices",
                                 str(prices)], cwd=ROOT, capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stderr
        plan = json.loads(result.stdout)
        steps = [b.step("create", r["type"], r["name"], None, r["inputs"]) for r in plan["resources"]]
        text = render_report(parse_preview(json.dumps(b.preview(steps)), "preview.json"), None,
                             prices=sheet(STACK_PRICES))
        found = rows(text)
        for pool in plan["cost"]["pools"]:
            split = pool["chargeback"]
            want = {**{f"`{n}`": t["amount"] for n, t in split["tenants"].items()}, "idle": split["idle"],
                    "= pool cost": split["total"]}
            got = {r[1]: float(r[3].strip("$").replace(",", "")) for r in found if r[0] == f"`{pool['name']}`"}
            assert got == want, (path.name, pool["name"])
            assert sum(Decimal(str(v)) for k, v in got.items() if k != "= pool cost") == Decimal(str(split["total"]))
