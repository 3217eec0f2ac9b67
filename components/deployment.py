"""The whole gpushare deployment from one mapping shaped like a stack file's `config:`: `deploy()`.

`program()` is gpushare's own Pulumi program (the project's `__main__.py` calls it; `gpushare plan` runs it under
the mock engine): the stack's config from the engine, `deploy()`, and the stack outputs, which `program()` exports
from what `deploy()` returns. Another Pulumi program calls `deploy()` itself, with a mapping it builds or reads from
its own config, and exports what it needs of the handles it returns (`deploy()` itself exports only
`devicePluginConfigData`, which its next run reads back):

    from gpushare.components import deploy
    gpus = deploy({"azure-native:location": "westeurope", "gpushare:cluster": {"name": "ml"},
                   "gpushare:pools": [...]})
    pulumi.export("kubeconfig", gpus.kubeconfig)

Validation runs before any resource registers, with the same `parse_config` and messages as a stack file; a bad
mapping stops the program with one error listing every problem (`pulumi.RunError`: no traceback). Then the guard and
preflight read Azure as for gpushare's own stacks (`gpushare:guard`, `gpushare:preflight`), and the cluster, the
GPU Operator, the pools and the tenants register under the same names as in gpushare's program, at the top level of
the caller's stack. `gpushare plan --program DIR STACK` plans such a program offline
(`gpushare.render.user_program`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pulumi
from pulumi.runtime import config as runtime_config
from pulumi_azure_native import authorization

from gpushare.azure.arm import AzureReads, SharedCredential, arm_target
from gpushare.azure.deployed import deployed_config_keys, unlisted_nodes
from gpushare.azure.guard.cluster import check_stack_for_program
from gpushare.azure.guard.guard_report import GuardReport, raise_for_violations
from gpushare.azure.preflight.preflight_report import Verdict, findings, raise_for_failures
from gpushare.azure.preflight.preflight_runs import check_for_program
from gpushare.components.aks_cluster import AksCluster, AksClusterArgs
from gpushare.components.cluster_access import ClusterAccess, ClusterAccessArgs
from gpushare.components.existing_cluster import ExistingCluster, ExistingClusterArgs
from gpushare.components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from gpushare.components.gpu_operator import GpuOperator, GpuOperatorArgs
from gpushare.components.kueue_queues import KueueQueues, KueueQueuesArgs
from gpushare.components.shared_gpu_pools import SharedGpuPools, SharedGpuPoolsArgs
from gpushare.components.subnet_access import SubnetAccess, SubnetAccessArgs
from gpushare.components.tenant import GpuTenant, GpuTenantArgs
from gpushare.errors import GpushareError
from gpushare.kubernetes.long_run_warning import long_run_warning
from gpushare.kubernetes.queues import queue_warnings
from gpushare.kubernetes.tenants import pod_security_warnings, tenant_warnings
from gpushare.model.environment_variables import STACK_FILE_ENV
from gpushare.model.stack import GpuPool, PreflightMode, StackConfig, own_subnets, pool_subnet
from gpushare.showback.deployed_cost import deployed_cost
from gpushare.showback.rules import deployment_warnings as showback_warnings
from gpushare.sharing.autoscaling import stack_pool_tags, tag_warnings
from gpushare.sharing.capacity import PoolCapacity, ambiguous_resource_warnings, capacity_warnings
from gpushare.sharing.operator_values import operator_warnings
from gpushare.sharing.pool_facts import stack_pool_facts
from gpushare.sharing.retained_configs import CONFIG_DATA_OUTPUT
from gpushare.sharing.autoscaler_readiness import autoscaler_warnings
from gpushare.stackfile.cluster_config import access_warnings, api_server_warnings, node_os_warnings
from gpushare.stackfile.config import decode_engine_config, parse_config
from gpushare.stackfile.kubernetes_version import kubernetes_version_warnings
from gpushare.stackfile.project import find_project

if TYPE_CHECKING:
    from gpushare.components.showback import Showback

LIBRARY_SOURCE = "deploy(config)"
"""What messages name when the mapping came from a program rather than a stack file."""


@dataclass(frozen=True)
class GpuShareDeployment:
    """What `deploy()` registered: the components, by role, and their key outputs."""

    stack: StackConfig
    """The validated config the resources were built from."""
    cluster: AksCluster | ExistingCluster
    """The cluster gpushare created, or the existing one it only reads (`existing: true`): the same outputs."""
    access: ClusterAccess
    """The Kubernetes provider every Kubernetes object uses, and the kubeconfig."""
    operator: GpuOperator
    pools: Mapping[str, GpuNodePool]
    """GPU node pools by pool name, in stack order."""
    capacities: Mapping[str, PoolCapacity]
    """What each pool advertises (`nvidia.com/mig-1g.10gb` x per node), by pool name."""
    tenants: Mapping[str, GpuTenant]
    """Tenants by name (empty without `gpushare:tenants`)."""
    shared_pools: SharedGpuPools | None
    """The admission policy keeping untenanted pods off tenant pools; None without tenants."""
    queues: KueueQueues | None = None
    """Kueue and the tenants' queues; None unless `gpushare:queues.enabled` and the stack has tenants."""
    showback: Showback | None = None
    """The showback rules, dcgm-exporter scrape and dashboard; None without `gpushare:metrics`."""

    @property
    def cluster_name(self) -> pulumi.Output[str]:
        return self.cluster.cluster_name

    @property
    def resource_group_name(self) -> pulumi.Output[str]:
        return self.cluster.resource_group_name

    @property
    def oidc_issuer_url(self) -> pulumi.Output[str]:
        return self.cluster.oidc_issuer_url

    @property
    def kubeconfig(self) -> pulumi.Output[str]:
        """The Entra user kubeconfig (a secret)."""
        return self.access.kubeconfig

    @property
    def provider(self) -> pulumi.ProviderResource:
        """For the caller's own Kubernetes objects on this cluster."""
        return self.access.provider

    @property
    def device_config_hash(self) -> pulumi.Output[str]:
        return self.operator.config_hash

    def stack_outputs(self) -> dict[str, Any]:
        """gpushare's stack outputs (`clusterName`, `kubeconfig`, `pools`...), as its own program exports them."""
        return {
            "clusterName": self.cluster_name,
            "resourceGroupName": self.resource_group_name,
            "oidcIssuerUrl": self.oidc_issuer_url,
            "kubeconfig": self.kubeconfig,
            "deviceConfigHash": self.device_config_hash,
            "pools": {
                pool.name: {"resource": self.capacities[pool.name].resource,
                            "perNode": self.capacities[pool.name].per_node,
                            "minNodes": pool.min_nodes, "maxNodes": pool.max_nodes}
                for pool in self.stack.pools
            },
        }


