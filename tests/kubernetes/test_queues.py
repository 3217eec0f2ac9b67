"""The Kueue objects gpushare compiles (`gpushare.kubernetes.queues`) for three tenants on shared and dedicated pools:
what each tenant is guaranteed and may borrow, that borrowing stays inside the tenant boundary, that each flavor
matches its pool's nodes, and that every object is valid for Kueue v0.19.2's CRD schemas
(`../shared/data/kueue-v0.19.2-crd-schemas.json`, read with a real JSON Schema validator). Their CEL rules are
judged by the real API server (tests/controlplane/test_queues_on_a_real_control_plane.py) and Kueue's own webhooks by
its Go code (test_kueue_webhooks.py)."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
import yaml

from gpushare.kubernetes.queues import (
    CPU_MEMORY_FLAVOR,
    cluster_queue,
    cohorts,
    flavor_quotas,
    queue_manifests,
    queue_plan,
    queue_warnings,
)
from gpushare.sharing.operator_values import toleration
from gpushare.sharing.pool_facts import derive_pool_facts
from gpushare.sharing.queue_flavor import MAX_FLAVOR_LABELS
from gpushare.stackfile.config import parse_config
from tests.upstream_data import SHARED_DATA, upstream_file

CRD_SCHEMAS = SHARED_DATA / "kueue-v0.19.2-crd-schemas.json"

QUEUE_STACK_YAML = """
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: shared, kubernetesVersion: "1.36"}
  gpushare:operator: {migStrategy: mixed}
  gpushare:queues: {enabled: true}
  gpushare:pools:
    - {name: h100mig, vmSize: Standard_NC40ads_H100_v5, mig: MIG1g, count: 2}
    - {name: a100, vmSize: Standard_NC24ads_A100_v4, count: 2}
    - {name: t4ts, vmSize: Standard_NC4as_T4_v3, sharing: {strategy: time-slicing, replicas: 4}, count: 3}
    - {name: t4spot, vmSize: Standard_NC64as_T4_v3, spot: {}, count: 2}
    - {name: idle, vmSize: Standard_NC4as_T4_v3}
  gpushare:tenants:
    - name: vision
      pools: [h100mig, t4ts]
      quota: {nvidia.com/mig-1g.12gb: 14}
      queue: {borrowingLimit: {nvidia.com/gpu.shared: 2}, priority: 100}
    - name: nlp
      pools: [a100, t4ts, t4spot]
      queue: {lendingLimit: {nvidia.com/gpu.shared: 4}}
    - name: speech
      pools: [t4spot]
      queue: {preemption: {reclaimWithinCohort: LowerPriority}}
"""
"""h100mig is vision's (14 MIG slices), a100 nlp's (2 GPUs); t4ts (12 time-sliced T4 shares) vision and nlp share;
t4spot (8 T4s on Spot) nlp and speech share; idle no tenant lists. All three tenants form one cohort: vision and
speech are connected through nlp. No pool autoscales: under `mixed`, and with t4ts renamed to
nvidia.com/gpu.shared, the cluster autoscaler would count those nodes unready (gpushare.sharing.autoscaler_readiness).
"""


TWO_POOLS_YAML = """
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: shared}
  gpushare:queues: {enabled: true}
  gpushare:pools:
    - {name: t4a, vmSize: Standard_NC4as_T4_v3, sharing: {strategy: time-slicing, replicas: 4}, count: 2}
    - {name: t4b, vmSize: Standard_NC4as_T4_v3, sharing: {strategy: time-slicing, replicas: 4}, count: 2}
  gpushare:tenants:
    - {name: vision, pools: [t4a, t4b], quota: {nvidia.com/gpu.shared: 6}}
    - {name: nlp, pools: [t4a, t4b]}
