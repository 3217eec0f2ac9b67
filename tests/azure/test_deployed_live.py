"""Deployed pools read live: the real ContainerServiceClient against a local HTTPS stand-in for ARM."""

from __future__ import annotations

import dataclasses
import socket

import pytest
from azure.identity import CredentialUnavailableError

from gpushare.azure.deployed import DeployedPool, read_live
from gpushare.azure.guard.guard_report import GuardReport, raise_for_violations
from gpushare.azure.guard.guard_runs import check_live
from gpushare.errors import AzureReadError, GuardViolationError
from gpushare.model.catalog import MigProfile
from gpushare.model.stack import GuardMode
from tests.azure.guard_builders import MIG_POOL, T4_POOL, gpu_stack
from tests.azure_stub import (
    FAKE_TOKEN,
    ArmStub,
    StaticTokenCredential,
    StubResponse,
    agent_pools_path,
    arm_agent_pool,
    arm_error,
    managed_cluster_id,
)

SUB = "3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3"
RG = "rg-gpushare-dev"  # what tests.builders.stack() names
CLUSTER = "gpushare-dev"
POOLS = agent_pools_path(SUB, RG, CLUSTER)
SOURCE = "azure:" + managed_cluster_id(SUB, RG, CLUSTER)
RETRIES = 2
WHAT = f"could not read the node pools of AKS cluster {CLUSTER} (resource group {RG}, subscription {SUB})"


def arm_pool(name: str, **properties) -> dict:
    return arm_agent_pool(SUB, RG, CLUSTER, name, **properties)


SYSTEM = arm_pool("system", vmSize="Standard_D4ds_v5", count=2, mode="System", osSKU="Ubuntu",
                  availabilityZones=["1", "2", "3"])
MIG = arm_pool(
    "a100mig", vmSize="Standard_ND96asr_v4", gpuInstanceProfile="MIG1g", count=2, mode="User", osSKU="Ubuntu",
    availabilityZones=["1", "2"], nodeTaints=["nvidia.com/gpu=present:NoSchedule"],
    nodeLabels={"gpushare.io/pool": "a100mig", "nvidia.com/device-plugin.config": "a100mig",
                "gpushare.io/sharing": "none"},
)
T4 = arm_pool(
    "t4ts", vmSize="Standard_NC4as_T4_v3", gpuProfile={"driver": "Install"}, count=1, enableAutoScaling=True,
    minCount=0, maxCount=3, mode="User", osSKU="Ubuntu", nodeTaints=["nvidia.com/gpu=present:NoSchedule"],
    nodeLabels={"gpushare.io/pool": "t4ts", "nvidia.com/device-plugin.config": "t4ts",
                "gpushare.io/sharing": "time-slicing-4"},
)
CLUSTER_AS_WANTED = StubResponse(200, {"value": [SYSTEM, MIG, T4]})
NOT_FOUND = StubResponse(404, arm_error(
    "ResourceNotFound",
    f"The Resource 'Microsoft.ContainerService/managedClusters/{CLUSTER}' under resource group '{RG}' was not found.",
))
SERVER_ERROR = StubResponse(500, arm_error("InternalServerError", "An unexpected error occurred."))
FORBIDDEN = StubResponse(403, arm_error(
    "AuthorizationFailed",
    "The client 'ci@example.com' with object id '11111111-2222-3333-4444-555555555555' does not have "
    "authorization to perform action 'Microsoft.ContainerService/managedClusters/agentPools/read' over scope "
    f"'{POOLS}' or the scope is invalid.",
))


@pytest.fixture
def arm():
    with ArmStub() as stub:
        yield stub


def settings(arm: ArmStub, credential=None) -> dict:
    """Everything `read_live` needs to reach the stub fast: a fixed token, the stub's URL and CA, quick retries."""
    return {
        "credential": credential or StaticTokenCredential(),
        "retry_total": RETRIES,
        "retry_backoff_factor": 0.01,
        **arm.client_kwargs(),
    }


