"""The Prometheus HTTP API of an Azure Monitor workspace's query endpoint (`gpushare.azure.monitor_workspace` reads
which one), queried signed in with azure-identity (the run's `SharedCredential`, `DefaultAzureCredential`) through
azure-core's pipeline: its bearer-token policy (HTTPS only, token refresh), its retries and the `requests`
transport's TLS trust (REQUESTS_CA_BUNDLE) and proxies, as every ARM read here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpushare.azure.arm import CREDENTIAL_HINT, read_error
from gpushare.azure.monitor_workspace import PROMETHEUS_SCOPES
from gpushare.azure.remote_read import ReadBoundError
from gpushare.kubernetes.prometheus_api import (
    FORM_HEADERS,
    MAX_ANSWER_BYTES,
    TIMEOUT_SECONDS,
    PrometheusReader,
    PrometheusReadError,
    api_error,
    bound_error,
    too_slow,
)
from gpushare.model.stack import AzureEnvironment

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

QUERY_ROLE_HINT = (
    "querying the workspace's metrics needs the 'Monitoring Data Reader' role on it (Reader is not enough): "
    "az role assignment create --assignee <identity> --role 'Monitoring Data Reader' --scope <workspaceId>"
)


@dataclass
class WorkspacePrometheusReader(PrometheusReader):
    """The Prometheus HTTP API of a workspace's query endpoint, every query signed in for `scope`."""

    credential: TokenCredential | None = None
    scope: str = PROMETHEUS_SCOPES[AzureEnvironment.PUBLIC]
    transport_kwargs: Mapping[str, object] = field(default_factory=dict)
    """What azure-core's transport takes besides the environment's settings (tests: `connection_verify`)."""

    def post(self, endpoint: str, body: bytes) -> bytes:
        from azure.core import PipelineClient
        from azure.core.exceptions import (
            AzureError,
            ClientAuthenticationError,
            ServiceRequestTimeoutError,
            ServiceResponseTimeoutError,
        )
        from azure.core.pipeline.policies import (
            BearerTokenCredentialPolicy,
            HeadersPolicy,
            ProxyPolicy,
            UserAgentPolicy,
        )
        from azure.core.rest import HttpRequest

        from gpushare.azure.sdk_bounds import BoundedRetryPolicy, BoundedTransport

        assert self.credential is not None
        # Retries as every ARM read's (arm.CLIENT_DEFAULTS), except a read timeout: a query that took 120 s once
        # takes as long again. Waits and reads within the command's deadline (`gpushare.azure.sdk_bounds`).
        policies = [HeadersPolicy(), UserAgentPolicy(base_user_agent="gpushare"), ProxyPolicy(),
                    BoundedRetryPolicy(self.deadline, retry_total=3, retry_read=0, retry_backoff_factor=1.0,
                                       retry_backoff_max=10, timeout=3 * TIMEOUT_SECONDS),
                    BearerTokenCredentialPolicy(self.credential, self.scope)]
        what = f"{endpoint} (signed in for {self.scope})"
        transport = BoundedTransport(self.deadline, limit=MAX_ANSWER_BYTES, **self.transport_kwargs)
        try:
            with PipelineClient(self.url, policies=policies, transport=transport) as client:
                response = client.send_request(
                    HttpRequest("POST", endpoint, content=body, headers=FORM_HEADERS),
                    connection_timeout=10, read_timeout=TIMEOUT_SECONDS)
                status, text, reason = response.status_code, response.read(), response.reason
        except ReadBoundError as err:
            raise bound_error(err) from None
        except ClientAuthenticationError as err:
            raise read_error(f"could not query {what}", err, self.url, QUERY_ROLE_HINT) from None
        except (ServiceRequestTimeoutError, ServiceResponseTimeoutError):
            raise too_slow(endpoint) from None
        except AzureError as err:
            raise PrometheusReadError(f"{endpoint}: cannot be reached ({err.message})") from None
        if status == 401:
            raise PrometheusReadError(f"{what}: HTTP 401: the query endpoint refused the token; {CREDENTIAL_HINT}")
        if status == 403:
            raise PrometheusReadError(f"{what}: HTTP 403: permission denied; {QUERY_ROLE_HINT}")
        if status >= 400:
            raise PrometheusReadError(f"{endpoint}: HTTP {status}: {api_error(text, reason)}")
        return text
