"""The local HTTPS server behind `azure_stub.ArmStub` and `kube_stub.KubeStub`.

It listens on 127.0.0.1 only, over TLS with a certificate from a throwaway `trustme` CA: the Azure SDK's bearer-token
policy refuses to send a token over plain HTTP, and a kubeconfig carries its cluster's CA, so a plain-HTTP stub
would not exercise the real clients. It serves canned responses per route, records every request, and answers a
route nobody registered with a 400 in the API's own error shape (`no_route`), so a wrong URL never passes for
"not found". A response may also be a fault a real server or network shows (`Fault`): no answer at all, a body that
trickles in a byte at a time, a body cut short. Nothing here touches the internet.
"""

from __future__ import annotations

import enum
import json
import ssl
import tempfile
import threading
import urllib.parse
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import trustme


class Fault(enum.Enum):
    SILENT = "silent"
    """Accept the request and never answer (until the stub closes)."""
    DRIP = "drip"
    """Send the status and headers, then the body one byte every `drip_seconds`."""
    CUT_SHORT = "cut-short"
    """Announce the body's length plus 1,000 bytes, send the body, close the connection."""


@dataclass(frozen=True)
class StubResponse:
    status: int
    body: object = None
    """JSON-serialisable value, or a `str` or `bytes` sent as is (a malformed or huge body, pod logs)."""
    headers: Mapping[str, str] = field(default_factory=dict)
    fault: Fault | None = None
    drip_seconds: float = 1.0


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]
    """Names in lower case."""
    body: object = None
    """The request's JSON body, if any; a body that is not JSON (a form) as text."""


class HttpsStub:
    """The server; a context manager. A route serves its responses in order, then repeats the last one."""

    text_content_type = "application/json; charset=utf-8"
    """Content type of a `str` body."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.closing = threading.Event()
        """Set when the stub closes: a silent or dripping answer stops."""
        self._routes: dict[Hashable, list[StubResponse]] = {}
        self._lock = threading.Lock()
        self._tmp = tempfile.TemporaryDirectory(prefix="httpsstub-")
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
    def url(self) -> str:
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    def route_key(self, method: str, path: str) -> Hashable:
        """What a route is registered under: the exact path by default (query ignored)."""
        return path

    def request_key(self, method: str, path: str, query: Mapping[str, list[str]]) -> Hashable:
        """The route a request takes; a stub whose routes differ by query overrides this."""
        return self.route_key(method, path)

    def no_route(self, method: str, path: str) -> StubResponse:
        raise NotImplementedError

    def _set_route(self, key: Hashable, responses: tuple[StubResponse, ...]) -> None:
        with self._lock:
            self._routes[key] = list(responses)

    def _respond(self, method: str, raw_path: str, headers: Mapping[str, str], body: object) -> StubResponse:
        url = urllib.parse.urlsplit(raw_path)
        with self._lock:
            self.requests.append(RecordedRequest(method, url.path, urllib.parse.parse_qs(url.query),
                                                 {k.lower(): v for k, v in headers.items()}, body))
            queue = self._routes.get(self.request_key(method, url.path, urllib.parse.parse_qs(url.query)))
            if not queue:
                return self.no_route(method, url.path)
            return queue.pop(0) if len(queue) > 1 else queue[0]

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        self._tmp.cleanup()


def _body(raw: bytes) -> object:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode()


def _handler_for(stub: HttpsStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            response = stub._respond(method, self.path, self.headers, _body(raw))
            if response.fault is Fault.SILENT:
                stub.closing.wait()
                self.close_connection = True
                return
            text = isinstance(response.body, str | bytes)
            payload = (b"" if response.body is None else response.body if isinstance(response.body, bytes)
                       else (response.body if text else json.dumps(response.body)).encode())
            self.send_response(response.status)
            self.send_header("Content-Type", stub.text_content_type if text else "application/json; charset=utf-8")
            extra = 1000 if response.fault is Fault.CUT_SHORT else 0
            self.send_header("Content-Length", str(len(payload) + extra))
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if response.fault is Fault.DRIP:
                self._drip(payload, response.drip_seconds)
                return
            try:
                self.wfile.write(payload)
            except OSError:  # the client stopped reading (a body over its limit) and hung up
                self.close_connection = True
                return
            if response.fault is Fault.CUT_SHORT:
                self.close_connection = True

        def _drip(self, payload: bytes, seconds: float) -> None:
            self.close_connection = True
            for index in range(len(payload)):
                try:
                    self.wfile.write(payload[index:index + 1])
                    self.wfile.flush()
                except OSError:  # the client gave up
                    return
                if stub.closing.wait(seconds):
                    return

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_DELETE(self) -> None:
            self._serve("DELETE")

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep test output clean; requests are recorded on the stub instead

    return Handler
