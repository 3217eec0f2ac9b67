"""The Azure Monitor workspace a managed stack's metrics go to (`gpushare:metrics.workspaceId`), for `gpushare usage`:

- its Prometheus query endpoint, read with one ARM GET through the Azure SDK's client for the resource type
  (azure-mgmt-monitorworkspaces 1.0.0, `azure_monitor_workspaces.get`, Microsoft.Monitor/accounts api-version
  2025-10-03: `properties.metrics.prometheusQueryEndpoint`, `https://<workspace>-<id>.<region>.prometheus.monitor.
  azure.com`);
- a `PrometheusReader` that queries that endpoint signed in with azure-identity (the run's `SharedCredential`,
  `DefaultAzureCredential`), through azure-core's pipeline: its bearer-token policy (HTTPS only, token refresh), its
  retries and the `requests` transport's TLS trust (REQUESTS_CA_BUNDLE) and proxies, as every ARM read here.

The token's scope is the query API's resource, per cloud: `https://prometheus.monitor.azure.com/.default` (Microsoft
Learn, "Query Prometheus metrics using the API and PromQL", azure-monitor/metrics/prometheus-api-promql: a token for
resource `https://prometheus.monitor.azure.com`, and the Monitoring Data Reader role on the workspace); `.us` and
`.cn` in the sovereign clouds (as KEDA maps them, kedacore/keda pkg/scalers/azure/
azure_managed_prometheus_http_round_tripper.go, and Grafana's `prometheusResourceId` per cloud).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpushare.azure.arm import CLIENT_DEFAULTS, CREDENTIAL_HINT, DEFAULT_ARM_URL, describe, read_error, unexpected_body
from gpushare.errors import AzureReadError
from gpushare.kubernetes.prometheus_api import (
    FORM_HEADERS,
    TIMEOUT_SECONDS,
    PrometheusReader,
    PrometheusReadError,
    api_error,
    too_slow,
)
from gpushare.stackfile.model import AzureEnvironment

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

PROMETHEUS_SCOPES: Mapping[AzureEnvironment, str] = {
    AzureEnvironment.PUBLIC: "https://prometheus.monitor.azure.com/.default",
    AzureEnvironment.USGOVERNMENT: "https://prometheus.monitor.azure.us/.default",
    AzureEnvironment.CHINA: "https://prometheus.monitor.azure.cn/.default",
}

WORKSPACE_ENDPOINT_RE = re.compile(r"^https://[^/\s]+\.prometheus\.monitor\.azure\.(com|us|cn)(/|$)", re.IGNORECASE)
"""A workspace's query endpoint, given as `--prometheus`: read signed in, like the one the workspace names."""

_WORKSPACE_ID_PARTS = re.compile(
    r"^/subscriptions/(?P<subscription>[^/]+)/resourceGroups/(?P<group>[^/]+)/providers/Microsoft\.Monitor/accounts/"
    r"(?P<name>[^/]+)$", re.IGNORECASE)

READ_ROLE_HINT = (
    "reading the workspace needs 'Microsoft.Monitor/accounts/read', which the built-in Reader and Monitoring Reader "
    "roles have: az role assignment create --assignee <identity> --role 'Monitoring Reader' --scope <workspaceId>"
)
QUERY_ROLE_HINT = (
    "querying the workspace's metrics needs the 'Monitoring Data Reader' role on it (Reader is not enough): "
    "az role assignment create --assignee <identity> --role 'Monitoring Data Reader' --scope <workspaceId>"
)


@dataclass(frozen=True)
class Workspace:
    subscription_id: str
    resource_group: str
    name: str

    @classmethod
    def from_id(cls, workspace_id: str) -> Workspace:
        """The parts of an ID `gpushare.stackfile.metrics_config.WORKSPACE_ID_RE` has accepted."""
        match = _WORKSPACE_ID_PARTS.match(workspace_id)
        assert match, workspace_id
        return cls(match["subscription"], match["group"], match["name"])


def read_query_endpoint(workspace_id: str, *, credential: TokenCredential, base_url: str | None = None,
                        **client_kwargs: object) -> str:
    """The workspace's Prometheus query endpoint (one ARM GET). Every failure an `AzureReadError` naming the
    workspace and the fix: no credential, 401/403, a workspace (or group, or subscription) Azure does not know, a
    workspace without a metrics container."""
    from azure.core.exceptions import AzureError, ResourceNotFoundError
    from azure.mgmt.monitorworkspaces import MonitorWorkspacesMgmtClient

    workspace = Workspace.from_id(workspace_id)
    what = f"could not read Azure Monitor workspace {workspace_id} (gpushare:metrics.workspaceId)"
    settings = {**CLIENT_DEFAULTS, **client_kwargs}
    try:
        with MonitorWorkspacesMgmtClient(credential, workspace.subscription_id, base_url=base_url,
                                         **settings) as client:
            resource = client.azure_monitor_workspaces.get(workspace.resource_group, workspace.name)
            metrics = resource.properties.metrics if resource.properties else None
            endpoint = metrics.prometheus_query_endpoint if metrics else None
    except ResourceNotFoundError as err:
        raise AzureReadError(
            f"{what}: Azure has no such workspace ({describe(err)}); check gpushare:metrics.workspaceId, e.g. "
            "against `az monitor account list --query [].id -o tsv` in the workspace's subscription") from None
    except AzureError as err:
        raise read_error(what, err, base_url or DEFAULT_ARM_URL, READ_ROLE_HINT) from None
    except (AttributeError, TypeError, ValueError) as err:
        raise unexpected_body(what, err) from None
    if not isinstance(endpoint, str) or not endpoint.startswith("https://"):
        raise AzureReadError(
            f"{what}: the workspace reports no Prometheus query endpoint (properties.metrics."
            f"prometheusQueryEndpoint: {endpoint!r}); is it an Azure Monitor workspace with managed Prometheus?")
    return endpoint


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
            RetryPolicy,
            UserAgentPolicy,
        )
        from azure.core.rest import HttpRequest

        assert self.credential is not None
        # Retries as every ARM read's (arm.CLIENT_DEFAULTS), except a read timeout: a query that took 120 s once
        # takes as long again.
        policies = [HeadersPolicy(), UserAgentPolicy(base_user_agent="gpushare"), ProxyPolicy(),
                    RetryPolicy(retry_total=3, retry_read=0, retry_backoff_factor=1.0, retry_backoff_max=10,
                                timeout=3 * TIMEOUT_SECONDS),
                    BearerTokenCredentialPolicy(self.credential, self.scope)]
        what = f"{endpoint} (signed in for {self.scope})"
        try:
            with PipelineClient(self.url, policies=policies, **self.transport_kwargs) as client:
                response = client.send_request(
                    HttpRequest("POST", endpoint, content=body, headers=FORM_HEADERS),
                    connection_timeout=10, read_timeout=TIMEOUT_SECONDS)
                status, text, reason = response.status_code, response.read(), response.reason
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