def test_reads_every_pool_in_one_call(arm):
    arm.route(POOLS, CLUSTER_AS_WANTED)

    pools = read_live(SUB, RG, CLUSTER, **settings(arm))

    assert [p.name for p in pools] == ["system", "a100mig", "t4ts"]
    assert pools[2] == DeployedPool(
        name="t4ts", vm_size="Standard_NC4as_T4_v3", gpu_driver="Install", os_sku="Ubuntu",
        node_labels={"gpushare.io/pool": "t4ts", "nvidia.com/device-plugin.config": "t4ts",
                     "gpushare.io/sharing": "time-slicing-4"},
        node_taints=("nvidia.com/gpu=present:NoSchedule",), count=1, min_count=0, max_count=3,
        enable_auto_scaling=True, mode="User",
        id=f"/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.ContainerService/managedClusters/{CLUSTER}"
           "/agentPools/t4ts",
    )
    (request,) = arm.requests
    assert (request.method, request.path) == ("GET", POOLS)
    assert request.headers["authorization"] == f"Bearer {FAKE_TOKEN}"
    assert request.query["api-version"]


def test_follows_next_link_within_the_one_list_call(arm):
    second_page = POOLS + "/page2"
    next_link = f"{arm.base_url}{second_page}?$skiptoken=2"
    arm.route(POOLS, StubResponse(200, {"value": [SYSTEM, MIG], "nextLink": next_link}))
    arm.route(second_page, StubResponse(200, {"value": [T4]}))

    pools = read_live(SUB, RG, CLUSTER, **settings(arm))

    assert [p.name for p in pools] == ["system", "a100mig", "t4ts"]
    assert (arm.count(POOLS), arm.count(second_page)) == (1, 1)


def test_check_live_passes_the_cluster_as_wanted(arm):
    arm.route(POOLS, CLUSTER_AS_WANTED)

    report = check_live(gpu_stack(MIG_POOL, T4_POOL), SUB, **settings(arm))

    assert report == GuardReport(SOURCE)
    assert arm.count(POOLS) == 1


def test_check_live_rejects_a_changed_mig_profile(arm):
    arm.route(POOLS, CLUSTER_AS_WANTED)
    config = gpu_stack(dataclasses.replace(MIG_POOL, mig=MigProfile.MIG3G), T4_POOL)

    report = check_live(config, SUB, **settings(arm))

    assert [(v.pool, v.field, v.deployed, v.wanted) for v in report.violations] == [
        ("a100mig", "gpuInstanceProfile", "MIG1g", "MIG3g")
    ]
    with pytest.raises(GuardViolationError, match=r"^1 change would delete running GPU pools \(deployed pools read "
                                                  rf"from {SOURCE}\):\n\nstack dev, cluster gpushare-dev, pool "
                                                  r"a100mig: gpuInstanceProfile MIG1g -> MIG3g\."):
        raise_for_violations(report)
    assert arm.count(POOLS) == 1


@pytest.mark.parametrize("code", ["ResourceNotFound", "ResourceGroupNotFound"])
def test_missing_cluster_is_a_first_deployment(arm, code):
    arm.route(POOLS, StubResponse(404, arm_error(code, "not found")))

    assert read_live(SUB, RG, CLUSTER, **settings(arm)) is None
    assert check_live(gpu_stack(), SUB, **settings(arm)) == GuardReport(
        SOURCE, notes=("cluster gpushare-dev does not exist yet: first deployment, nothing to guard",)
    )
    assert arm.count(POOLS) == 2  # one list call per run, two runs


def test_missing_subscription_is_not_a_first_deployment(arm):
    missing = arm_error("SubscriptionNotFound", f"The subscription '{SUB}' could not be found.")
    arm.route(POOLS, StubResponse(404, missing))

    with pytest.raises(AzureReadError) as caught:
        read_live(SUB, RG, CLUSTER, **settings(arm))

    assert str(caught.value) == (
        f"{WHAT}: Azure does not know the subscription (HTTP 404 SubscriptionNotFound: The subscription '{SUB}' "
        "could not be found.); check the subscription id, and that the credentials belong to its tenant"
    )


