"""The Pulumi program the engine tier runs: the Kubernetes half of gpushare, composed from `gpushare.components` as
a library user composes it (README, "Use as a library"), on a cluster that already exists and is reached with a
kubeconfig of its own.

It registers what `deploy()` registers on the Kubernetes side, under the same names and types: the GPU Operator
(`GpuOperator`: namespace, device-plugin ConfigMap, Helm release), one `GpuTenant` per tenant and `SharedGpuPools`.
The provider is the program's own `kubernetes.Provider`, from the stack's secret `kubeconfig` config; every
component gets it (the test stack disables the default Kubernetes provider, so an object that lost it fails). Its
plugin version is 4.25.0: the provider built from source (tools/pulumi/build), while the Python SDK is
pulumi-kubernetes 4.34.2, which would otherwise ask for plugin 4.34.2.

`deployed_config_keys` stands in for what `deploy()` reads from Azure (the guard's agent-pool read: the key each
pool's nodes are labelled with); here it is read from the Nodes themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpushare.components import (
    GpuOperator,
    GpuOperatorArgs,
    GpuTenant,
    GpuTenantArgs,
    SharedGpuPools,
    SharedGpuPoolsArgs,
)
from gpushare.plan.stack_plan import build_plan
from gpushare.sharing.retained_configs import CONFIG_DATA_OUTPUT
from gpushare.stackfile.config import parse_config

KUBERNETES_PLUGIN_VERSION = "4.25.0"
"""The provider binary tools/pulumi/build makes (pulumi-kubernetes's v4.25.0 commit); see that script."""
PROVIDER_NAME = "cluster-access-provider"
CLUSTER_IDENTIFIER = "engine-test-cluster"
"""Stands in for the cluster's ARM ID that ClusterAccess gives: a provider config change is then an update."""


def program(config: Callable[[], Mapping[str, Any]], deployed_config_keys: Callable[[], Mapping[str, str]],
            protect_operator: bool = False, enable_config_map_mutable: bool = True) -> Callable[[], None]:
    """The inline program; `config()` is the gpushare mapping (as a stack file's `config:`) of the run about to
    start, `deployed_config_keys()` pool -> the key its nodes name now; `protect_operator`: the GPU Operator
    component registered with `protect` (its children inherit it); `enable_config_map_mutable`: the provider
    option ClusterAccess sets (off, the provider's default, shows what it prevents)."""

    def run() -> None:
        plan = build_plan(parse_config(dict(config()), source="tests/engine program", stack=pulumi.get_stack()))
        kubeconfig = pulumi.Config().require_secret("kubeconfig")
        # enable_config_map_mutable as ClusterAccess sets it: the device-plugin ConfigMap is then updated in place.
        provider = k8s.Provider(PROVIDER_NAME, kubeconfig=kubeconfig, cluster_identifier=CLUSTER_IDENTIFIER,
                                enable_config_map_mutable=enable_config_map_mutable,
                                opts=pulumi.ResourceOptions(version=KUBERNETES_PLUGIN_VERSION))
        operator = GpuOperator("gpu-operator", GpuOperatorArgs(
            plan=plan.operator, provider=provider, deployed_config_keys=deployed_config_keys()),
            opts=pulumi.ResourceOptions(protect=True) if protect_operator else None)
        # deploy() exports it; a program composing the components exports it itself (GpuOperatorArgs).
        pulumi.export(CONFIG_DATA_OUTPUT, operator.config_map_data)
        tenants = [GpuTenant(f"tenant-{name}", GpuTenantArgs(objects=objects, provider=provider))
                   for name, objects in plan.tenants.items()]
        if tenants:
            SharedGpuPools("shared-gpu-pools", SharedGpuPoolsArgs(policies=plan.shared_policies, provider=provider,
                                                                  tenants=tenants))
        pulumi.export("tenantNamespaces", [tenant.namespace for tenant in tenants])

    return run
