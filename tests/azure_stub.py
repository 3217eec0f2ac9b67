"""A local HTTPS stand-in for Azure Resource Manager, for tests that drive the real Azure SDK clients.

The server is `tests/https_stub.HttpsStub` (127.0.0.1, TLS from a throwaway CA, canned responses per path, a log of
every request); a path nobody registered gets 400 `StubNoRoute` in ARM's error shape.

Use:

    with ArmStub() as arm:
        arm.route(agent_pools_path(SUB, RG, CLUSTER), StubResponse(200, {"value": [...]}))
        read_live(SUB, RG, CLUSTER, credential=StaticTokenCredential(), **arm.client_kwargs())
        assert arm.count(agent_pools_path(SUB, RG, CLUSTER)) == 1
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from azure.core.credentials import AccessToken

from tests.https_stub import HttpsStub, RecordedRequest, StubResponse

__all__ = ["ArmStub", "RecordedRequest", "StaticTokenCredential", "StubResponse"]

AGENT_POOL_TYPE = "Microsoft.ContainerService/managedClusters/agentPools"
FAKE_TOKEN = "stub-token"


class StaticTokenCredential:
    """A TokenCredential that always returns the same token, so tests never reach a real identity provider."""

    def get_token(self, *scopes: str, **kwargs: object) -> AccessToken:
        return AccessToken(FAKE_TOKEN, int(time.time()) + 3600)


class StubDefaultCredential(StaticTokenCredential):
    """Stands in for DefaultAzureCredential: same constructor keywords, a fixed token."""

    def __init__(self, **kwargs: object) -> None:
        pass

    def close(self) -> None:
        pass


@contextlib.contextmanager
def reached_arm(monkeypatch, subscription_id: str | None = None) -> Iterator[ArmStub]:
    """A running stub that gpushare's reads reach from the environment (`reach_from_environment`), with
    AZURE_SUBSCRIPTION_ID set when given (the CLI's subscription; the program takes the provider's)."""
    with ArmStub() as stub:
        reach_from_environment(monkeypatch, stub)
        if subscription_id:
            monkeypatch.setenv("AZURE_SUBSCRIPTION_ID", subscription_id)
        yield stub


def reach_from_environment(monkeypatch, stub: ArmStub) -> None:
    """Point gpushare's own Azure reads at `stub` as a user's environment would: GPUSHARE_ARM_ENDPOINT, its CA
    through REQUESTS_CA_BUNDLE, no proxy, and a DefaultAzureCredential that needs no network."""
    monkeypatch.setenv("GPUSHARE_ARM_ENDPOINT", stub.base_url)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", stub.ca_path)
    for proxy in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    monkeypatch.setattr("azure.identity.DefaultAzureCredential", StubDefaultCredential)


class ArmStub(HttpsStub):
    """Routes are exact paths (query ignored); the last response repeats."""

    @property
    def base_url(self) -> str:
        return self.url

    def client_kwargs(self) -> dict[str, object]:
        """What an Azure SDK client needs to talk to the stub: its URL, its CA, and no proxy from the environment."""
        return {"base_url": self.base_url, "connection_verify": self.ca_path, "use_env_settings": False}

    def route(self, path: str, *responses: StubResponse) -> None:
        """Serve `responses` in order on `path`; once exhausted the last one repeats."""
        self._set_route(path, responses)

    def count(self, path: str) -> int:
        return sum(1 for r in self.requests if r.path == path)

    def no_route(self, method: str, path: str) -> StubResponse:
        return StubResponse(400, arm_error("StubNoRoute", f"the stub has no route for {method} {path}"))


def managed_cluster_id(subscription_id: str, resource_group: str, cluster: str) -> str:
    return (
        f"/subscriptions/{subscription_id}/resourceGroups/{resource_group}"
        f"/providers/Microsoft.ContainerService/managedClusters/{cluster}"
    )


def agent_pools_path(subscription_id: str, resource_group: str, cluster: str) -> str:
    """The URL path of ARM's "list agent pools" operation."""
    return managed_cluster_id(subscription_id, resource_group, cluster) + "/agentPools"


