"""The GPU model `report` and `compare` share: how a pool finds its config, and what the plugin makes of it."""

from __future__ import annotations

import pytest

from gpushare.review.gpu_changes import PoolSide, PoolTransition, capacity, flag_lines, pool_change, show
from gpushare.review.markdown import cell, fence, fit
from tests.review.preview_builders import UNKNOWN, plugin_config, pool_inputs

T4X4 = "Standard_NC64as_T4_v3"  # 4 x T4


def side(inputs: dict, config: str | None, mig_strategy: str | None = None) -> PoolSide:
    return PoolSide(inputs["agentPoolName"], inputs, config, mig_strategy)


def test_config_key_comes_from_the_node_label_else_the_pool_name():
    labelled = pool_inputs("t4", T4X4, config_key="t4-0badc0de")
    assert side(labelled, None).config_key == "t4-0badc0de"
    unlabelled = pool_inputs("t4", T4X4)
    del unlabelled["nodeLabels"]["nvidia.com/device-plugin.config"]
    assert side(unlabelled, None).config_key == "t4"


def test_mps_wins_when_a_config_has_both_sections():
    config = plugin_config(sharing="mps", replicas=3) + "  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 10\n"
    got = capacity(side(pool_inputs("t4", T4X4), config))
    assert (got.resource, got.per_node) == ("nvidia.com/gpu.shared", 12)


def test_sharing_a_resource_the_nodes_do_not_advertise_shares_nothing():
    # MIG mixed advertises nvidia.com/mig-1g.5gb; a config sharing nvidia.com/gpu leaves the slices unshared.
    inputs = pool_inputs("a100", "Standard_ND96asr_v4", mig="MIG1g", mig_strategy="mixed")
    got = capacity(side(inputs, plugin_config("mixed", sharing="timeSlicing", replicas=4)))
    assert (got.resource, got.per_node) == ("nvidia.com/mig-1g.5gb", 56)


def test_mig_strategy_from_the_release_else_the_pool_label_else_the_file():
    inputs = pool_inputs("a100", "Standard_ND96asr_v4", mig="MIG1g", mig_strategy="mixed")
    assert capacity(side(inputs, plugin_config("mixed"), mig_strategy="single")).resource == "nvidia.com/gpu"
    assert capacity(side(inputs, plugin_config("single"))).resource == "nvidia.com/mig-1g.5gb"
    del inputs["nodeLabels"]["gpushare.io/mig-strategy"]
    assert capacity(side(inputs, plugin_config("single"))).resource == "nvidia.com/gpu"


def test_unknown_vm_size_gives_unknown_capacity_but_node_counts():
    got = capacity(side(pool_inputs("x", "Standard_NC999_future", autoscale=(1, 5)), plugin_config()))
    assert (got.resource, got.per_node, got.nodes(), got.total()) == (None, None, "1-5", "?")


def test_fixed_pool_counts_nodes_from_count():
    got = capacity(side(pool_inputs("t4", T4X4, count=3), plugin_config(sharing="timeSlicing", replicas=2)))
    assert (got.per_node, got.nodes(), got.total()) == (8, "3", "24")


def test_unknown_values_are_spelled_out():
    old = pool_inputs("t4", T4X4)
    new = {**old, "resourceName": UNKNOWN}
    change = pool_change(PoolTransition("t4", "update", side(old, None), side(new, None)))
    assert change.changes == ("resourceName: gpushare-prod -> (known after apply)",)
    assert show(4.0) == "4" and show(None) == "(none)" and show(["1", "2"]) == '["1", "2"]'


def test_an_unchanged_config_restarts_nothing_a_changed_one_does():
    inputs = pool_inputs("t4", T4X4, sharing="time-slicing-2")
    two, four = plugin_config(sharing="timeSlicing", replicas=2), plugin_config(sharing="timeSlicing", replicas=4)
    same = pool_change(PoolTransition("t4", "same", side(inputs, two), side(inputs, two)))
    changed = pool_change(PoolTransition("t4", "update", side(inputs, two), side(inputs, four)))
    assert same.flags == () and same.changes == ()
    assert changed.flags == ("device plugin restarts on these nodes",)


def test_a_renamed_resource_is_called_out_before_pods_go_pending():
    """renameByDefault false -> true (or the reverse, as the default's switch does to a stack that relied on it)
    moves the nodes' shares to another resource name: pods asking for the old one stay Pending."""
    inputs = pool_inputs("t4", T4X4, sharing="time-slicing-4")
    plain = plugin_config(sharing="timeSlicing", replicas=4, rename=False)
    renamed = plugin_config(sharing="timeSlicing", replicas=4, rename=True)
    change = pool_change(PoolTransition("t4", "update", side(inputs, renamed), side(inputs, plain)))
    assert (change.before.resource, change.after.resource) == ("nvidia.com/gpu.shared", "nvidia.com/gpu")
    assert change.flags[0] == "device plugin restarts on these nodes"
    assert change.flags[1].startswith("the GPU resource these nodes advertise is renamed: nvidia.com/gpu.shared -> "
                                      "nvidia.com/gpu; pods and Job templates asking for nvidia.com/gpu.shared stay "
                                      "Pending")
    lines = flag_lines([change])
    assert lines[:3] == ["> [!CAUTION]", "> GPU resources renamed (running pods keep their GPUs; new ones must ask "
                         "for the new name):", f"> - **t4**: {change.flags[1].split(': ', 1)[1]}"]
    more_replicas = pool_change(PoolTransition("t4", "update", side(inputs, plain),
                                               side(inputs, plugin_config(sharing="timeSlicing", replicas=8,
                                                                          rename=False))))
    assert not any("renamed" in flag for flag in more_replicas.flags)
    replaced = pool_change(PoolTransition("t4", "replace", side(inputs, renamed), side(inputs, plain)))
    assert not any("renamed" in flag for flag in replaced.flags)  # the pool's destruction is the louder news


@pytest.mark.parametrize(("value", "expected"), [("a|b", "a\\|b"), ("x\ny", "x<br>y"), ("c:\\d", "c:\\\\d")])
def test_table_cells_cannot_break_the_table(value, expected):
    assert cell(value) == expected


def test_fence_outgrows_backticks_inside():
    assert fence("run ```sh``` then")[0] == "````"


def test_fit_drops_items_from_the_end_and_keeps_the_head():
    items = [f"- item {i:03d}" for i in range(200)]
    text = fit(["# head", "important"], "details", items, 1_000)
    assert len(text) <= 1_000
    assert text.startswith("# head\nimportant\n\n<details><summary>details</summary>")
    assert "- item 000" in text and "- item 199" not in text
    kept = text.count("- item ")
    assert f"_{200 - kept} more not shown" in text
    assert fit(["# head"], "details", items[:3], 1_000).count("- item ") == 3
