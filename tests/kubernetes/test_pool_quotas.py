"""Per-pool quotas (`quota.pools`, issue 41): written in the stack file, refused with every mistake at once, shown per
pool in the pool's own units, compiled to Kueue's nominalQuota per pool's flavor, no listed pool left unreachable,
and warnings a careful adopter can meet. The adopter's design from the issue is `ADOPTER_YAML`."""

from __future__ import annotations

import contextlib
import copy
import io
import json
from typing import Any

import jsonschema
import pytest
import yaml

from gpushare.cli import main
from gpushare.errors import ConfigError
from gpushare.kubernetes.queues import queue_manifests, queue_plan, queue_warnings
from gpushare.kubernetes.tenants import tenant_warnings
from gpushare.plan.stack_plan import build_plan
from gpushare.review.queue_changes import queue_plan_lines
from gpushare.stackfile.config import parse_config
from tests.kubernetes.test_queues import closed, crd_schemas

ADOPTER_YAML = """
config:
  azure-native:location: westeurope
  gpushare:cluster:
    name: adopter
    kubernetesVersion: "1.36"
    access: {deployers: [{objectId: 3f2504e0-4f89-41d3-9a0c-0305e82c3301, type: ServicePrincipal}]}
  gpushare:queues: {enabled: true, borrowingByDesign: true}
  gpushare:pools:
    - {name: a100mig, vmSize: Standard_NC24ads_A100_v4, mig: MIG3g, count: 2}
    - {name: h100mig, vmSize: Standard_NC40ads_H100_v5, mig: MIG1g, autoscale: {min: 0, max: 4}}
    - {name: t4spot, vmSize: Standard_NC4as_T4_v3, spot: {}, sharing: {strategy: time-slicing, replicas: 4}, count: 2}
  gpushare:tenants:
    - {name: vision, pools: [a100mig, t4spot], quota: {pools: {a100mig: 2, t4spot: 2}}}
    - {name: nlp, pools: [a100mig, t4spot], quota: {pools: {a100mig: 2, t4spot: 2}}}
    - {name: speech, pools: [h100mig, t4spot], quota: {pools: {h100mig: 28, t4spot: 2}}}
"""
"""The issue's adopter: two teams borrowing on one A100 MIG 3g.40gb pool (2 nodes x 2 slices), a third on its own H100
MIG 1g pool autoscaled 0-4 (7 slices a node, 28 at most), and a Spot T4 time-slicing pool for all three (2 nodes x 4
shares). One pool autoscales, so every pool advertises nvidia.com/gpu (the autoscaler counts renamed resources
unready): only the per-pool quotas tell an A100 slice from a quarter-T4."""


