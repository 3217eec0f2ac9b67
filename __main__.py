"""gpushare's Pulumi program: one AKS cluster, its GPU pools and the GPU Operator, from the stack file.

Validation runs before any resource registers; a bad stack file stops `pulumi preview` with one message listing
every problem, never a traceback.
"""

import functools
import os
from collections.abc import Callable

import pulumi
from pulumi.runtime import config as runtime_config
from pulumi_azure_native import authorization

from gpushare.azure import preflight as preflight_checks
from gpushare.azure.arm import AzureReads, SharedCredential, arm_target
from gpushare.azure.cluster_guard import check_stack_for_program
from gpushare.azure.guard import GuardReport, raise_for_violations
from gpushare.components.aks_cluster import AksCluster, AksClusterArgs
from gpushare.components.cluster_access import ClusterAccess, ClusterAccessArgs
from gpushare.components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from gpushare.components.gpu_operator import GpuOperator, GpuOperatorArgs
from gpushare.components.shared_gpu_pools import SharedGpuPools, SharedGpuPoolsArgs
from gpushare.components.tenant import GpuTenant, GpuTenantArgs
from gpushare.errors import GpushareError
from gpushare.kubernetes.tenants import tenant_warnings
from gpushare.sharing.autoscaling import overscale_warning
from gpushare.sharing.capacity import ambiguous_resource_warnings, capacity_warnings
from gpushare.sharing.pool_facts import stack_pool_facts
from gpushare.stackfile.config import decode_engine_config, parse_config
from gpushare.stackfile.kubernetes_version import kubernetes_version_warnings
from gpushare.stackfile.model import PreflightMode, StackConfig
from gpushare.stackfile.project import STACK_FILE_ENV


def load_stack() -> StackConfig:
    stack = pulumi.get_stack()
    source = os.environ.get(STACK_FILE_ENV) or f"stacks/Pulumi.{stack}.yaml"
    # The engine hands the program every config key; reading them all is what lets a misspelt key be reported.
    values = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    try:
        return parse_config(decode_engine_config(values), source=source, stack=stack)
    except GpushareError as exc:
        raise pulumi.RunError(str(exc)) from None


def guard(stack: StackConfig, azure: Callable[[], AzureReads]) -> GuardReport | None:
    """Stop here, before any GPU pool registers, if the stack would delete or replace a live GPU pool or change
    a setting AKS fixed when it created the cluster. Returns the report, whose deployed pools (the run's one
    agent-pool read) give each pool's live node count."""
    report = check_stack_for_program(stack, os.environ, azure)
    if report is None:
        return None
    pulumi.log.info(f"guard ({report.source}): {report.headline}")
    for note in report.notes:
        pulumi.log.info(note)
    for warning in report.warnings:
        pulumi.log.warn(warning)
    raise_for_violations(report)
    return report


def preflight(stack: StackConfig, azure: Callable[[], AzureReads], guard_report: GuardReport | None) -> None:
    """Stop here too (`gpushare:preflight: strict`) if a size, zone, quota or version would fail at apply."""
    report = preflight_checks.check_for_program(stack, os.environ, azure, guard_report)
    if report is None:
        return
    for warning in report.warnings:
        pulumi.log.warn(warning)
    for caveat in preflight_checks.findings(report, preflight_checks.Verdict.WARN):
        pulumi.log.warn(f"preflight: {caveat}")
    if stack.preflight is PreflightMode.STRICT:
        preflight_checks.raise_for_failures(report)
    for finding in preflight_checks.findings(report):
        pulumi.log.warn(f"preflight (gpushare:preflight is warn): {finding}")


def check_azure(stack: StackConfig) -> GuardReport | None:
    """The guard, then preflight on the same agent-pool read; both in the provider's subscription, with one
    credential. Nothing is read from Azure when `plan` renders offline. Returns the guard's report."""
    with SharedCredential(stack.azure.environment, os.environ) as credential:
        azure = functools.cache(lambda: AzureReads(
            arm_target(stack, os.environ, authorization.get_client_config().subscription_id), credential))
        try:
            report = guard(stack, azure)
            preflight(stack, azure, report)
            return report
        except GpushareError as exc:
            raise pulumi.RunError(str(exc)) from None


def main() -> None:
    stack = load_stack()
    report = check_azure(stack)
    for warning in kubernetes_version_warnings(stack):
        pulumi.log.warn(warning)
    cluster = AksCluster("cluster", AksClusterArgs(cluster=stack.cluster, location=stack.location))
    pool_facts = stack_pool_facts(stack)
    capacities = [(facts.pool, facts.capacity) for facts in pool_facts.values()]
    for pool, capacity in capacities:
        for warning in capacity_warnings(pool, capacity):
            pulumi.log.warn(warning)
        if warning := overscale_warning(pool, capacity):
            pulumi.log.warn(warning)
    for warning in [*ambiguous_resource_warnings(capacities), *tenant_warnings(stack)]:
        pulumi.log.warn(warning)

    access = ClusterAccess("cluster-access", ClusterAccessArgs(
        resource_group_name=cluster.resource_group_name, cluster_name=cluster.cluster_name,
        cluster_id=cluster.resource_id,
        # The provider used to be GpuOperator's child: the alias keeps every Kubernetes object where it is.
        provider_aliases=[pulumi.Alias(name="gpu-operator-provider",
                                       parent=pulumi.create_urn("gpu-operator", "gpushare:operator:GpuOperator"))],
    ))
    # Every Kubernetes object waits for the deployer's RBAC role (none with grantDeployer: false).
    kubernetes_access = [cluster.deployer_access] if cluster.deployer_access else []
    # Not after the pools: the operator installs while AKS creates them, and nodes pick their config as they join.
    operator = GpuOperator("gpu-operator", GpuOperatorArgs(
        stack=stack, provider=access.provider, depends_on=kubernetes_access))
    previous = None
    for pool in stack.pools:
        node_pool = GpuNodePool(pool.name, GpuNodePoolArgs(
            facts=pool_facts[pool.name], driver=stack.operator.driver, cluster_name=cluster.cluster_name,
            resource_group_name=cluster.resource_group_name,
            live_count=report.live_count(pool.name) if report else None,
            after=previous, device_config=operator.config_map,
        ))
        previous = node_pool.agent_pool
    for tenant in stack.tenants:
        GpuTenant(f"tenant-{tenant.name}", GpuTenantArgs(
            stack=stack, tenant=tenant, provider=access.provider, depends_on=kubernetes_access))
    if stack.tenants:
        SharedGpuPools("shared-gpu-pools", SharedGpuPoolsArgs(
            stack=stack, provider=access.provider, depends_on=kubernetes_access))

    pulumi.export("clusterName", cluster.cluster_name)
    pulumi.export("resourceGroupName", cluster.resource_group_name)
    pulumi.export("oidcIssuerUrl", cluster.oidc_issuer_url)
    pulumi.export("kubeconfig", access.kubeconfig)
    pulumi.export("deviceConfigHash", operator.config_hash)
    pulumi.export("pools", {
        pool.name: {"resource": capacity.resource, "perNode": capacity.per_node,
                    "minNodes": pool.min_nodes, "maxNodes": pool.max_nodes}
        for pool, capacity in capacities
    })


main()
