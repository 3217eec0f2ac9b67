"""No test reaches a real identity provider: `DefaultAzureCredential` (az CLI, managed identity's IMDS probe, ...)
is replaced for every test by one that has no credentials; tests that need a token pass their own."""

import pytest
from azure.identity import CredentialUnavailableError


class NoDefaultCredential:
    def __init__(self, **kwargs):
        pass

    def get_token(self, *scopes, **kwargs):
        raise CredentialUnavailableError(message="tests never use DefaultAzureCredential")

    def close(self):
        pass


@pytest.fixture(autouse=True)
def no_default_azure_credential(monkeypatch):
    # gpushare imports azure-identity's class on use (arm.default_credential), so the library's attribute is what
    # every read gets.
    monkeypatch.setattr("azure.identity.DefaultAzureCredential", NoDefaultCredential)


# Every stack a test gets accepted by the validator must pass the stack file's JSON Schema too.
from tests.stackfile.schema_check import accepted_stacks_pass_the_schema  # noqa: E402, F401
