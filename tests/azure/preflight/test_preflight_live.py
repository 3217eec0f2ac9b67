"""Preflight's checks on what Azure reports: the real azure-mgmt-compute and azure-mgmt-containerservice clients
against the local HTTPS stub, in ARM's response shapes."""

from __future__ import annotations

import dataclasses

import pytest

from gpushare.azure.arm import ArmTarget, AzureReads
from gpushare.azure.deployed import read_live
from gpushare.azure.preflight.preflight_report import PreflightFailedError, Verdict, raise_for_failures, render_text
from gpushare.azure.preflight.preflight_runs import check_live, evaluate
from gpushare.azure.region_offers import read_region
from gpushare.errors import AzureReadError
from gpushare.model.stack import Cluster, GuardMode, SupportPlan, SystemPool, Tier
from tests.azure.guard_builders import MIG_POOL, T4_POOL, gpu_stack
from tests.azure.preflight_region import (
    A100,
    A100_FAMILY,
    REGION,
    SYSTEM,
    SYSTEM_FAMILY,
    T4,
    T4_FAMILY,
    kubernetes_versions,
    serve_region,
    usages,
    vm_sizes,
)
from tests.azure_stub import (
    ArmStub,
    StaticTokenCredential,
    StubResponse,
    arm_agent_pool,
    arm_error,
    arm_kubernetes_version,
    arm_vm_sku,
    location_restriction,
    zone_restriction,
)

SUB = "3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3"
RG, CLUSTER = "rg-gpushare-dev", "gpushare-dev"
RETRIES = 2
# gpu_stack(): system 2 x D4ds_v5 (4 vCPUs), a100mig 2 x ND96asr_v4 (96) in zones 1 and 2, t4ts autoscale 0-3 x
# NC4as_T4_v3 (4), and AKS's default upgrade surge on the system pool (1 node): at most 12 + 192 + 12 = 216 vCPUs.


@pytest.fixture
def arm():
    with ArmStub() as stub:
        yield stub


def settings(arm: ArmStub) -> dict:
    return {"credential": StaticTokenCredential(), "retry_total": RETRIES, "retry_backoff_factor": 0.01,
            **arm.client_kwargs()}


def run(arm: ArmStub, config=None, **region):
    """What `preflight STACK` does: the cluster's pools (one call) and the region (three), then the checks."""
    config = config or gpu_stack()
    serve_region(arm, SUB, RG, CLUSTER, **region)
    deployed = read_live(SUB, RG, CLUSTER, **settings(arm))
    return evaluate(config, read_region(SUB, REGION, **settings(arm)), deployed, SUB)


def rows(report, check: str) -> dict[str, tuple[Verdict, str, str]]:
    return {c.subject: (c.verdict, c.detail, c.fix) for c in report.checks if c.check == check}


def test_everything_offered_passes_in_four_calls(arm):
    report = run(arm)

    assert report.passed, render_text(report)
    assert report.cluster_exists is False
    assert {c.check for c in report.checks} == {"vm-size", "zones", "quota", "kubernetes-version"}
    quota = rows(report, "quota")
    assert quota[f"{A100_FAMILY}"][1] == (
        "needs 192 vCPUs at most (a100mig 2 x 96); 400 free (limit 400, in use 0)")
    assert quota["cores"][1].startswith("needs 216 vCPUs at most")
    assert len(arm.requests) == 4
    skus_request = next(r for r in arm.requests if r.path.endswith("/skus"))
    assert skus_request.query["$filter"] == [f"location eq '{REGION}'"]


def test_size_missing_in_region_fails_naming_what_is_offered(arm):
    skus = [s for s in vm_sizes() if s["name"] != A100]

    report = run(arm, skus=skus)

    verdict, detail, fix = rows(report, "vm-size")[f"pool a100mig ({A100})"]
    assert (verdict, detail) == (Verdict.FAIL, f"{A100} is not offered in {REGION}")
    assert f"az vm list-skus --size {A100} --all" in fix
    assert "Standard_NC4as_T4_v3, Standard_NC8as_T4_v3" in fix and A100 not in fix.split(": ")[-1]
    # The catalog still gives the pool's vCPUs and family: quota is checked anyway.
    assert rows(report, "quota")[f"{A100_FAMILY}"][0] is Verdict.PASS


