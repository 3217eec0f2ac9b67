"""Autoscaled GPU pools against the cluster autoscaler's Azure node template: the scale-set tags that tell it what
an empty pool's nodes advertise, so `autoscale.min: 0` can start every sharing mode's pool. (Whether the autoscaler
then counts the nodes ready is `gpushare.sharing.autoscaler_readiness`'s.)"""

from __future__ import annotations

import re
from typing import Any

import pytest

from gpushare.errors import ConfigError
from gpushare.model.stack import MigStrategy
from gpushare.render.mock_engine import run_program
from gpushare.sharing.autoscaling import (
    autoscaler_tags,
    label_tag_name,
    pool_tags,
    resource_tag_name,
    stack_pool_tags,
    tag_warnings,
    taint_tag,
)
from gpushare.sharing.capacity import pool_capacity
from gpushare.sharing.pool_facts import derive_pool_facts
from gpushare.stackfile.config import encode_engine_config, parse_config

SOURCE = "stacks/Pulumi.test.yaml"
T4 = "Standard_NC4as_T4_v3"
A100 = "Standard_ND96asr_v4"
H100 = "Standard_ND96isr_H100_v5"
PREFIX = "k8s.io_cluster-autoscaler_node-template_resources_"
AGENT_POOL = "azure-native:containerservice:AgentPool"


def raw_with(pool_entry: dict[str, Any], mig_strategy: str = "single") -> dict[str, Any]:
    return {
        "azure-native:location": "westeurope",
        "gpushare:cluster": {"name": "gpushare-test"},
        "gpushare:operator": {"migStrategy": mig_strategy},
        "gpushare:pools": [{"name": "gpus", **pool_entry}],
    }


def decode(tag_name: str) -> str:
    """cluster-autoscaler's `extractAllocatableResourcesFromScaleSet` (azure_template.go), transcribed."""
    name = tag_name.split(PREFIX)[1]
    return name.replace("_", "/").replace("~2", "/")


@pytest.mark.parametrize("resource", ["nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-3g.40gb",
                                      "nvidia.com/mig-1g.10gb.shared"])
def test_a_resource_tag_decodes_to_the_resource_as_the_autoscaler_reads_it(resource):
    name = resource_tag_name(resource)
    assert name.startswith(PREFIX) and "/" not in name
    assert decode(name) == resource


def test_a_resource_name_with_an_underscore_has_no_tag():
    with pytest.raises(ValueError, match="decodes every `_`"):
        resource_tag_name("example.com/fpga_u250")


ENTRIES = {
    # 8 A100s x 7 MIG 1g slices under `single`: all advertised as nvidia.com/gpu, 56 per node (the SKU says 8).
    "mig-single": ({"vmSize": A100, "mig": "MIG1g"}, "single", {"nvidia.com/gpu": "56"}),
    "mig-mixed": ({"vmSize": H100, "mig": "MIG3g"}, "mixed",
                  {"nvidia.com/mig-3g.40gb": "16", "nvidia.com/gpu": "0"}),
    # An autoscaled pool's shares are advertised as nvidia.com/gpu unless the stack renames them itself.
    "time-slicing": ({"vmSize": "Standard_NC64as_T4_v3", "sharing": {"strategy": "time-slicing", "replicas": 3}},
                     "single", {"nvidia.com/gpu": "12"}),
    "time-slicing-renamed": ({"vmSize": "Standard_NC64as_T4_v3", "sharing": {"strategy": "time-slicing",
                                                                            "replicas": 3, "renameByDefault": True}},
                             "single", {"nvidia.com/gpu.shared": "12", "nvidia.com/gpu": "0"}),
    "mps-not-renamed": ({"vmSize": T4, "sharing": {"strategy": "mps", "replicas": 4, "renameByDefault": False}},
                        "single", {"nvidia.com/gpu": "4"}),
    "whole-gpu": ({"vmSize": T4}, "single", {"nvidia.com/gpu": "1"}),
}


