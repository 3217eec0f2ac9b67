"""A reader of the Prometheus HTTP API's instant queries (https://prometheus.io/docs/prometheus/latest/querying/api/,
`POST /api/v1/query`, form-encoded so a long expression is not bounded by a URL's length). Every query aggregates
server-side: what comes back is one series per pool or namespace, never raw samples."""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpushare.errors import GpushareError

TIMEOUT_SECONDS = 120


class PrometheusReadError(GpushareError):
    """The Prometheus API could not be read, or refused a query."""

    exit_code = 4


@dataclass(frozen=True)
class Sample:
    labels: Mapping[str, str]
    value: float


@dataclass
class PrometheusReader:
    url: str
    """The server's base URL (`http://prometheus:9090`, or a path prefix such as `https://host/select/0`)."""
    queries: list[str] = field(default_factory=list)
    """Every expression sent, in order (the report states how many)."""

    def query(self, expression: str, at: float) -> list[Sample]:
        """An instant query evaluated at `at` (Unix seconds): its vector, NaN samples left out."""
        self.queries.append(expression)
        endpoint = f"{self.url.rstrip('/')}/api/v1/query"
        body = urllib.parse.urlencode({"query": expression, "time": f"{at:.3f}"}).encode()
        try:
            document = json.loads(self.post(endpoint, body))
        except ValueError:
            raise PrometheusReadError(f"{endpoint}: the answer is not JSON: is this a Prometheus API?") from None
        if document.get("status") != "success" or document.get("data", {}).get("resultType") != "vector":
            raise PrometheusReadError(f"{endpoint}: unexpected answer {str(document)[:200]}")
        samples = []
        for item in document["data"]["result"]:
            value = float(item["value"][1])
            if not math.isnan(value):
                samples.append(Sample(item["metric"], value))
        return samples

    def post(self, endpoint: str, body: bytes) -> bytes:
        """The answer's body to a form-encoded POST; every failure a `PrometheusReadError`. Plain urllib here (no
        credentials); `gpushare.kubernetes.workspace_prometheus.WorkspacePrometheusReader` signs in through
        azure-core."""
        request = urllib.request.Request(endpoint, data=body, headers=FORM_HEADERS, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
                return response.read()
        except urllib.error.HTTPError as error:
            try:
                text = error.read()
            except OSError:
                text = b""
            raise PrometheusReadError(f"{endpoint}: HTTP {error.code}: {api_error(text, error.reason)}") from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            if isinstance(reason, TimeoutError):
                raise too_slow(endpoint) from None
            raise unreachable(endpoint, reason) from None


FORM_HEADERS = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}


def api_error(body: bytes, reason: object) -> str:
    """The Prometheus API's own error (`errorType: error`) from a failed answer's body, else the HTTP reason."""
    try:
        document = json.loads(body)
        return f"{document.get('errorType', 'error')}: {document.get('error', '')}"
    except (ValueError, AttributeError):
        return str(reason)


def too_slow(endpoint: str) -> PrometheusReadError:
    error = PrometheusReadError(f"{endpoint}: no answer within {TIMEOUT_SECONDS} s")
    error.hint = ("a window the showback rules have not recorded is folded from the raw series, every join at every "
                  "step: load the rules (gpushare rules) and report once they cover the window, or ask for a "
                  "shorter --window")
    return error


def unreachable(endpoint: str, reason: object) -> PrometheusReadError:
    error = PrometheusReadError(f"{endpoint}: cannot be reached ({reason})")
    error.hint = "check --prometheus (the server's base URL, e.g. http://localhost:9090 through kubectl port-forward)"
    return error
