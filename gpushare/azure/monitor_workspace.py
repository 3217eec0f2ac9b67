"""The Azure Monitor workspace a managed stack's metrics go to (`gpushare:metrics.workspaceId`), for `gpushare usage`:

- its Prometheus query endpoint, read with one ARM GET through the Azure SDK's client for the resource type
  (azure-mgmt-monitorworkspaces 1.0.0, `azure_monitor_workspaces.get`, Microsoft.Monitor/accounts api-version
  2025-10-03: `properties.metrics.prometheusQueryEndpoint`, `https://<workspace>-<id>.<region>.prometheus.monitor.
  azure.com`);
- the token scope the query endpoint takes, which `gpushare.kubernetes.workspace_prometheus` signs its queries for.

The token's scope is the query API's resource, per cloud: `https://prometheus.monitor.azure.com/.default` (Microsoft
Learn, "Query Prometheus metrics using the API and PromQL", azure-monitor/metrics/prometheus-api-promql: a token for
resource `https://prometheus.monitor.azure.com`, and the Monitoring Data Reader role on the workspace); `.us` and
`.cn` in the sovereign clouds (as KEDA maps them, kedacore/keda pkg/scalers/azure/
azure_managed_prometheus_http_round_tripper.go, and Grafana's `prometheusResourceId` per cloud).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpushare.azure.arm import DEFAULT_ARM_URL, client_settings, describe, read_error, unexpected_body
from gpushare.azure.remote_read import ReadBoundError
from gpushare.errors import AzureReadError
from gpushare.model.stack import AzureEnvironment

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
    settings = client_settings(client_kwargs)
    try:
        with MonitorWorkspacesMgmtClient(credential, workspace.subscription_id, base_url=base_url,
                                         **settings) as client:
            resource = client.azure_monitor_workspaces.get(workspace.resource_group, workspace.name)
            metrics = resource.properties.metrics if resource.properties else None
            endpoint = metrics.prometheus_query_endpoint if metrics else None
    except ReadBoundError as err:
        raise AzureReadError(f"{what}: {err}") from None
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