@pytest.mark.parametrize("reason, fix", [
    ("NotAvailableForSubscription", "ask Azure support to enable Standard_NC4as_T4_v3 in westeurope"),
    ("QuotaId", "this subscription's offer type cannot deploy Standard_NC4as_T4_v3"),
])
def test_size_restricted_for_the_subscription_says_the_reason(arm, reason, fix):
    restricted = arm_vm_sku(T4, T4_FAMILY, 4, REGION, restrictions=[location_restriction(REGION, reason)])

    report = run(arm, skus=vm_sizes(restricted))

    verdict, detail, got_fix = rows(report, "vm-size")[f"pool t4ts ({T4})"]
    assert verdict is Verdict.FAIL
    assert detail == f"{T4} is offered in {REGION} but not to this subscription (restriction {reason})"
    assert got_fix.startswith(fix)


def test_restriction_for_another_region_does_not_count(arm):
    elsewhere = arm_vm_sku(T4, T4_FAMILY, 4, REGION, restrictions=[location_restriction("northeurope")], gpus=1)

    assert run(arm, skus=vm_sizes(elsewhere)).passed


def test_zone_not_offered_names_missing_and_offered_zones(arm):
    two_zones = arm_vm_sku(A100, A100_FAMILY, 96, REGION, zones=("1", "3"))

    report = run(arm, skus=vm_sizes(two_zones))

    verdict, detail, fix = rows(report, "zones")[f"pool a100mig ({A100})"]
    assert verdict is Verdict.FAIL
    assert detail == f"{A100} in {REGION}: zone 2: not offered; offered zones: 1, 3"
    assert fix.startswith("set `zones` to zones from 1, 3")


def test_zone_restricted_for_the_subscription(arm):
    restricted = arm_vm_sku(A100, A100_FAMILY, 96, REGION, restrictions=[zone_restriction(REGION, ("2",))])

    report = run(arm, skus=vm_sizes(restricted))

    verdict, detail, _ = rows(report, "zones")[f"pool a100mig ({A100})"]
    assert verdict is Verdict.FAIL
    assert detail == (f"{A100} in {REGION}: zone 2: restricted for this subscription (NotAvailableForSubscription); "
                      "offered zones: 1, 3")
    assert rows(report, "vm-size")[f"pool a100mig ({A100})"][0] is Verdict.PASS


def test_one_family_short_by_n_names_family_region_and_request(arm):
    report = run(arm, quota=usages(**{A100_FAMILY: (96, 200)}))  # 104 free, 192 needed

    verdict, detail, fix = rows(report, "quota")[f"{A100_FAMILY}"]
    assert verdict is Verdict.FAIL
    assert detail == (f"needs 192 vCPUs at most (a100mig 2 x 96); 104 free (limit 200, in use 96): short by 88 vCPUs "
                      f"in {REGION}")
    assert fix.startswith(
        f"request a limit of at least 288 vCPUs for {A100_FAMILY} in {REGION}: az quota update --resource-name "
        f"{A100_FAMILY} --scope /subscriptions/{SUB}/providers/Microsoft.Compute/locations/{REGION} "
        "--limit-object value=288 --resource-type dedicated")
    assert [c.subject for c in report.failures] == [f"{A100_FAMILY}"]


def test_family_named_differently_by_the_sku_and_usage_lists_still_matches(arm):
    # Azure spells one family several ways; the SKU says StandardNCASv3_T4Family, the usage standardNCASv3_T4Family.
    renamed = arm_vm_sku(T4, "Standard NCASv3_T4 Family", 4, REGION)

    report = run(arm, skus=vm_sizes(renamed), quota=usages(**{T4_FAMILY: (60, 64)}))

    assert rows(report, "quota")[f"{T4_FAMILY}"][0] is Verdict.FAIL


def test_regional_total_short(arm):
    report = run(arm, quota=usages(cores=(900, 1000)))  # 100 free of the 216 needed

    verdict, detail, fix = rows(report, "quota")["cores"]
    assert verdict is Verdict.FAIL
    assert detail.endswith("100 free (limit 1000, in use 900): short by 116 vCPUs in westeurope")
    assert "--resource-name cores" in fix and "value=1116" in fix


