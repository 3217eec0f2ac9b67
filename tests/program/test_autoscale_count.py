"""The node count the real program sends for a pool, from the live count the guard read (`--deployed` style file).

AKS refuses an autoscaled pool's PUT whose `count` is outside `[minCount, maxCount]`; with `ignore_changes` the
engine would send the count stored at creation. So the program sends the live count clamped to the new bounds.
"""

import json

import pytest

from gpushare.render.mock_engine import run_program
from gpushare.stackfile.config import encode_engine_config, read_stack_file
from gpushare.stackfile.project import resolve_stack_file
from tests.program.test_guard_in_program import nodepool_list

AGENT_POOL = "azure-native:containerservice:AgentPool"
STACK = "contoso-prod"  # one pool, a100mig: MIG1g under `single`, so it advertises nvidia.com/gpu


def sent(tmp_path, pool_settings: dict, deployed: list[dict] | None):
    """The a100mig AgentPool the program registers with `pool_settings` in the stack, against `deployed`."""
    raw = read_stack_file(resolve_stack_file(STACK)).config
    raw["gpushare:pools"][0].update(pool_settings)
    deployed_file = None
    if deployed is not None:
        deployed_file = tmp_path / "nodepools.json"
        deployed_file.write_text(json.dumps(deployed))
    recording = run_program(STACK, encode_engine_config(raw), deployed=deployed_file)
    (agent_pool,) = recording.by_type(AGENT_POOL)
    return agent_pool


@pytest.mark.parametrize(
    ("transition", "live", "autoscale", "count"),
    [("fixed-to-autoscale", {"count": 2, "enableAutoScaling": False}, {"min": 1, "max": 3}, 2),
     ("min-raised-above-the-live-count", {"count": 1, "enableAutoScaling": True, "minCount": 1, "maxCount": 4},
      {"min": 3, "max": 5}, 3),
     ("max-lowered-below-the-live-count", {"count": 4, "enableAutoScaling": True, "minCount": 0, "maxCount": 4},
      {"min": 0, "max": 2}, 2),
     ("bounds-unchanged", {"count": 3, "enableAutoScaling": True, "minCount": 1, "maxCount": 4},
      {"min": 1, "max": 4}, 3)],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_autoscaled_pool_sends_the_live_count_clamped_to_the_new_bounds(tmp_path, transition, live, autoscale, count):
    agent_pool = sent(tmp_path, {"autoscale": autoscale}, nodepool_list(**live))
    inputs = agent_pool.inputs
    assert (inputs["enableAutoScaling"], inputs["minCount"], inputs["maxCount"]) == (
        True, autoscale["min"], autoscale["max"])
    assert inputs["count"] == count
    assert autoscale["min"] <= inputs["count"] <= autoscale["max"]
    # Not ignored: with ignore_changes the engine would send the stored creation-time count instead.
    assert "count" not in agent_pool.ignore_changes


def test_a_new_autoscaled_pool_starts_at_min(tmp_path):
    """The cluster exists but not this pool: it is created with `min` nodes."""
    system_only = nodepool_list()[:1]
    agent_pool = sent(tmp_path, {"autoscale": {"min": 2, "max": 4}}, system_only)
    assert agent_pool.inputs["count"] == 2


def test_unknown_live_count_sends_min_and_keeps_the_stored_count_on_update(tmp_path):
    """Offline (or Azure unread under guard: warn): `min` for a creation, and `ignore_changes` so an existing
    pool keeps its stored count instead of being scaled to `min`."""
    agent_pool = sent(tmp_path, {"autoscale": {"min": 1, "max": 3}}, None)
    assert agent_pool.inputs["count"] == 1
    assert agent_pool.ignore_changes == ["count", "osDiskType", "osDiskSizeGB", "maxPods"]  # the disk and max pods: left to AKS


def test_a_fixed_pool_sends_its_count_whatever_runs(tmp_path):
    agent_pool = sent(tmp_path, {"count": 2}, nodepool_list(count=5, enableAutoScaling=True, minCount=1,
                                                            maxCount=5))
    assert agent_pool.inputs["count"] == 2
    assert "enableAutoScaling" not in agent_pool.inputs
    assert agent_pool.ignore_changes == ["osDiskType", "osDiskSizeGB", "maxPods"]  # left to AKS, never count


def test_setting_a_create_only_value_the_pool_already_has_does_not_replace_it(tmp_path):
    """A pool created without `maxPods`/`osDiskSizeGB` (AKS's defaults, 250 and 128) gets them set to those very
    values: the engine would see a new input on a replaceOnChanges key and plan a replace; ignored instead."""
    live = nodepool_list(maxPods=250, osDiskSizeGB=128, osDiskType="Managed")
    agent_pool = sent(tmp_path, {"maxPods": 250, "osDisk": {"sizeGb": 128}}, live)
    assert agent_pool.inputs["maxPods"] == 250 and agent_pool.inputs["osDiskSizeGB"] == 128
    assert set(agent_pool.ignore_changes) == {"maxPods", "osDiskSizeGB", "osDiskType"}  # settled, left to AKS
    assert {"maxPods", "osDiskSizeGB"} <= set(agent_pool.replace_on_changes), "a real change still replaces"


def test_naming_the_subnet_a_pool_already_joined_does_not_replace_it(tmp_path):
    """The stack names the subnet the deployed pool is in. Where the stored inputs lack it (a pool created before the
    stack named a subnet, AKS putting it where it did) the engine would see a new vnetSubnetID, a replaceOnChanges
    key, and plan a replace (delete first) of a pool that does not move: ignored instead."""
    vnet = ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-net/providers/"
            "Microsoft.Network/virtualNetworks/vnet")
    raw = read_stack_file(resolve_stack_file(STACK)).config
    raw["gpushare:cluster"]["network"] = {"subnetId": f"{vnet}/subnets/snet-nodes"}
    raw["gpushare:pools"][0]["subnetId"] = f"{vnet}/subnets/snet-nodes"
    deployed_file = tmp_path / "nodepools.json"
    deployed_file.write_text(json.dumps(nodepool_list(vnetSubnetId=f"{vnet}/subnets/snet-nodes")))
    (agent_pool,) = run_program(STACK, encode_engine_config(raw), deployed=deployed_file).by_type(AGENT_POOL)
    assert agent_pool.inputs["vnetSubnetID"] == f"{vnet}/subnets/snet-nodes"
    assert agent_pool.ignore_changes == ["vnetSubnetID", "osDiskType", "osDiskSizeGB", "maxPods"]
    assert "vnetSubnetID" in agent_pool.replace_on_changes, "a real move still replaces"


def test_a_create_only_value_that_differs_from_the_pool_is_the_guards_refusal(tmp_path):
    raw = read_stack_file(resolve_stack_file(STACK)).config
    raw["gpushare:pools"][0]["maxPods"] = 110
    deployed_file = tmp_path / "nodepools.json"
    deployed_file.write_text(json.dumps(nodepool_list(maxPods=250)))
    recording = run_program(STACK, encode_engine_config(raw), deployed=deployed_file, check=False)
    assert recording.error is not None and "maxPods" in str(recording.error)
    assert recording.by_type(AGENT_POOL) == []
