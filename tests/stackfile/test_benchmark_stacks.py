"""`make bench` and `make bench-tenants` measure generated stacks: they must stay valid as the rules grow, or the benchmark stops at its
first size."""

from __future__ import annotations

import pytest

from benchmarks.plan_benchmark import stack_with
from benchmarks.tenant_benchmark import stack_with_tenants
from gpushare.stackfile.config import parse_config
from gpushare.stackfile.tenant_config import MAX_TENANTS


@pytest.mark.parametrize("pools, tenants", [(1, 0), (10, 2), (50, 10)])
def test_benchmark_stacks_validate(pools, tenants):
    stack = parse_config(stack_with(pools)["config"], source="bench", stack="bench")
    assert (len(stack.pools), len(stack.tenants)) == (pools, tenants)


def test_tenant_benchmark_stacks_validate_up_to_the_most_tenants():
    stack = parse_config(stack_with_tenants(MAX_TENANTS)["config"], source="bench", stack="bench")
    assert len(stack.tenants) == MAX_TENANTS
