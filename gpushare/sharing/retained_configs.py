"""The device-plugin config keys a run keeps although the stack dropped them: a deployed pool's nodes still name them
in their `nvidia.com/device-plugin.config` label until AKS relabels the pool, so the ConfigMap (`CONFIG_MAP_NAME`)
keeps each, its text from the ConfigMap data the last completed update recorded in a stack output."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpushare.sharing.operator_values import CONFIG_MAP_NAME

CONFIG_DATA_OUTPUT = "devicePluginConfigData"
"""The stack output holding the ConfigMap data as deployed: where a later run finds the text of a key it drops."""


@dataclass(frozen=True)
class RetainedConfigs:
    """The ConfigMap data for one run: the stack's configs, plus the keys deployed pools' nodes still name."""

    data: dict[str, str]
    kept: tuple[tuple[str, str], ...] = ()
    """(pool, key) whose key this run keeps although the stack no longer has it: the pool is not relabelled yet."""
    lost: tuple[tuple[str, str], ...] = ()
    """(pool, key) the pool's nodes name, but whose text no earlier run recorded: the key cannot be kept."""


def keys_to_keep(desired: Mapping[str, str], deployed_keys: Mapping[str, str]) -> dict[str, str]:
    """pool -> key, for each deployed pool whose nodes name a key the stack's data no longer has."""
    return {pool: key for pool, key in sorted(deployed_keys.items()) if key not in desired}


def retained_configs(desired: Mapping[str, str], deployed_keys: Mapping[str, str],
                     previous: Mapping[str, str] | None) -> RetainedConfigs:
    """The stack's data plus every key a deployed pool's label still names, its text from the ConfigMap data the
    last completed update recorded (`previous`, the `CONFIG_DATA_OUTPUT` stack output).

    The device plugin's config-manager (k8s-device-plugin `cmd/config-manager/main.go`, `updateConfigName`) fails
    with "specified config <key> does not exist" when the node's label names a key the mounted ConfigMap lacks,
    and its init container and sidecar exit on that error: a device-plugin pod (re)starting on a node of a pool
    AKS has not relabelled yet would never come up. So the ConfigMap update, which runs before the pools' updates,
    keeps such a key; the next run, whose read shows the pool relabelled, prunes it.
    """
    data = dict(desired)
    kept, lost = [], []
    for pool, key in keys_to_keep(desired, deployed_keys).items():
        text = (previous or {}).get(key)
        if isinstance(text, str):
            data[key] = text
            kept.append((pool, key))
        else:
            lost.append((pool, key))
    return RetainedConfigs(data=data, kept=tuple(kept), lost=tuple(lost))


def retained_config_warnings(retained: RetainedConfigs) -> list[str]:
    warnings = [
        f"pool {pool}: its nodes still name device-plugin config {key}, which this stack no longer has; the "
        f"ConfigMap keeps it until AKS has relabelled the pool (the next run prunes it)"
        for pool, key in retained.kept
    ]
    warnings += [
        f"pool {pool}: its nodes name device-plugin config {key}, which this run drops from ConfigMap "
        f"{CONFIG_MAP_NAME} and no earlier run recorded (stack output {CONFIG_DATA_OUTPUT}); a device-plugin pod "
        f"starting there before AKS relabels the pool fails with \"specified config {key} does not exist\" until "
        f"it is relabelled"
        for pool, key in retained.lost
    ]
    return warnings
