"""`gpushare:queues` and each tenant's `queue:`: defaults, and every mistake reported at once with its key path."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest

from gpushare.errors import ConfigError
from gpushare.kubernetes.queues import queue_manifests
from gpushare.model.stack import Queues, ReclaimWithinCohort, TenantQueue, WithinClusterQueue
from gpushare.stackfile.config import parse_config
from gpushare.stackfile.schema import stack_file_schema
from tests.kubernetes.test_queues import closed, crd_schemas

TENANTS = "gpushare:tenants"
BASE: dict[str, Any] = {
    "azure-native:location": "westeurope",
    "gpushare:cluster": {"name": "shared", "kubernetesVersion": "1.36"},
    "gpushare:operator": {"migStrategy": "mixed"},
    "gpushare:queues": {"enabled": True},
    "gpushare:pools": [
        # 7 x nvidia.com/mig-1g.12gb per node, 2 nodes: 14 at most.
        {"name": "h100mig", "vmSize": "Standard_NC40ads_H100_v5", "mig": "MIG1g", "count": 2},
        # nvidia.com/gpu (not renamed: the pool autoscales), 4 per node, at most 3 nodes: 12.
        {"name": "t4ts", "vmSize": "Standard_NC4as_T4_v3", "sharing": {"strategy": "time-slicing", "replicas": 4},
         "autoscale": {"min": 1, "max": 3}},
    ],
    TENANTS: [{"name": "vision", "pools": ["h100mig", "t4ts"]}, {"name": "nlp", "pools": ["t4ts"]}],
}


def raw_with(queue: Any, queues: Any = None) -> dict[str, Any]:
    raw = copy.deepcopy(BASE)
    raw[TENANTS][0]["queue"] = queue
    if queues is not None:
        raw["gpushare:queues"] = queues
    return raw


def problems(raw: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, source="stacks/Pulumi.test.yaml", stack="test")
    return {p.path: p.message for p in caught.value.problems}


def test_queues_are_off_and_a_tenant_queue_takes_its_defaults_when_unwritten():
    raw = copy.deepcopy(BASE)
    del raw["gpushare:queues"]
    stack = parse_config(raw, source="s", stack="test")
    assert stack.queues == Queues(enabled=False, kueue_version="v0.19.2", fair_sharing=False)
    assert stack.tenants[0].queue == TenantQueue(nominal=None, borrowing_limit=(), lending_limit=(), priority=0,
                                                 reclaim_within_cohort=ReclaimWithinCohort.ANY,
                                                 within_cluster_queue=WithinClusterQueue.LOWER_PRIORITY)


def test_a_written_queue_parses():
    stack = parse_config(raw_with(
        {"nominal": {"nvidia.com/mig-1g.12gb": 7}, "borrowingLimit": {"nvidia.com/gpu": 2},
         "lendingLimit": {"nvidia.com/gpu": 0}, "priority": 100,
         "preemption": {"reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "Never"}},
        {"enabled": True, "kueueVersion": "v0.19.2", "fairSharing": True}), source="s", stack="test")
    assert stack.queues == Queues(enabled=True, kueue_version="v0.19.2", fair_sharing=True)
    assert stack.tenants[0].queue == TenantQueue(
        nominal=(("nvidia.com/mig-1g.12gb", 7),), borrowing_limit=(("nvidia.com/gpu", 2),),
        lending_limit=(("nvidia.com/gpu", 0),), priority=100,
        reclaim_within_cohort=ReclaimWithinCohort.LOWER_PRIORITY, within_cluster_queue=WithinClusterQueue.NEVER)


def test_every_mistake_is_reported_at_once_with_its_path():
    found = problems(raw_with(
        {"nominal": {"nvidia.com/mig-1g.12gb": 15, "nvidia.com/gpu.shared": 1},
         "borrowingLimit": {"nvidia.com/gpu": -1},
         "lendingLimit": "all", "priority": "high", "preemption": {"reclaimWithinCohort": "any", "sometimes": 1},
         "weight": 2},
        {"enabled": "yes", "kueueVersion": "0.19.2", "fairshare": True}))
    path = f"{TENANTS}[0].queue"
    assert "more than this tenant's pools hold at their max (14 nvidia.com/mig-1g.12gb)" in \
        found[f"{path}.nominal.nvidia.com/mig-1g.12gb"]
    assert "none of this tenant's pools advertises nvidia.com/gpu.shared" in \
        found[f"{path}.nominal.nvidia.com/gpu.shared"]
    assert "must be 0 or more" in found[f"{path}.borrowingLimit.nvidia.com/gpu"]
    assert "expected a mapping of advertised resource to units" in found[f"{path}.lendingLimit"]
    assert "expected a whole number from 0 to 1000000000" in found[f"{path}.priority"]
    assert "write 'Any'" in found[f"{path}.preemption.reclaimWithinCohort"]
    assert "unknown key" in found[f"{path}.preemption.sometimes"]
    assert "unknown key" in found[f"{path}.weight"]
    assert "expected true or false" in found["gpushare:queues.enabled"]
    assert "must be a Kueue release such as v0.19.2" in found["gpushare:queues.kueueVersion"]
    assert "did you mean 'fairSharing'" in found["gpushare:queues.fairshare"]
    assert len(found) == 11


def test_nominal_up_to_what_the_pools_hold_at_max_is_accepted():
    stack = parse_config(raw_with({"nominal": {"nvidia.com/mig-1g.12gb": 14, "nvidia.com/gpu": 12}}),
                         source="s", stack="test")
    assert dict(stack.tenants[0].queue.nominal) == {"nvidia.com/mig-1g.12gb": 14, "nvidia.com/gpu": 12}


def test_a_flavor_that_cannot_hold_its_pools_taints_is_refused():
    """Kueue's ResourceFlavor CRD holds at most 8 tolerations; this pool's nodes carry 9 taints."""
    raw = copy.deepcopy(BASE)
    raw["gpushare:pools"][0]["taints"] = [f"team{i}=x:NoSchedule" for i in range(7)]
    assert "a Kueue ResourceFlavor holds at most 8 tolerations" in problems(raw)["gpushare:pools[0].taints"]
    raw["gpushare:queues"]["enabled"] = False
    assert parse_config(raw, source="s", stack="test").queues.enabled is False


def test_a_pool_with_exactly_the_most_taints_a_flavor_holds_is_accepted_and_its_flavor_fits_kueues_crd():
    """8 taints (the GPU taint, vision's, 6 of the pool's own): the ResourceFlavor's 8 tolerations are Kueue's most."""
    raw = copy.deepcopy(BASE)
    raw["gpushare:pools"][0]["taints"] = [f"team{i}=x:NoSchedule" for i in range(6)]
    stack = parse_config(raw, source="s", stack="test")
    (flavor,) = [m for m in queue_manifests(stack) if m["kind"] == "ResourceFlavor"
                 and m["metadata"]["name"] == "h100mig"]
    assert len(flavor["spec"]["tolerations"]) == 8
    jsonschema.Draft7Validator(closed(crd_schemas()["v1beta2/ResourceFlavor"]["schema"])).validate(flavor)


def test_the_schema_describes_the_queue_keys():
    schema = stack_file_schema()
    config = schema["properties"]["config"]["properties"]
    queues = config["gpushare:queues"]["anyOf"][0]["properties"]
    assert set(queues) == {"enabled", "kueueVersion", "fairSharing", "borrowingByDesign"}
    tenant = config[TENANTS]["anyOf"][0]["items"]["properties"]
    queue = tenant["queue"]["anyOf"][0]["properties"]
    assert set(queue) == {"nominal", "borrowingLimit", "lendingLimit", "priority", "preemption"}
