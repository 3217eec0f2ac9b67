"""The command's read bounds (`gpushare.azure.remote_read`) inside the Azure SDK's own pipeline, for every ARM read
and the workspace's Prometheus queries: a retry policy and a transport that the clients take (`retry_policy=`,
`transport=`, azure-core's documented client keywords).

What azure-core 1.41 does on its own (azure/core/pipeline/policies/_retry.py, transport/_requests_basic.py):
- `RetryPolicy.sleep` sleeps whatever `Retry-After` says (`_sleep_for_retry` -> `transport.sleep(retry_after)`);
  `retry_backoff_max` caps only its own exponential backoff. `parse_retry_after` turns an HTTP date into seconds
  (an hour's date: an hour), and `Retry-After: 1e400` into inf, on which `time.sleep` raises OverflowError;
- its `timeout` (the whole call, retries included) is checked only before each try, and shrinks only the
  connection timeout to what is left, never the read timeout;
- `RequestsTransport` passes `(connection_timeout, read_timeout)` to requests, whose read timeout bounds each socket
  read, not the answer: a server that sends a byte every 5 s is never timed out; and it reads the whole body into
  memory before the SDK's `ContentDecodePolicy` decodes it with `json.loads`, which recurses per nesting level.
Here: `Retry-After` capped (`remote_read.retry_wait`), every wait and try inside the deadline, each socket read
given at most the time left, the body bounded in size and nesting as it arrives.
"""

from __future__ import annotations

from typing import Any

from azure.core.exceptions import ServiceRequestTimeoutError, ServiceResponseTimeoutError
from azure.core.pipeline.policies import RetryPolicy
from azure.core.pipeline.transport import RequestsTransport
from azure.core.rest import HttpResponse as RestHttpResponse
from urllib3.exceptions import ProtocolError, ReadTimeoutError

from gpushare.azure.remote_read import ReadDeadline, check_nesting, read_body, retry_wait

MAX_ARM_BODY_BYTES = 32 * 1024 * 1024
"""A region's VM sizes (`resource_skus.list` filtered by location, the largest answer read here) are a few MB."""


def _doing(request: Any) -> str:
    return f"{request.method} {str(request.url).split('?')[0]}"


class BoundedRetryPolicy(RetryPolicy):
    """azure-core's retries (which statuses and errors, how many), with every wait capped and inside the deadline."""

    def __init__(self, deadline: ReadDeadline, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._deadline = deadline

    def configure_retries(self, options: dict[str, Any]) -> dict[str, Any]:
        settings = super().configure_retries(options)
        settings["timeout"] = min(settings["timeout"], max(self._deadline.remaining(), 0.001))
        return settings

    def get_retry_after(self, response: Any) -> float | None:
        """`Retry-After` (seconds or an HTTP date), else azure-core's `retry-after-ms`/`x-ms-retry-after-ms`, capped
        at `MAX_RETRY_WAIT_SECONDS`; None when none is a time."""
        headers = response.http_response.headers
        if headers.get("retry-after"):
            return retry_wait(headers["retry-after"], 0)
        for name in ("retry-after-ms", "x-ms-retry-after-ms"):
            try:
                return retry_wait(repr(float(headers.get(name) or "") / 1000), 0)
            except ValueError:
                continue
        return None

    def sleep(self, settings: dict[str, Any], transport: Any, response: Any = None) -> None:
        wait = self.get_retry_after(response) if response else None
        if wait is None:
            wait = self.get_backoff_time(settings)
        if wait > 0:
            doing = _doing(response.http_request) if response else "the next try"
            self._deadline.sleep(wait, doing)


class BoundedTransport(RequestsTransport):
    """azure-core's requests transport (TLS trust, proxies, connection pool), each answer read within the deadline
    and bounded in size and nesting before the SDK decodes it."""

    def __init__(self, deadline: ReadDeadline, limit: int = MAX_ARM_BODY_BYTES, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._deadline = deadline
        self._limit = limit

    def send(self, request: Any, *, proxies: Any = None, **kwargs: Any) -> Any:
        doing = _doing(request)
        remaining = self._deadline.check(doing)
        read_timeout = min(kwargs.pop("read_timeout", self.connection_config.read_timeout), remaining)
        connection_timeout = kwargs.pop("connection_timeout", self.connection_config.timeout)
        if not isinstance(connection_timeout, tuple):
            connection_timeout = min(connection_timeout, remaining)
        stream = kwargs.pop("stream", False)
        try:
            response = super().send(request, proxies=proxies, stream=True, connection_timeout=connection_timeout,
                                    read_timeout=read_timeout, **kwargs)
        except (ServiceRequestTimeoutError, ServiceResponseTimeoutError):
            if read_timeout >= remaining or self._deadline.remaining() <= 0:
                raise self._deadline.exceeded(doing) from None
            raise
        if stream:
            return response
        internal = response.internal_response
        try:
            body = read_body(internal.raw, limit=self._limit, deadline=self._deadline, what=doing,
                             timeouts=(ReadTimeoutError,), cut_short=(ProtocolError,), decode_content=True)
            check_nesting(body, doing)
        except BaseException:
            internal.close()
            raise
        # What requests and azure-core keep of a body read without streaming (requests.Response.content,
        # azure.core.rest's `read()`): set here, from the bounded read.
        internal._content, internal._content_consumed = body, True
        if isinstance(response, RestHttpResponse):
            response._content = body
            response.close()
        return response


def client_settings(deadline: ReadDeadline, settings: dict[str, Any]) -> dict[str, Any]:
    """An azure-mgmt client's keywords: `settings` (retry counts, timeouts, `connection_verify`, ...) with the
    bounded retry policy and transport built from them."""
    return {**settings, "retry_policy": BoundedRetryPolicy(deadline, **settings),
            "transport": BoundedTransport(deadline, **settings)}