def test_family_without_quota_entry_fails(arm):
    quota = [u for u in usages() if u["name"]["value"] != T4_FAMILY]

    verdict, detail, _ = rows(run(arm, quota=quota), "quota")[T4_FAMILY]

    assert verdict is Verdict.FAIL
    assert detail == f"needs 12 vCPUs (t4ts 3 x 4), but Azure reports no {T4_FAMILY} quota in {REGION}"


def deployed_pools(a100_count: int, t4_count: int) -> StubResponse:
    return StubResponse(200, {"value": [
        arm_agent_pool(SUB, RG, CLUSTER, "system", vmSize=SYSTEM, count=2, mode="System",
                       currentOrchestratorVersion="1.30.9"),
        arm_agent_pool(SUB, RG, CLUSTER, "a100mig", vmSize=A100, count=a100_count, mode="User"),
        arm_agent_pool(SUB, RG, CLUSTER, "t4ts", vmSize=T4, count=t4_count, mode="User", enableAutoScaling=True,
                       minCount=0, maxCount=3),
    ]})


def test_existing_pools_are_counted_once(arm):
    # Usage already holds the running nodes: 2 x 96 A100 vCPUs in use of 200. The stack's 2 nodes need no more.
    report = run(arm, pools=deployed_pools(a100_count=2, t4_count=1),
                 quota=usages(**{A100_FAMILY: (192, 200), T4_FAMILY: (4, 12), SYSTEM_FAMILY: (8, 12)}))

    assert report.passed, render_text(report)
    assert report.cluster_exists is True
    quota = rows(report, "quota")
    assert quota[f"{A100_FAMILY}"][1] == (
        "needs 0 vCPUs more than the cluster runs now (a100mig 2 - 2 running x 96); 8 free (limit 200, in use 192)")
    assert quota[f"{T4_FAMILY}"][1].startswith(
        "needs 8 vCPUs more than the cluster runs now (t4ts 3 - 1 running x 4)")


def test_existing_cluster_growth_beyond_quota_fails(arm):
    config = gpu_stack(dataclasses.replace(MIG_POOL, count=4), T4_POOL)

    report = run(arm, config, pools=deployed_pools(a100_count=2, t4_count=0),
                 quota=usages(**{A100_FAMILY: (192, 200)}))

    verdict, detail, _ = rows(report, "quota")[f"{A100_FAMILY}"]
    assert verdict is Verdict.FAIL
    assert detail.endswith("(a100mig 4 - 2 running x 96); 8 free (limit 200, in use 192): short by 184 vCPUs in "
                           "westeurope")


def with_version(version: str | None):
    config = gpu_stack()
    return dataclasses.replace(config, cluster=dataclasses.replace(config.cluster, kubernetes_version=version))


@pytest.mark.parametrize("version, verdict, detail", [
    (None, Verdict.PASS, "not set: AKS picks its default (1.33); offered: 1.31 (LTS only), 1.32, 1.33 (default), "
                         "1.34 (preview)"),
    ("1.33", Verdict.PASS, "1.33 offered in westeurope"),
    ("1.33.2", Verdict.PASS, "1.33.2 offered in westeurope"),
    ("1.29", Verdict.FAIL, "1.29 is not offered in westeurope; offered: 1.31 (LTS only), 1.32, 1.33 (default), "
                           "1.34 (preview)"),
    ("1.33.9", Verdict.FAIL, "patch 1.33.9 is not offered in westeurope (patches of 1.33: 1.33.2, 1.33.3)"),
    ("1.34", Verdict.FAIL, "1.34 is preview-only in westeurope; offered: 1.31 (LTS only), 1.32, 1.33 (default), "
                           "1.34 (preview)"),
])
def test_kubernetes_version(arm, version, verdict, detail):
    versions = kubernetes_versions()
    versions["values"][0]["capabilities"]["supportPlan"] = ["AKSLongTermSupport"]

    (check,) = [c for c in run(arm, with_version(version), versions=versions).checks
                if c.check == "kubernetes-version"]

    assert (check.verdict, check.detail) == (verdict, detail)


