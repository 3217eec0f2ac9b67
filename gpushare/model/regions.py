"""Azure region names (`az account list-locations --query "[].name"`) a cluster may be created in.

Kept here so a misspelt `azure-native:location` (`westeu`, `eastus3`) fails validation with a suggestion instead of
failing `pulumi up` after the resource group. Physical regions only: logical names such as `europe` or `global`
hold no resources. The list is gpushare's knowledge as of `REGIONS_AS_OF`; a region Azure opens later is refused
until it is added here.
"""

from __future__ import annotations

import difflib

REGIONS_AS_OF = "2026-06"

PUBLIC_REGIONS = frozenset({
    "australiacentral", "australiacentral2", "australiaeast", "australiasoutheast", "austriaeast",
    "belgiumcentral", "brazilsouth", "brazilsoutheast", "canadacentral", "canadaeast", "centralindia", "centralus",
    "centraluseuap", "chilecentral", "denmarkeast", "eastasia", "eastus", "eastus2", "eastus2euap", "francecentral",
    "francesouth", "germanynorth", "germanywestcentral", "indonesiacentral", "israelcentral", "italynorth",
    "japaneast", "japanwest", "jioindiacentral", "jioindiawest", "koreacentral", "koreasouth", "malaysiawest",
    "mexicocentral", "newzealandnorth", "northcentralus", "northeurope", "norwayeast", "norwaywest",
    "polandcentral", "qatarcentral", "southafricanorth", "southafricawest", "southcentralus", "southeastasia",
    "southindia", "spaincentral", "swedencentral", "swedensouth", "switzerlandnorth", "switzerlandwest",
    "uaecentral", "uaenorth", "uksouth", "ukwest", "westcentralus", "westeurope", "westindia", "westus", "westus2",
    "westus3",
})
"""Azure public cloud (`AzureCloud`)."""

SOVEREIGN_REGIONS = {
    "usgovernment": frozenset({"usgovarizona", "usgovtexas", "usgovvirginia", "usdodcentral", "usdodeast"}),
    "china": frozenset({"chinaeast", "chinaeast2", "chinaeast3", "chinanorth", "chinanorth2", "chinanorth3"}),
}
"""Azure Government and Azure operated by 21Vianet, keyed by azure-native's `environment` setting: accepted, since a
stack may target them (the provider then needs `azure-native:environment` set to that key)."""

ALL_REGIONS = PUBLIC_REGIONS.union(*SOVEREIGN_REGIONS.values())


def is_known_region(name: str) -> bool:
    return name in ALL_REGIONS


def closest_regions(name: str, limit: int = 2) -> list[str]:
    """Regions spelt like `name`, for 'did you mean': an abbreviation first (`westeu` -> westeurope), then by
    spelling (`eastus3` -> eastus, westus3)."""
    completions = sorted(region for region in ALL_REGIONS if len(name) >= 4 and region.startswith(name))
    if completions:
        return completions[:limit]
    return difflib.get_close_matches(name, sorted(ALL_REGIONS), n=limit, cutoff=0.75)