def test_retries_throttling_then_reads(arm):
    arm.route(POOLS, StubResponse(429, arm_error("TooManyRequests", "Rate limit exceeded."), {"Retry-After": "0"}),
              CLUSTER_AS_WANTED)

    pools = read_live(SUB, RG, CLUSTER, **settings(arm))

    assert [p.name for p in pools] == ["system", "a100mig", "t4ts"]
    assert arm.count(POOLS) == 2


def test_strict_fails_on_server_error_after_retries(arm):
    arm.route(POOLS, SERVER_ERROR)

    with pytest.raises(AzureReadError) as caught:
        check_live(gpu_stack(), SUB, **settings(arm))

    assert caught.value.exit_code == 4
    assert str(caught.value) == (
        f"{WHAT}: Azure returned an error (HTTP 500 InternalServerError: An unexpected error occurred.); "
        "throttling and server errors were already retried, so retry later. (gpushare:guard is strict; "
        "`gpushare:guard: warn` deploys on pool protection alone.)"
    )
    assert arm.count(POOLS) == 1 + RETRIES


def test_warn_carries_on_after_server_error(arm):
    arm.route(POOLS, SERVER_ERROR)
    config = dataclasses.replace(gpu_stack(), guard=GuardMode.WARN)

    report = check_live(config, SUB, **settings(arm))

    assert (report.source, report.violations, report.notes) == (SOURCE, (), ())
    # Nothing was compared: the headline must not claim that no GPU pool is deleted.
    assert report.headline == "not compared: the deployed pools could not be read; only pool protection stops a replace"
    assert report.warnings == (
        f"{WHAT}: Azure returned an error (HTTP 500 InternalServerError: An unexpected error occurred.); "
        "throttling and server errors were already retried, so retry later. Continuing because gpushare:guard is "
        "warn, relying on pool protection: a change AKS cannot make in place will fail with Pulumi's 'marked for "
        "protection' error instead",
    )


def test_strict_fails_on_missing_permission_naming_the_role(arm):
    arm.route(POOLS, FORBIDDEN)

    with pytest.raises(AzureReadError) as caught:
        check_live(gpu_stack(), SUB, **settings(arm))

    message = str(caught.value)
    assert message.startswith(f"{WHAT}: permission denied (HTTP 403 AuthorizationFailed: The client 'ci@example.com'")
    assert message.endswith(
        "listing node pools needs 'Microsoft.ContainerService/managedClusters/agentPools/read', which the built-in "
        "Reader role has; 'Azure Kubernetes Service Cluster User Role' alone does not (it only has "
        "managedClusters/read and listClusterUserCredential). Grant Reader on the cluster or its resource group: "
        "az role assignment create --assignee <identity> --role Reader --scope <cluster resource id>. "
        "(gpushare:guard is strict; `gpushare:guard: warn` deploys on pool protection alone.)"
    )
    assert arm.count(POOLS) == 1  # a 403 is not retried


def test_warn_carries_on_without_permission(arm):
    arm.route(POOLS, FORBIDDEN)
    config = dataclasses.replace(gpu_stack(), guard=GuardMode.WARN)

    report = check_live(config, SUB, **settings(arm))

    assert report.violations == ()
    (warning,) = report.warnings
    assert warning.startswith(f"{WHAT}: permission denied (HTTP 403 AuthorizationFailed")
    assert warning.endswith("Continuing because gpushare:guard is warn, relying on pool protection: a change AKS "
                            "cannot make in place will fail with Pulumi's 'marked for protection' error instead")


def test_rejected_token_says_to_log_in_again(arm):
    arm.route(POOLS, StubResponse(401, arm_error("ExpiredAuthenticationToken", "The access token expiry UTC time "
                                                 "is earlier than current UTC time.")))

    with pytest.raises(AzureReadError) as caught:
        read_live(SUB, RG, CLUSTER, **settings(arm))

    assert str(caught.value).startswith(
        f"{WHAT}: Azure rejected the credentials (HTTP 401 ExpiredAuthenticationToken: The access token expiry UTC "
        "time is earlier than current UTC time.); log in with `az login`"
    )


