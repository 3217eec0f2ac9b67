"""A pinned Kubernetes version against AKS's calendar of December 2026 (1.35 and 1.36 on every tier, 1.37 only
planned, 1.32-1.34 only under long-term support on the Premium tier) and against the GPU Operator's validation (26.7:
up to 1.36)."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from gpushare.errors import ConfigError
from gpushare.model.catalog import oldest_supported_kubernetes_minor
from gpushare.stackfile.config import parse_config
from gpushare.stackfile.kubernetes_version import kubernetes_version_warnings
from tests.builders import T4, pool, stack

VERSION = "gpushare:cluster.kubernetesVersion"
RAW = {
    "azure-native:location": "westeurope",
    "gpushare:cluster": {"name": "gpus"},
    "gpushare:pools": [{"name": "t4", "vmSize": "Standard_NC4as_T4_v3"}],
}


def with_cluster(**settings) -> dict:
    raw = copy.deepcopy(RAW)
    raw["gpushare:cluster"].update(settings)
    return raw


def problems(raw: dict) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, source="stacks/Pulumi.test.yaml", stack="test")
    return {p.path: p.message for p in caught.value.problems}


def test_the_oldest_minor_without_long_term_support_is_1_35():
    assert oldest_supported_kubernetes_minor() == (1, 35)


@pytest.mark.parametrize("version", ["1.34", "1.34.2", "1.33", "1.32"])
@pytest.mark.parametrize("tier", [None, "Standard", "Free"])
def test_an_lts_only_minor_outside_premium_lts_is_refused_with_both_fixes(version, tier):
    found = problems(with_cluster(kubernetesVersion=version, **({"tier": tier} if tier else {})))
    assert list(found) == [VERSION]
    message = found[VERSION]
    for words in (repr(version), "only under long-term support", "`pulumi up` would fail",
                  f"tier {tier or 'Standard'}", "pin 1.35 to 1.36", "remove kubernetesVersion",
                  "set tier: Premium and supportPlan: AKSLongTermSupport", "December 2026"):
        assert words in message, (words, message)


def test_an_lts_only_minor_on_premium_without_the_lts_plan_is_refused():
    found = problems(with_cluster(kubernetesVersion="1.34", tier="Premium"))
    assert "plan KubernetesOfficial" in found[VERSION]


@pytest.mark.parametrize("version", ["1.32", "1.34"])
def test_an_lts_only_minor_on_premium_with_long_term_support_plans(version):
    config = parse_config(with_cluster(kubernetesVersion=version, tier="Premium", supportPlan="AKSLongTermSupport"),
                          source="s", stack="test")
    assert (config.cluster.tier.value, config.cluster.support_plan.value) == ("Premium", "AKSLongTermSupport")


@pytest.mark.parametrize("version", ["1.31", "1.29", "1.9"])
def test_a_minor_older_than_every_supported_one_is_refused_even_with_long_term_support(version):
    found = problems(with_cluster(kubernetesVersion=version, tier="Premium", supportPlan="AKSLongTermSupport"))
    message = found[VERSION]
    assert "older than every minor AKS supports (1.35-1.36, and 1.32-1.34 under long-term support" in message
    assert "pin 1.35 to 1.36" in message


@pytest.mark.parametrize("version", [None, "1.35", "1.36", "1.37", "1.38"])
def test_no_pin_or_a_supported_minor_parses_on_the_standard_tier(version):
    raw = with_cluster(**({"kubernetesVersion": version} if version else {}))
    assert parse_config(raw, source="s", stack="test").cluster.kubernetes_version == version


@pytest.mark.parametrize("tier", [None, "Standard", "Free"])
def test_long_term_support_needs_the_premium_tier(tier):
    found = problems(with_cluster(supportPlan="AKSLongTermSupport", **({"tier": tier} if tier else {})))
    assert list(found) == ["gpushare:cluster.supportPlan"]
    assert "needs tier Premium" in found["gpushare:cluster.supportPlan"]


def pinned(version: str | None):
    config = stack(pool("t4", T4))
    return dataclasses.replace(config, cluster=dataclasses.replace(config.cluster, kubernetes_version=version))


@pytest.mark.parametrize("version", ["1.37", "1.37.2", "1.38"])
def test_a_minor_newer_than_the_operator_was_validated_on_warns(version):
    (warning,) = kubernetes_version_warnings(pinned(version))
    for words in ("stacks/Pulumi.dev.yaml", VERSION, repr(version), "newer than Kubernetes 1.36",
                  "GPU Operator v26.7.0", "pin 1.36"):
        assert words in warning, (words, warning)


@pytest.mark.parametrize("version", [None, "1.35", "1.36", "1.36.3"])
def test_no_pin_or_a_validated_minor_is_quiet(version):
    assert kubernetes_version_warnings(pinned(version)) == []
