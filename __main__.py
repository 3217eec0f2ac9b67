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
from gpushare.components.existing_cluster import ExistingCluster, ExistingClusterArgs
from gpushare.components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from gpushare.components.gpu_operator import GpuOperator, GpuOperatorArgs
from gpushare.components.shared_gpu_pools import SharedGpuPools, SharedGpuPoolsArgs
from gpushare.components.subnet_access import SubnetAccess, SubnetAccessArgs
from gpushare.components.tenant import GpuTenant, GpuTenantArgs
from gpushare.errors import GpushareError
from gpushare.kubernetes.run_length import long_run_warning
from gpushare.kubernetes.tenants import tenant_warnings
from gpushare.sharing.autoscaling import autoscaler_tags, merge_pool_tags
from gpushare.sharing.capacity import ambiguous_resource_warnings, capacity_warnings, pool_capacity
from gpushare.sharing.node_labels import pool_node_labels
from gpushare.sharing.operator_values import CONFIG_DATA_OUTPUT, deployed_config_keys, operator_warnings
from gpushare.stackfile.cluster_config import access_warnings
from gpushare.stackfile.config import decode_engine_config, parse_config
from gpushare.stackfile.kubernetes_version import kubernetes_version_warnings
from gpushare.stackfile.model import PreflightMode, StackConfig, pool_node_taints, pool_subnet
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


def cluster_for(stack: StackConfig) -> AksCluster | ExistingCluster:
    """The cluster gpushare creates, or the existing one it only reads (`existing: true`); both give the same
    outputs. Either way, the cluster's identity gets Network Contributor on each subnet of your own that a pool
    uses (`network.subnetId`, a pool's `subnetId`)."""
    if stack.cluster.existing:
        cluster = ExistingCluster("cluster", ExistingClusterArgs(cluster=stack.cluster))
    else:
        cluster = AksCluster("cluster", AksClusterArgs(cluster=stack.cluster, location=stack.location))
    subnets = dict.fromkeys(s for s in [stack.cluster.network.subnet_id, *(pool_subnet(stack, p) for p in stack.pools)]
                            if s)
    if subnets:
        SubnetAccess("cluster-subnets", SubnetAccessArgs(
            subnet_ids=list(subnets), principal_id=cluster.identity_principal_id, cluster_id=cluster.resource_id))
    return cluster


def subnet_for(stack: StackConfig, cluster: AksCluster | ExistingCluster, pool) -> pulumi.Input[str] | None:
    """A GPU pool's subnet: its own or the stack's (`subnetId`), else on an existing cluster its system pool's."""
    named = pool_subnet(stack, pool)
    return named or (cluster.default_subnet_id if isinstance(cluster, ExistingCluster) else None)


def main() -> None:
    stack = load_stack()
    report = check_azure(stack)
    for warning in [*kubernetes_version_warnings(stack), *access_warnings(stack.cluster.access), *operator_warnings(stack)]:
        pulumi.log.warn(warning)
    if warning := long_run_warning(stack, report):
        pulumi.log.warn(warning)
    cluster = cluster_for(stack)
    capacities = [(pool, pool_capacity(pool, stack.operator.mig_strategy)) for pool in stack.pools]
    for pool, capacity in capacities:
        for warning in capacity_warnings(pool, capacity, stack):
            pulumi.log.warn(warning)
    for warning in [*ambiguous_resource_warnings(capacities, stack), *tenant_warnings(stack)]:
        pulumi.log.warn(warning)

    access = ClusterAccess("cluster-access", ClusterAccessArgs(
        resource_group_name=cluster.resource_group_name, cluster_name=cluster.cluster_name,
        cluster_id=cluster.resource_id, credential=stack.cluster.access.kubernetes_credential,
        # The provider used to be GpuOperator's child: the alias keeps every Kubernetes object where it is.
        provider_aliases=[pulumi.Alias(name="gpu-operator-provider",
                                       parent=pulumi.create_urn("gpu-operator", "gpushare:operator:GpuOperator"))],
    ))
    # Every Kubernetes object waits for the deployers' RBAC role assignments (none without `deployers`).
    kubernetes_access = list(cluster.deployer_access)
    # Not after the pools: the operator installs while AKS creates them, and nodes pick their config as they join.
    operator = GpuOperator("gpu-operator", GpuOperatorArgs(
        stack=stack, provider=access.provider, depends_on=kubernetes_access,
        deployed_config_keys=deployed_config_keys(report.deployed or ()) if report else {}))
    previous = None
    for pool, capacity in capacities:
        node_pool = GpuNodePool(pool.name, GpuNodePoolArgs(
            pool=pool, driver=stack.operator.driver, cluster_name=cluster.cluster_name,
            resource_group_name=cluster.resource_group_name, node_labels=pool_node_labels(stack, pool),
            node_taints=pool_node_taints(stack, pool), subnet_id=subnet_for(stack, cluster, pool),
            live_count=report.live_count(pool.name) if report else None,
            after=previous, device_config=operator.config_map, tags=merge_pool_tags(pool.name, autoscaler_tags(capacity), dict(pool.tags)),
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
    pulumi.export(CONFIG_DATA_OUTPUT, operator.config_map_data)
    pulumi.export("pools", {
        pool.name: {"resource": capacity.resource, "perNode": capacity.per_node,
                    "minNodes": pool.min_nodes, "maxNodes": pool.max_nodes}
        for pool, capacity in capacities
    })


main()
