"""`gpushare report` for a fleet member: a change to one member's stack file (eu grows its A100 pool from 2 to 3
nodes) shows, in that stack's pull-request comment, the member's update stage and the fleet-wide delta (capacity
and cost per region before -> after, the members the change touches), the same delta `fleet compare` prints; the
base side is `fleet plan --json` of the base commit (`--fleet-base`), the head side planned from the checkout."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

from tests.cli.test_fleet_plan import saved_prices
from tests.fleet_files import MEMBER_STACKS, fleet_doc, write_fleet
from tests.review import preview_builders as b
from tests.stack_files import run_cli

A100 = "Standard_NC24ads_A100_v4"
REPO_ROOT = Path(__file__).resolve().parents[2]


def project(directory: Path, stacks: dict | None = None, fleet: dict | None = None) -> Path:
    """A Pulumi project with its stacks (and the fleet file) in stacks/, as gpushare's own repository keeps them."""
    directory.mkdir(parents=True)
    (directory / "Pulumi.yaml").write_text("name: gpushare\nruntime: python\nstackConfigDir: stacks\n")
    write_fleet(directory / "stacks", fleet, stacks)
    return directory


def eu_grows() -> dict:
    """eu's A100 pool from 2 to 3 nodes at most."""
    stacks = copy.deepcopy(MEMBER_STACKS)
    stacks["eu"]["gpushare:pools"][0]["autoscale"]["max"] = 3
    return stacks


def eu_preview(tmp_path: Path) -> Path:
    """`pulumi preview --json` of that change: the pool's maxCount 2 -> 3."""
    old = b.pool_inputs("a100mig", A100, mig="MIG1g", autoscale=(1, 2))
    new = b.pool_inputs("a100mig", A100, mig="MIG1g", autoscale=(1, 3))
    path = tmp_path / "preview.json"
    path.write_text(json.dumps(b.preview([b.pool_step("update", "a100mig", old, new, protect=True,
                                                      detailed={"maxCount": {"kind": "update"}})])))
    return path


def base_fleet(capsys, tmp_path: Path, *args: str) -> Path:
    """`gpushare fleet plan stacks/fleet.yaml --json` on the base commit's checkout."""
    base = project(tmp_path / "base")
    code, out, err = run_cli(capsys, "fleet", "plan", str(base / "stacks" / "fleet.yaml"), "--json", *args)
    assert code == 0, err
    path = tmp_path / "fleet-base.json"
    path.write_text(out)
    return path


def test_a_change_to_one_member_shows_its_fleet_wide_delta_and_update_stage(tmp_path, capsys):
    fleet_base = base_fleet(capsys, tmp_path)
    head = project(tmp_path / "head", eu_grows())
    code, out, err = run_cli(capsys, "report", str(eu_preview(tmp_path)), "--stack", "eu", "--project", str(head),
                             "--fleet-base", str(fleet_base))
    assert code == 0, err
    assert err == ""
    section = out.split("#### Fleet `gpu-fleet`\n", 1)[1].split("#### Changes", 1)[0]
    assert ("Stack `eu` is fleet member `eu`: update group `regions`, stage `fleet` (2 of 2: after stage "
            "`gpu-canary` and its 1800 s wait).") in section
    assert "| westeurope | MIG 1g.10gb slice of A100 80GB (nvidia.com/gpu) | 7-14 -> 7-21 |  |" in section
    assert "| eu | changes | fleet | pools, tenants |" in section  # its tenants may hold up to 21 now
    assert "| lab |" not in section and "| us |" not in section and "eastus" not in section
    # The GPU table of the stack's own preview comes first, the fleet after it.
    assert out.index("a100mig") < out.index("#### Fleet")
    # The same delta as `fleet compare` of the two fleet plans.
    head_plan = tmp_path / "fleet-head.json"
    head_plan.write_text(run_cli(capsys, "fleet", "plan", str(head / "stacks" / "fleet.yaml"), "--json")[1])
    compared = run_cli(capsys, "fleet", "compare", str(fleet_base), str(head_plan))[1]
    assert compared.split("\n", 2)[2].strip() in section


def test_the_cost_per_region_with_prices_per_region(tmp_path, capsys):
    prices = tmp_path / "prices"
    prices.mkdir()
    fleet_dir = project(tmp_path / "priced").joinpath("stacks")
    for stack, region in (("lab", "swedencentral"), ("eu", "westeurope"), ("us", "eastus")):
        saved_prices(capsys, prices, fleet_dir / f"Pulumi.{stack}.yaml", region)
    fleet_base = base_fleet(capsys, tmp_path, "--prices", str(prices))
    head = project(tmp_path / "head", eu_grows())
    code, out, err = run_cli(capsys, "report", str(eu_preview(tmp_path)), "--stack", "eu", "--project", str(head),
                             "--fleet-base", str(fleet_base), "--prices", str(prices))
    assert code == 0, err
    (row,) = [line for line in out.splitlines() if line.startswith("| westeurope |")]
    capacity, cost = row.split(" | ")[2:4]
    assert capacity == "7-14 -> 7-21"
    # One more A100 node at most: 4.0 an hour, 730 hours a month (tests/cli/test_fleet_plan.py's prices) on top of
    # the region's 2 A100 nodes, system pool and tier fee.
    assert cost == "$3,139-$6,059 -> $3,139-$8,979 |"
    assert "| eu | changes | fleet | pools, tenants, cost |" in out


