"""Tenants through the real program and `plan`: dedicated pools tainted, the operator tolerating them, tenants'
objects on the cluster's provider, and the plan's `tenants` list with a pod the policy admits."""

from __future__ import annotations

import json

import pytest

from gpushare.cli import main
from gpushare.kubernetes.tenant_objects import tenant_manifests
from gpushare.stackfile.config import load_stack_file
from gpushare.stackfile.project import resolve_stack_file
from tests.kubernetes.apiserver_admission import plugin_cluster
from tests.stack_files import write_stack

AGENT_POOL = "azure-native:containerservice:AgentPool"
RELEASE = "kubernetes:helm.sh/v3:Release"
VISION_TAINT = "gpushare.io/tenant=vision:NoSchedule"


@pytest.fixture(scope="module")
def prod() -> dict:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", "prod", "--json"]) == 0
    return json.loads(out.getvalue())


def resource(document: dict, name: str) -> dict:
    return next(r for r in document["resources"] if r["name"] == name)


def test_dedicated_pools_carry_the_tenant_taint_and_shared_ones_do_not(prod):
    taints = {r["inputs"]["agentPoolName"]: r["inputs"]["nodeTaints"]
              for r in prod["resources"] if r["type"] == AGENT_POOL}
    assert taints == {
        "a100mig": ["nvidia.com/gpu=present:NoSchedule", "gpushare.io/tenant=nlp:NoSchedule"],
        "h100mig": ["nvidia.com/gpu=present:NoSchedule", VISION_TAINT],
        "t4batch": ["nvidia.com/gpu=present:NoSchedule"],
    }


def test_the_operator_daemonsets_and_nfd_worker_tolerate_the_tenant_taints(prod):
    values = resource(prod, "gpu-operator-release")["inputs"]["values"]
    expected = {"key": "gpushare.io/tenant", "operator": "Equal", "value": "vision", "effect": "NoSchedule"}
    assert expected in values["daemonsets"]["tolerations"]
    assert expected in values["node-feature-discovery"]["worker"]["tolerations"]


def test_tenant_objects_go_through_the_clusters_provider(prod):
    kubernetes = [r for r in prod["resources"] if r["name"].startswith(("tenant-", "shared-gpu-pools"))]
    assert len(kubernetes) == 15
    assert {r["provider"] for r in kubernetes} == {resource(prod, "gpu-operator-release")["provider"]}


def test_plan_json_lists_each_tenant_with_a_pod_spec_the_policy_admits(prod):
    stack = load_stack_file(resolve_stack_file("prod"))
    cluster = plugin_cluster(tenant_manifests(stack))
    assert [t["name"] for t in prod["tenants"]] == ["vision", "nlp"]
    vision = prod["tenants"][0]
    assert {"name", "pools", "quota", "podSpec"} <= set(vision)
    assert vision["pools"] == ["h100mig"]
    assert vision["quota"] == {"nvidia.com/mig-3g.47gb.shared": 4}
    assert vision["offers"] == [{"pool": "h100mig", "resource": "nvidia.com/mig-3g.47gb.shared", "perNode": 4,
                                 "maxNodes": 2, "maxTotal": 8, "dedicated": True, "taint": VISION_TAINT}]
    for tenant in prod["tenants"]:
        # `podSpec` stays the first pool's; `podSpecs` has one per pool the tenant lists, each admitted.
        assert list(tenant["podSpecs"]) == tenant["pools"]
        assert tenant["podSpecs"][tenant["pools"][0]] == tenant["podSpec"]
        for pool, spec in tenant["podSpecs"].items():
            assert spec["nodeSelector"] == {"gpushare.io/pool": pool}
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
            decision = cluster.admit(pod, tenant["namespace"])
            assert decision.allowed, (tenant["name"], pool, decision.messages)
            assert not cluster.admit(pod, "default").allowed, "a tenant's pool is not usable from other namespaces"
    assert prod["sharedPools"] == ["t4batch"]


