"""The stack's showback dashboard, built with Grafana's own builder library (grafana-foundation-sdk, the Python
builders Grafana generates from its schemas) rather than hand-written JSON: pools (busy share, slices held, pending
GPU pods), tenants (busy devices, quota held) and, with prices, idle cost per pool and tenant. Every panel reads the
recorded series of `gpushare.showback.rules`, so the rules must be loaded where the dashboard's data
source evaluates them. Shipped as a ConfigMap for the Grafana sidecar (label grafana_dashboard: "1")."""

from __future__ import annotations

import json
from typing import Any

from grafana_foundation_sdk.builders import bargauge, common, dashboard, prometheus, stat, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.common import LegendDisplayMode, LegendPlacement
from grafana_foundation_sdk.models.dashboard import DataSourceRef

from gpushare.model.stack import StackConfig

DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
LEGACY_DASHBOARD_KEYS = ("style",)
LEGACY_VARIABLE_KEYS = ("id", "auto", "auto_min", "auto_count")
SIDECAR_LABEL = "grafana_dashboard"
"""The label the Grafana Helm chart's dashboard sidecar watches ConfigMaps for (sidecar.dashboards.label)."""


def _query(expr: str, legend: str) -> prometheus.Dataquery:
    return prometheus.Dataquery().ref_id("A").expr(expr).legend_format(legend).datasource(DATASOURCE)


def _legend() -> common.VizLegendOptions:
    return (common.VizLegendOptions().display_mode(LegendDisplayMode.TABLE).placement(LegendPlacement.BOTTOM)
            .show_legend(True).calcs(["mean", "max"]))


def _last() -> common.ReduceDataOptions:
    return common.ReduceDataOptions().calcs(["lastNotNull"])


def _series(title: str, expr: str, legend: str, unit: str, description: str) -> timeseries.Panel:
    return (timeseries.Panel().title(title).description(description).datasource(DATASOURCE)
            .with_target(_query(expr, legend)).unit(unit).min(0).span(12).height(8).legend(_legend()))


def showback_dashboard(stack: StackConfig, currency: str | None) -> dashboard.Dashboard:
    """`currency`: the plan's price sheet's (idle cost panels), None without prices."""
    board = (dashboard.Dashboard(f"GPU showback: {stack.stack}").uid(f"gpushare-{stack.stack}")
             .tags(["gpushare", "gpu", "showback"]).time("now-7d", "now").refresh("5m")
             .with_variable(dashboard.DatasourceVariable("datasource").label("Prometheus").type("prometheus")))
    board = (board.with_row(dashboard.Row("Pools and slices"))
             .with_panel(_series("Busy share per pool", "gpushare:pool_utilisation:ratio", "{{pool}} ({{slice}})",
                                 "percentunit", "DCGM graphics-engine activity over the pool's devices (GPUs or "
                                                "MIG instances)"))
             .with_panel(_series("Slices held per pool",
                                 "gpushare:pool_slices_allocated:sum / gpushare:pool_slices_allocatable:sum",
                                 "{{pool}} ({{slice}})", "percentunit",
                                 "GPU requests of running pods over what the pool's nodes advertise"))
             .with_panel(stat.Panel().title("Pending GPU pods").datasource(DATASOURCE).span(6).height(6)
                         .reduce_options(_last())
                         .with_target(_query("sum by (pool) (gpushare:pool_pods_pending:count)", "{{pool}}"))))
    board = (board.with_row(dashboard.Row("Tenants"))
             .with_panel(_series("Busy devices per tenant", "gpushare:tenant_devices_used:sum", "{{tenant}}",
                                 "none", "Time-sliced and MPS pools: attributed by allocation (each node's activity "
                                         "split by the slices each pod holds)"))
             .with_panel(bargauge.Panel().title("Quota held").datasource(DATASOURCE).unit("percentunit").min(0)
                         .max(1).reduce_options(_last()).span(12).height(8).with_target(_query(
                             "gpushare:tenant_slices_allocated:sum / on (tenant, resource) "
                             "gpushare:tenant_quota_slices:max", "{{tenant}} {{resource}}"))))
    if currency:
        board = (board.with_row(dashboard.Row("Idle cost (list prices)"))
                 .with_panel(_series("Idle cost per pool, per hour", "gpushare:pool_idle_cost:hourly", "{{pool}}",
                                     f"currency{currency}",
                                     "Idle device-hours x the node's list price / devices per node"))
                 .with_panel(_series("Idle cost per tenant, per hour", "gpushare:tenant_idle_cost:hourly",
                                     "{{tenant}}", f"currency{currency}", "Held but idle device-hours at list price"))
                 .with_row(dashboard.Row("Chargeback (list prices)"))
                 .with_panel(_series("Chargeback per tenant, per hour", "gpushare:tenant_cost:hourly", "{{tenant}}",
                                     f"currency{currency}",
                                     "Its guarantees, plus what it borrowed, less what others borrowed of its "
                                     "unused guarantees (docs/cost.md)"))
                 .with_panel(_series("Unallocated cost per pool, per hour", "gpushare:pool_unallocated_cost:hourly",
                                     "{{pool}}", f"currency{currency}",
                                     "Slices nobody is guaranteed and nobody holds: with the namespaces' "
                                     "chargeback, the pool's cost")))
    return board


def dashboard_json(stack: StackConfig, currency: str | None) -> dict[str, Any]:
    """The dashboard model as Grafana stores it (the SDK's own encoder), less what the SDK's models (Grafana 10's
    schema) write that Grafana's current Dashboard type (@grafana/schema 13.2, raw/dashboard/x/types.gen.d.ts) has
    no field for, and tools/grafanacheck refuses: the removed `style`, and on each variable a placeholder `id` and an
    interval variable's `auto`, `auto_min` and `auto_count`."""
    model = json.loads(json.dumps(showback_dashboard(stack, currency).build(), cls=JSONEncoder))
    for key in LEGACY_DASHBOARD_KEYS:
        model.pop(key, None)
    for variable in model.get("templating", {}).get("list", []):
        for key in LEGACY_VARIABLE_KEYS:
            variable.pop(key, None)
    return model


def dashboard_config_map(stack: StackConfig, currency: str | None, namespace: str) -> dict[str, Any]:
    name = f"gpushare-{stack.stack}-showback"
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {SIDECAR_LABEL: "1", "app.kubernetes.io/managed-by": "gpushare"}},
            "data": {f"{name}.json": json.dumps(dashboard_json(stack, currency), indent=2, sort_keys=True)}}
