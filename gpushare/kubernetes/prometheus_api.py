"""A reader of the Prometheus HTTP API's instant queries (https://prometheus.io/docs/prometheus/latest/querying/api/,
`POST /api/v1/query`, form-encoded so a long expression is not bounded by a URL's length). Every query aggregates
server-side: what comes back is one series per pool or namespace, never raw samples. Every read keeps the command's
read deadline and a bounded body (`gpushare.azure.remote_read`), and an answer that is not the documented vector
(`{status: success, data: {resultType: vector, result: [{metric: {...}, value: [<time>, "<number>"]}]}}`) is one
`PrometheusReadError` saying where it differs."""

from __future__ import annotations

import json
import math
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpushare.azure.remote_read import ReadBoundError, ReadDeadline, load_json, read_body
from gpushare.errors import GpushareError

TIMEOUT_SECONDS = 120
"""Silence allowed while waiting for a query's answer (Prometheus's own `--query.timeout` is 2 minutes), within the
read deadline."""
MAX_ANSWER_BYTES = 16 * 1024 * 1024
"""A query aggregates server-side to one series per pool or namespace: kilobytes, not megabytes."""
NOT_PROMETHEUS_HINT = ("is --prometheus (or gpushare:metrics.prometheus) the base URL of a Prometheus HTTP API, "
                       "e.g. http://localhost:9090? a proxy or another service there answers in another shape")


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
    deadline: ReadDeadline = field(default_factory=lambda: ReadDeadline.from_environ(os.environ))
    """The command's, for every query."""

    def query(self, expression: str, at: float, labels: Sequence[str] = ()) -> list[Sample]:
        """An instant query evaluated at `at` (Unix seconds): its vector, each series carrying `labels` (what the
        expression aggregates by), NaN and infinite samples left out."""
        self.queries.append(expression)
        endpoint = f"{self.url.rstrip('/')}/api/v1/query"
        body = urllib.parse.urlencode({"query": expression, "time": f"{at:.3f}"}).encode()
        answer = self.post(endpoint, body)
        try:
            document = load_json(answer, endpoint)
        except ReadBoundError as err:
            raise bound_error(err) from None
        except ValueError:
            error = PrometheusReadError(f"{endpoint}: the answer is not JSON ({answer[:80]!r})")
            error.hint = NOT_PROMETHEUS_HINT
            raise error from None
        try:
            return vector(document, labels)
        except _NotAVector as err:
            error = PrometheusReadError(f"{endpoint}: the answer to `{_short(expression)}` is not a Prometheus "
                                        f"instant vector: {err}")
            error.hint = NOT_PROMETHEUS_HINT
            raise error from None

    def post(self, endpoint: str, body: bytes) -> bytes:
        """The answer's body to a form-encoded POST; every failure a `PrometheusReadError`. Plain urllib here (no
        credentials); `gpushare.kubernetes.workspace_prometheus.WorkspacePrometheusReader` signs in through
        azure-core."""
        request = urllib.request.Request(endpoint, data=body, headers=FORM_HEADERS, method="POST")
        try:
            remaining = self.deadline.check(endpoint)
            with urllib.request.urlopen(request, timeout=min(TIMEOUT_SECONDS, remaining)) as response:
                return read_body(response, limit=MAX_ANSWER_BYTES, deadline=self.deadline, what=endpoint)
        except ReadBoundError as err:
            raise bound_error(err) from None
        except urllib.error.HTTPError as error:
            try:
                text = read_body(error.fp, limit=64 * 1024, deadline=self.deadline, what=endpoint) if error.fp else b""
            except ReadBoundError:
                text = b""
            raise PrometheusReadError(f"{endpoint}: HTTP {error.code}: {api_error(text, error.reason)}") from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            if self.deadline.remaining() <= 0:
                raise bound_error(self.deadline.exceeded(endpoint)) from None
            if isinstance(reason, TimeoutError):
                raise too_slow(endpoint) from None
            raise unreachable(endpoint, reason) from None


class _NotAVector(Exception):
    """Where an answer differs from the documented instant vector."""


def _short(expression: str) -> str:
    return expression if len(expression) <= 80 else f"{expression[:77]}..."


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def vector(document: Any, labels: Sequence[str] = ()) -> list[Sample]:
    """The samples of a documented instant-query answer (prometheus.io/docs/prometheus/latest/querying/api, "Instant
    queries", "Instant vectors": `value` is `[<unix time>, "<sample value>"]`), or `_NotAVector` naming where the
    answer differs. Non-finite samples (NaN, +Inf: no data for a ratio) are left out."""
    if not isinstance(document, dict):
        raise _NotAVector(f"the body is {_kind(document)}, not an object")
    if document.get("status") != "success":
        raise _NotAVector(f"status is {json.dumps(document.get('status'))[:40]}, not \"success\""
                          + (f" ({document.get('errorType')}: {str(document.get('error'))[:200]})"
                             if document.get("error") else ""))
    data = document.get("data")
    if not isinstance(data, dict):
        raise _NotAVector(f"`data` is {_kind(data)}, not an object")
    if data.get("resultType") != "vector":
        raise _NotAVector(f"`data.resultType` is {json.dumps(data.get('resultType'))[:40]}, not \"vector\"")
    result = data.get("result")
    if not isinstance(result, list):
        raise _NotAVector(f"`data.result` is {_kind(result)}, not a list")
    samples = []
    for index, item in enumerate(result):
        where = f"`data.result[{index}]`"
        if not isinstance(item, dict):
            raise _NotAVector(f"{where} is {_kind(item)}, not an object")
        metric, value = item.get("metric"), item.get("value")
        if not isinstance(metric, dict) or not all(isinstance(v, str) for v in metric.values()):
            raise _NotAVector(f"{where}.metric is {_kind(metric)}, not an object of label values")
        if missing := [label for label in labels if label not in metric]:
            raise _NotAVector(f"{where}.metric has no {', '.join(missing)} label, which the query aggregates by "
                              f"({json.dumps(metric)[:120]})")
        if not isinstance(value, list) or len(value) != 2 or not isinstance(value[1], str):
            raise _NotAVector(f"{where}.value is {json.dumps(value)[:60]}, not [<time>, \"<number>\"]")
        try:
            number = float(value[1])
        except ValueError:
            raise _NotAVector(f"{where}.value's sample {value[1][:40]!r} is not a number") from None
        if math.isfinite(number):
            samples.append(Sample(metric, number))
    return samples


FORM_HEADERS = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}


def api_error(body: bytes, reason: object) -> str:
    """The Prometheus API's own error (`errorType: error`) from a failed answer's body, else the HTTP reason."""
    try:
        document = load_json(body, "the error")
        return f"{document.get('errorType', 'error')}: {str(document.get('error', ''))[:300]}"
    except (ValueError, AttributeError, ReadBoundError):
        return str(reason)


def bound_error(err: ReadBoundError) -> PrometheusReadError:
    """A read past the deadline or the body's bounds, as the reader's error (exit 4)."""
    return PrometheusReadError(str(err))


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
