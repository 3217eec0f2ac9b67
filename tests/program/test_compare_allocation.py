"""`compare` on real `plan --json` output when a live pool moves from the device plugin to DRA: an in-place update of
its node labels, flagged as a move with the migration path, and the capacity in devices of its DeviceClass, as
`plan` reports it."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from gpushare.cli import main
from gpushare.review.gpu_changes import MOVES, pool_change
from gpushare.review.plan_compare import parse_plan, pool_transitions

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "dra" / "Pulumi.dra.yaml"
MIG_CLASS = "gpushare-h100-nvl-94gb-mig-3g.47gb"


def plan_of(text: str, path: Path) -> str:
    path.write_text(text)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", str(path), "--json"]) == 0
    return out.getvalue()


def test_a_live_pool_moving_to_dra_is_an_in_place_update_flagged_as_a_move(tmp_path):
    head_text = FIXTURE.read_text().replace("      sharing: {strategy: mps, replicas: 2}\n      autoscale", "      autoscale")
    # The device plugin refuses MPS inside MIG: the base pool is the same MIG layout without sharing.
    base_text = head_text.replace("      allocation: dra\n", "")
    base = parse_plan(plan_of(base_text, tmp_path / "Pulumi.dra.yaml"), "base.json")
    head_json = plan_of(head_text, tmp_path / "Pulumi.dra.yaml")
    head = parse_plan(head_json, "head.json")

    changes = {c.name: c for c in (pool_change(t) for t in pool_transitions(base, head))}
    moved = changes["h100mps"]
    assert moved.op == "update"
    (flag,) = [f for f in moved.flags if f.startswith(MOVES)]
    assert "allocation devicePlugin -> dra" in flag and "docs/dra-pools.md" in flag
    assert (moved.before.resource, moved.before.per_node) == ("nvidia.com/gpu", 2)
    row = next(p for p in json.loads(head_json)["pools"] if p["name"] == "h100mps")
    assert (moved.after.resource, moved.after.per_node) == (row["resource"], row["perNode"]) == (
        f"{MIG_CLASS}.deviceclass.resource.k8s.io/devices", 2)
    assert not any(f.startswith(MOVES) for f in changes["t4ts"].flags)