def test_plan_text_shows_each_tenant(capsys):
    assert main(["plan", "prod"]) == 0
    out = capsys.readouterr().out
    assert "Tenants (GPU pods in other namespaces may use: t4batch; kube-system and gpu-operator exempt):" in out
    assert ("    pool h100mig: nvidia.com/mig-3g.47gb.shared, 4 per node, at most 8 (2 node(s)), dedicated "
            f"(taint {VISION_TAINT})") in out
    assert "    quota (requests): nvidia.com/mig-3g.47gb.shared=4" in out
    assert "          gpushare.io/pool: h100mig" in out


def test_a_stack_without_tenants_plans_as_before(capsys):
    assert main(["plan", "dev", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["tenants"] == []
    assert not [r for r in document["resources"] if r["type"].startswith("kubernetes:admissionregistration")]
    assert main(["plan", "dev"]) == 0
    assert "Tenants" not in capsys.readouterr().out


def test_the_program_warns_of_a_quota_its_pools_can_never_reach():
    from gpushare.render.mock_engine import run_program
    from gpushare.stackfile.config import encode_engine_config, read_stack_file

    raw = read_stack_file(resolve_stack_file("prod")).config
    raw["gpushare:tenants"][0]["quota"] = {"nvidia.com/mig-3g.47gb.shared": 9}
    recording = run_program("prod", encode_engine_config(raw))
    assert ("tenant vision: quota nvidia.com/mig-3g.47gb.shared: 9 is more than its pools can ever advertise "
            "(8; h100mig: 8 at 2 node(s)), so it never binds; lower it or raise the pools' max") in recording.warnings


@pytest.mark.parametrize("stack", ["dev", "prod", "contoso-prod"])
def test_every_kubernetes_object_the_program_registers_is_valid_for_the_clusters_version(stack):
    """What reaches the Kubernetes provider (Helm releases aside: the chart renders those) against the OpenAPI
    schema of the stack's Kubernetes version, or the newest the validator knows for AKS's default."""
    import kubernetes_validate

    from gpushare.render.mock_engine import run_program
    from gpushare.stackfile.config import encode_engine_config, read_stack_file

    config = load_stack_file(resolve_stack_file(stack))
    version = config.cluster.kubernetes_version
    schema = f"{'.'.join(version.split('.')[:2])}.0" if version else kubernetes_validate.utils.latest_version()
    recording = run_program(stack, encode_engine_config(read_stack_file(resolve_stack_file(stack)).config))
    objects = [r.inputs for r in recording.resources
               if r.type.startswith("kubernetes:") and r.type != RELEASE and r.custom]
    assert objects
    for obj in objects:
        kubernetes_validate.validate(obj, schema, strict=True)


def test_plan_shows_and_warns_of_quotas_promising_more_of_a_shared_pool_than_it_has(tmp_path, capsys):
    """nlp also lists h100mig (8 x mig-3g.47gb.shared at 2 nodes) with a quota of 6; vision's is 4."""
    text = resolve_stack_file("prod").read_text()
    text = text.replace("      pools: [a100mig]\n      quota:\n        nvidia.com/mig-1g.5gb: 56\n",
                        "      pools: [a100mig, h100mig]\n      quota:\n        nvidia.com/mig-1g.5gb: 56\n"
                        "        nvidia.com/mig-3g.47gb.shared: 6\n")
    path = write_stack(tmp_path, text, "Pulumi.prod.yaml")
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert ("    h100mig (nvidia.com/mig-3g.47gb.shared): vision 4, nlp 6; promised 10 of 8 at 2 node(s): MORE than "
            "the pool has") in out
    assert ("  ! pool h100mig: the quotas of tenants vision, nlp promise 10 nvidia.com/mig-3g.47gb.shared but the pool "
            "advertises at most 8 (2 node(s)); vision 4, nlp 6") in out
    assert main(["plan", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["poolPromises"][0]["quotas"] == {"vision": 4, "nlp": 6}
