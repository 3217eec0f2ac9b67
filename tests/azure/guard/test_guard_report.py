"""The guard's report: one error listing every violation, its JSON, and the pools it read for preflight."""

from __future__ import annotations

import pytest

from gpushare.azure.guard.guard_report import GuardReport, raise_for_violations
from gpushare.errors import GuardViolationError
from tests.azure.guard_builders import (
    MIG_POOL,
    SOURCE,
    SYSTEM_POOL,
    T4_POOL,
    deployed_cluster,
    deployed_like,
    gpu_stack,
    run,
)

def test_raise_for_violations_lists_every_violation():
    config = gpu_stack(MIG_POOL)
    changed, removed = deployed_like(MIG_POOL, vm_size="Standard_ND96isr_H100_v5"), deployed_like(T4_POOL, count=1)
    deployed = [SYSTEM_POOL, changed, removed]
    report = run(config, deployed)

    with pytest.raises(GuardViolationError) as caught:
        raise_for_violations(report)

    assert caught.value.exit_code == 3
    assert str(caught.value) == "\n\n".join(
        ["2 changes would delete running GPU pools (deployed pools read from deployed.json):"]
        + [v.message for v in report.violations]
    )


def test_raise_for_violations_passes_a_clean_report():
    raise_for_violations(GuardReport(SOURCE, notes=("a note",), warnings=("a warning",)))


def test_report_to_json():
    config = gpu_stack(MIG_POOL)
    report = run(config, [SYSTEM_POOL, deployed_like(MIG_POOL, vm_size="Standard_ND96isr_H100_v5")])

    assert report.to_json() == {
        "source": SOURCE,
        "headline": "1 change would delete running GPU pools",
        "violations": [
            {
                "pool": "a100mig",
                "field": "vmSize",
                "deployed": "Standard_ND96isr_H100_v5",
                "wanted": "Standard_ND96asr_v4",
                "message": report.violations[0].message,
            }
        ],
        "notes": [],
        "warnings": [],
    }


def test_report_carries_the_pools_it_read_for_preflight():
    pools = deployed_cluster(gpu_stack())

    assert run(gpu_stack(), pools).deployed == tuple(pools)
    assert run(gpu_stack(), None).deployed is None  # no cluster yet