"""
"""Two pools of one resource (8 shares each) both tenants list: vision's quota of 6 is guaranteed 4 on t4a and 2 on
t4b; nlp lends its 4 on each, so Kueue lets vision borrow 4 on each pool, 8 in all."""


def load(text: str = QUEUE_STACK_YAML, **changes: Any):
    raw = yaml.safe_load(text)["config"]
    raw.update(changes)
    return parse_config(raw, source="stacks/Pulumi.queues.yaml", stack="queues")


@pytest.fixture(scope="module")
def stack():
    return load()


def by_kind(manifests: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {m["metadata"]["name"]: m for m in manifests if m["kind"] == kind}


def quotas(stack, tenant: str) -> dict[str, tuple[int, int | None, int | None]]:
    """pool -> (nominal, borrowingLimit, lendingLimit) in the tenant's ClusterQueue."""
    t = next(t for t in stack.tenants if t.name == tenant)
    return {q.pool: (q.nominal, q.borrowing_limit, q.lending_limit) for q in flavor_quotas(stack, t)}


def test_tenants_connected_by_shared_pools_form_one_cohort_and_a_lone_tenant_none():
    stack = load()
    assert [(name, [t.name for t in members]) for name, members in cohorts(stack)] == [
        ("gpushare-vision", ["vision", "nlp", "speech"])]
    raw = yaml.safe_load(QUEUE_STACK_YAML)["config"]
    raw["gpushare:tenants"][2]["pools"] = ["idle"]  # speech now shares nothing
    raw["gpushare:tenants"][2]["queue"] = {"borrowingLimit": {"nvidia.com/gpu": 1}}
    apart = parse_config(raw, source="s", stack="queues")
    assert [[t.name for t in members] for _, members in cohorts(apart)] == [["vision", "nlp"]]
    queue = cluster_queue(apart, apart.tenants[2])
    assert "cohortName" not in queue["spec"]
    assert all("borrowingLimit" not in r and "lendingLimit" not in r for g in queue["spec"]["resourceGroups"]
               for f in g["flavors"] for r in f["resources"])
    assert any("tenant speech: shares no pool with another tenant" in w for w in queue_warnings(apart))


def test_guarantees_come_from_the_quota_or_an_even_share_and_dedicated_pools_are_never_lent(stack):
    # vision: its quota of 14 MIG slices on its own h100mig, half of t4ts (no quota there).
    assert quotas(stack, "vision") == {"h100mig": (14, 0, 0), "t4ts": (6, 2, None)}
    # nlp: its whole a100, half of t4ts (lending at most 4 of those 6), half of t4spot.
    assert quotas(stack, "nlp") == {"a100": (2, 0, 0), "t4ts": (6, None, 4), "t4spot": (4, None, None)}
    assert quotas(stack, "speech") == {"t4spot": (4, None, None)}


def test_a_written_nominal_fills_dedicated_pools_first_then_shared_ones():
    raw = yaml.safe_load(QUEUE_STACK_YAML)["config"]
    raw["gpushare:tenants"][1]["queue"] = {"nominal": {"nvidia.com/gpu": 7, "nvidia.com/gpu.shared": 0}}
    stack = parse_config(raw, source="s", stack="queues")
    # 2 on its a100, then 5 of t4spot's 8 (its even share, 4, and one more).
    assert quotas(stack, "nlp") == {"a100": (2, 0, 0), "t4spot": (5, None, None), "t4ts": (0, None, None)}
    assert any("pool t4spot: the queues guarantee nlp 5 + speech 4 = 9 nvidia.com/gpu but it holds at most 8" in w
               for w in queue_warnings(stack))


def test_a_queue_lists_only_its_tenants_pools_so_borrowing_never_crosses_the_tenant_boundary(stack):
    manifests = queue_manifests(stack)
    queues = by_kind(manifests, "ClusterQueue")
    listed = {name: {f["name"] for g in q["spec"]["resourceGroups"] for f in g["flavors"]} - {CPU_MEMORY_FLAVOR}
              for name, q in queues.items()}
    assert listed == {tenant.name: set(tenant.pools) for tenant in stack.tenants}
    assert all("idle" not in pools for pools in listed.values())
    for name, queue in queues.items():
        assert queue["spec"]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": name}}
    local = by_kind(manifests, "LocalQueue")
    assert {(q["metadata"]["namespace"], q["spec"]["clusterQueue"]) for q in local.values()} == {
        (t.name, t.name) for t in stack.tenants}


