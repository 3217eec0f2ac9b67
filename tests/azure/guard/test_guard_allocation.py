"""A change of a deployed pool's allocation (device plugin <-> DRA), read from its node labels: AKS relabels the
nodes in place, but the pool's running workloads lose the resource they were given, so the guard refuses it unless
the pool sets `recreate: true`, naming the migration path (docs/dra-pools.md)."""

from __future__ import annotations

import dataclasses

import pytest

from gpushare.azure.guard.guard_report import ALLOCATION_FIELD, GuardReport, raise_for_violations
from gpushare.azure.guard.in_place import deployed_allocation
from gpushare.errors import GuardViolationError
from gpushare.model.stack import Allocation
from tests.azure.guard_builders import MIG_POOL, SOURCE, SYSTEM_POOL, deployed_like, gpu_stack, run
from tests.builders import mps

PLUGIN_POOL = dataclasses.replace(MIG_POOL, sharing=None)
DRA_POOL = dataclasses.replace(PLUGIN_POOL, allocation=Allocation.DRA, sharing=mps(2))


def test_the_guard_tells_a_deployed_pools_allocation_from_its_labels():
    assert deployed_allocation(deployed_like(PLUGIN_POOL)) is Allocation.DEVICE_PLUGIN
    assert deployed_allocation(deployed_like(DRA_POOL)) is Allocation.DRA
    assert deployed_allocation(SYSTEM_POOL) is None


@pytest.mark.parametrize(("deployed", "wanted"), [(PLUGIN_POOL, DRA_POOL), (DRA_POOL, PLUGIN_POOL)],
                         ids=["to-dra", "to-device-plugin"])
def test_moving_a_live_pool_between_device_plugin_and_dra_is_refused_with_the_migration_path(deployed, wanted):
    report = run(gpu_stack(wanted), [SYSTEM_POOL, deployed_like(deployed)])

    (violation,) = report.violations
    assert (violation.pool, violation.field, violation.deployed, violation.wanted) == (
        "a100mig", ALLOCATION_FIELD, deployed.allocation.value, wanted.allocation.value)
    assert 'docs/dra-pools.md "Moving a pool from the device plugin to DRA"' in violation.message
    assert "set `recreate: true` on pool a100mig" in violation.message
    assert report.headline == "1 change would move running GPU pools between the device plugin and DRA"
    with pytest.raises(GuardViolationError, match="move running GPU pools between the device plugin and DRA"):
        raise_for_violations(report)


def test_recreate_true_accepts_the_move_with_a_warning():
    report = run(gpu_stack(dataclasses.replace(DRA_POOL, recreate=True)), [SYSTEM_POOL, deployed_like(PLUGIN_POOL)])

    assert report.violations == ()
    assert any("allocation devicePlugin -> dra, accepted by `recreate: true`" in w for w in report.warnings)


def test_a_dra_pool_deployed_as_dra_is_left_alone():
    assert run(gpu_stack(DRA_POOL), [SYSTEM_POOL, deployed_like(DRA_POOL)]) == GuardReport(SOURCE)
