"""The kubeconfig transformation: AKS's Entra user kubeconfig (exec kubelogin) in, a bearer-token kubeconfig out."""

from __future__ import annotations

import base64

import pytest
import yaml

from gpushare.errors import GpushareError
from gpushare.kubernetes.kubeconfig import KubeconfigError, decode_kubeconfig, exec_kubeconfig, token_kubeconfig
from gpushare.render.mock_engine import MOCK_KUBECONFIG, mock_jwt

ENCODED = base64.b64encode(MOCK_KUBECONFIG.encode()).decode()
TOKEN = mock_jwt({"idtyp": "user", "scp": "user.read"})


def test_exec_kubelogin_user_becomes_a_bearer_token():
    before = yaml.safe_load(MOCK_KUBECONFIG)
    assert before["users"][0]["user"]["exec"]["command"] == "kubelogin"  # the input is what AKS returns
    after = yaml.safe_load(token_kubeconfig(ENCODED, TOKEN))
    assert after["users"] == [{"name": before["users"][0]["name"], "user": {"token": TOKEN}}]


def test_cluster_entry_and_context_are_kept_as_they_were():
    """pulumi-kubernetes replaces the provider, and everything it manages, when the active cluster entry changes."""
    before = yaml.safe_load(MOCK_KUBECONFIG)
    after = yaml.safe_load(token_kubeconfig(ENCODED, TOKEN))
    assert after["clusters"] == before["clusters"]
    assert (after["contexts"], after["current-context"]) == (before["contexts"], before["current-context"])


def test_client_certificates_are_dropped_not_merged():
    """A non-Entra user kubeconfig carries a client certificate and key: none of it may survive."""
    static = yaml.safe_load(MOCK_KUBECONFIG)
    static["users"][0]["user"] = {"client-certificate-data": "Y2VydA==", "client-key-data": "a2V5", "token": "old"}
    after = token_kubeconfig(base64.b64encode(yaml.safe_dump(static).encode()).decode(), TOKEN)
    assert "client-certificate-data" not in after and "client-key-data" not in after and "old" not in after
    assert yaml.safe_load(after)["users"][0]["user"] == {"token": TOKEN}


def test_every_user_gets_the_token():
    doc = yaml.safe_load(MOCK_KUBECONFIG)
    doc["users"].append({"name": "second", "user": {"exec": {"command": "kubelogin"}}})
    after = yaml.safe_load(token_kubeconfig(base64.b64encode(yaml.safe_dump(doc).encode()).decode(), TOKEN))
    assert [u["user"] for u in after["users"]] == [{"token": TOKEN}, {"token": TOKEN}]


def test_decode_gives_the_kubeconfig_people_use_with_kubelogin():
    assert decode_kubeconfig(ENCODED) == MOCK_KUBECONFIG


@pytest.mark.parametrize(("encoded", "words"), [
    ("not base64!", "not base64"),
    (base64.b64encode(b"\xff\xfe").decode(), "not base64-encoded UTF-8"),
    (base64.b64encode(b"apiVersion: v1\nusers: []\n").decode(), "without clusters"),
    (base64.b64encode(b"apiVersion: v1\nclusters: []\nusers: []\n").decode(), "without users"),
    (base64.b64encode(b"clusters: []\nusers: [plain]\n").decode(), "malformed user"),
    (base64.b64encode(b"clusters: [\n").decode(), "not YAML"),
], ids=["not-base64", "not-utf8", "no-clusters", "no-users", "bad-user", "not-yaml"])
def test_malformed_credentials_are_a_clear_error(encoded, words):
    with pytest.raises(KubeconfigError) as raised:
        token_kubeconfig(encoded, TOKEN)
    assert words in str(raised.value)
    assert isinstance(raised.value, GpushareError)


@pytest.mark.parametrize("login", ["azurecli", "workloadidentity"])
def test_an_exec_kubeconfig_runs_kubelogin_for_aks_and_stores_no_credential(login):
    before = yaml.safe_load(MOCK_KUBECONFIG)
    after = yaml.safe_load(exec_kubeconfig(ENCODED, login))
    (user,) = after["users"]
    assert user["name"] == before["users"][0]["name"]
    assert set(user["user"]) == {"exec"}
    stanza = user["user"]["exec"]
    assert stanza["command"] == "kubelogin"
    assert stanza["apiVersion"] == "client.authentication.k8s.io/v1beta1"
    # The mocked AKS stanza logs in by device code with a client and tenant ID: neither survives.
    assert stanza["args"] == ["get-token", "--login", login, "--server-id", "6dae42f8-4368-4678-94ff-3960e28e3630",
                              "--environment", "AzurePublicCloud"]
    assert after["clusters"] == before["clusters"]  # the provider is updated, never replaced
    assert (after["contexts"], after["current-context"]) == (before["contexts"], before["current-context"])
