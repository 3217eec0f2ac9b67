"""A fleet for tests: three member stacks in three regions (the canary an existing cluster) and the fleet file
beside them, written under a test's tmp_path; a test changes one part to break one thing."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

VISION_GROUP = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
EU_SUBSCRIPTION = "6a1d2c3b-4e5f-4a6b-8c7d-9e0f1a2b3c4d"

MEMBER_STACKS: dict[str, dict[str, Any]] = {
    "eu": {
        "azure-native:location": "westeurope",
        "azure-native:subscriptionId": EU_SUBSCRIPTION,
        "gpushare:cluster": {"name": "gpu-eu", "resourceGroup": "rg-gpu-eu"},
        "gpushare:queues": {"enabled": True},
        "gpushare:pools": [{"name": "a100mig", "vmSize": "Standard_NC24ads_A100_v4", "mig": "MIG1g",
                            "autoscale": {"min": 1, "max": 2}}],
        "gpushare:tenants": [{"name": "nlp", "pools": ["a100mig"], "quota": {"pools": {"a100mig": 3}}}],
        "gpushare:fleet": "fleet.yaml",
    },
    "us": {
        "azure-native:location": "eastus",
        "gpushare:cluster": {"name": "gpu-us", "resourceGroup": "rg-gpu-us"},
        "gpushare:pools": [{"name": "h100", "vmSize": "Standard_NC40ads_H100_v5", "count": 2}],
        "gpushare:fleet": "fleet.yaml",
    },
    "lab": {
        "azure-native:location": "swedencentral",
        "gpushare:cluster": {"name": "platform-aks", "resourceGroup": "rg-platform", "existing": True},
        "gpushare:pools": [{"name": "t4ts", "vmSize": "Standard_NC4as_T4_v3",
                            "sharing": {"strategy": "time-slicing", "replicas": 4},
                            "autoscale": {"min": 1, "max": 3}}],
        "gpushare:fleet": "fleet.yaml",
    },
}
"""eu (westeurope, queues, its own tenant nlp), us (eastus), lab (swedencentral, an existing cluster); each names the
fleet file (`gpushare:fleet`), so its own plan has the fleet's tenants."""

FLEET: dict[str, Any] = {
    "fleet": {"name": "gpu-fleet", "resourceGroup": "rg-gpu-fleet", "location": "westeurope"},
    "members": [{"stack": "lab", "canary": True, "group": "canary"},
                {"stack": "eu", "group": "regions"},
                {"stack": "us", "group": "regions"}],
    "dispatch": {"manager": "eu"},
    "updates": {"canaryWaitSeconds": 1800, "autoUpgrade": {"channel": "NodeImage"}},
    "tenants": [{"name": "vision", "groups": [VISION_GROUP],
                 "members": {"eu": {"pools": ["a100mig"], "quota": {"pools": {"a100mig": 4}}},
                             "us": {"pools": ["h100"]}}}],
}
"""The canary lab first and 1800 s, then eu and us in one group; vision declared once, in eu and us."""


def fleet_doc() -> dict[str, Any]:
    """A fresh copy of FLEET to change."""
    return copy.deepcopy(FLEET)


def write_fleet(directory: Path, fleet: dict[str, Any] | str | None = None,
                stacks: dict[str, dict[str, Any]] | None = None) -> Path:
    """The member stacks and the fleet file (`fleet.yaml`) written into `directory`; the fleet file's path."""
    directory.mkdir(parents=True, exist_ok=True)
    for stack, config in (MEMBER_STACKS if stacks is None else stacks).items():
        (directory / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    path = directory / "fleet.yaml"
    document = FLEET if fleet is None else fleet
    path.write_text(document if isinstance(document, str) else yaml.safe_dump(document, sort_keys=False))
    return path
