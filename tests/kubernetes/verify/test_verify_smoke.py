"""`gpushare.kubernetes.verify.smoke`: the smoke pod of each pool, and the pools that get none."""

from __future__ import annotations

import dataclasses

from gpushare.kubernetes.verify.smoke import smoke_pod, smoke_skips
from gpushare.model.stack import Spot, Tenant
from tests.builders import pool, stack
from tests.kubernetes.verify.verify_stacks import PROD, by_pool


def test_smoke_pod_requests_one_unit_on_the_pool_with_its_tolerations():
    manifest = smoke_pod(by_pool(PROD)["h100mig"], "gpushare-smoke-abc123")
    spec = manifest["spec"]
    assert manifest["metadata"]["namespace"] == "gpushare-smoke-abc123"
    assert spec["nodeSelector"] == {"gpushare.io/pool": "h100mig"}
    assert spec["containers"][0]["resources"] == {"limits": {"nvidia.com/mig-3g.47gb.shared": "1"}}
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert spec["restartPolicy"] == "Never" and spec["securityContext"]["runAsNonRoot"] is True


def test_smoke_pod_on_a_spot_pool_tolerates_the_taint_aks_adds():
    spot = dataclasses.replace(pool("t4spot", "Standard_NC4as_T4_v3"), spot=Spot())
    tolerations = smoke_pod(by_pool(stack(spot))["t4spot"], "ns")["spec"]["tolerations"]
    assert {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot",
            "effect": "NoSchedule"} in tolerations


def test_a_tenant_pool_gets_its_taint_and_no_smoke_pod():
    tenanted = dataclasses.replace(PROD, tenants=(Tenant("nlp", ("a100mig",)), Tenant("vision", ("h100mig",))))
    expectations = by_pool(tenanted)
    assert expectations["a100mig"].taints == ("nvidia.com/gpu=present:NoSchedule", "gpushare.io/tenant=nlp:NoSchedule")
    assert expectations["t4batch"].taints == ("nvidia.com/gpu=present:NoSchedule",)
    assert sorted(smoke_skips(tenanted)) == ["a100mig", "h100mig"]
    assert smoke_skips(PROD) == {}


def test_a_dra_pool_gets_the_rendered_claim_template_and_a_pod_claiming_it_with_its_taints():
    from gpushare.kubernetes.verify.expectations import pool_expectations
    from gpushare.kubernetes.verify.smoke import smoke_targets
    from gpushare.model.stack import Allocation
    from gpushare.sharing import dra
    spot = dataclasses.replace(pool("a100spot", "Standard_NC24ads_A100_v4"), spot=Spot(), allocation=Allocation.DRA)
    plugin = pool("t4", "Standard_NC4as_T4_v3")
    dra_stack = stack(plugin, spot)
    targets = smoke_targets(dra_stack, pool_expectations(dra_stack))
    assert [(t.pool, t.allocation) for t in targets] == [("t4", "device-plugin"), ("a100spot", "dra")]
    template, pod = targets[1].manifests("gpushare-smoke-abc123")
    assert template == dra.claim_template("gpushare-smoke-abc123", spot)
    spec = pod["spec"]
    assert pod["metadata"]["namespace"] == "gpushare-smoke-abc123" and spec["nodeSelector"] == {
        "gpushare.io/pool": "a100spot"}
    assert {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot",
            "effect": "NoSchedule"} in spec["tolerations"]
    assert spec["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": template["metadata"]["name"]}]
    assert spec["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