def test_the_canary_says_the_fleet_waits_for_it_and_a_joining_member_says_so(tmp_path, capsys):
    head = project(tmp_path / "head")
    code, out, _ = run_cli(capsys, "report", str(eu_preview(tmp_path)), "--stack", "lab", "--project", str(head))
    assert code == 0
    assert ("Stack `lab` is fleet member `lab`: update group `canary`, stage `gpu-canary` (1 of 2: a canary, "
            "updated first; the rest of the fleet waits 1800 s after it).") in out
    assert "_Fleet-wide delta: not shown: no base fleet plan given (`report --fleet-base FILE`" in out
    empty = tmp_path / "empty.json"
    empty.write_text("")  # no fleet at the base: every member joins
    out = run_cli(capsys, "report", str(eu_preview(tmp_path)), "--stack", "us", "--project", str(head),
                  "--fleet-base", str(empty))[1]
    assert "stage `fleet` (2 of 2: after stage `gpu-canary` and its 1800 s wait). It joins the fleet" in out
    assert "| us | joins | fleet | - |" in out and "| lab | joins | gpu-canary | - |" in out


def test_a_stack_in_no_fleet_has_no_fleet_section(tmp_path, capsys):
    stacks = copy.deepcopy(MEMBER_STACKS)
    head = project(tmp_path / "head", stacks)
    (head / "stacks" / "Pulumi.solo.yaml").write_text((head / "stacks" / "Pulumi.us.yaml").read_text()
                                                      .replace("gpushare:fleet: fleet.yaml\n", ""))
    code, out, _ = run_cli(capsys, "report", str(eu_preview(tmp_path)), "--stack", "solo", "--project", str(head))
    assert code == 0 and "Fleet" not in out
    # Outside any project (a preview file read anywhere): no stack file to read, no section, no error.
    code, out, err = run_cli(capsys, "report", str(eu_preview(tmp_path)), "--stack", "eu")
    assert code == 0 and "Fleet" not in out and err == ""


def test_a_fleet_that_does_not_plan_is_a_line_not_a_failure(tmp_path, capsys):
    document = fleet_doc()
    document["dispatch"]["manager"] = "ue"
    head = project(tmp_path / "head", fleet=document)
    code, out, err = run_cli(capsys, "report", str(eu_preview(tmp_path)), "--stack", "eu", "--project", str(head))
    assert code == 0, err
    assert "_Fleet: not shown: " in out and "fleet.yaml does not validate (1 problem; `gpushare fleet plan" in out


def test_a_bad_fleet_base_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "gpushare-plan"}')
    code, out, err = run_cli(capsys, "report", str(eu_preview(tmp_path)), "--stack", "eu", "--fleet-base", str(bad))
    assert code == 2 and out == ""
    assert "not a `fleet plan --json` document" in err


def test_the_workflow_steps_from_the_project_directory(tmp_path):
    """As the preview workflow runs them, from the project's directory: `fleet file STACK` names the fleet file
    (relative, so it names the same file in the base commit's checkout), and `report` finds the stack itself."""
    head = project(tmp_path / "head", eu_grows())
    project(tmp_path / "base")
    python = [sys.executable, "-m", "gpushare"]
    fleet_file = subprocess.run([*python, "fleet", "file", "eu"], cwd=head, capture_output=True, text=True,
                                check=True).stdout.strip()
    assert fleet_file == "stacks/fleet.yaml"
    base_plan = subprocess.run([*python, "fleet", "plan", fleet_file, "--json"], cwd=tmp_path / "base",
                               capture_output=True, text=True, check=True).stdout
    (tmp_path / "fleet-base.json").write_text(base_plan)
    result = subprocess.run([*python, "report", str(eu_preview(tmp_path)), "--stack", "eu", "--fleet-base",
                             str(tmp_path / "fleet-base.json")], cwd=head, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "| eu | changes | fleet | pools, tenants |" in result.stdout
    (head / "stacks" / "Pulumi.solo.yaml").write_text("config:\n  azure-native:location: westeurope\n")
    assert subprocess.run([*python, "fleet", "file", "solo"], cwd=head, capture_output=True, text=True,
                          check=True).stdout == ""
