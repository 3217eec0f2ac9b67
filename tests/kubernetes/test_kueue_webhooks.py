"""gpushare's ResourceFlavors, ClusterQueues and Cohorts judged by Kueue v0.19.2's own admission webhooks
(`sigs.k8s.io/kueue/pkg/webhooks`, run by `tools/kueuecheck`): the rules beyond the CRDs (`clusterqueue_webhook.go`
`validateResourceGroups`: a resource and a flavor in one resource group only; `validateFlavorQuotas`: a flavor's
resources in `coveredResources` order; `validateLendingLimit`: lendingLimit at most nominalQuota; `validateLimit`:
no limit without a cohort; `resourceflavor_webhook.go`: node label syntax) accept every object, and refuse
the mistakes those rules exist for."""

from __future__ import annotations

import copy
import json
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpushare.kubernetes.queues import queue_manifests
from gpushare.stackfile.config import parse_config
from tests import go_tools
from tests.kubernetes.test_pool_quotas import adopter_stack
from tests.kubernetes.test_queues import QUEUE_STACK_YAML, load

BUILD = Path(__file__).resolve().parents[2] / "tools" / "kueuecheck" / "build"
JUDGED = ("ResourceFlavor", "ClusterQueue", "Cohort")


@cache
def kueuecheck() -> Path:
    return go_tools.built_or_skip(BUILD, "the Kueue webhook tests", timeout=1800)


def judge(objects: list[dict[str, Any]]) -> dict[tuple[str, str], list[str]]:
    """(kind, name) -> what Kueue's webhooks answer to a create of it (no errors: admitted)."""
    result = subprocess.run([str(kueuecheck())], input=json.dumps(objects), capture_output=True, text=True,
                            timeout=60, check=True)
    return {(r["kind"], r["name"]): r["errors"] for r in json.loads(result.stdout)}


@pytest.fixture(scope="module")
def manifests():
    return [m for m in queue_manifests(load()) if m["kind"] in JUDGED]


def named(obj: dict[str, Any], name: str) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj["metadata"]["name"] = name
    return obj


def test_kueues_webhooks_admit_every_object(manifests):
    verdicts = judge(manifests)
    assert len(verdicts) == len(manifests) == 10  # 6 flavors, 1 cohort, 3 queues
    assert all(errors == [] for errors in verdicts.values()), verdicts


def test_kueues_webhooks_admit_per_pool_guarantees_and_a_cohort_holding_quota_of_its_own():
    """The adopter's design (tests/kubernetes/test_pool_quotas.py): a Cohort with resourceGroups (t4spot's shares no
    tenant is guaranteed) beside ClusterQueues whose flavors carry the per-pool promises."""
    objects = [m for m in queue_manifests(adopter_stack()) if m["kind"] in JUDGED]
    cohort = next(m for m in objects if m["kind"] == "Cohort")
    assert cohort["spec"]["resourceGroups"] == [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
        {"name": "t4spot", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 2}]}]}]
    verdicts = judge(objects)
    assert len(verdicts) == len(objects) and all(errors == [] for errors in verdicts.values()), verdicts


def test_kueues_webhooks_refuse_the_mistakes_the_compiler_avoids(manifests):
    queue = next(m for m in manifests if m["kind"] == "ClusterQueue" and m["metadata"]["name"] == "nlp")
    flavor = next(m for m in manifests if m["kind"] == "ResourceFlavor" and m["metadata"]["name"] == "t4spot")
    broken = []
    # cpu beside a GPU resource as well as in its own group: a resource may be covered once.
    twice = named(queue, "twice")
    group = twice["spec"]["resourceGroups"][0]
    group["coveredResources"].append("cpu")
    for f in group["flavors"]:
        f["resources"].append({"name": "cpu", "nominalQuota": "1"})
    broken.append(twice)
    # The same flavor in two groups.
    shared_flavor = named(queue, "shared-flavor")
    shared_flavor["spec"]["resourceGroups"][1]["flavors"][0]["name"] = "a100"
    broken.append(shared_flavor)
    # A flavor's resources out of coveredResources' order.
    swapped = named(queue, "swapped")
    resources = swapped["spec"]["resourceGroups"][2]["flavors"][0]["resources"]
    resources.reverse()
    broken.append(swapped)
    # Lending more than the guarantee.
    lender = named(queue, "lender")
    lender["spec"]["resourceGroups"][1]["flavors"][0]["resources"][0]["lendingLimit"] = 7
    broken.append(lender)
    # A node label value no node can carry.
    bad_label = named(flavor, "bad-label")
    bad_label["spec"]["nodeLabels"]["gpushare.io/pool"] = "t4 spot"
    broken.append(bad_label)
    verdicts = judge(broken)
    assert "Duplicate value: \"cpu\"" in " ".join(verdicts[("ClusterQueue", "twice")])
    assert "Duplicate value: \"a100\"" in " ".join(verdicts[("ClusterQueue", "shared-flavor")])
    assert "must match the name in coveredResources" in " ".join(verdicts[("ClusterQueue", "swapped")])
    assert "less than or equal to the nominalQuota" in " ".join(verdicts[("ClusterQueue", "lender")])
    assert "spec.nodeLabels: Invalid value: \"t4 spot\"" in " ".join(verdicts[("ResourceFlavor", "bad-label")])


def test_a_lending_limit_above_the_tenants_guarantee_compiles_to_a_cluster_queue_kueue_admits():
    """nlp lends at most 10 shares of t4ts but is guaranteed only 6 there: Kueue's webhook refuses a lendingLimit
    above nominalQuota (`validateLendingLimit`), so the ClusterQueue lends its whole guarantee, 6, and is admitted."""
    raw = yaml.safe_load(QUEUE_STACK_YAML)["config"]
    raw["gpushare:tenants"][1]["queue"]["lendingLimit"] = {"nvidia.com/gpu.shared": 10}
    stack = parse_config(raw, source="stacks/Pulumi.queues.yaml", stack="queues")
    objects = [m for m in queue_manifests(stack) if m["kind"] in JUDGED]
    queue = next(m for m in objects if m["kind"] == "ClusterQueue" and m["metadata"]["name"] == "nlp")
    (t4ts,) = [f for g in queue["spec"]["resourceGroups"] for f in g["flavors"] if f["name"] == "t4ts"]
    assert t4ts["resources"] == [{"name": "nvidia.com/gpu.shared", "nominalQuota": 6, "lendingLimit": 6}]
    verdicts = judge(objects)
    assert verdicts[("ClusterQueue", "nlp")] == [] and all(errors == [] for errors in verdicts.values()), verdicts