def arm_agent_pool(subscription_id: str, resource_group: str, cluster: str, name: str, **properties: object) -> dict:
    """One agent pool as ARM returns it in a list: envelope plus camelCase `properties` (wire names, e.g. `osSKU`)."""
    return {
        "id": f"{agent_pools_path(subscription_id, resource_group, cluster)}/{name}",
        "name": name,
        "type": AGENT_POOL_TYPE,
        "properties": {"provisioningState": "Succeeded", "osType": "Linux", **properties},
    }


def arm_managed_cluster(subscription_id: str, resource_group: str, cluster: str, **network: object) -> dict:
    """A managed cluster as ARM's GET returns it (2025-09-01 shape), deployed as gpushare's hardened baseline wants
    it; `network` overrides `networkProfile` keys (None removes one)."""
    profile = {"networkPlugin": "azure", "networkPluginMode": "overlay", "networkDataplane": "cilium",
               "networkPolicy": "cilium", "podCidr": "10.244.0.0/16", "serviceCidr": "10.0.0.0/16",
               "dnsServiceIP": "10.0.0.10", "outboundType": "loadBalancer", "loadBalancerSku": "standard", **network}
    return {
        "id": managed_cluster_id(subscription_id, resource_group, cluster), "name": cluster,
        "type": "Microsoft.ContainerService/ManagedClusters", "location": "westeurope",
        "sku": {"name": "Base", "tier": "Standard"},
        "identity": {"type": "SystemAssigned", "principalId": CLUSTER_IDENTITY, "tenantId": "t"},
        "properties": {
            "provisioningState": "Succeeded", "kubernetesVersion": "1.33", "dnsPrefix": cluster,
            "autoUpgradeProfile": {"upgradeChannel": "patch", "nodeOSUpgradeChannel": "NodeImage"},
            "fqdn": f"{cluster}-abc123.hcp.westeurope.azmk8s.io", "enableRBAC": True, "disableLocalAccounts": True,
            "aadProfile": {"managed": True, "enableAzureRBAC": True, "tenantID": "t"},
            "networkProfile": {key: value for key, value in profile.items() if value is not None},
            # The system pool, in a VNet AKS manages (no vnetSubnetID).
            "agentPoolProfiles": [{"name": "system", "mode": "System", "count": 2, "vmSize": "Standard_D4ds_v5",
                                   "osType": "Linux", "type": "VirtualMachineScaleSets"}],
        },
    }


CLUSTER_IDENTITY = "5b1e7c3a-0d2f-4e8a-9c61-7f3b2a9d4e10"
"""The object ID of the stub clusters' system-assigned identity."""


def role_assignments_path(scope: str) -> str:
    """The URL path of ARM's "list role assignments for scope" (the principal is a `$filter` query)."""
    return f"{scope}/providers/Microsoft.Authorization/roleAssignments"


def arm_role_assignment(scope: str, principal_id: str, role: str, name: str) -> dict:
    """One role assignment as ARM lists it (2022-04-01 shape); `role` is the role definition's GUID."""
    subscription = scope.split("/")[2]
    return {"id": f"{role_assignments_path(scope)}/{name}", "name": name,
            "type": "Microsoft.Authorization/roleAssignments",
            "properties": {"roleDefinitionId": f"/subscriptions/{subscription}/providers/Microsoft.Authorization/"
                                               f"roleDefinitions/{role}",
                           "principalId": principal_id, "principalType": "ServicePrincipal", "scope": scope,
                           "condition": None, "createdOn": "2026-03-02T09:14:00Z"}}


def arm_error(code: str, message: str) -> dict:
    """ARM's error body."""
    return {"error": {"code": code, "message": message}}


# --- preflight's region reads ------------------------------------------------------------------------------------