@pytest.mark.parametrize(("entry", "strategy", "advertised"), ENTRIES.values(), ids=ENTRIES.keys())
def test_min_0_is_accepted_and_the_pool_tells_the_autoscaler_what_each_node_advertises(entry, strategy, advertised):
    """Through the real program: every sharing mode may scale from 0, and its AgentPool carries one tag per resource
    with the per-node count a real node of the pool reports."""
    raw = raw_with({**entry, "autoscale": {"min": 0, "max": 3}}, strategy)
    config = parse_config(raw, source=SOURCE, stack="test")
    assert config.pools[0].autoscale.min == 0
    recording = run_program("test", encode_engine_config(raw))
    (agent_pool,) = recording.by_type(AGENT_POOL)
    tags = agent_pool.inputs["tags"]
    assert {decode(name): value for name, value in tags.items() if name.startswith(PREFIX)} == advertised
    assert not any("cluster autoscaler models a new" in w for w in recording.warnings), recording.warnings


def test_the_tags_follow_the_capacity_the_plan_reports():
    raw = raw_with({"vmSize": A100, "mig": "MIG2g", "sharing": {"strategy": "time-slicing", "replicas": 2}},
                   "mixed")
    pool = parse_config(raw, source=SOURCE, stack="test").pools[0]
    capacity = pool_capacity(pool, MigStrategy.MIXED)
    assert autoscaler_tags(capacity) == {
        f"{PREFIX}nvidia.com_gpu": "0",
        f"{PREFIX}nvidia.com_mig-2g.10gb.shared": str(capacity.per_node),
    }


def test_a_pools_tags_are_the_users_and_gpushares_autoscaler_tags():
    raw = raw_with({"vmSize": T4, "sharing": {"strategy": "time-slicing", "replicas": 4},
                    "tags": {"costCenter": "42"}})
    pool = parse_config(raw, source=SOURCE, stack="test").pools[0]
    capacity = pool_capacity(pool, MigStrategy.SINGLE)
    assert pool_tags(pool, capacity) == {"costCenter": "42", **autoscaler_tags(capacity)}


LABEL_PREFIX = "k8s.io_cluster-autoscaler_node-template_label_"
TAINT_PREFIX = "k8s.io_cluster-autoscaler_node-template_taint_"


def decode_labels(tags: dict[str, str]) -> dict[str, str]:
    """cluster-autoscaler-1.35.2 `extractLabelsFromTags` (azure_template.go), transcribed: `_` -> `/`, then `~2` -> `_`."""
    return {name.split(LABEL_PREFIX)[1].replace("_", "/").replace("~2", "_"): value
            for name, value in tags.items() if len(name.split(LABEL_PREFIX)) > 1}


def decode_taints(tags: dict[str, str]) -> set[tuple[str, str, str]]:
    """`extractTaintsFromTags`, transcribed: the value `<value>:<Effect>`, the key decoded as a label's."""
    found = set()
    for name, value in tags.items():
        if len(name.split(TAINT_PREFIX)) > 1 and re.match(r"(.*):(?:NoSchedule|NoExecute|PreferNoSchedule)", value):
            taint_value, effect = value.split(":", 1)
            found.add((name.split(TAINT_PREFIX)[1].replace("_", "/").replace("~2", "_"), taint_value, effect))
    return found


@pytest.mark.parametrize("key", ["gpushare.io/pool", "nvidia.com/device-plugin.config", "example.com/team_a",
                                 "plain", "under_score"])
def test_a_label_tag_decodes_to_the_label_key_as_the_autoscaler_reads_it(key):
    name = label_tag_name(key)
    assert "/" not in name
    assert decode_labels({name: "v"}) == {key: "v"}


@pytest.mark.parametrize("taint", ["nvidia.com/gpu=present:NoSchedule", "example.com/dedicated_for=vision:NoExecute",
                                   "kubernetes.azure.com/scalesetpriority=spot:NoSchedule", "solo:PreferNoSchedule"])
def test_a_taint_tag_decodes_to_the_taint_as_the_autoscaler_reads_it(taint):
    key_value, _, effect = taint.rpartition(":")
    key, _, value = key_value.partition("=")
    assert decode_taints(dict([taint_tag(taint)])) == {(key, value, effect)}


def spot_stack() -> dict[str, Any]:
    return raw_with({"vmSize": T4, "autoscale": {"min": 0, "max": 3}, "labels": {"example.com/team_a": "vision"},
                     "taints": ["example.com/dedicated=vision:NoSchedule"], "spot": {"maxPrice": -1}})


