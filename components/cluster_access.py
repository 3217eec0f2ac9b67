"""Kubernetes access to the Entra-only cluster: the provider every Kubernetes resource uses, and the kubeconfig
for people.

By default the provider authenticates with a bearer token for AKS's Entra server application, obtained by the
azure-native provider itself (`getClientToken`) once, when the program starts, so the identity that deploys the
cluster (az login locally, OIDC in CI) also talks to it, with no kubelogin binary. The token lives 60-90 minutes
and the engine runs deletes after every create and update, so a long run can meet a 401 at its end:
`cluster.access.kubernetesCredential: kubelogin-*` gives the provider an exec kubeconfig instead, which client-go
runs again for a new token when one expires. See `gpushare.kubernetes.kubeconfig`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import _utilities as azure_native_sdk
from pulumi_azure_native import containerservice

from gpushare.kubernetes.kubeconfig import AKS_SERVER_APP_ID, decode_kubeconfig, provider_kubeconfig
from gpushare.model.stack import KubernetesCredential

KUBELOGIN_LOGIN = {
    KubernetesCredential.KUBELOGIN_AZURECLI: "azurecli",
    KubernetesCredential.KUBELOGIN_WORKLOADIDENTITY: "workloadidentity",
}
"""kubelogin's `--login` mode for each exec credential."""

GET_CLIENT_TOKEN = "azure-native:authorization:getClientToken"
"""The azure-native function `authorization.get_client_token_output` invokes."""


def client_token(endpoint: str) -> pulumi.Output[str]:
    """`authorization.get_client_token_output(endpoint=...).token`, invoked as that function invokes it (same token,
    arguments and provider version, tests/components/test_cluster_access.py compares them): importing
    pulumi_azure_native.authorization for this one function loads its 73 modules, 0.18 s of CPU on every
    run for a stack that declares no role assignment."""
    opts = pulumi.InvokeOutputOptions.merge(azure_native_sdk.get_invoke_opts_defaults(), None)
    return pulumi.runtime.invoke_output(GET_CLIENT_TOKEN, {"endpoint": endpoint}, opts=opts).apply(
        lambda result: result["token"])


@dataclass(frozen=True)
class ClusterAccessArgs:
    resource_group_name: pulumi.Input[str]
    """Required. The cluster's resource group."""
    cluster_name: pulumi.Input[str]
    """Required. The cluster's name; its credentials are read once it exists."""
    cluster_id: pulumi.Input[str]
    """Required. The cluster's ARM ID: the provider's `clusterIdentifier`."""
    provider_aliases: Sequence[pulumi.Alias] = field(default_factory=tuple)
    """Earlier names of the provider, so moving it here does not touch the resources it manages."""
    credential: KubernetesCredential = KubernetesCredential.TOKEN
    """How the provider authenticates (`cluster.access.kubernetesCredential`). Default: a token fetched once."""


class ClusterAccess(pulumi.ComponentResource):
    """The Kubernetes provider (Entra token, or kubelogin) and the Entra user kubeconfig for people."""

    provider: k8s.Provider
    kubeconfig: pulumi.Output[str]
    """Secret. The Entra user kubeconfig as `az aks get-credentials` writes it: its user runs kubelogin."""

    def __init__(self, name: str, args: ClusterAccessArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:cluster:ClusterAccess", name, None, opts)
        # The user credentials, not the admin ones: with local accounts off AKS refuses static credentials, and the
        # user kubeconfig of an Entra cluster holds no secret (server, CA and a kubelogin exec stanza). An existing
        # cluster without Entra ID returns a client certificate here, used as it is (`provider_kubeconfig`).
        credentials = containerservice.list_managed_cluster_user_credentials_output(
            resource_group_name=args.resource_group_name, resource_name=args.cluster_name,
        )
        encoded = credentials.kubeconfigs[0].value
        if args.credential is KubernetesCredential.TOKEN:
            token = client_token(AKS_SERVER_APP_ID)
            # An existing cluster without Entra ID returns a client certificate here, used as it is.
            kubeconfig = pulumi.Output.all(encoded, token).apply(
                lambda values: provider_kubeconfig(values[0], token=values[1]))
        else:
            login = KUBELOGIN_LOGIN[args.credential]
            kubeconfig = encoded.apply(lambda value: provider_kubeconfig(value, login=login))
        self.provider = k8s.Provider(
            f"{name}-provider",
            # Secret: a token is a credential (and an invoke result is not necessarily secret).
            kubeconfig=pulumi.Output.secret(kubeconfig),
            # A token changes every run, and the kubeconfig is unknown in a preview that updates the cluster:
            # with a stable identifier pulumi-kubernetes plans an update of the provider, never a replace of every
            # Kubernetes resource (DiffConfig, pulumi-kubernetes v4.16+).
            cluster_identifier=args.cluster_id,
            # Without it pulumi-kubernetes replaces a ConfigMap whose data changes, and a named one is deleted first
            # (v4.25.0 provider/pkg/provider: diff.go forceNewProperties lists `.data` for ConfigMaps unless this is
            # on; provider.go Diff sets DeleteBeforeReplace for a named object): every device-plugin config change
            # would delete gpushare-device-plugin-config and create it again, not update it in place.
            enable_config_map_mutable=True,
            opts=pulumi.ResourceOptions(parent=self, aliases=list(args.provider_aliases)),
        )
        self.kubeconfig = pulumi.Output.secret(encoded.apply(decode_kubeconfig))
        self.register_outputs({"kubeconfig": self.kubeconfig})
