"""Pulumi ComponentResources that wire gpushare's domain logic to Azure and Kubernetes resources.

`deploy()` registers the whole deployment from a stack file's `config:` mapping (what gpushare's own program runs);
the components are here for programs that compose their own.
"""

from gpushare.components.aks_cluster import AksCluster, AksClusterArgs
from gpushare.components.cluster_access import ClusterAccess, ClusterAccessArgs
from gpushare.components.deployment import GpuShareDeployment, deploy
from gpushare.components.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from gpushare.components.gpu_operator import GpuOperator, GpuOperatorArgs
from gpushare.components.shared_gpu_pools import SharedGpuPools, SharedGpuPoolsArgs
from gpushare.components.tenant import GpuTenant, GpuTenantArgs

__all__ = [
    "AksCluster", "AksClusterArgs", "ClusterAccess", "ClusterAccessArgs", "GpuNodePool", "GpuNodePoolArgs",
    "GpuOperator", "GpuOperatorArgs", "GpuShareDeployment", "GpuTenant", "GpuTenantArgs", "SharedGpuPools",
    "SharedGpuPoolsArgs", "deploy",
]
