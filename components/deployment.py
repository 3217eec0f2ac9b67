"""The whole gpushare deployment from one mapping shaped like a stack file's `config:`: `deploy()`, which validates,
runs the guard and preflight, builds the plan (`gpushare.plan.stack_plan`), logs its warnings and registers each
component with its part of the plan.

gpushare's own program (`gpushare.components.program`) calls it with the stack's config. Another Pulumi program calls
`deploy()` itself, with a mapping it builds or reads from its own config, and exports what it needs of the handles it
returns (`deploy()` itself exports only `devicePluginConfigData`, which its next run reads back):

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

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pulumi
from pulumi_azure_native import authorization

from gpushare.azure.program_checks import check_azure_for_program
from gpushare.components.aks_cluster import AksCluster, AksClusterArgs
from gpushare.components.cluster_access import ClusterAccess, ClusterAccessArgs
from gpushare.components.dra_driver import DraDriver, DraDriverArgs
from gpushare.components.existing_cluster import ExistingCluster, ExistingClusterArgs
from gpushare.components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from gpushare.components.gpu_operator import GpuOperator, GpuOperatorArgs
from gpushare.components.kueue_queues import KueueQueues, KueueQueuesArgs
from gpushare.components.shared_gpu_pools import SharedGpuPools, SharedGpuPoolsArgs
from gpushare.components.subnet_access import SubnetAccess, SubnetAccessArgs
from gpushare.components.tenant import GpuTenant, GpuTenantArgs
from gpushare.errors import GpushareError
from gpushare.model.stack import StackConfig, own_subnets, pool_subnet
from gpushare.plan.stack_plan import StackPlan, build_plan, with_guard
from gpushare.sharing.retained_configs import CONFIG_DATA_OUTPUT
from gpushare.stackfile.config import parse_config

if TYPE_CHECKING:
    from gpushare.azure.guard.guard_report import GuardReport
    from gpushare.components.showback import Showback
    from gpushare.sharing.capacity import PoolCapacity
    from gpushare.showback.deployed_objects import ShowbackObjects

LIBRARY_SOURCE = "deploy(config)"
"""What messages name when the mapping came from a program rather than a stack file."""


@dataclass(frozen=True)
class GpuShareDeployment:
    """What `deploy()` registered: the components, by role, and their key outputs."""

    stack: StackConfig
    """The validated config the resources were built from."""
    plan: StackPlan
    """What was derived from it, once; each component got its part."""
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
    dra: DraDriver | None = None
    """NVIDIA's DRA driver, gpushare's DeviceClasses and the tenants' claim templates; None without DRA pools."""

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
    plan = _plan(validated)
    report = _check_azure(validated, plan)
    if report:
        plan = with_guard(plan, report)
    for warning in plan.warnings:
        pulumi.log.warn(warning)
    return _register(plan)


def stack_plan(config: Mapping[str, Any], *, source: str = LIBRARY_SOURCE, stack: str | None = None) -> StackPlan:
    """What `deploy(config)` would register, validated and derived, registering nothing and reading no Azure: for a
    program that composes the components itself, each from its part (`GpuOperatorArgs(plan=plan.operator, ...)`,
    `GpuTenantArgs(objects=plan.tenants[name], ...)`, `GpuNodePoolArgs(request=plan.pools[name].request, ...)`).
    Raises `pulumi.RunError` with every problem, as `deploy` does."""
    return _plan(_validate(config, source, stack or pulumi.get_stack()))


