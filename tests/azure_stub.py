"""A local HTTPS stand-in for Azure Resource Manager, for tests that drive the real Azure SDK clients.

The stub listens on 127.0.0.1 only, over TLS with a certificate from a throwaway `trustme` CA: the SDK's
bearer-token policy refuses to send a token over plain HTTP, so a plain-HTTP stub would not exercise the real
pipeline. It serves canned responses per path, records every request, and answers a path nobody registered with
400 `StubNoRoute`, so a wrong URL can never pass for "not found". Nothing here touches the internet.

Use:

    with ArmStub() as arm:
        arm.route(agent_pools_path(SUB, RG, CLUSTER), StubResponse(200, {"value": [...]}))
        read_live(SUB, RG, CLUSTER, credential=StaticTokenCredential(), **arm.client_kwargs())
        assert arm.count(agent_pools_path(SUB, RG, CLUSTER)) == 1
"""

from __future__ import annotations

import json
import ssl
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import trustme
from azure.core.credentials import AccessToken

AGENT_POOL_TYPE = "Microsoft.ContainerService/managedClusters/agentPools"
FAKE_TOKEN = "stub-token"


@dataclass(frozen=True)
class StubResponse:
    status: int
    body: object = None
    """JSON-serialisable value, or a `str` sent as is (to serve a malformed body)."""
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]


class StaticTokenCredential:
    """A TokenCredential that always returns the same token, so tests never reach a real identity provider."""

    def get_token(self, *scopes: str, **kwargs: object) -> AccessToken:
        return AccessToken(FAKE_TOKEN, int(time.time()) + 3600)


class ArmStub:
    """The stub server; a context manager. Routes are exact paths (query ignored); the last response repeats."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._routes: dict[str, list[StubResponse]] = {}
        self._lock = threading.Lock()
        self._tmp = tempfile.TemporaryDirectory(prefix="armstub-")
        ca = trustme.CA()
        self.ca_path = str(Path(self._tmp.name) / "ca.pem")
        ca.cert_pem.write_to_path(self.ca_path)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ca.issue_cert("127.0.0.1").configure_cert(context)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        # A short poll interval: `shutdown()` waits for the serve loop's next poll (0.5 s by default).
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    def client_kwargs(self) -> dict[str, object]:
        """What an Azure SDK client needs to talk to the stub: its URL, its CA, and no proxy from the environment."""
        return {"base_url": self.base_url, "connection_verify": self.ca_path, "use_env_settings": False}

    def route(self, path: str, *responses: StubResponse) -> None:
        """Serve `responses` in order on `path`; once exhausted the last one repeats."""
        with self._lock:
            self._routes[path] = list(responses)

    def count(self, path: str) -> int:
        return sum(1 for r in self.requests if r.path == path)

    def _respond(self, method: str, raw_path: str, headers: Mapping[str, str]) -> StubResponse:
        url = urllib.parse.urlsplit(raw_path)
        with self._lock:
            self.requests.append(RecordedRequest(method, url.path, urllib.parse.parse_qs(url.query), dict(headers)))
            queue = self._routes.get(url.path)
            if not queue:
                return StubResponse(400, arm_error("StubNoRoute", f"the stub has no route for {method} {url.path}"))
            return queue.pop(0) if len(queue) > 1 else queue[0]

    def __enter__(self) -> ArmStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        self._tmp.cleanup()


def _handler_for(stub: ArmStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            response = stub._respond("GET", self.path, self.headers)
            body = response.body if isinstance(response.body, str) else json.dumps(response.body)
            payload = body.encode() if response.body is not None else b""
            self.send_response(response.status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep test output clean; requests are recorded on the stub instead

    return Handler


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
        "properties": {
            "provisioningState": "Succeeded", "kubernetesVersion": "1.33", "dnsPrefix": cluster,
            "autoUpgradeProfile": {"upgradeChannel": "patch", "nodeOSUpgradeChannel": "NodeImage"},
            "fqdn": f"{cluster}-abc123.hcp.westeurope.azmk8s.io", "enableRBAC": True, "disableLocalAccounts": True,
            "aadProfile": {"managed": True, "enableAzureRBAC": True, "tenantID": "t"},
            "networkProfile": {key: value for key, value in profile.items() if value is not None},
        },
    }


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
