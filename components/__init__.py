"""Pulumi ComponentResources that wire gpushare's domain logic to Azure and Kubernetes resources.

`deploy()` registers the whole deployment from a stack file's `config:` mapping (what gpushare's own program runs);
the components are here for programs that compose their own, each from its part of `stack_plan(config)` or from
arguments of their own.
"""

from gpushare.components.aks_cluster import AksCluster, AksClusterArgs
from gpushare.components.cluster_access import ClusterAccess, ClusterAccessArgs
from gpushare.components.deployment import GpuShareDeployment, deploy, stack_plan
from gpushare.components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from gpushare.components.gpu_operator import GpuOperator, GpuOperatorArgs
from gpushare.components.kueue_queues import KueueQueues, KueueQueuesArgs
from gpushare.components.shared_gpu_pools import SharedGpuPools, SharedGpuPoolsArgs
from gpushare.components.tenant import GpuTenant, GpuTenantArgs

__all__ = [
    "AksCluster", "AksClusterArgs", "ClusterAccess", "ClusterAccessArgs", "GpuNodePool", "GpuNodePoolArgs",
    "GpuOperator", "GpuOperatorArgs", "GpuShareDeployment", "GpuTenant", "GpuTenantArgs", "KueueQueues",
    "KueueQueuesArgs", "SharedGpuPools", "SharedGpuPoolsArgs", "deploy", "stack_plan",
]
