"""The parsed region facts (no Azure) preflight's unit tests evaluate a stack against."""

from __future__ import annotations

from gpushare.azure.region_offers import KubernetesVersionOffer, QuotaUsage, RegionOffers, VmSizeOffer
from gpushare.model.stack import Autoscale
from tests.builders import pool, stack

SUB = "3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3"
T4_FAMILY = "standardNCASv3_T4Family"
OFFERS = RegionOffers(
    location="westeurope",
    vm_sizes=(
        VmSizeOffer("Standard_D4ds_v5", "standardDDSv5Family", 4, ("1", "2", "3")),
        VmSizeOffer("Standard_NC4as_T4_v3", T4_FAMILY, 4, ("1", "2", "3")),
        VmSizeOffer("Standard_NC8as_T4_v3", T4_FAMILY, 8, ("1", "2", "3")),
    ),
    usages=(
        QuotaUsage("cores", "Total Regional vCPUs", 0, 1000),
        QuotaUsage("standardDDSv5Family", None, 0, 100),
        QuotaUsage(T4_FAMILY, None, 0, 100),
    ),
    kubernetes_versions=(KubernetesVersionOffer("1.33", False, True, ("1.33.2",), ("KubernetesOfficial",)),),
)
CONFIG = stack(
    pool("small", "Standard_NC4as_T4_v3", count=None, autoscale=Autoscale(1, 5)),  # at most 5 x 4
    pool("big", "Standard_NC8as_T4_v3", count=2),  # 2 x 8
)

VNET = f"/subscriptions/{SUB}/resourceGroups/rg-net/providers/Microsoft.Network/virtualNetworks"