def adopter_raw(extra_tenants: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    raw = yaml.safe_load(ADOPTER_YAML)["config"]
    raw["gpushare:tenants"] += extra_tenants or []
    return raw


def adopter_stack(extra_tenants: list[dict[str, Any]] | None = None):
    return parse_config(adopter_raw(extra_tenants), source="stacks/Pulumi.adopter.yaml", stack="adopter")


def problems(raw: dict[str, Any]) -> dict[str, str]:
    """What the stack file's validation, or else the plan (which weighs each pool's capacity), refuses."""
    with pytest.raises(ConfigError) as error:
        build_plan(parse_config(raw, source="stacks/Pulumi.adopter.yaml", stack="adopter"))
    return {p.path: p.message for p in error.value.problems}


def plan_json(tmp_path, raw: dict[str, Any]) -> dict[str, Any]:
    path = tmp_path / "Pulumi.adopter.yaml"
    path.write_text(yaml.safe_dump({"config": raw}))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", str(path), "--json"]) == 0
    return json.loads(out.getvalue())


def by_kind(stack, kind: str) -> dict[str, dict[str, Any]]:
    return {m["metadata"]["name"]: m for m in queue_manifests(stack) if m["kind"] == kind}


def nominal(queue: dict[str, Any]) -> dict[str, int]:
    """flavor -> nominalQuota of each GPU resource group of a ClusterQueue or Cohort."""
    return {f["name"]: f["resources"][0]["nominalQuota"] for g in queue["spec"].get("resourceGroups", [])
            if g["coveredResources"] != ["cpu", "memory"] for f in g["flavors"]}


def test_every_mistake_in_per_pool_quotas_is_reported_at_once_naming_the_key_value_and_fix():
    raw = adopter_raw()
    raw["gpushare:tenants"][0]["quota"] = {"pools": {"a100mig": 5, "t4spto": 1, "h100mig": 1}}
    raw["gpushare:tenants"][1]["quota"] = {"pools": {"a100mig": -1, "t4spot": 1.5}}
    found = problems(raw)
    assert found == {
        "gpushare:tenants[0].quota.pools.a100mig":
            "5 is more than pool a100mig can ever hold: 4 nvidia.com/gpu (each a MIG 3g.40gb slice of A100 80GB; 2 "
            "per node x 2 node(s) at its max); lower it to at most 4 or raise the pool's count or autoscale max",
        "gpushare:tenants[0].quota.pools.t4spto":
            "no pool 't4spto' in gpushare:pools (did you mean 't4spot'?); the tenant's pools: a100mig, t4spot",
        "gpushare:tenants[0].quota.pools.h100mig":
            "pool h100mig is not one of this tenant's pools (a100mig, t4spot): its pods may not run there; add "
            "h100mig to its pools or remove it here",
        "gpushare:tenants[1].quota.pools.a100mig": "must be 0 or more, got -1",
        "gpushare:tenants[1].quota.pools.t4spot": "expected a whole number 0 or more, got a number 1.5",
    }


def test_the_command_names_the_file_and_exits_2(tmp_path, capsys):
    raw = adopter_raw()
    raw["gpushare:tenants"][2]["quota"]["pools"]["h100mig"] = 29
    path = tmp_path / "Pulumi.adopter.yaml"
    path.write_text(yaml.safe_dump({"config": raw}))
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "gpushare:tenants[2].quota.pools.h100mig: 29 is more than pool h100mig can ever " \
                                "hold: 28 nvidia.com/gpu (each a MIG 1g.12gb slice of H100 NVL 94GB; 7 per node x 4 " \
                                "node(s) at its max)" in err


def test_a_per_pool_promise_needs_queues_and_is_the_guarantee():
    raw = adopter_raw()
    raw["gpushare:queues"] = {"enabled": False}
    assert problems(raw)["gpushare:tenants[0].quota.pools"].startswith(
        "a promise per pool is kept by Kueue's queues, which are off: set gpushare:queues.enabled: true")
    raw = adopter_raw()
    raw["gpushare:tenants"][0]["queue"] = {"nominal": {"nvidia.com/gpu": 3}}
    assert problems(raw)["gpushare:tenants[0].queue.nominal"] == (
        "{'nvidia.com/gpu': 3} beside quota.pools {'a100mig': 2, 't4spot': 2}: the per-pool quota is the tenant's "
        "guarantee on each pool; remove queue.nominal, or remove quota.pools")


def test_kueue_guarantees_each_tenant_its_promise_on_each_pools_flavor():
    stack = adopter_stack()
    queues = by_kind(stack, "ClusterQueue")
    # One resource name, three kinds of device: the flavors (one per pool) keep them apart.
    assert {name: nominal(q) for name, q in queues.items()} == {
        "vision": {"a100mig": 2, "t4spot": 2}, "nlp": {"a100mig": 2, "t4spot": 2},
        "speech": {"h100mig": 28, "t4spot": 2}}
    assert set(by_kind(stack, "ResourceFlavor")) == {"a100mig", "h100mig", "t4spot", "gpushare-cpu-memory"}
    # t4spot holds 8 shares, the guarantees 6: the cohort holds the other 2 and lends them to all three.
    assert nominal(by_kind(stack, "Cohort")["gpushare-vision"]) == {"t4spot": 2}


def test_a_pool_no_tenant_is_guaranteed_belongs_to_the_cohort_not_to_nobody():
    """The issue's stranded pool: with quotas alone the default guarantee went to each tenant's first pools and the
    shared T4 pool was guaranteed 0 to everyone, so nobody lent it and Kueue admitted nothing there."""
    raw = adopter_raw()
    raw["gpushare:tenants"][0]["quota"] = {"pools": {"a100mig": 2}}
    raw["gpushare:tenants"][1]["quota"] = {"pools": {"a100mig": 2}}
    raw["gpushare:tenants"][2]["quota"] = {"pools": {"h100mig": 28}}
    stack = parse_config(raw, source="s", stack="adopter")
    assert {name: nominal(q)["t4spot"] for name, q in by_kind(stack, "ClusterQueue").items()} == {
        "vision": 0, "nlp": 0, "speech": 0}
    assert nominal(by_kind(stack, "Cohort")["gpushare-vision"]) == {"t4spot": 8}


def test_a_listed_pool_no_queue_can_reach_is_refused_naming_the_pool_and_the_fix():
    raw = adopter_raw()
    raw["gpushare:tenants"][2]["quota"]["pools"]["h100mig"] = 0  # speech's own pool: never lent, nobody else lists it
    assert problems(raw) == {"gpushare:pools[1]": (
        "pool h100mig is reachable through no queue: its tenants (speech) are guaranteed none of it and none may "
        "borrow it (a pool only one tenant lists is never lent, a borrowingLimit of 0 borrows nothing), so Kueue "
        "admits nothing there; give a tenant a guarantee on it (quota.pools.h100mig: N, or queue.nominal), let one "
        "borrow it (drop queue.borrowingLimit: 0), or remove h100mig from the tenants' pools")}
    raw = adopter_raw()
    for tenant in raw["gpushare:tenants"]:
        tenant["quota"]["pools"].pop("t4spot")
        tenant["queue"] = {"borrowingLimit": {"nvidia.com/gpu": 0}}
    assert list(problems(raw)) == ["gpushare:pools[2]"]


def test_the_plan_shows_each_tenants_promise_per_pool_in_the_pools_units_and_who_enforces_it(tmp_path):
    plan = plan_json(tmp_path, adopter_raw())
    vision = next(t for t in plan["tenants"] if t["name"] == "vision")
    assert vision["poolQuota"] == {"a100mig": 2, "t4spot": 2}
    assert [(p["pool"], p["units"], p["unit"]) for p in vision["promises"]] == [
        ("a100mig", 2, "MIG 3g.40gb slice of A100 80GB"),
        ("t4spot", 2, "1/4 of T4 16GB GPU (time-slicing, 4 replicas)")]
    assert vision["enforcement"]["gpuPodsQueued"] and vision["enforcement"]["unenforced"] is None
    assert vision["podLabels"] == {"kueue.x-k8s.io/queue-name": "vision"}
    speech = next(t for t in plan["tenants"] if t["name"] == "speech")
    assert speech["promises"][0]["unit"] == "MIG 1g.12gb slice of H100 NVL 94GB"
    cohort = plan["queues"]["cohorts"][0]
    assert cohort["ownQuota"] == [{"pool": "t4spot", "resource": "nvidia.com/gpu", "units": 2}]


def test_the_adopters_design_plans_with_no_warning_it_cannot_act_on(tmp_path):
    warnings = plan_json(tmp_path, adopter_raw())["warnings"]
    about_promises = [w for w in warnings if any(word in w for word in ("quota", "guarantee", "borrow", "promise"))]
    assert about_promises == []
    # What is left is each a fact with its fix about the hardware or the cluster, none about the design's sharing.
    assert [w.split(":")[0] for w in warnings] == [
        "pool a100mig", "pool a100mig", "pool t4spot", "pool t4spot",
        "every GPU pool is listed by a tenant, so every namespace but the tenants' (vision, nlp, speech) and "
        "kube-system, gpu-operator has no GPU pool", "Pod Security"]


def test_borrowing_is_stated_once_per_pool_with_its_arithmetic_unless_declared_by_design():
    raw = adopter_raw()
    raw["gpushare:queues"] = {"enabled": True}
    stack = parse_config(raw, source="s", stack="adopter")
    warnings = queue_warnings(stack) + tenant_warnings(stack)
    borrowing = [w for w in warnings if "borrow" in w]
    assert [w.split(":")[0] for w in borrowing] == ["pool a100mig", "pool t4spot"]
    assert borrowing[0] == (
        "pool a100mig: tenants borrow beyond their guarantees (vision 2 guaranteed + up to 2 borrowed, nlp 2 "
        "guaranteed + up to 2 borrowed; of 4 (2 per node x 2 node(s); a unit is MIG 3g.40gb slice of A100 80GB)): "
        "borrowed work is preempted when a lender needs its guarantee back; set gpushare:queues.borrowingByDesign: "
        "true if that is the design, or queue.borrowingLimit: 0 where a tenant should not borrow")
    assert "the cohort holds 2 no tenant is guaranteed" in borrowing[1]


def test_quotas_that_sum_past_a_pool_are_no_warning_beside_queues_that_borrow():
    """The issue's pair that could not both be met: 'the quotas promise 8 on a pool of at most 4: lower the quotas'
    beside 'its quota refuses its pods beyond 6 where its queue reaches 8: raise the quota'. With queues the promise
    is the guarantee, weighed once per pool; quotas are caps."""
    raw = adopter_raw()
    for tenant in raw["gpushare:tenants"][:2]:
        tenant["quota"]["nvidia.com/gpu"] = 6  # each: 2 A100 slices + 2 T4 shares guaranteed, the rest borrowed
    stack = parse_config(raw, source="s", stack="adopter")
    warnings = queue_warnings(stack) + tenant_warnings(stack)
    assert not any("lower the quotas" in w for w in warnings), warnings
    assert not any("raise the quota" in w for w in warnings), warnings
    # Over-promised guarantees are still stated, once, per pool.
    raw = copy.deepcopy(raw)
    raw["gpushare:tenants"][1]["quota"]["pools"]["a100mig"] = 3
    over = [w for w in queue_warnings(parse_config(raw, source="s", stack="adopter")) if "guarantee" in w]
    assert over == [
        "pool a100mig: the queues guarantee vision 2 + nlp 3 = 5 nvidia.com/gpu but it holds at most 4 (2 per node x "
        "2 node(s); a unit is MIG 3g.40gb slice of A100 80GB): a tenant may wait for its guarantee; lower the "
        "guarantees (quota.pools, queue.nominal) to 4 in all or raise the pool's max"]


def test_the_adopters_queue_objects_are_valid_for_kueues_crd_schemas():
    schemas = crd_schemas()
    for manifest in queue_manifests(adopter_stack()):
        jsonschema.Draft7Validator(closed(schemas[f"v1beta2/{manifest['kind']}"]["schema"])).validate(manifest)


def test_the_text_plan_says_each_promise_per_pool_and_which_layer_holds_it(tmp_path, capsys):
    path = tmp_path / "Pulumi.adopter.yaml"
    raw = adopter_raw([{"name": "ops", "pools": ["t4spot"]}])
    path.write_text(yaml.safe_dump({"config": raw}))
    assert main(["plan", str(path)]) == 0
    text = capsys.readouterr().out
    assert ("    guaranteed per pool (Kueue, ClusterQueue vision): a100mig 2 x MIG 3g.40gb slice of A100 80GB; t4spot "
            "2 x 1/4 of T4 16GB GPU (time-slicing, 4 replicas)\n    its GPU pods must go through its LocalQueue "
            "(vision)\n") in text
    # ops states no quota.pools: its default guarantee, an even share of t4spot's 8, and what no layer holds.
    assert ("    guaranteed per pool (Kueue, ClusterQueue ops): t4spot 2 x 1/4 of T4 16GB GPU (time-slicing, 4 "
            "replicas)\n    not enforced: a GPU pod outside its LocalQueue (ops) uses no guarantee and "
            "is held only by its quota and the pool binding; state quota.pools to require the queue\n") in text
    assert "        kueue.x-k8s.io/queue-name: vision\n" in text  # the pod snippet names the queue
    # The four guarantees on t4spot (2 each) take all 8 shares: the cohort holds none of its own.
    assert "holds what no tenant is guaranteed" not in text


def test_the_text_plan_says_what_the_cohort_holds_of_its_own():
    lines = queue_plan_lines(queue_plan(adopter_stack()))
    assert ("  cohort gpushare-vision holds what no tenant is guaranteed, lent to its tenants: pool t4spot: 2 "
            "nvidia.com/gpu") in lines


def test_a_quota_below_the_guarantees_is_stated_with_the_sum_whatever_the_design():
    raw = adopter_raw()
    raw["gpushare:tenants"][0]["quota"]["nvidia.com/gpu"] = 3
    warnings = queue_warnings(parse_config(raw, source="s", stack="adopter"))
    assert ("tenant vision: its quota of nvidia.com/gpu (3) refuses pods within its queue's guarantee (a100mig 2 + "
            "t4spot 2 = 4): raise the quota to 4 or more, or drop it") in warnings
