"""Autoscaled GPU pools against the cluster autoscaler's Azure node template (only `nvidia.com/gpu` = physical GPUs)."""

from __future__ import annotations

from typing import Any

import pytest

from gpushare.errors import ConfigError
from gpushare.sharing.autoscaling import overscale_warning
from gpushare.sharing.capacity import pool_capacity
from gpushare.stackfile.catalog import MigProfile
from gpushare.stackfile.config import parse_config
from gpushare.stackfile.model import Autoscale, MigStrategy
from tests.builders import T4, pool, time_slicing

SOURCE = "stacks/Pulumi.test.yaml"
A100 = "Standard_ND96asr_v4"


def raw_with(pool_entry: dict[str, Any], mig_strategy: str = "single") -> dict[str, Any]:
    return {
        "azure-native:location": "westeurope",
        "gpushare:cluster": {"name": "gpushare-test"},
        "gpushare:operator": {"migStrategy": mig_strategy},
        "gpushare:pools": [{"name": "gpus", **pool_entry}],
    }


def problems(raw: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as raised:
        parse_config(raw, source=SOURCE, stack="test")
    assert str(raised.value).startswith(SOURCE)
    return {p.path: p.message for p in raised.value.problems}


@pytest.mark.parametrize(
    ("entry", "strategy", "resource", "ways_out"),
    [
        ({"vmSize": T4, "sharing": {"strategy": "time-slicing", "replicas": 4}}, "single",
         "nvidia.com/gpu.shared", ["`min: 1`", "`renameByDefault: false`"]),
        ({"vmSize": T4, "sharing": {"strategy": "mps", "replicas": 4}}, "single",
         "nvidia.com/gpu.shared", ["`min: 1`", "`renameByDefault: false`"]),
        ({"vmSize": A100, "mig": "MIG1g"}, "mixed",
         "nvidia.com/mig-1g.5gb", ["`min: 1`", "`gpushare:operator.migStrategy: single`"]),
        ({"vmSize": A100, "mig": "MIG1g", "sharing": {"strategy": "time-slicing", "replicas": 2}}, "mixed",
         "nvidia.com/mig-1g.5gb.shared",
         ["`min: 1`", "`renameByDefault: false` in its `sharing` and `gpushare:operator.migStrategy: single`"]),
    ],
    ids=["time-slicing-renamed", "mps-renamed", "mig-mixed", "mig-mixed-time-slicing"],
)
def test_min_0_is_refused_for_a_pool_not_advertising_nvidia_gpu(entry, strategy, resource, ways_out):
    found = problems(raw_with({**entry, "autoscale": {"min": 0, "max": 3}}, strategy))
    assert list(found) == ["gpushare:pools[0].autoscale.min"]
    message = found["gpushare:pools[0].autoscale.min"]
    for words in ("got 0", resource, "nvidia.com/gpu: ", "never scales the pool up from 0", "allowed: 1 or more",
                  *ways_out):
        assert words in message, (words, message)


@pytest.mark.parametrize(
    ("entry", "strategy"),
    [
        ({"vmSize": T4}, "single"),
        ({"vmSize": T4, "sharing": {"strategy": "time-slicing", "replicas": 4, "renameByDefault": False}}, "single"),
        ({"vmSize": A100, "mig": "MIG1g"}, "single"),
        ({"vmSize": T4, "sharing": {"strategy": "time-slicing", "replicas": 4}, "autoscale": {"min": 1, "max": 3}},
         "single"),
    ],
    ids=["whole-gpu", "not-renamed", "mig-single", "min-1"],
)
def test_autoscale_is_accepted_when_pods_ask_for_nvidia_gpu_or_min_is_1(entry, strategy):
    config = parse_config(raw_with({"autoscale": {"min": 0, "max": 3}, **entry}, strategy), source=SOURCE,
                          stack="test")
    assert config.pools[0].autoscale is not None


def test_the_check_runs_even_when_the_pool_name_is_bad():
    """Every problem at once: a bad name does not hide the autoscale one."""
    raw = raw_with({"vmSize": T4, "sharing": {"strategy": "mps", "replicas": 2}, "autoscale": {"min": 0, "max": 2}})
    raw["gpushare:pools"][0]["name"] = "Bad_Name"
    assert set(problems(raw)) == {"gpushare:pools[0].name", "gpushare:pools[0].autoscale.min"}


@pytest.mark.parametrize(
    ("gpu_pool", "strategy", "warns"),
    [
        (pool("t4", T4, sharing=time_slicing(4, rename_by_default=False), count=None, autoscale=Autoscale(0, 3)),
         MigStrategy.SINGLE, "4 x nvidia.com/gpu while the cluster autoscaler models a new Standard_NC4as_T4_v3 "
                             "node with 1 x nvidia.com/gpu"),
        (pool("a100", A100, mig=MigProfile.MIG1G, count=None, autoscale=Autoscale(1, 2)), MigStrategy.SINGLE,
         "56 x nvidia.com/gpu while the cluster autoscaler models a new Standard_ND96asr_v4 node with 8 x"),
        (pool("a100", A100, count=None, autoscale=Autoscale(0, 2)), MigStrategy.SINGLE, None),
        (pool("t4", T4, sharing=time_slicing(4), count=2), MigStrategy.SINGLE, None),
    ],
    ids=["time-slicing-autoscaled", "mig-autoscaled", "whole-gpu-autoscaled", "fixed-count"],
)
def test_autoscaled_pools_offering_more_than_physical_gpus_warn(gpu_pool, strategy, warns):
    warning = overscale_warning(gpu_pool, pool_capacity(gpu_pool, strategy))
    if warns is None:
        assert warning is None
    else:
        assert warning is not None and warns in warning and "more nodes than the pending pods need" in warning
