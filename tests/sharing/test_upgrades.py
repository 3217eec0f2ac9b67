"""GPU pool upgradeSettings: validation as AKS takes them, and what an upgrade costs in capacity."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from gpushare.errors import ConfigError
from gpushare.model.stack import Autoscale, MigStrategy, Upgrade
from gpushare.sharing.capacity import pool_capacity
from gpushare.sharing.upgrades import nodes_at_once, upgrade_summary
from gpushare.stackfile.config import parse_config
from tests.builders import T4, pool, time_slicing

SOURCE = "stacks/Pulumi.test.yaml"
PATH = "gpushare:pools[0].upgrade"


def parse(upgrade: Any):
    raw = {"azure-native:location": "westeurope", "gpushare:cluster": {"name": "gpushare-test"},
           "gpushare:pools": [{"name": "t4", "vmSize": T4, "upgrade": upgrade}]}
    return parse_config(raw, source=SOURCE, stack="test").pools[0].upgrade


def test_default_replaces_one_node_at_a_time_without_an_extra_vm():
    raw = {"azure-native:location": "westeurope", "gpushare:cluster": {"name": "gpushare-test"},
           "gpushare:pools": [{"name": "t4", "vmSize": T4}]}
    assert parse_config(raw, source=SOURCE, stack="test").pools[0].upgrade == Upgrade("0", "1")


@pytest.mark.parametrize(
    ("upgrade", "expected"),
    [({"maxSurge": 1, "maxUnavailable": 0}, Upgrade("1", "0")),
     ({"maxSurge": "0", "maxUnavailable": "33%"}, Upgrade("0", "33%")),
     ({"maxUnavailable": "100%"}, Upgrade("0", "100%")),
     # A surge given alone upgrades by surging: gpushare's default maxUnavailable 1 would make both above 0.
     ({"maxSurge": "50%"}, Upgrade("50%", "0"))],
    ids=["numbers", "percentage", "whole-pool", "surge-only-set"],
)
def test_numbers_and_percentages_are_taken_as_aks_takes_them(upgrade, expected):
    assert parse(upgrade) == expected


@pytest.mark.parametrize(
    ("upgrade", "path", "words"),
    [({"maxSurge": 0, "maxUnavailable": 0}, PATH, ["maxSurge 0 and maxUnavailable 0", "at least one above 0"]),
     ({"maxSurge": "0%", "maxUnavailable": "0"}, PATH, ["maxSurge 0%", "at least one above 0"]),
     ({"maxSurge": "1", "maxUnavailable": "33%"}, PATH,
      ["maxSurge 1 and maxUnavailable 33% are both above 0", "not both", "Azure/AKS#4277",
       "set maxUnavailable: 0 to upgrade by surging extra VMs, or maxSurge: 0"]),
     ({"maxSurge": "150%"}, f"{PATH}.maxSurge", ["'150%'", "(0%-100%)"]),
     ({"maxUnavailable": -1}, f"{PATH}.maxUnavailable", ["-1", "number of nodes (0-1000)"]),
     ({"maxSurge": True}, f"{PATH}.maxSurge", ["boolean true"]),
     ({"maxSurge": "1.5"}, f"{PATH}.maxSurge", ["'1.5'"]),
     ({"maxsurge": 1}, f"{PATH}.maxsurge", ["did you mean 'maxSurge'"]),
     ("fast", PATH, ["expected a mapping with keys maxSurge, maxUnavailable"])],
    ids=["both-zero", "both-zero-percent", "both-above-zero", "over-100-percent", "negative", "boolean", "fraction", "misspelt",
         "not-a-mapping"],
)
def test_bad_upgrade_settings_name_the_key_the_value_and_what_is_allowed(upgrade, path, words):
    with pytest.raises(ConfigError) as raised:
        parse(upgrade)
    assert str(raised.value).startswith(SOURCE)
    (problem,) = raised.value.problems
    assert problem.path == path
    for word in words:
        assert word in problem.message, (word, problem.message)


@pytest.mark.parametrize(("setting", "nodes", "expected"), [("2", 5, 2), ("33%", 4, 2), ("10%", 3, 1), ("0%", 9, 0)])
def test_percentages_are_of_the_pool_rounded_up(setting, nodes, expected):
    assert nodes_at_once(setting, nodes) == expected


T4TS = pool("t4ts", T4, sharing=time_slicing(4), count=3)


@pytest.mark.parametrize(
    ("gpu_pool", "expected"),
    [(T4TS, "upgrade: 1 node at a time offline (4 x nvidia.com/gpu.shared fewer), no extra VM"),
     (dataclasses.replace(T4TS, count=1),
      "upgrade: 1 node at a time offline: the whole pool (4 x nvidia.com/gpu.shared), no extra VM"),
     (dataclasses.replace(T4TS, upgrade=Upgrade("1", "0")),
      "upgrade: no node offline, 1 extra Standard_NC4as_T4_v3 VM at a time: needs 4 spare vCPUs of "
      "StandardNCASv3_T4Family quota"),
     (dataclasses.replace(T4TS, count=None, autoscale=Autoscale(0, 10), upgrade=Upgrade("0", "25%")),
      "upgrade at 10 nodes: 3 nodes at a time offline (12 x nvidia.com/gpu.shared fewer), no extra VM")],
    ids=["default", "single-node", "surge", "percentage"],
)
def test_plan_says_what_an_upgrade_costs(gpu_pool, expected):
    summary = upgrade_summary(gpu_pool, pool_capacity(gpu_pool, MigStrategy.SINGLE))
    assert summary.startswith(expected), summary