def resource_skus_path(subscription_id: str) -> str:
    """The URL path of azure-mgmt-compute's `resource_skus.list` (the location is a `$filter` query)."""
    return f"/subscriptions/{subscription_id}/providers/Microsoft.Compute/skus"


def usages_path(subscription_id: str, location: str) -> str:
    """The URL path of azure-mgmt-compute's `usage.list(location)`."""
    return f"/subscriptions/{subscription_id}/providers/Microsoft.Compute/locations/{location}/usages"


def kubernetes_versions_path(subscription_id: str, location: str) -> str:
    """The URL path of azure-mgmt-containerservice's `managed_clusters.list_kubernetes_versions(location)`."""
    return (f"/subscriptions/{subscription_id}/providers/Microsoft.ContainerService/locations/{location}"
            "/kubernetesVersions")


def arm_vm_sku(name: str, family: str, vcpus: int, location: str, zones: tuple[str, ...] = ("1", "2", "3"),
               restrictions: list[dict] | None = None, gpus: int = 0) -> dict:
    """One VM size as the Resource SKUs list returns it for a location filter (`az vm list-skus` prints the same)."""
    capabilities = [
        {"name": "MaxResourceVolumeMB", "value": "180224"},
        {"name": "vCPUs", "value": str(vcpus)},
        {"name": "HyperVGenerations", "value": "V1,V2"},
        {"name": "MemoryGB", "value": str(vcpus * 7)},
        {"name": "vCPUsAvailable", "value": str(vcpus)},
        {"name": "GPUs", "value": str(gpus)},
        {"name": "PremiumIO", "value": "True"},
    ]
    return {
        "resourceType": "virtualMachines",
        "name": name,
        "tier": "Standard",
        "size": name.removeprefix("Standard_"),
        "family": family,
        "locations": [location],
        "locationInfo": [{"location": location, "zones": list(zones), "zoneDetails": []}],
        "capabilities": capabilities,
        "restrictions": restrictions or [],
    }


def arm_disk_sku(location: str) -> dict:
    """A non-VM entry: the location-filtered list holds every resource type."""
    return {
        "resourceType": "disks", "name": "Premium_LRS", "tier": "Premium", "size": "P1", "family": None,
        "locations": [location], "locationInfo": [{"location": location, "zones": ["1", "2", "3"]}],
        "capabilities": [{"name": "MaxSizeGiB", "value": "4"}], "restrictions": [],
    }


def location_restriction(location: str, reason: str = "NotAvailableForSubscription") -> dict:
    return {"type": "Location", "values": [location], "restrictionInfo": {"locations": [location]},
            "reasonCode": reason}


def zone_restriction(location: str, zones: tuple[str, ...], reason: str = "NotAvailableForSubscription") -> dict:
    return {"type": "Zone", "values": [location], "restrictionInfo": {"locations": [location], "zones": list(zones)},
            "reasonCode": reason}


def arm_usage(name: str, localized: str, current: int, limit: int) -> dict:
    """One entry of the Compute usage list (vCPUs)."""
    return {"unit": "Count", "currentValue": current, "limit": limit,
            "name": {"value": name, "localizedValue": localized}}


def arm_kubernetes_version(version: str, patches: tuple[str, ...], *, default: bool = False, preview: bool = False,
                           plans: tuple[str, ...] = ("KubernetesOfficial",)) -> dict:
    """One entry of `values` in AKS's Kubernetes versions list for a location."""
    document: dict = {"version": version, "capabilities": {"supportPlan": list(plans)},
                      "patchVersions": {patch: {"upgrades": []} for patch in patches}}
    if default:
        document["isDefault"] = True
    if preview:
        document["isPreview"] = True
    return document


# --- an existing cluster (`existing: true`) and subnets of your own -------------------------------------------------

