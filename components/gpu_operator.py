"""The NVIDIA GPU Operator on the new cluster, with gpushare's device-plugin ConfigMap (one config per GPU pool).

The release waits for the cluster (through the provider's kubeconfig) and the ConfigMap, never for the GPU pools:
it installs while AKS is still creating them, and each pool's nodes pick their config by label as they join.
Every object also waits for `depends_on` (the deployer's Azure RBAC role assignment): without it the API server
answers 403, and pulumi-kubernetes does not retry a Forbidden during `up`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from gpushare.sharing.operator_values import CONFIG_MAP_NAME, NAMESPACE, RELEASE_NAME, OperatorPlan
from gpushare.sharing.retained_configs import (
    CONFIG_DATA_OUTPUT,
    keys_to_keep,
    retained_config_warnings,
    retained_configs,
)

MANAGED_BY = {"app.kubernetes.io/managed-by": "gpushare"}
POD_SECURITY_PRIVILEGED = {"pod-security.kubernetes.io/enforce": "privileged"}
"""The operator's DaemonSets run privileged with host paths (driver, toolkit, device plugin, MPS daemon with
hostPID): NVIDIA's install guide labels the namespace `enforce=privileged` wherever Pod Security Admission enforces
a stricter level, or the DaemonSets' pods are refused at admission and GPU nodes never get a device plugin."""


@dataclass(frozen=True)
class GpuOperatorArgs:
    plan: OperatorPlan
    """Required. The chart, its values and the device-plugin ConfigMap data (`gpushare.plan.stack_plan.StackPlan.
    operator`, or `gpushare.sharing.operator_values.operator_plan`)."""
    provider: k8s.Provider
    """Required. The cluster's Kubernetes provider (`ClusterAccess.provider`). A provider of your own needs
    `enable_config_map_mutable=True`, as ClusterAccess sets it: without it pulumi-kubernetes deletes the
    device-plugin ConfigMap and creates it again on every config change instead of updating it."""
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """What every Kubernetes object must wait for besides the provider: the role assignment granting access."""
    deployed_config_keys: Mapping[str, str] = field(default_factory=dict)
    """Optional. pool -> the config key its nodes name now (`azure.deployed.deployed_config_keys` of the guard's
    read). A key the stack drops stays in the ConfigMap while a deployed pool still names it. Default: none."""


class GpuOperator(pulumi.ComponentResource):
    """`gpu-operator` namespace, device-plugin ConfigMap and the GPU Operator Helm release."""

    chart_version: pulumi.Output[str]
    """The GPU Operator chart version installed."""
    config_hash: pulumi.Output[str]
    """sha256 of the device-plugin ConfigMap data (the `deviceConfigHash` export)."""
    config_map: k8s.core.v1.ConfigMap
    """The device-plugin ConfigMap; GPU pools wait for it, since their node labels name its keys."""
    config_map_data: pulumi.Output[dict]
    """The ConfigMap's data as this run writes it (the stack's configs plus keys kept for pools not yet
    relabelled): the `devicePluginConfigData` export a later run reads back."""
    config_map_name: pulumi.Output[str]
    """The device-plugin ConfigMap (keys: `<pool>-<config hash>` per pool, plus the whole-GPU default)."""
    namespace: pulumi.Output[str]
    """Namespace of the release and the ConfigMap."""
    release_name: pulumi.Output[str]
    """The Helm release name."""

    def __init__(self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None):
        plan = args.plan
        super().__init__("gpushare:operator:GpuOperator", name, None, opts)
        after_access = list(args.depends_on)
        in_cluster = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=after_access)
        # A Namespace of our own, not the release's create_namespace: the ConfigMap must exist before the release.
        self.kubernetes_namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=NAMESPACE, labels={**MANAGED_BY, **POD_SECURITY_PRIVILEGED}),
            opts=in_cluster,
        )
        # Created by gpushare, not by the chart (`devicePlugin.config.create` stays off): gpushare owns every key.
        self.config_map = k8s.core.v1.ConfigMap(
            f"{name}-configmap",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=CONFIG_MAP_NAME, namespace=self.kubernetes_namespace.metadata.name, labels=MANAGED_BY,
            ),
            data=self._data(name, plan.config_map_data, args.deployed_config_keys),
            opts=in_cluster,
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=RELEASE_NAME,
            # A classic repository by URL; an OCI registry (a private mirror) inside the chart reference.
            chart=plan.chart,
            version=plan.chart_version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=plan.repository) if plan.repository else None,
            namespace=self.kubernetes_namespace.metadata.name,
            values=plan.values,
            # The operator reads the ConfigMap at start-up (devicePlugin.config.name); it must be there first.
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider,
                                        depends_on=[*after_access, self.config_map]),
        )
        self.chart_version = self.release.version
        self.config_hash = pulumi.Output.from_input(plan.config_hash)
        self.config_map_name = self.config_map.metadata.name
        self.config_map_data = self.config_map.data
        self.namespace = self.kubernetes_namespace.metadata.name
        self.release_name = self.release.name
        self.register_outputs({
            "chart_version": self.chart_version,
            "config_hash": self.config_hash,
            "config_map_data": self.config_map_data,
            "config_map_name": self.config_map_name,
            "namespace": self.namespace,
            "release_name": self.release_name,
        })

    def _data(self, name: str, desired: dict[str, str],
              deployed_keys: Mapping[str, str]) -> pulumi.Input[dict[str, str]]:
        """The stack's data, plus each key a deployed pool still names, its text read back from this stack's last
        completed update (a StackReference to the same stack returns that update's outputs, never this run's:
        pulumi/pulumi#3722). Only a run that drops a key still in use reads it."""
        if not keys_to_keep(desired, deployed_keys):
            return desired
        stack = f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}"
        previous = pulumi.StackReference(f"{name}-previous-run", stack_name=stack,
                                         opts=pulumi.ResourceOptions(parent=self))

        def merge(recorded: object) -> dict[str, str]:
            retained = retained_configs(desired, deployed_keys, recorded if isinstance(recorded, dict) else None)
            for warning in retained_config_warnings(retained):
                pulumi.log.warn(warning)
            return retained.data

        return previous.get_output(CONFIG_DATA_OUTPUT).apply(merge)