def test_an_autoscaled_pools_scale_set_tags_name_every_label_and_taint_of_its_nodes():
    """Through the real program: the labels and taints the empty pool's template gets from the tags are the node's:
    gpushare's labels, the user's, AKS's Spot labels (the one Kueue's flavor selects, which AKS sets by itself, so a
    queued pod selecting it scales the pool up from zero); the GPU taint, the user's and the Spot taint AKS adds."""
    raw = spot_stack()
    (agent_pool,) = run_program("test", encode_engine_config(raw)).by_type(AGENT_POOL)
    tags = agent_pool.inputs["tags"]
    assert "kubernetes.azure.com/priority" not in agent_pool.inputs["nodeLabels"]
    assert decode_labels(tags) == {**agent_pool.inputs["nodeLabels"], "kubernetes.azure.com/priority": "spot"}
    assert decode_labels(tags)["example.com/team_a"] == "vision"
    assert decode_taints(tags) == {("nvidia.com/gpu", "present", "NoSchedule"),
                                   ("example.com/dedicated", "vision", "NoSchedule"),
                                   ("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule")}


def test_a_fixed_pool_gets_no_label_or_taint_tags():
    raw = raw_with({"vmSize": T4, "count": 2, "labels": {"example.com/team": "vision"}})
    tags = stack_pool_tags(parse_config(raw, source=SOURCE, stack="test"))["gpus"]
    assert not decode_labels(dict(tags)) and not decode_taints(dict(tags))


def many_labels(count: int) -> dict[str, Any]:
    return raw_with({"vmSize": T4, "autoscale": {"min": 0, "max": 3},
                     "labels": {f"example.com/l{i}": "x" for i in range(count)}})


def test_more_than_50_tags_on_a_pool_is_refused_with_the_count():
    # 3 gpushare labels + 45 of the user's + 1 GPU taint + 1 resource tag + 1 more of the user's = 51.
    raw = many_labels(46)
    with pytest.raises(ConfigError) as error:
        stack_pool_tags(parse_config(raw, source=SOURCE, stack="test"))
    (problem,) = error.value.problems
    assert problem.path == "gpushare:pools[0]"
    assert problem.message.startswith("pool gpus needs 51 Azure tags on its scale set (0 of yours, 1 for the "
                                      "autoscaler's resources, 50 for its nodes' labels and taints")


def test_a_pool_near_50_tags_is_warned_about_and_at_50_still_planned():
    stack = parse_config(many_labels(45), source=SOURCE, stack="test")
    assert len(stack_pool_tags(stack)["gpus"]) == 50
    (warning,) = tag_warnings(derive_pool_facts(stack), stack_pool_tags(stack))
    assert warning.startswith("pool gpus: 50 Azure tags on its scale set, and AKS adds tags of its own there")


def test_the_program_refuses_a_pool_over_the_tag_limit_before_registering_anything():
    recording = run_program("test", encode_engine_config(many_labels(46)), check=False)
    assert "pool gpus needs 51 Azure tags" in str(recording.error)
    assert [r for r in recording.resources if r.custom] == []


def test_two_taints_with_one_key_keep_the_first_in_the_template_and_say_so():
    raw = raw_with({"vmSize": T4, "autoscale": {"min": 0, "max": 3},
                    "taints": ["example.com/x=a:NoSchedule", "example.com/x=a:NoExecute"]})
    stack = parse_config(raw, source=SOURCE, stack="test")
    assert ("example.com/x", "a", "NoSchedule") in decode_taints(dict(stack_pool_tags(stack)["gpus"]))
    assert any("example.com/x=a:NoExecute is left out" in w for w in tag_warnings(derive_pool_facts(stack), stack_pool_tags(stack)))


@pytest.mark.parametrize("name", ["k8s.io_cluster-autoscaler_node-template_label_team",
                                  "K8S.IO_cluster-autoscaler_node-template_TAINT_x"])
def test_a_user_tag_with_the_label_or_taint_prefix_is_refused(name):
    raw = raw_with({"vmSize": T4, "tags": {name: "x"}})
    with pytest.raises(ConfigError, match="are gpushare's"):
        parse_config(raw, source=SOURCE, stack="test")