def test_each_flavor_selects_its_pools_nodes_and_tolerates_every_taint_they_carry(stack):
    flavors = by_kind(queue_manifests(stack), "ResourceFlavor")
    for name, facts in derive_pool_facts(stack).items():
        spec = flavors[name]["spec"]
        assert spec["nodeLabels"].items() <= facts.carried_labels.items()
        assert len(spec["nodeLabels"]) <= MAX_FLAVOR_LABELS  # the CRD's limit, which no stack can reach
        assert spec["nodeLabels"]["gpushare.io/pool"] == name
        assert spec["tolerations"] == [toleration(t) for t in facts.tolerated_taints]
    # AKS's label for Spot nodes, not the `scalesetpriority` label AKS deprecated (aks-docs use-labels.md)...
    assert flavors["t4spot"]["spec"]["nodeLabels"] == {"gpushare.io/pool": "t4spot",
                                                       "kubernetes.azure.com/priority": "spot"}
    # ...while the taint AKS adds keeps its key.
    assert {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot",
            "effect": "NoSchedule"} in flavors["t4spot"]["spec"]["tolerations"]
    assert {"key": "gpushare.io/tenant", "operator": "Equal", "value": "vision",
            "effect": "NoSchedule"} in flavors["h100mig"]["spec"]["tolerations"]
    assert flavors[CPU_MEMORY_FLAVOR]["spec"] == {}


def test_resource_groups_cover_each_gpu_resource_once_and_cpu_memory_apart(stack):
    queue = by_kind(queue_manifests(stack), "ClusterQueue")["nlp"]
    groups = queue["spec"]["resourceGroups"]
    assert [g["coveredResources"] for g in groups] == [["nvidia.com/gpu"], ["nvidia.com/gpu.shared"],
                                                       ["cpu", "memory"]]
    assert [f["name"] for f in groups[0]["flavors"]] == ["a100", "t4spot"]  # its own pool first
    # 3/4 of the nodes at max: a100 2 x 24 vCPU/220 GiB, t4ts 3 x 4/28, t4spot 2 x 64/440.
    assert groups[2]["flavors"][0]["resources"] == [{"name": "cpu", "nominalQuota": "141"},
                                                    {"name": "memory", "nominalQuota": "1053Gi"}]


def test_warnings_name_a_quota_that_caps_borrowing_and_a_limit_above_what_the_cohort_lends():
    raw = yaml.safe_load(QUEUE_STACK_YAML)["config"]
    raw["gpushare:tenants"][0]["quota"] = {"nvidia.com/gpu.shared": 6}
    raw["gpushare:tenants"][0]["queue"]["borrowingLimit"] = {"nvidia.com/gpu.shared": 5}
    warnings = queue_warnings(parse_config(raw, source="s", stack="queues"))
    assert ("tenant vision: queue.borrowingLimit 5 nvidia.com/gpu.shared on pool t4ts is more than the other "
            "tenants there lend (4)") in warnings
    assert any(w.startswith("tenant vision: its quota of nvidia.com/gpu.shared (6) refuses its pods beyond 6 units")
               for w in warnings)


def test_a_quota_below_what_the_queue_reaches_over_two_pools_together_is_a_warning():
    """Each pool alone reaches 8 shares (its capacity: no borrowingLimit), under the quota of 10; both reach 16."""
    stack = load(TWO_POOLS_YAML.replace("quota: {nvidia.com/gpu.shared: 6}", "quota: {nvidia.com/gpu.shared: 10}"))
    assert ("tenant vision: its quota of nvidia.com/gpu.shared (10) refuses its pods beyond 10 units, borrowed or "
            "not, where its queue reaches 16: raise the quota or drop it to let it borrow, or set "
            "gpushare:queues.borrowingByDesign: true if the quota is the cap you mean") in queue_warnings(stack)


def test_a_borrowing_limit_equal_to_what_the_cohort_lends_is_no_warning():
    raw = yaml.safe_load(QUEUE_STACK_YAML)["config"]
    raw["gpushare:tenants"][0]["queue"]["borrowingLimit"] = {"nvidia.com/gpu.shared": 4}  # nlp lends 4 on t4ts
    warnings = queue_warnings(parse_config(raw, source="s", stack="queues"))
    assert not any("more than the other tenants there lend" in w for w in warnings), warnings


