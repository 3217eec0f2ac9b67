"""Preflight's subnets of your own, on parsed facts (no Azure): free addresses for what the pools can add, and no
overlap with the cluster's own ranges."""

from __future__ import annotations

import dataclasses

import pytest

from gpushare.azure.preflight.preflight_report import Verdict
from gpushare.azure.preflight.preflight_runs import evaluate
from gpushare.azure.subnets import Subnet
from tests.azure.preflight.parsed_region import CONFIG, OFFERS, SUB, VNET
from tests.builders import with_pool


NODES, GPU = f"{VNET}/spoke/subnets/nodes", f"{VNET}/spoke/subnets/gpu"


def in_subnets(config=CONFIG, **network):
    """`config` in subnets of its own: the system pool in NODES, pool `small` (at most 5 nodes) in GPU."""
    config = with_pool(config, 0, subnet_id=GPU)
    return dataclasses.replace(config, cluster=dataclasses.replace(config.cluster, network=dataclasses.replace(
        config.cluster.network, subnet_id=NODES, **network)))


def subnet_row(report, name: str):
    (check,) = [c for c in report.checks if c.check == "subnet" and c.subject == f"spoke/{name}"]
    return check


@pytest.mark.parametrize(("used", "verdict"), [(246, Verdict.PASS), (247, Verdict.FAIL)],
                         ids=["exactly-enough", "one-short"])
def test_a_subnet_with_exactly_the_free_addresses_its_pools_can_add_passes(used, verdict):
    """/24: 256 - 5 Azure reserves - 246 in use = 5 free, for pool small's 5 nodes: enough; one more in use is not."""
    subnets = {NODES.lower(): Subnet(NODES, "10.1.0.0/24", 0), GPU.lower(): Subnet(GPU, "10.1.1.0/24", used)}
    check = subnet_row(evaluate(in_subnets(), OFFERS, None, SUB, subnets=subnets), "gpu")
    assert check.verdict is verdict, check.detail
    assert check.detail.startswith(f"10.1.1.0/24: 256 addresses - 5 Azure reserves - {used} in use = {251 - used} "
                                   "free; the pools can add 5 nodes (small 5)")


def test_the_stacks_own_service_cidr_is_what_a_subnet_must_not_overlap():
    """A stack that moves the service range (network.serviceCidr) into its VNet's space: the subnet inside it fails,
    naming the stack's range, and the default range no longer counts."""
    config = in_subnets(service_cidr="10.1.0.0/16", dns_service_ip="10.1.0.10")
    subnets = {NODES.lower(): Subnet(NODES, "10.0.0.0/24", 0), GPU.lower(): Subnet(GPU, "10.1.1.0/24", 0)}
    report = evaluate(config, OFFERS, None, SUB, subnets=subnets)
    gpu = subnet_row(report, "gpu")
    assert gpu.verdict is Verdict.FAIL and gpu.detail == "10.1.1.0/24 overlaps the cluster's serviceCidr 10.1.0.0/16"
    assert subnet_row(report, "nodes").verdict is Verdict.PASS, "10.0.0.0/24 is in the default range, not this one"
