"""Values derived from the validated stack that Azure has its own rules for."""

import pytest

from gpushare.model.stack import Cluster, SystemPool


@pytest.mark.parametrize("name, prefix", [
    ("contoso-prod", "contoso-prod"),
    ("team_a_gpu", "team-a-gpu"),
    ("a" * 63, "a" * 54),
    ("x" * 53 + "_y", "x" * 53),  # cut at 54 would end in '-': stripped
    ("Z", "Z"),
], ids=["plain", "underscores", "too-long", "no-trailing-dash", "one-char"])
def test_dns_prefix_follows_aks_rules(name, prefix):
    cluster = Cluster(name=name, resource_group="rg", kubernetes_version=None, system_pool=SystemPool())
    assert cluster.dns_prefix == prefix