def test_nothing_is_made_when_queues_are_off_and_a_written_queue_is_a_warning():
    stack = load(**{"gpushare:queues": {"enabled": False}})
    assert queue_manifests(stack) == []
    assert queue_plan(stack)["tenants"] == []
    assert queue_warnings(stack) == ["tenants vision, nlp, speech: `queue:` is read only when gpushare:queues.enabled "
                                     "is true; no queue is made"]


def test_an_unverified_kueue_version_is_a_warning():
    stack = load(**{"gpushare:queues": {"enabled": True, "kueueVersion": "v0.20.0"}})
    assert any("kueueVersion v0.20.0 is not one gpushare verified" in w for w in queue_warnings(stack))


def test_the_plan_shows_who_is_guaranteed_what_and_who_may_borrow(stack):
    plan = queue_plan(stack)
    assert plan["cohorts"] == [{"name": "gpushare-vision", "tenants": ["vision", "nlp", "speech"],
                                "sharedPools": ["t4ts", "t4spot"], "ownQuota": []}]
    vision = plan["tenants"][0]
    assert vision["flavors"][0] == {"pool": "h100mig", "resource": "nvidia.com/mig-1g.12gb", "capacity": 14,
                                    "nominal": 14, "borrowingLimit": 0, "lendingLimit": 0, "dedicated": True}
    assert json.loads(json.dumps(plan)) == plan
    assert len(plan["objects"]) == 6 + 1 + 3 + 3 + 3  # flavors (5 pools + cpu/memory), cohort, 3 x (class, CQ, LQ)


# --- Kueue's CRD schemas -------------------------------------------------------------------------------------------


def crd_schemas() -> dict[str, Any]:
    return json.loads(upstream_file(CRD_SCHEMAS.name, "Kueue's CRD schemas").read_text())["schemas"]


def closed(schema: Any) -> Any:
    """The schema with every object that lists its properties closed to others: the API server prunes a field its
    structural schema does not declare (silently dropping a misspelt one), so an object must use declared ones only."""
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: closed(value) for key, value in schema.items()}
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def test_every_object_is_valid_for_kueues_crd_schemas(stack):
    schemas = crd_schemas()
    manifests = queue_manifests(stack)
    assert {m["kind"] for m in manifests} == {"ResourceFlavor", "Cohort", "WorkloadPriorityClass", "ClusterQueue",
                                              "LocalQueue"}
    for manifest in manifests:
        assert manifest["apiVersion"] == "kueue.x-k8s.io/v1beta2"
        entry = schemas[f"v1beta2/{manifest['kind']}"]
        assert ("namespace" in manifest["metadata"]) == (entry["scope"] == "Namespaced")
        jsonschema.Draft7Validator(closed(entry["schema"])).validate(manifest)


def test_the_schema_check_catches_what_kueue_would_refuse_or_drop(stack):
    """The check above can fail: a misspelt field, a string where an integer is due, a missing required field."""
    schemas = crd_schemas()
    queue = copy.deepcopy(by_kind(queue_manifests(stack), "ClusterQueue")["nlp"])
    validator = jsonschema.Draft7Validator(closed(schemas["v1beta2/ClusterQueue"]["schema"]))
    misspelt = copy.deepcopy(queue)
    misspelt["spec"]["cohort"] = misspelt["spec"].pop("cohortName")
    no_quota = copy.deepcopy(queue)
    del no_quota["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]
    bad_strategy = copy.deepcopy(queue)
    bad_strategy["spec"]["queueingStrategy"] = "FIFO"
    for broken in (misspelt, no_quota, bad_strategy):
        assert not validator.is_valid(broken)


def test_verify_names_a_missing_queue_and_reports_nothing_with_queues_off(stack):
    from gpushare.kubernetes.queue_status import queue_statuses

    statuses = queue_statuses(stack, {})
    assert [s.problem for s in statuses][0] == ("tenant vision: its ClusterQueue vision is not in the cluster; run "
                                                "`pulumi up`")
    assert queue_statuses(load(**{"gpushare:queues": {"enabled": False}}), {}) == []