def test_an_lts_only_version_fails_outside_premium_lts_and_passes_in_it(arm):
    """AKS refuses an LTS-only minor on a cluster without the Premium tier and the LTS plan: `pulumi up` would fail."""
    versions = kubernetes_versions(arm_kubernetes_version("1.30", ("1.30.9",), plans=("AKSLongTermSupport",)))

    report = run(arm, with_version("1.30"), versions=versions)

    (check,) = [c for c in report.checks if c.check == "kubernetes-version"]
    assert check.verdict is Verdict.FAIL and "Premium tier and its AKSLongTermSupport plan" in check.detail
    assert "tier Standard, plan KubernetesOfficial" in check.detail and "supportPlan: AKSLongTermSupport" in check.fix
    assert not report.passed
    config = with_version("1.30")
    lts = dataclasses.replace(config, cluster=dataclasses.replace(
        config.cluster, tier=Tier.PREMIUM, support_plan=SupportPlan.LONG_TERM_SUPPORT))
    (check,) = [c for c in run(arm, lts, versions=versions).checks if c.check == "kubernetes-version"]
    assert check.verdict is Verdict.PASS


def test_version_no_longer_offered_but_running_warns(arm):
    report = run(arm, with_version("1.30"), pools=deployed_pools(2, 0))

    (check,) = [c for c in report.checks if c.check == "kubernetes-version"]
    assert check.verdict is Verdict.WARN
    assert "the cluster already runs it (pool system on 1.30.9)" in check.detail


def test_failures_raise_one_error_listing_each_with_its_fix(arm):
    report = run(arm, quota=usages(cores=(900, 1000)), skus=[s for s in vm_sizes() if s["name"] != T4])

    with pytest.raises(PreflightFailedError) as caught:
        raise_for_failures(report)

    message = str(caught.value)
    assert caught.value.exit_code == 1
    assert message.startswith(f"preflight: 2 checks failed for stack dev in westeurope (subscription {SUB})")
    assert f"- vm-size pool t4ts ({T4}): {T4} is not offered in westeurope\n  fix: use another region" in message
    assert "- quota cores: needs 216 vCPUs" in message


# --- Azure refusing or failing --------------------------------------------------------------------------------------

WHAT_SKUS = f"could not list the VM sizes offered in {REGION} (subscription {SUB})"


def test_unauthorized(arm):
    serve_region(arm, SUB, RG, CLUSTER)
    arm.route(f"/subscriptions/{SUB}/providers/Microsoft.Compute/skus", StubResponse(401, arm_error(
        "InvalidAuthenticationToken", "The access token is invalid.")))

    with pytest.raises(AzureReadError) as caught:
        read_region(SUB, REGION, **settings(arm))

    assert caught.value.exit_code == 4
    assert str(caught.value).startswith(
        f"{WHAT_SKUS}: Azure rejected the credentials (HTTP 401 InvalidAuthenticationToken: The access token is "
        "invalid.); log in with `az login`")


def test_forbidden_names_reader_on_the_subscription(arm):
    paths = serve_region(arm, SUB, RG, CLUSTER)
    arm.route(paths["usages"], StubResponse(403, arm_error(
        "AuthorizationFailed", "The client 'ci' does not have authorization to perform action "
                               "'Microsoft.Compute/locations/usages/read'.")))

    with pytest.raises(AzureReadError) as caught:
        read_region(SUB, REGION, **settings(arm))

    message = str(caught.value)
    assert message.startswith(f"could not read the vCPU quota in {REGION} (subscription {SUB}): permission denied "
                              "(HTTP 403 AuthorizationFailed")
    assert message.endswith("the built-in Reader role on the subscription has all of them: az role assignment create "
                            "--assignee <identity> --role Reader --scope /subscriptions/<subscription id>")
    assert arm.count(paths["usages"]) == 1


def test_throttled_then_succeeds(arm):
    paths = serve_region(arm, SUB, RG, CLUSTER)
    arm.route(paths["versions"],
              StubResponse(429, arm_error("TooManyRequests", "Rate limit exceeded."), {"Retry-After": "0"}),
              StubResponse(200, kubernetes_versions()))

    offers = read_region(SUB, REGION, **settings(arm))

    assert [v.version for v in offers.kubernetes_versions] == ["1.31", "1.32", "1.33", "1.34"]
    assert arm.count(paths["versions"]) == 2