def deploy(config: Mapping[str, Any], *, source: str = LIBRARY_SOURCE, stack: str | None = None) -> GpuShareDeployment:
    """Validate `config` (keys as in a stack file's `config:`: `azure-native:location`, `gpushare:cluster`,
    `gpushare:pools`...; values decoded, not JSON strings) and register everything it describes.

    `source` is what error messages name; `stack` defaults to the running Pulumi stack's name.

    Outputs: `deploy()` exports one stack output itself, `devicePluginConfigData`, because its next run reads it back
    from this stack to keep a device-plugin config key that a deployed pool's label still names (`GpuOperatorArgs`).
    Everything else is returned, not exported: the program exports what it wants from the `GpuShareDeployment`
    (`stack_outputs()` gives gpushare's own names, which `program()` exports). The resources register under fixed
    names at the top level of the stack, so call `deploy()` once per stack.

    Raises `pulumi.RunError` with every problem when `config` is invalid or the guard or preflight stops the run.
    """
    validated = _validate(config, source, stack or pulumi.get_stack())
    showback_prices = _showback_cost(validated)
    report = _check_azure(validated)
    for warning in [*kubernetes_version_warnings(validated), *access_warnings(validated.cluster.access),
                    *api_server_warnings(validated.cluster), *node_os_warnings(validated),
                    *operator_warnings(validated), *tag_warnings(validated),
                    *autoscaler_warnings(validated, unlisted_nodes(validated, report.deployed if report else None))]:
        pulumi.log.warn(warning)
    if warning := long_run_warning(validated, report):
        pulumi.log.warn(warning)
    cluster, subnet_access = _cluster(validated)
    pool_facts = stack_pool_facts(validated)
    capacities = [(facts.pool, facts.capacity) for facts in pool_facts.values()]
    for pool, capacity in capacities:
        for warning in capacity_warnings(pool, capacity, validated):
            pulumi.log.warn(warning)
    for warning in [*ambiguous_resource_warnings(capacities, validated), *tenant_warnings(validated),
                    *pod_security_warnings(validated), *queue_warnings(validated), *showback_warnings(validated)]:
        pulumi.log.warn(warning)

    access = ClusterAccess("cluster-access", ClusterAccessArgs(
        resource_group_name=cluster.resource_group_name, cluster_name=cluster.cluster_name,
        cluster_id=cluster.resource_id, credential=validated.cluster.access.kubernetes_credential,
        # The provider used to be GpuOperator's child: the alias keeps every Kubernetes object where it is.
        provider_aliases=[pulumi.Alias(name="gpu-operator-provider",
                                       parent=pulumi.create_urn("gpu-operator", "gpushare:operator:GpuOperator"))],
    ))
    # Every Kubernetes object waits for the deployers' RBAC role assignments (none without `deployers`).
    kubernetes_access = list(cluster.deployer_access)
    # Not after the pools: the operator installs while AKS creates them, and nodes pick their config as they join.
    operator = GpuOperator("gpu-operator", GpuOperatorArgs(
        stack=validated, provider=access.provider, depends_on=kubernetes_access,
        deployed_config_keys=deployed_config_keys(report.deployed or ()) if report else {}))
    pools: dict[str, GpuNodePool] = {}
    previous = None
    for pool, capacity in capacities:
        pools[pool.name] = GpuNodePool(pool.name, GpuNodePoolArgs(
            facts=pool_facts[pool.name], driver=validated.operator.driver, cluster_name=cluster.cluster_name,
            resource_group_name=cluster.resource_group_name, subnet_id=_pool_subnet(validated, cluster, pool),
            pod_subnet_id=cluster.default_pod_subnet_id if isinstance(cluster, ExistingCluster) else None,
            live_count=report.live_count(pool.name) if report else None,
            settled=report.settled(validated, pool) if report else (),
            after=previous, device_config=operator.config_map,
            tags=stack_pool_tags(validated)[pool.name],
            subnet_access=subnet_access.by_subnet.get(pool_subnet(validated, pool)) if subnet_access else None,
        ))
        previous = pools[pool.name].agent_pool
    # Exported by deploy() itself, whatever else the caller exports: the next run reads it back (a StackReference to
    # this stack) to keep a device-plugin key that a deployed pool's label still names (`GpuOperatorArgs`).
    pulumi.export(CONFIG_DATA_OUTPUT, operator.config_map_data)
    tenants = {
        tenant.name: GpuTenant(f"tenant-{tenant.name}", GpuTenantArgs(
            stack=validated, tenant=tenant, provider=access.provider, depends_on=kubernetes_access))
        for tenant in validated.tenants
    }
    shared_pools = SharedGpuPools("shared-gpu-pools", SharedGpuPoolsArgs(
        stack=validated, provider=access.provider, depends_on=kubernetes_access, tenants=list(tenants.values()))) \
        if validated.tenants else None
    queues = KueueQueues("kueue", KueueQueuesArgs(
        stack=validated, provider=access.provider, tenants=tenants, depends_on=kubernetes_access)) \
        if validated.queues.enabled and validated.tenants else None
    showback = _showback(validated, cluster, access, operator, kubernetes_access, showback_prices) \
        if validated.metrics else None
    return GpuShareDeployment(
        stack=validated, cluster=cluster, access=access, operator=operator, pools=pools,
        capacities={pool.name: capacity for pool, capacity in capacities}, tenants=tenants, shared_pools=shared_pools,
        queues=queues, showback=showback)


