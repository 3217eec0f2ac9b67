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


def arm_error(code: str, message: str) -> dict:
    """ARM's error body."""
    return {"error": {"code": code, "message": message}}
