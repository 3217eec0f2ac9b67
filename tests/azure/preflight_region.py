"""A region as ARM describes it to preflight, served by the local stub: VM sizes, vCPU usage, AKS versions, and the
stack's cluster (absent by default). Shared by the domain, CLI and program tests."""

from __future__ import annotations

from tests.azure_stub import (
    ArmStub,
    StubResponse,
    agent_pools_path,
    arm_disk_sku,
    arm_error,
    arm_kubernetes_version,
    arm_usage,
    arm_vm_sku,
    kubernetes_versions_path,
    managed_cluster_id,
    resource_skus_path,
    usages_path,
)

REGION = "westeurope"
A100 = "Standard_ND96asr_v4"
T4 = "Standard_NC4as_T4_v3"
SYSTEM = "Standard_D4ds_v5"
A100_FAMILY = "standardNDASv4_A100Family"
T4_FAMILY = "standardNCASv3_T4Family"
SYSTEM_FAMILY = "standardDDSv5Family"


def vm_sizes(*changed: dict) -> list[dict]:
    """The region's VM sizes (and a disk, as the location filter returns every type); `changed` replace by name."""
    sizes = {
        SYSTEM: arm_vm_sku(SYSTEM, SYSTEM_FAMILY, 4, REGION),
        A100: arm_vm_sku(A100, A100_FAMILY, 96, REGION, gpus=8),
        T4: arm_vm_sku(T4, T4_FAMILY, 4, REGION, gpus=1),
        "Standard_NC8as_T4_v3": arm_vm_sku("Standard_NC8as_T4_v3", T4_FAMILY, 8, REGION, gpus=1),
        "Standard_NC40ads_H100_v5": arm_vm_sku("Standard_NC40ads_H100_v5", "StandardNCadsH100v5Family", 40, REGION,
                                               zones=("1", "2"), gpus=1),
    }
    for sku in changed:
        sizes[sku["name"]] = sku
    return [arm_disk_sku(REGION), *sizes.values()]


def usages(**changed: tuple[int, int]) -> list[dict]:
    """vCPU usage (current, limit) per quota name; plenty free unless `changed`."""
    values = {
        "cores": ("Total Regional vCPUs", 10, 1000),
        SYSTEM_FAMILY: ("Standard DDSv5 Family vCPUs", 8, 100),
        A100_FAMILY: ("Standard NDASv4_A100 Family vCPUs", 0, 400),
        T4_FAMILY: ("Standard NCASv3_T4 Family vCPUs", 0, 64),
        "StandardNCadsH100v5Family": ("Standard NCadsH100v5 Family vCPUs", 0, 80),
        "availabilitySets": ("Availability Sets", 1, 2500),
    }
    documents = []
    for name, (localized, current, limit) in values.items():
        current, limit = changed.get(name, (current, limit))
        documents.append(arm_usage(name, localized, current, limit))
    return documents


def kubernetes_versions(*extra: dict) -> dict:
    return {"values": [
        arm_kubernetes_version("1.31", ("1.31.9", "1.31.10"), plans=("KubernetesOfficial", "AKSLongTermSupport")),
        arm_kubernetes_version("1.32", ("1.32.5", "1.32.6")),
        arm_kubernetes_version("1.33", ("1.33.2", "1.33.3"), default=True),
        arm_kubernetes_version("1.34", ("1.34.0",), preview=True),
        *extra,
    ]}


NO_CLUSTER = StubResponse(404, arm_error("ResourceNotFound", "The Resource 'Microsoft.ContainerService/"
                                                             "managedClusters/gpushare-dev' was not found."))


def serve_region(arm: ArmStub, subscription_id: str, resource_group: str, cluster: str, *,
                 skus: list[dict] | None = None, quota: list[dict] | None = None, versions: dict | None = None,
                 pools: StubResponse = NO_CLUSTER) -> dict[str, str]:
    """Route the four reads; returns their paths by name."""
    paths = {
        "skus": resource_skus_path(subscription_id),
        "usages": usages_path(subscription_id, REGION),
        "versions": kubernetes_versions_path(subscription_id, REGION),
        "pools": agent_pools_path(subscription_id, resource_group, cluster),
    }
    arm.route(paths["skus"], StubResponse(200, {"value": skus if skus is not None else vm_sizes()}))
    arm.route(paths["usages"], StubResponse(200, {"value": quota if quota is not None else usages()}))
    arm.route(paths["versions"], StubResponse(200, versions if versions is not None else kubernetes_versions()))
    arm.route(paths["pools"], pools)
    if pools is NO_CLUSTER:  # nor is its GET (what preflight reads for a cluster's identity)
        arm.route(managed_cluster_id(subscription_id, resource_group, cluster), NO_CLUSTER)
    return paths