def _showback(stack: StackConfig, cluster: AksCluster | ExistingCluster, access: ClusterAccess,
              operator: GpuOperator, kubernetes_access: list[pulumi.Resource], cost: dict[str, Any] | None
              ) -> Showback:
    """Imported here: a stack without `gpushare:metrics` (most plans) loads neither the Grafana SDK nor the
    azure-native alertsmanagement module."""
    from gpushare.components.showback import Showback, ShowbackArgs

    return Showback("showback", ShowbackArgs(
        stack=stack, provider=access.provider, cluster_id=cluster.resource_id, cluster_name=cluster.cluster_name,
        resource_group_name=cluster.resource_group_name, operator_namespace=operator.kubernetes_namespace,
        depends_on=kubernetes_access, cost=cost))


def _cluster(stack: StackConfig) -> tuple[AksCluster | ExistingCluster, SubnetAccess | None]:
    """The cluster gpushare creates, or the existing one it only reads (`existing: true`); both give the same
    outputs. Either way, the cluster's identity gets Network Contributor on each subnet of your own that a pool
    uses (`network.subnetId`, a pool's `subnetId`): those assignments, or None."""
    if stack.cluster.existing:
        cluster = ExistingCluster("cluster", ExistingClusterArgs(cluster=stack.cluster))
    else:
        cluster = AksCluster("cluster", AksClusterArgs(cluster=stack.cluster, location=stack.location))
    subnets = own_subnets(stack)
    access = SubnetAccess("cluster-subnets", SubnetAccessArgs(
        subnet_ids=subnets, principal_id=cluster.identity_principal_id, cluster_id=cluster.resource_id)) \
        if subnets else None
    return cluster, access


