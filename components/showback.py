"""GPU showback in the cluster and its monitoring (`gpushare:metrics`): the stack's recording rules and alerts, the
scrape of the GPU Operator's dcgm-exporter they read, and the dashboard.

- `prometheus: managed`: an Azure Monitor Prometheus rule group (Microsoft.AlertsManagement/prometheusRuleGroups)
  in the workspace `workspaceId` names, scoped to it and to the cluster (`clusterName`: the rules see only this
  cluster's series), and an `azmonitoring.coreos.com/v1` PodMonitor, which the cluster's ama-metrics add-on reads.
- a Prometheus URL with `operator: true`: a `monitoring.coreos.com/v1` PrometheusRule (`gpushare rules --format
  prometheusrule`) and PodMonitor for the Prometheus Operator. Without `operator`, nothing of the two: the program
  cannot know how that Prometheus loads rules (`deployment.py` warns).
- `dashboard: configmap`: the dashboard ConfigMap for the Grafana chart's sidecar (`gpushare dashboard --format
  configmap`).

With `gpushare:metrics.prices` (a saved price answer beside the stack) the group has the idle cost rules and the
dashboard its cost panels, at those list prices (`gpushare.showback.deployed_cost`); without it neither: the program
reads no prices API, and `gpushare rules --prices` prints the group with them.
The objects are the plan's documents verbatim (`gpushare.showback.deployed_objects`), so what the commands print is
what registers here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import alertsmanagement

from gpushare.showback.deployed_objects import ShowbackObjects
from gpushare.showback.rules import azure_rules, iso_duration


@dataclass(frozen=True)
class ShowbackArgs:
    objects: ShowbackObjects
    """Required. What to deploy (`gpushare.plan.stack_plan.StackPlan.showback`, or
    `gpushare.showback.deployed_objects.showback_objects`)."""
    provider: pulumi.ProviderResource
    """Required. The cluster's Kubernetes provider (`ClusterAccess.provider`)."""
    cluster_id: pulumi.Input[str]
    """Required. The cluster's ARM ID: the rule group's second scope."""
    cluster_name: pulumi.Input[str]
    """Required. The AKS cluster's name: the rule group's `clusterName` (the ama-metrics `cluster` label)."""
    resource_group_name: pulumi.Input[str]
    """Required. Where the rule group is created: the cluster's resource group."""
    operator_namespace: pulumi.Resource
    """Required. The GPU Operator's namespace (`GpuOperator.kubernetes_namespace`): the PodMonitor goes there."""
    depends_on: Sequence[pulumi.Resource] = ()
    """Optional. What every Kubernetes object waits for (the deployers' role assignments). Default: none."""


class Showback(pulumi.ComponentResource):
    """The showback rule group or PrometheusRule, the dcgm-exporter PodMonitor and the dashboard ConfigMap."""

    rule_group_name: pulumi.Output[str | None]
    """The rule group's name (`gpushare-<stack>`), None when the rules are not deployed."""

    def __init__(self, name: str, args: ShowbackArgs, opts: pulumi.ResourceOptions | None = None):
        objects = args.objects
        metrics, group = objects.metrics, objects.group
        super().__init__("gpushare:showback:Showback", name, None, opts)
        in_cluster = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.depends_on))
        self.rule_group: alertsmanagement.PrometheusRuleGroup | None = None
        self.prometheus_rule: k8s.apiextensions.CustomResource | None = None
        self.pod_monitor: k8s.apiextensions.CustomResource | None = None
        self.dashboard: k8s.core.v1.ConfigMap | None = None
        if metrics.managed:
            assert metrics.workspace_id, "validation requires workspaceId with prometheus: managed"
            self.rule_group = alertsmanagement.PrometheusRuleGroup(
                f"{name}-rule-group",
                rule_group_name=group["name"],
                resource_group_name=args.resource_group_name,
                # The stack's region: the workspace's is not in its ID (a group in another region than its
                # workspace is not checked offline; ARM says so at apply).
                location=objects.location,
                description=objects.description,
                # Scoped to the workspace and the cluster, with its name: the rules evaluate only the series this
                # cluster's ama-metrics writes (Azure Monitor "Prometheus rule groups", cluster-centric groups).
                scopes=[metrics.workspace_id, args.cluster_id],
                cluster_name=args.cluster_name,
                interval=iso_duration(group["interval"]),
                enabled=True,
                rules=[alertsmanagement.PrometheusRuleArgs(**rule) for rule in azure_rules(group)],
                opts=pulumi.ResourceOptions(parent=self))
        elif objects.prometheus_rule:
            self.prometheus_rule = self._custom_resource(f"{name}-prometheus-rule", objects.prometheus_rule,
                                                         in_cluster)
        if objects.pod_monitor:
            self.pod_monitor = self._custom_resource(
                f"{name}-pod-monitor", objects.pod_monitor,
                pulumi.ResourceOptions(parent=self, provider=args.provider,
                                       depends_on=[*args.depends_on, args.operator_namespace]))
        if objects.dashboard:
            self.dashboard = k8s.core.v1.ConfigMap(
                f"{name}-dashboard", metadata=objects.dashboard["metadata"], data=objects.dashboard["data"],
                opts=in_cluster)
        deployed = self.rule_group is not None or self.prometheus_rule is not None
        self.rule_group_name = pulumi.Output.from_input(group["name"] if deployed else None)
        self.register_outputs({"rule_group_name": self.rule_group_name})

    def _custom_resource(self, name: str, document: Mapping, opts: pulumi.ResourceOptions
                         ) -> k8s.apiextensions.CustomResource:
        return k8s.apiextensions.CustomResource(
            name, api_version=document["apiVersion"], kind=document["kind"], metadata=document["metadata"],
            spec=document["spec"], opts=opts)
