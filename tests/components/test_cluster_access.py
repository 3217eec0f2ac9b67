"""ClusterAccess under the mock engine: the Kubernetes provider's token kubeconfig and identifier, and the people's
kubeconfig; no static credential anywhere."""

import pulumi
import yaml

from gpushare.components.cluster_access import ClusterAccess, ClusterAccessArgs
from gpushare.render.mock_engine import MOCK_KUBECONFIG, MOCK_USER_TOKEN, run_pulumi

PROVIDER = "pulumi:providers:kubernetes"
CLUSTER_ID = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/c1"


def access_program(seen: dict):
    def program():
        access = ClusterAccess("access", ClusterAccessArgs(resource_group_name="rg", cluster_name="c1",
                                                           cluster_id=CLUSTER_ID))
        access.kubeconfig.apply(lambda value: seen.update(kubeconfig=value))
        pulumi.Output.from_input(access.kubeconfig.is_secret()).apply(lambda secret: seen.update(secret=secret))
    return program


def test_provider_kubeconfig_is_the_clusters_with_an_entra_token_and_secret():
    recording = run_pulumi(access_program({}))
    provider = recording.get(PROVIDER, "access-provider")
    kubeconfig = yaml.safe_load(provider.inputs["kubeconfig"])
    aks = yaml.safe_load(MOCK_KUBECONFIG)
    assert kubeconfig["clusters"] == aks["clusters"]
    assert [u["user"] for u in kubeconfig["users"]] == [{"token": MOCK_USER_TOKEN}]
    assert "kubeconfig" in provider.secret_inputs
    assert provider.parent == "access"


def test_token_is_for_aks_and_credentials_are_the_user_ones():
    recording = run_pulumi(access_program({}))
    assert recording.invokes.count("azure-native:authorization:getClientToken") == 1
    assert "azure-native:containerservice:listManagedClusterUserCredentials" in recording.invokes
    assert not [i for i in recording.invokes if "AdminCredentials" in i]


def test_provider_identifies_the_cluster_by_its_arm_id():
    """A token change, or an unknown kubeconfig in preview, is then an update, never a replace of every object."""
    provider = run_pulumi(access_program({})).get(PROVIDER, "access-provider")
    assert provider.inputs["clusterIdentifier"] == CLUSTER_ID


def test_provider_updates_configmaps_in_place():
    """The device-plugin ConfigMap gains a key on every sharing change: an update, not a delete and create (the real
    provider's default, seen in tests/engine)."""
    provider = run_pulumi(access_program({})).get(PROVIDER, "access-provider")
    assert provider.inputs["enableConfigMapMutable"] == "true"


def test_people_get_the_entra_kubeconfig_as_a_secret():
    seen = {}
    run_pulumi(access_program(seen))
    assert seen == {"kubeconfig": MOCK_KUBECONFIG, "secret": True}
    assert yaml.safe_load(seen["kubeconfig"])["users"][0]["user"]["exec"]["command"] == "kubelogin"


def test_client_token_invokes_as_the_typed_function_does(monkeypatch):
    """gpushare invokes getClientToken without importing pulumi_azure_native.authorization (0.18 s): the token, the
    arguments, the provider version the engine loads and the answer must be those of the typed function."""
    from pulumi_azure_native import authorization

    from gpushare.components.cluster_access import client_token
    from gpushare.kubernetes.kubeconfig import AKS_SERVER_APP_ID

    calls, seen = [], {}
    real_invoke = pulumi.runtime.invoke_output

    def recording_invoke(tok, props, opts=None, typ=None, package_ref=None):
        calls.append((tok, dict(props), opts.version, opts.plugin_download_url))
        return real_invoke(tok, props, opts, typ, package_ref)

    monkeypatch.setattr(pulumi.runtime, "invoke_output", recording_invoke)

    def program():
        authorization.get_client_token_output(endpoint=AKS_SERVER_APP_ID).token.apply(
            lambda token: seen.update(typed=token))
        client_token(AKS_SERVER_APP_ID).apply(lambda token: seen.update(ours=token))

    run_pulumi(program)
    typed, ours = calls
    assert ours == typed
    assert typed[2]  # the typed function pins the plugin version; ours must too
    assert seen == {"typed": MOCK_USER_TOKEN, "ours": MOCK_USER_TOKEN}