def _pool_subnet(stack: StackConfig, cluster: AksCluster | ExistingCluster, pool: GpuPool) -> pulumi.Input[str] | None:
    """A GPU pool's subnet: its own or the stack's (`subnetId`), else on an existing cluster its system pool's."""
    named = pool_subnet(stack, pool)
    return named or (cluster.default_subnet_id if isinstance(cluster, ExistingCluster) else None)


def program() -> None:
    """gpushare's Pulumi program for one stack of the project: its config as the engine passes it, `deploy()`,
    the stack outputs."""
    stack = pulumi.get_stack()
    # The engine hands the program every config key; reading them all is what lets a misspelt key be reported.
    raw = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    # A secret reaches the program decrypted, its key listed as secret: put back the `{secure: ...}` shape a stack
    # file shows, so validation treats it the same offline and under the engine (a gpushare key must not be one).
    secret = {*runtime_config.get_config_secret_keys_env(), *(k for k in raw if runtime_config.is_config_secret(k))}
    values = {**decode_engine_config({k: v for k, v in raw.items() if k not in secret}),
              **{k: {"secure": str(raw[k])} for k in secret if k in raw}}
    deployment = deploy(values, source=_stack_file_shown(stack), stack=stack)
    for name, value in deployment.stack_outputs().items():
        pulumi.export(name, value)


def _stack_file_shown(stack: str) -> str:
    """The file messages name: the one `plan` was given, else the stack's file in the project the engine runs in
    (Pulumi runs the program in the project directory)."""
    if given := os.environ.get(STACK_FILE_ENV):
        return given
    try:
        project = find_project()
    except GpushareError as exc:
        # A project file gpushare cannot read stops the run here with its message, not a traceback.
        raise pulumi.RunError(str(exc)) from None
    return str(project.stack_file(stack) if project else Path(f"Pulumi.{stack}.yaml"))


def _validate(config: Mapping[str, Any], source: str, stack: str) -> StackConfig:
    try:
        validated = parse_config(dict(config), source=source, stack=stack)
        stack_pool_tags(validated)  # Azure's tag limits, with the tags derived from the pools' labels and taints
        return validated
    except GpushareError as exc:
        raise pulumi.RunError(str(exc)) from None


def _showback_cost(stack: StackConfig) -> dict[str, Any] | None:
    """The saved prices the showback rules carry (`gpushare:metrics.prices`), read before anything registers."""
    try:
        return deployed_cost(stack)
    except GpushareError as exc:
        raise pulumi.RunError(str(exc)) from None


def _guard(stack: StackConfig, azure: Callable[[], AzureReads]) -> GuardReport | None:
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


def _preflight(stack: StackConfig, azure: Callable[[], AzureReads], guard_report: GuardReport | None) -> None:
    """Stop here too (`gpushare:preflight: strict`) if a size, zone, quota or version would fail at apply."""
    report = check_for_program(stack, os.environ, azure, guard_report)
    if report is None:
        return
    for warning in report.warnings:
        pulumi.log.warn(warning)
    for caveat in findings(report, Verdict.WARN):
        pulumi.log.warn(f"preflight: {caveat}")
    if stack.preflight is PreflightMode.STRICT:
        raise_for_failures(report)
    for finding in findings(report):
        pulumi.log.warn(f"preflight (gpushare:preflight is warn): {finding}")


def _check_azure(stack: StackConfig) -> GuardReport | None:
    """The guard, then preflight on the same agent-pool read; both in the provider's subscription, with one
    credential. Nothing is read from Azure when `plan` renders offline. Returns the guard's report."""
    with SharedCredential(stack.azure.environment, os.environ) as credential:
        azure = functools.cache(lambda: AzureReads(
            arm_target(stack, os.environ, authorization.get_client_config().subscription_id), credential))
        try:
            report = _guard(stack, azure)
            _preflight(stack, azure, report)
            return report
        except GpushareError as exc:
            raise pulumi.RunError(str(exc)) from None
