"""A pinned Kubernetes version against the minors AKS supported at the catalog's knowledge date (1.35-1.37)."""

from __future__ import annotations

import dataclasses

import pytest

from gpushare.model.catalog import oldest_supported_kubernetes_minor
from gpushare.stackfile.kubernetes_version import kubernetes_version_warnings
from tests.builders import T4, pool, stack


def pinned(version: str | None):
    config = stack(pool("t4", T4))
    return dataclasses.replace(config, cluster=dataclasses.replace(config.cluster, kubernetes_version=version))


def test_oldest_supported_minor_is_n_minus_2_of_the_newest():
    assert oldest_supported_kubernetes_minor() == (1, 35)


@pytest.mark.parametrize("version", ["1.33", "1.34.2", "1.9"])
def test_a_minor_older_than_aks_supports_warns_and_names_the_fix(version):
    (warning,) = kubernetes_version_warnings(pinned(version))
    for words in ("stacks/Pulumi.dev.yaml", "gpushare:cluster.kubernetesVersion", repr(version), "1.35",
                  "October 2026", "Remove kubernetesVersion", "gpushare preflight", "westeurope"):
        assert words in warning, (words, warning)


@pytest.mark.parametrize("version", [None, "1.35", "1.36.1", "1.37", "1.38"])
def test_no_pin_or_a_supported_minor_is_quiet(version):
    assert kubernetes_version_warnings(pinned(version)) == []