def arm_existing_cluster(subscription_id: str, resource_group: str, cluster: str, *, local_accounts: bool = False,
                         tier: str = "Standard", subnet_id: str | None = None, network: dict | None = None,
                         system_pool: dict | None = None) -> dict:
    """A cluster its platform team made: Entra ID and Azure CNI Overlay like gpushare's baseline, unless
    `local_accounts` (no Entra ID, local accounts on) or another `tier`; its pools in `subnet_id` when given;
    `network` overrides `networkProfile` keys (None removes one), `system_pool` adds keys to its system pool's profile
    (`podSubnetID`, `podIPAllocationMode`, `maxPods`)."""
    document = arm_managed_cluster(subscription_id, resource_group, cluster, **(network or {}))
    properties = document["properties"]
    document["sku"]["tier"] = tier
    properties["oidcIssuerProfile"] = {"enabled": True, "issuerURL": f"https://oidc.example/{cluster}/"}
    properties["securityProfile"] = {"workloadIdentity": {"enabled": True},
                                     "imageCleaner": {"enabled": True, "intervalHours": 168}}
    if local_accounts:
        properties.pop("aadProfile")
        properties["disableLocalAccounts"] = False
    if subnet_id:
        properties["agentPoolProfiles"] = [{"name": "system", "mode": "System", "vnetSubnetID": subnet_id}]
    properties["agentPoolProfiles"][0].update(system_pool or {})
    return document


def maintenance_configurations_path(subscription_id: str, resource_group: str, cluster: str) -> str:
    """The URL path of ARM's "list maintenance configurations" operation."""
    return managed_cluster_id(subscription_id, resource_group, cluster) + "/maintenanceConfigurations"


def arm_maintenance_configuration(subscription_id: str, resource_group: str, cluster: str, name: str, *,
                                  day: str = "Sunday", start: str = "02:00", hours: int = 4) -> dict:
    """One maintenance configuration as ARM lists it: a weekly window (2025-09-01 shape)."""
    return {"id": f"{maintenance_configurations_path(subscription_id, resource_group, cluster)}/{name}", "name": name,
            "type": "Microsoft.ContainerService/managedClusters/maintenanceConfigurations",
            "properties": {"maintenanceWindow": {"schedule": {"weekly": {"intervalWeeks": 1, "dayOfWeek": day}},
                                                 "durationHours": hours, "startTime": start, "utcOffset": "+00:00"}}}


def arm_maintenance_windows(subscription_id: str, resource_group: str, cluster: str, *names: str) -> dict:
    """The list body with a window per name; by default both upgrade channels' (what gpushare gives its clusters)."""
    names = names or ("aksManagedAutoUpgradeSchedule", "aksManagedNodeOSUpgradeSchedule")
    return {"value": [arm_maintenance_configuration(subscription_id, resource_group, cluster, name) for name in names]}


def serve_existing_cluster(arm: ArmStub, subscription_id: str, resource_group: str, cluster: str,
                           document: dict | None = None, windows: StubResponse | None = None) -> None:
    """Route an existing cluster's two reads: its GET (`arm_existing_cluster` by default) and its maintenance
    configurations (both upgrade windows by default)."""
    arm.route(managed_cluster_id(subscription_id, resource_group, cluster),
              StubResponse(200, document or arm_existing_cluster(subscription_id, resource_group, cluster)))
    arm.route(maintenance_configurations_path(subscription_id, resource_group, cluster),
              windows or StubResponse(200, arm_maintenance_windows(subscription_id, resource_group, cluster)))


def arm_subnet(subnet_id: str, prefix: str, used: int) -> dict:
    """A subnet as the Network GET returns it, with `used` IP configurations (nodes' NICs and the like)."""
    return {"id": subnet_id, "name": subnet_id.rsplit("/", 1)[-1], "type": "Microsoft.Network/virtualNetworks/subnets",
            "properties": {"provisioningState": "Succeeded", "addressPrefix": prefix,
                           "ipConfigurations": [{"id": f"{subnet_id}/ipConfigurations/nic{i}"} for i in range(used)]}}


