"""A tenant's quota on its DRA pools: keyed by the pool's DeviceClass (the ResourceQuota counts claimed devices per
class, `<class>.deviceclass.resource.k8s.io/devices`), in devices; a class none of its pools has, the quota key
written out, or a device-plugin resource a DRA pool does not advertise are refused naming what the tenant may write."""

from __future__ import annotations

from typing import Any

import pytest

from gpushare.errors import ConfigError
from gpushare.kubernetes.tenant_objects import quota_object
from gpushare.kubernetes.tenants import pool_offers, tenant_warnings
from gpushare.stackfile.config import parse_config

H100 = "Standard_NC40ads_H100_v5"
MIG_CLASS = "gpushare-h100-nvl-94gb-mig-3g.47gb"


def raw(quota: dict[str, Any]) -> dict[str, Any]:
    return {
        "azure-native:location": "westeurope",
        "gpushare:cluster": {"name": "c"},
        "gpushare:pools": [
            {"name": "h100mps", "vmSize": H100, "mig": "MIG3g", "allocation": "dra", "count": 2,
             "sharing": {"strategy": "mps", "replicas": 2}},
            {"name": "t4dra", "vmSize": "Standard_NC4as_T4_v3", "allocation": "dra"},
            {"name": "t4plugin", "vmSize": "Standard_NC4as_T4_v3"},
        ],
        "gpushare:tenants": [{"name": "vision", "pools": ["h100mps", "t4plugin"], "quota": quota}],
    }


def problems(quota: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw(quota), source="stacks/Pulumi.dra.yaml", stack="dra")
    return {p.path: p.message for p in caught.value.problems}


def test_a_quota_per_device_class_becomes_the_quotas_per_class_key():
    stack = parse_config(raw({MIG_CLASS: 3, "nvidia.com/gpu": 1}), source="s", stack="dra")
    (vision,) = stack.tenants
    assert quota_object(vision)["spec"]["hard"] == {
        f"{MIG_CLASS}.deviceclass.resource.k8s.io/devices": "3", "requests.nvidia.com/gpu": "1"}
    offer = pool_offers(stack, vision)[0]
    # Two 3g slices per GPU, one GPU a node, two nodes: each claim takes a device of its own, whatever the MPS replicas.
    assert (offer.resource, offer.per_node, offer.max_total) == (MIG_CLASS, 2, 4)
    assert tenant_warnings(stack) == []


def test_a_class_quota_above_the_pools_devices_is_warned():
    stack = parse_config(raw({MIG_CLASS: 5}), source="s", stack="dra")
    assert tenant_warnings(stack)[0].startswith(f"tenant vision: quota {MIG_CLASS}: 5 is more than its pools can ever "
                                                f"advertise (4; h100mps: 4 at 2 node(s))")


def test_a_class_of_another_pool_or_the_written_out_key_is_refused():
    found = problems({"gpushare-t4-16gb": 1, f"{MIG_CLASS}.deviceclass.resource.k8s.io/devices": 1})
    assert found["gpushare:tenants[0].quota.gpushare-t4-16gb"] == (
        "none of this tenant's pools advertises gpushare-t4-16gb; they advertise (a pool with allocation dra: its "
        f"DeviceClass, counted in devices): {MIG_CLASS} (h100mps), nvidia.com/gpu (t4plugin)")
    assert found[f"gpushare:tenants[0].quota.{MIG_CLASS}.deviceclass.resource.k8s.io/devices"] == (
        f"write the DeviceClass name only, got '{MIG_CLASS}.deviceclass.resource.k8s.io/devices'; write "
        f"'{MIG_CLASS}' (gpushare adds the quota's .deviceclass.resource.k8s.io/devices suffix)")
