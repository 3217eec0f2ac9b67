"""Autoscaled GPU pools against the cluster autoscaler's Azure node template: the scale-set tags that tell it what
an empty pool's nodes advertise, so `autoscale.min: 0` can start every sharing mode's pool. (Whether the autoscaler
then counts the nodes ready is `gpushare.stackfile.autoscaler_readiness`'s.)"""

from __future__ import annotations

from typing import Any

import pytest

from gpushare.render.mock_engine import run_program
from gpushare.sharing.autoscaling import (
    autoscaler_tags,
    pool_tags,
    resource_tag_name,
)
from gpushare.sharing.capacity import pool_capacity
from gpushare.stackfile.config import encode_engine_config, parse_config
from gpushare.stackfile.model import MigStrategy

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
    assert {decode(name): value for name, value in tags.items()} == advertised
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
