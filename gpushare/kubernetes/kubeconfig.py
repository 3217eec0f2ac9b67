"""Kubernetes credentials for an Entra-only AKS cluster: a token fetched once (the default), or kubelogin.

With local accounts off, AKS's user credentials (`listClusterUserCredential`) hold the cluster's server and CA and
an `exec` user that runs `kubelogin get-token --server-id 6dae42f8-...` (the default "exec" format since Kubernetes
1.24; MicrosoftDocs/azure-aks-docs `kubelogin-authentication.md`). A Pulumi program cannot run kubelogin
interactively, so the program swaps that user for a bearer token the azure-native provider obtains for the same
audience (`getClientToken(endpoint=AKS_SERVER_APP_ID)`: azidentity `GetToken` with scope `<endpoint>/.default`,
the call kubelogin's `azurecli` mode makes). The cluster entry is kept byte for byte: pulumi-kubernetes replaces a
provider (and everything it manages) only when the active cluster entry changes (`DiffConfig`).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import yaml

from gpushare.errors import GpushareError

AKS_SERVER_APP_ID = "6dae42f8-4368-4678-94ff-3960e28e3630"
"""AKS's Entra server application: the audience of every token the API server accepts."""
KUBELOGIN = "kubelogin"
EXEC_API_VERSION = "client.authentication.k8s.io/v1beta1"
"""The exec credential version AKS's own kubeconfig asks kubelogin for."""


class KubeconfigError(GpushareError):
    """AKS returned credentials gpushare cannot turn into a token kubeconfig."""


def decode_kubeconfig(encoded: str) -> str:
    """The kubeconfig as YAML text, from the base64 value `listClusterUserCredential` returns."""
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, TypeError) as err:
        raise KubeconfigError(f"AKS returned a kubeconfig that is not base64-encoded UTF-8 ({err})") from None


def token_kubeconfig(encoded: str, token: str) -> str:
    """The user kubeconfig with every user's credentials replaced by `token` (YAML text).

    Whatever the user held (an exec kubelogin stanza, a client certificate and key) is dropped, not merged: the
    result carries no credential except the short-lived bearer token.
    """
    document = _load(decode_kubeconfig(encoded))
    for entry in _users(document):
        entry["user"] = {"token": token}
    return yaml.safe_dump(document, sort_keys=False)


def _users(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The kubeconfig's user entries, each a mapping with a name (what AKS returns for the cluster user)."""
    users = document.get("users")
    if not isinstance(users, list) or not users:
        raise KubeconfigError("AKS returned a kubeconfig without users; expected the cluster user's entry")
    if not all(isinstance(entry, dict) and "name" in entry for entry in users):
        raise KubeconfigError("AKS returned a kubeconfig with a malformed user entry")
    return users


def uses_entra(encoded: str) -> bool:
    """Whether the user credentials are an Entra cluster's: every user runs kubelogin (`exec`). A cluster that still
    has local accounts without Entra ID hands out a client certificate and key (or a static token) instead."""
    users = _load(decode_kubeconfig(encoded)).get("users")
    return isinstance(users, list) and bool(users) and all(
        isinstance(entry, dict) and isinstance(entry.get("user"), dict)
        and "kubelogin" in str(entry["user"].get("exec", {}).get("command", "")) for entry in users)


def provider_kubeconfig(encoded: str, token: str | None = None, login: str | None = None) -> str:
    """The kubeconfig the program's Kubernetes provider uses: an Entra cluster's with the Entra `token` in place of
    AKS's interactive kubelogin (`token_kubeconfig`), or with kubelogin in `login` mode (`exec_kubeconfig`); a
    local-accounts cluster's (an existing cluster below gpushare's baseline) as AKS returned it, whatever the mode:
    its client certificate is the only credential that cluster accepts."""
    if not uses_entra(encoded):
        return decode_kubeconfig(encoded)
    return exec_kubeconfig(encoded, login) if login else token_kubeconfig(encoded, token or "")


def api_server(encoded: str) -> str:
    """The API server's URL in the user credentials (the first cluster's `server`): where another cluster's Kueue
    reaches this one (`gpushare.kubernetes.multikueue.worker_kubeconfig`)."""
    clusters = _load(decode_kubeconfig(encoded))["clusters"]
    server = clusters[0].get("cluster", {}).get("server") if clusters and isinstance(clusters[0], dict) else None
    if not isinstance(server, str) or not server:
        raise KubeconfigError("AKS returned a kubeconfig whose cluster has no server")
    return server


def _load(text: str) -> dict[str, Any]:
    try:
        document = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError) as err:
        raise KubeconfigError(f"AKS returned a kubeconfig that is not YAML ({err})") from None
    if not isinstance(document, dict) or not isinstance(document.get("clusters"), list):
        raise KubeconfigError("AKS returned a kubeconfig without clusters")
    return document


def exec_kubeconfig(encoded: str, login: str) -> str:
    """The user kubeconfig with every user running `kubelogin get-token --login <login>` for AKS's server
    application (YAML text); no credential is stored in it.

    client-go runs the exec plugin again whenever the token it returned expires, so a run that outlasts one token
    (60-90 minutes) keeps working. `azurecli` asks the az CLI's session; `workloadidentity` exchanges a federated
    token for `AZURE_CLIENT_ID` in `AZURE_TENANT_ID`: under GitHub Actions (ACTIONS_ID_TOKEN_REQUEST_URL set) a
    fresh job OIDC token each time, else the file in `AZURE_FEDERATED_TOKEN_FILE` (Azure/kubelogin v0.2.19,
    pkg/internal/token/provider.go and options.go `UpdateFromEnv`). The `--environment` of AKS's own stanza is kept
    (the cloud), its `--login devicecode` and client/tenant IDs are not: those modes need neither.
    """
    document = _load(decode_kubeconfig(encoded))
    for entry in _users(document):
        args = ["get-token", "--login", login, "--server-id", AKS_SERVER_APP_ID]
        environment = _flag((entry.get("user") or {}).get("exec") or {}, "--environment")
        if environment:
            args += ["--environment", environment]
        entry["user"] = {"exec": {
            "apiVersion": EXEC_API_VERSION,
            "command": KUBELOGIN,
            "args": args,
            "env": None,
            "provideClusterInfo": False,
            "installHint": f"{KUBELOGIN} is needed by gpushare:cluster.access.kubernetesCredential {login!r}: "
                           f"`az aks install-cli`, or https://azure.github.io/kubelogin/install.html",
        }}
    return yaml.safe_dump(document, sort_keys=False)


def _flag(exec_stanza: Any, name: str) -> str | None:
    args = exec_stanza.get("args") if isinstance(exec_stanza, dict) else None
    if not isinstance(args, list) or name not in args:
        return None
    index = args.index(name) + 1
    return str(args[index]) if index < len(args) else None