def monitor_workspace_id(subscription_id: str, resource_group: str, name: str) -> str:
    """An Azure Monitor workspace's ARM ID, as the SDK's `azure_monitor_workspaces.get` builds its URL path."""
    return f"/subscriptions/{subscription_id}/resourceGroups/{resource_group}/providers/Microsoft.Monitor/accounts/{name}"


def arm_monitor_workspace(subscription_id: str, resource_group: str, name: str, query_endpoint: str | None) -> dict:
    """An Azure Monitor workspace as ARM's GET returns it (Microsoft.Monitor/accounts, api-version 2025-10-03, as
    azure-mgmt-monitorworkspaces 1.0.0's AzureMonitorWorkspaceResource reads it); None: no metrics container."""
    workspace_id = monitor_workspace_id(subscription_id, resource_group, name)
    properties: dict = {
        "accountId": "4f0c7a52-3b9e-4d1a-8e26-1c5d9b7a3e40", "provisioningState": "Succeeded",
        "publicNetworkAccess": "Enabled",
        "defaultIngestionSettings": {
            "dataCollectionRuleResourceId": f"/subscriptions/{subscription_id}/resourceGroups/MA_{name}_westeurope_"
                                            f"managed/providers/Microsoft.Insights/dataCollectionRules/{name}",
            "dataCollectionEndpointResourceId": f"/subscriptions/{subscription_id}/resourceGroups/MA_{name}_"
                                                f"westeurope_managed/providers/Microsoft.Insights/"
                                                f"dataCollectionEndpoints/{name}"},
    }
    if query_endpoint is not None:
        properties["metrics"] = {"prometheusQueryEndpoint": query_endpoint,
                                 "internalId": "mac_4f0c7a52-3b9e-4d1a-8e26-1c5d9b7a3e40"}
    return {"id": workspace_id, "name": name, "type": "Microsoft.Monitor/accounts", "location": "westeurope",
            "etag": '"0a00b2c3-0000-0d00-0000-000000000000"', "tags": {}, "properties": properties}


class ScopedTokenCredential:
    """Stands in for DefaultAzureCredential: a token that names the scope it was asked for (`token-for <scope>`), so
    a stub that accepts one scope's token only catches a request signed for another."""

    scopes: list[tuple[str, ...]] = []

    def __init__(self, **kwargs: object) -> None:
        pass

    def get_token(self, *scopes: str, **kwargs: object) -> AccessToken:
        ScopedTokenCredential.scopes.append(scopes)
        return AccessToken(f"token-for {' '.join(scopes)}", int(time.time()) + 3600)

    def close(self) -> None:
        pass


class WorkspaceQueryStub(HttpsStub):
    """An Azure Monitor workspace's query endpoint: the Prometheus HTTP API of `upstream` (a real Prometheus on
    loopback) behind a bearer check. A request without `Authorization: Bearer <token>` is answered 401, every
    request 403 while `forbidden`; the others are forwarded as they came (path, form body) and answered as the
    upstream answered."""

    def __init__(self, upstream: str, token: str) -> None:
        super().__init__()
        self.upstream = upstream.rstrip("/")
        self.token = token
        self.forbidden = False

    def _respond(self, method: str, raw_path: str, headers, body: object) -> StubResponse:
        import urllib.error
        import urllib.parse
        import urllib.request

        url = urllib.parse.urlsplit(raw_path)
        lower = {k.lower(): v for k, v in headers.items()}
        with self._lock:
            self.requests.append(RecordedRequest(method, url.path, urllib.parse.parse_qs(url.query), lower, body))
        if lower.get("authorization") != f"Bearer {self.token}":
            return StubResponse(401, "", {"WWW-Authenticate": 'Bearer realm="", error="invalid_token"'})
        if self.forbidden:
            return StubResponse(403, "")
        request = urllib.request.Request(self.upstream + raw_path, data=(body or "").encode(), method=method,
                                         headers={"Content-Type": lower.get("content-type", "")})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return StubResponse(response.status, response.read().decode())
        except urllib.error.HTTPError as error:
            return StubResponse(error.code, error.read().decode())
