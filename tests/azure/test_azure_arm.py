"""Where Azure lives for the guard and preflight: subscription, ARM endpoint and cloud, and the shared credential."""

from __future__ import annotations

import dataclasses
import time

import pytest
from azure.core import AzureClouds
from azure.core.credentials import AccessToken

from gpushare.azure.arm import ArmTarget, AzureSettingsError, SharedCredential, arm_target
from gpushare.model.stack import AzureEnvironment, AzureSettings
from tests.azure.guard_builders import gpu_stack

FROM_FILE = "3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3"
FROM_ENV = "0b9e1c2d-3a4f-4e5d-8c7b-6a5f4e3d2c1b"
FROM_PROVIDER = "11111111-2222-3333-4444-555555555555"


def stack_with(subscription: str | None = None, environment: AzureEnvironment = AzureEnvironment.PUBLIC):
    return dataclasses.replace(gpu_stack(), azure=AzureSettings(subscription, environment))


def test_subscription_from_the_stack_file_wins_over_the_environment():
    target = arm_target(stack_with(FROM_FILE), {"AZURE_SUBSCRIPTION_ID": FROM_ENV})
    assert target == ArmTarget(FROM_FILE, AzureEnvironment.PUBLIC, None)


def test_subscription_from_the_environment_when_the_file_has_none():
    assert arm_target(stack_with(), {"AZURE_SUBSCRIPTION_ID": FROM_ENV}).subscription_id == FROM_ENV


def test_the_program_passes_the_provider_subscription():
    assert arm_target(stack_with(FROM_FILE), {}, FROM_PROVIDER).subscription_id == FROM_PROVIDER


def test_no_subscription_is_a_clear_error():
    with pytest.raises(AzureSettingsError) as caught:
        arm_target(stack_with(), {"AZURE_SUBSCRIPTION_ID": "  "})
    assert caught.value.exit_code == 2
    assert str(caught.value) == (
        "stacks/Pulumi.dev.yaml: no Azure subscription to read: set `azure-native:subscriptionId: <id>` in the stack "
        "file (the provider deploys there too) or export AZURE_SUBSCRIPTION_ID=<id> (`az account show --query id -o "
        "tsv` prints the current one)")


@pytest.mark.parametrize("environment, url, cloud", [
    (AzureEnvironment.PUBLIC, "https://management.azure.com", AzureClouds.AZURE_PUBLIC_CLOUD),
    (AzureEnvironment.USGOVERNMENT, "https://management.usgovcloudapi.net", AzureClouds.AZURE_US_GOVERNMENT),
    (AzureEnvironment.CHINA, "https://management.chinacloudapi.cn", AzureClouds.AZURE_CHINA_CLOUD),
])
def test_environment_picks_the_cloud(environment, url, cloud):
    target = arm_target(stack_with(FROM_FILE, environment), {})
    assert target.client_kwargs() == {"base_url": url, "cloud_setting": cloud}


def test_endpoint_override_replaces_the_url_and_keeps_the_cloud():
    target = arm_target(stack_with(FROM_FILE, AzureEnvironment.USGOVERNMENT),
                        {"GPUSHARE_ARM_ENDPOINT": "https://management.local.azurestack.external/"})
    assert target.client_kwargs() == {"base_url": "https://management.local.azurestack.external",
                                      "cloud_setting": AzureClouds.AZURE_US_GOVERNMENT}


def test_endpoint_override_must_be_https():
    with pytest.raises(AzureSettingsError, match=r"GPUSHARE_ARM_ENDPOINT='http://127.0.0.1:8080': must be an "
                                                 r"https:// base URL"):
        arm_target(stack_with(FROM_FILE), {"GPUSHARE_ARM_ENDPOINT": "http://127.0.0.1:8080"})


class CountingCredential:
    instances: list = []

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.calls = 0
        self.closed = False
        CountingCredential.instances.append(self)

    def get_token(self, *scopes, **kwargs):
        self.calls += 1
        return AccessToken(f"token-{self.calls}", int(time.time()) + 3600)

    def close(self):
        self.closed = True


@pytest.fixture
def counting(monkeypatch):
    CountingCredential.instances = []
    monkeypatch.setattr("azure.identity.DefaultAzureCredential", CountingCredential)
    return CountingCredential.instances


def test_shared_credential_asks_once_per_scope_and_closes(counting):
    with SharedCredential(AzureEnvironment.PUBLIC, {}) as credential:
        assert counting == []  # nothing is created until a read needs a token
        first = credential.get_token("https://management.azure.com/.default")
        again = credential.get_token("https://management.azure.com/.default")
    (created,) = counting
    assert (first.token, again.token, created.calls, created.closed) == ("token-1", "token-1", 1, True)


def test_shared_credential_signs_in_at_the_cloud_authority(counting):
    SharedCredential(AzureEnvironment.USGOVERNMENT, {}).get_token("scope")
    SharedCredential(AzureEnvironment.USGOVERNMENT, {"AZURE_AUTHORITY_HOST": "login.example"}).get_token("scope")
    assert [c.kwargs for c in counting] == [{"authority": "login.microsoftonline.us"}, {}]