class NoCredentials:
    """What DefaultAzureCredential raises when nothing in its chain can give a token."""

    def get_token(self, *scopes, **kwargs):
        raise CredentialUnavailableError(
            message="DefaultAzureCredential failed to retrieve a token from the included credentials.\n"
                    "Attempted credentials:\n\tAzureCliCredential: Please run 'az login' to set up an account"
        )


def test_missing_credentials_say_how_to_log_in(arm):
    arm.route(POOLS, CLUSTER_AS_WANTED)

    with pytest.raises(AzureReadError) as caught:
        read_live(SUB, RG, CLUSTER, **settings(arm, credential=NoCredentials()))

    assert str(caught.value) == (
        "no usable Azure credentials: log in with `az login` (and `az account set --subscription <id>`), or in CI "
        "set AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET / AZURE_FEDERATED_TOKEN_FILE, or run "
        f"azure/login before gpushare. Without them gpushare {WHAT} (AzureCliCredential: Please run 'az login' to "
        "set up an account)"
    )
    assert arm.requests == []


def test_unreachable_azure_names_the_endpoint(arm):
    with socket.socket() as unused:  # a port nothing listens on once this closes
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    closed = f"https://127.0.0.1:{port}"

    with pytest.raises(AzureReadError) as caught:
        read_live(SUB, RG, CLUSTER, **{**settings(arm), "base_url": closed})

    assert str(caught.value).startswith(f"{WHAT}: cannot reach Azure Resource Manager at {closed} (")
    assert str(caught.value).endswith("); check the network, the proxy (HTTPS_PROXY) and DNS")


MALFORMED = {
    "not-json": ("<html>Service Unavailable</html>", "Azure answered with a body that is not JSON (JSON is invalid"),
    "empty-body": ("", "Azure answered with an unexpected body (JSONDecodeError"),
    "list-not-object": ([SYSTEM], "Azure answered with an unexpected body (AttributeError"),
    "value-not-list": ({"value": {"name": "system"}},
                       "Azure answered with an unexpected body (DeserializationError); retry"),
    "value-of-strings": ({"value": ["system"]}, "Azure answered with an unexpected body (AttributeError"),
    "no-value": ({}, "Azure answered with an unexpected node pool list: the list has no node pools, but every AKS "
                     "cluster has at least its system pool"),
    "pool-without-vm-size": ({"value": [arm_pool("system", count=2)]},
                             "Azure answered with an unexpected node pool list: node pool [0] system: `vmSize` is "
                             "missing"),
}


@pytest.mark.parametrize("body, problem", MALFORMED.values(), ids=MALFORMED.keys())
def test_rejects_malformed_body(arm, body, problem):
    arm.route(POOLS, StubResponse(200, body))

    with pytest.raises(AzureReadError) as caught:
        read_live(SUB, RG, CLUSTER, **settings(arm))

    assert str(caught.value).startswith(f"{WHAT}: {problem}")
    assert arm.count(POOLS) == 1


def test_defaults_to_default_azure_credential_and_closes_it(arm, monkeypatch):
    created = []

    class FakeDefaultAzureCredential(StaticTokenCredential):
        closed = False

        def __init__(self):
            created.append(self)

        def close(self):
            self.closed = True

    monkeypatch.setattr("azure.identity.DefaultAzureCredential", FakeDefaultAzureCredential)
    arm.route(POOLS, CLUSTER_AS_WANTED)
    without_credential = {k: v for k, v in settings(arm).items() if k != "credential"}

    read_live(SUB, RG, CLUSTER, **without_credential)

    assert [c.closed for c in created] == [True]
    assert arm.requests[0].headers["authorization"] == f"Bearer {FAKE_TOKEN}"