def test_server_error_after_retries(arm):
    paths = serve_region(arm, SUB, RG, CLUSTER)
    arm.route(paths["skus"], StubResponse(500, arm_error("InternalServerError", "An unexpected error occurred.")))

    with pytest.raises(AzureReadError) as caught:
        read_region(SUB, REGION, **settings(arm))

    assert str(caught.value) == (
        f"{WHAT_SKUS}: Azure returned an error (HTTP 500 InternalServerError: An unexpected error occurred.); "
        "throttling and server errors were already retried, so retry later")
    assert arm.count(paths["skus"]) == 1 + RETRIES


MALFORMED = {
    "skus-not-json": ("skus", "<html>Bad Gateway</html>", f"{WHAT_SKUS}: Azure answered with a body that is not JSON"),
    "skus-value-not-list": ("skus", {"value": {"name": A100}}, f"{WHAT_SKUS}: Azure answered with an unexpected body"),
    "sku-vcpus-wrong-type": ("skus", {"value": [{**arm_vm_sku(A100, A100_FAMILY, 96, REGION), "locationInfo": "1"}]},
                             f"{WHAT_SKUS}: Azure answered with an unexpected body"),
    "usage-without-limit": ("usages", {"value": [{"name": {"value": "cores"}, "currentValue": 1}]},
                            f"could not read the vCPU quota in {REGION} (subscription {SUB}): Azure answered with an "
                            "unexpected body"),
    "versions-empty": ("versions", {"values": []},
                       f"could not list the Kubernetes versions AKS offers in {REGION} (subscription {SUB}): Azure "
                       "answered with an unexpected body: the list has no Kubernetes versions"),
}


@pytest.mark.parametrize("read, body, problem", MALFORMED.values(), ids=MALFORMED.keys())
def test_rejects_malformed_body(arm, read, body, problem):
    paths = serve_region(arm, SUB, RG, CLUSTER)
    arm.route(paths[read], StubResponse(200, body))

    with pytest.raises(AzureReadError) as caught:
        read_region(SUB, REGION, **settings(arm))

    assert str(caught.value).startswith(problem)


def test_unreadable_region_follows_the_guard_setting(arm, monkeypatch):
    paths = serve_region(arm, SUB, RG, CLUSTER)
    arm.route(paths["skus"], StubResponse(403, arm_error("AuthorizationFailed", "no")))
    # The stub's CA trusted the way the CLI and the program trust a CA: through requests' REQUESTS_CA_BUNDLE.
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", arm.ca_path)
    reads = AzureReads(ArmTarget(SUB, endpoint=arm.base_url), StaticTokenCredential())

    with pytest.raises(AzureReadError, match=r"gpushare:guard is strict; `gpushare:guard: warn` deploys without "):
        check_live(gpu_stack(), reads, None)

    report = check_live(dataclasses.replace(gpu_stack(), guard=GuardMode.WARN), reads, None)
    assert report.checks == () and report.passed
    (warning,) = report.warnings
    assert warning.startswith(WHAT_SKUS) and "Continuing without preflight because gpushare:guard is warn" in warning
    assert arm.count(paths["skus"]) == 2


def test_system_pool_size_not_offered_is_reported_and_not_counted(arm):
    config = gpu_stack()
    config = dataclasses.replace(config, cluster=Cluster(
        config.cluster.name, config.cluster.resource_group, None, SystemPool("Standard_D4ds_v9", 2)))

    report = run(arm, config)

    verdict, _, fix = rows(report, "vm-size")["system pool (Standard_D4ds_v9)"]
    assert verdict is Verdict.FAIL
    assert fix.endswith("set gpushare:cluster.systemPool.vmSize to a size offered there (`az vm list-skus --location "
                        "westeurope --resource-type virtualMachines -o table`)")
    verdict, detail, _ = rows(report, "quota")["uncounted"]
    assert verdict is Verdict.WARN and detail.startswith("system pool: size not offered here")


def test_patch_no_longer_offered_but_running_warns(arm):
    report = run(arm, with_version("1.30.9"), pools=deployed_pools(2, 0))

    (check,) = [c for c in report.checks if c.check == "kubernetes-version"]
    assert (check.verdict, check.subject) == (Verdict.WARN, "1.30.9")