def _register(plan: StackPlan) -> GpuShareDeployment:
    """Every resource of the plan, each component given its part."""
    stack = plan.stack
    cluster, subnet_access = _cluster(stack)
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
        plan=plan.operator, provider=access.provider, depends_on=kubernetes_access,
        deployed_config_keys=plan.deployed_config_keys))
    existing = isinstance(cluster, ExistingCluster)
    pools: dict[str, GpuNodePool] = {}
    previous = None
    for name, pool_plan in plan.pools.items():
        pool = pool_plan.facts.pool
        pools[name] = GpuNodePool(name, GpuNodePoolArgs(
            request=pool_plan.request, cluster_name=cluster.cluster_name,
            resource_group_name=cluster.resource_group_name,
            subnet_id=None if pool_subnet(stack, pool) or not existing else cluster.default_subnet_id,
            pod_subnet_id=cluster.default_pod_subnet_id if existing else None,
            after=previous, device_config=operator.config_map,
            subnet_access=subnet_access.by_subnet.get(pool_subnet(stack, pool)) if subnet_access else None,
        ))
        previous = pools[name].agent_pool
    # Exported by deploy() itself, whatever else the caller exports: the next run reads it back (a StackReference to
    # this stack) to keep a device-plugin key that a deployed pool's label still names (`GpuOperatorArgs`).
    pulumi.export(CONFIG_DATA_OUTPUT, operator.config_map_data)
    tenants = {
        name: GpuTenant(f"tenant-{name}", GpuTenantArgs(
            objects=objects, provider=access.provider, depends_on=kubernetes_access))
        for name, objects in plan.tenants.items()
    }
    shared_pools = SharedGpuPools("shared-gpu-pools", SharedGpuPoolsArgs(
        policies=plan.shared_policies, provider=access.provider, depends_on=kubernetes_access,
        tenants=list(tenants.values()))) if plan.shared_policies else None
    queues = KueueQueues("kueue", KueueQueuesArgs(
        release=plan.queues.release, manifests=plan.queues.manifests, provider=access.provider, tenants=tenants,
        depends_on=kubernetes_access)) if plan.queues else None
    showback = _showback(plan.showback, cluster, access, operator, kubernetes_access) if plan.showback else None
    dra = DraDriver("dra-driver", DraDriverArgs(
        plan=plan.dra, provider=access.provider, tenants=tenants, depends_on=kubernetes_access)) if plan.dra else None
    return GpuShareDeployment(
        stack=stack, plan=plan, cluster=cluster, access=access, operator=operator, pools=pools,
        capacities={name: pool.facts.capacity for name, pool in plan.pools.items()}, tenants=tenants,
        shared_pools=shared_pools, queues=queues, showback=showback, dra=dra)


def _showback(objects: ShowbackObjects, cluster: AksCluster | ExistingCluster, access: ClusterAccess,
              operator: GpuOperator, kubernetes_access: list[pulumi.Resource]) -> Showback:
    """Imported here: a stack without `gpushare:metrics` (most plans) loads neither the Grafana SDK nor the
    azure-native alertsmanagement module."""
    from gpushare.components.showback import Showback, ShowbackArgs

    return Showback("showback", ShowbackArgs(
        objects=objects, provider=access.provider, cluster_id=cluster.resource_id, cluster_name=cluster.cluster_name,
        resource_group_name=cluster.resource_group_name, operator_namespace=operator.kubernetes_namespace,
        depends_on=kubernetes_access))


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


def _validate(config: Mapping[str, Any], source: str, stack: str) -> StackConfig:
    try:
        return parse_config(dict(config), source=source, stack=stack)
    except GpushareError as exc:
        raise pulumi.RunError(str(exc)) from None


def _plan(stack: StackConfig) -> StackPlan:
    """The plan, before Azure is read: what only the derived facts show wrong (Azure's tag limits with the
    autoscaler's tags, a saved prices file the rules cannot use) stops the run here, with every problem."""
    try:
        return build_plan(stack)
    except GpushareError as exc:
        raise pulumi.RunError(str(exc)) from None


def _check_azure(stack: StackConfig, plan: StackPlan) -> GuardReport | None:
    """The guard, then preflight (`gpushare.azure.program_checks`), in the provider's subscription; nothing is read
    when `plan` renders offline. A violation or a strict preflight failure stops the run here, before any resource
    registers."""
    try:
        return check_azure_for_program(stack, os.environ, lambda: authorization.get_client_config().subscription_id,
                                       plan.pool_facts, pulumi.log)
    except GpushareError as exc:
        raise pulumi.RunError(str(exc)) from None
