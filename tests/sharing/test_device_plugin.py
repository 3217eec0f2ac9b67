"""Device-plugin configs: what each pool's nodes get, and the strict validator that guards them.

Golden files: `GPUSHARE_UPDATE_GOLDEN=1 pytest tests/sharing/test_device_plugin.py` rewrites them; review the diff.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path

import pytest
import yaml

from gpushare.errors import ConfigError
from gpushare.model.catalog import VM_SIZES, MigProfile
from gpushare.model.stack import MigStrategy, SharingStrategy
from gpushare.sharing.device_plugin import (
    DEFAULT_CONFIG_KEY,
    SAFE_DUMPER,
    SAFE_LOADER,
    DeviceTarget,
    config_document,
    config_key,
    config_map_data,
    device_target,
    plugin_configs,
    render_config,
    resource_name_problem,
    validate_config,
)
from tests.builders import CASES, mps, pool, stack, time_slicing

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden" / "device_plugin"
UPDATE_GOLDEN = os.environ.get("GPUSHARE_UPDATE_GOLDEN") == "1"
POOL_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
POOL_KEY = re.compile(r"^[a-z][a-z0-9]{0,11}-[0-9a-f]{8}$")


class _LiteralDumper(yaml.SafeDumper):
    """Shows each config as a block, the way `kubectl get configmap -o yaml` does."""


_LiteralDumper.add_representer(
    str, lambda dumper, s: dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None)
)


def render_golden(data: dict[str, str]) -> str:
    return yaml.dump({"data": data}, Dumper=_LiteralDumper, sort_keys=False, default_flow_style=False)


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_configmap_data_matches_golden(case):
    rendered = render_golden(config_map_data(plugin_configs(CASES[case])))
    golden = GOLDEN_DIR / f"{case}.yaml"
    if UPDATE_GOLDEN:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(rendered)
    assert golden.exists(), f"missing {golden}; run with GPUSHARE_UPDATE_GOLDEN=1"
    assert rendered == golden.read_text()


# --- what each pool's config says ----------------------------------------------------------------------------

def _doc(case: str, name: str) -> dict:
    """The config of pool `name`, or the default config (`name` = DEFAULT_CONFIG_KEY), as the ConfigMap holds it."""
    configs = plugin_configs(CASES[case])
    (config,) = [c for c in configs if (c.pool or c.key) == name]
    return yaml.safe_load(config_map_data(configs)[config.key])


@pytest.mark.parametrize(
    ("case", "key", "expected"),
    [
        ("mig-single", "a100mig", {"version": "v1", "flags": {"migStrategy": "single"}}),
        ("mig-mixed-time-slicing", "h100ts", {
            "version": "v1",
            "flags": {"migStrategy": "mixed"},
            "sharing": {"timeSlicing": {
                "renameByDefault": True,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/mig-2g.24gb", "replicas": 3}],
            }},
        }),
        ("t4-time-slicing", "t4ts", {
            "version": "v1",
            "flags": {"migStrategy": "single"},
            "sharing": {"timeSlicing": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
            }},
        }),
        ("t4-mps", "t4mps", {
            "version": "v1",
            "flags": {"migStrategy": "single"},
            "sharing": {"mps": {
                "renameByDefault": True,
                "failRequestsGreaterThanOne": False,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 8}],
            }},
        }),
        ("whole-gpu", "a100", {"version": "v1", "flags": {"migStrategy": "single"}}),
        ("mig-mixed-time-slicing", DEFAULT_CONFIG_KEY, {"version": "v1", "flags": {"migStrategy": "mixed"}}),
    ],
    ids=["mig-single", "mig-mixed-time-slicing", "t4-time-slicing", "t4-mps", "whole-gpu", "default-under-mixed"],
)
def test_pool_config_content(case, key, expected):
    assert _doc(case, key) == expected


def test_keys_are_default_then_pools_in_stack_order():
    config = stack(pool("b", "Standard_NC4as_T4_v3"), pool("a", "Standard_NC4as_T4_v3", sharing=time_slicing(2)))
    configs = plugin_configs(config)
    assert [c.pool for c in configs] == [None, "b", "a"]
    assert [c.key for c in configs] == [DEFAULT_CONFIG_KEY, config_key("b", configs[1].text),
                                        config_key("a", configs[2].text)]


def test_default_key_can_never_be_a_pool_key():
    assert not POOL_NAME.match(DEFAULT_CONFIG_KEY)
    assert not POOL_KEY.match(DEFAULT_CONFIG_KEY)


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_pool_keys_are_valid_configmap_keys_and_label_values(case):
    """`<pool>-<8 hex>`: at most 21 characters of [a-z0-9-], a valid ConfigMap key and label value."""
    for config in plugin_configs(CASES[case]):
        if config.pool:
            assert POOL_KEY.match(config.key) and config.key.startswith(f"{config.pool}-"), config.key


@pytest.mark.parametrize("strategy", list(MigStrategy), ids=[s.value for s in MigStrategy])
def test_every_file_states_the_strategy_the_chart_imposes(strategy):
    """The chart's mig.strategy overrides flags.migStrategy on every node, MIG or not: files must agree with it."""
    config = stack(pool("t4", "Standard_NC4as_T4_v3", sharing=time_slicing(2)),
                   pool("a100", "Standard_ND96asr_v4", mig=MigProfile.MIG3G), mig_strategy=strategy)
    for plugin_config in plugin_configs(config):
        assert yaml.safe_load(plugin_config.text)["flags"]["migStrategy"] == strategy.value, plugin_config.key


def _every_pool_shape():
    """Every catalog size with every sharing it can take, under both strategies."""
    for size in VM_SIZES:
        for mig in [None, *(MigProfile if size.mig_capable else [])]:
            for strategy in MigStrategy:
                sharings = [None, time_slicing(2), time_slicing(16)]
                if mig is None and strategy is MigStrategy.SINGLE:
                    sharings += [mps(2), mps(size.gpu.mps_max_clients)]
                for sharing in sharings:
                    yield pool("p", size.name, mig=mig, sharing=sharing), strategy


def test_every_valid_pool_shape_generates_a_valid_config():
    count = 0
    for gpu_pool, strategy in _every_pool_shape():
        configs = plugin_configs(stack(gpu_pool, mig_strategy=strategy))
        doc = yaml.safe_load(configs[1].text)
        assert validate_config(doc, device_target(gpu_pool, strategy)) == []
        count += 1
    assert count > 100


def test_c_and_python_dumpers_write_the_same_config_text():
    """The text is hashed into the config key and node label: a machine whose PyYAML lacks libyaml must render
    the same keys."""
    assert SAFE_DUMPER is yaml.CSafeDumper, "PyYAML without libyaml: this test would compare the Python dumper to itself"
    shapes = [(None, strategy) for strategy in MigStrategy] + list(_every_pool_shape())
    for gpu_pool, strategy in shapes:
        doc = dict(config_document(gpu_pool, strategy))
        python = yaml.dump(doc, Dumper=yaml.SafeDumper, sort_keys=False, default_flow_style=False)
        assert render_config(doc) == python
        assert yaml.load(python, Loader=SAFE_LOADER) == yaml.safe_load(python)
    assert len(shapes) > 100


@pytest.mark.parametrize(
    ("gpu_pool", "strategy", "message"),
    [
        (pool("t4", "Standard_NC4as_T4_v3", sharing=mps(4)), MigStrategy.MIXED,
         "gpushare:pools[0]: device-plugin config 't4': sharing.mps: MPS is not supported with migStrategy mixed"),
        (pool("a100", "Standard_ND96asr_v4", mig=MigProfile.MIG1G, sharing=mps(2)), MigStrategy.SINGLE,
         "gpushare:pools[0]: device-plugin config 'a100': sharing.mps: MPS is not supported on MIG devices"),
        (pool("t4", "Standard_NC4as_T4_v3", sharing=mps(49)), MigStrategy.SINGLE,
         "sharing.mps.resources[0].replicas: the device plugin's MPS control daemon accepts at most 48 replicas "
         "per GPU on these nodes, got 49"),
        (pool("v100", "Standard_NC6s_v3", sharing=mps(17)), MigStrategy.SINGLE,
         "sharing.mps.resources[0].replicas: the device plugin's MPS control daemon accepts at most 16 replicas "
         "per GPU on these nodes, got 17"),
        (pool("t4", "Standard_NC4as_T4_v3", sharing=time_slicing(1)), MigStrategy.SINGLE,
         "sharing.timeSlicing.resources[0].replicas: number of replicas must be >= 2, got 1"),
    ],
    ids=["rejects-mps-mixed", "rejects-mps-mig", "rejects-mps-49-on-t4", "rejects-mps-17-on-v100",
         "rejects-replicas-1"],
)
def test_generator_refuses_a_config_the_plugin_would_reject(gpu_pool, strategy, message):
    with pytest.raises(ConfigError) as error:
        plugin_configs(stack(gpu_pool, mig_strategy=strategy))
    assert message in str(error.value)


# --- the strict validator -----------------------------------------------------------------------------------

VALID_TIME_SLICING = {
    "version": "v1",
    "flags": {"migStrategy": "single"},
    "sharing": {"timeSlicing": {
        "renameByDefault": True,
        "failRequestsGreaterThanOne": True,
        "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
    }},
}
T4 = DeviceTarget(MigStrategy.SINGLE, "nvidia.com/gpu", mig_enabled=False, mps_max_clients=48)
MIG_MIXED_1G = DeviceTarget(MigStrategy.MIXED, "nvidia.com/mig-1g.5gb", mig_enabled=True, mps_max_clients=48)
MIG_SINGLE = DeviceTarget(MigStrategy.SINGLE, "nvidia.com/gpu", mig_enabled=True, mps_max_clients=48)


def _mutate(doc: dict, path: list, value=None, *, delete: bool = False) -> dict:
    """A deep copy of `doc` with the value at `path` (keys and list indexes) set or deleted."""
    out = copy.deepcopy(doc)
    node = out
    for step in path[:-1]:
        node = node[step]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


def _as_mps(doc: dict, replicas: int = 4, strategy: str = "single") -> dict:
    block = copy.deepcopy(doc["sharing"]["timeSlicing"])
    block["resources"][0]["replicas"] = replicas
    return {"version": "v1", "flags": {"migStrategy": strategy}, "sharing": {"mps": block}}


TS = ["sharing", "timeSlicing"]
R0 = [*TS, "resources", 0]

REJECTED = [
    ("unknown-top-level-key", _mutate(VALID_TIME_SLICING, ["flagz"], {"migStrategy": "none"}), None,
     "flagz: unknown key"),
    ("unknown-flag", _mutate(VALID_TIME_SLICING, ["flags", "migStrategyy"], "none"), None,
     "flags.migStrategyy: unknown key"),
    ("unknown-plugin-flag", _mutate(VALID_TIME_SLICING, ["flags", "plugin"], {"passDeviceSpec": True}), None,
     "flags.plugin.passDeviceSpec: unknown key"),
    ("unknown-sharing-key", _mutate(VALID_TIME_SLICING, ["sharing", "timeslicing"], {}), None,
     "sharing.timeslicing: unknown key"),
    ("unknown-timeslicing-key", _mutate(VALID_TIME_SLICING, [*TS, "replicaz"], 4), None,
     "sharing.timeSlicing.replicaz: unknown key"),
    ("unknown-resource-key", _mutate(VALID_TIME_SLICING, [*R0, "extra"], 1), None,
     "sharing.timeSlicing.resources[0].extra: unknown key"),
    ("case-mangled-key", _mutate(VALID_TIME_SLICING, [*TS, "RenameByDefault"], True), None,
     "sharing.timeSlicing.RenameByDefault: unknown key"),
    ("ignored-rename", _mutate(VALID_TIME_SLICING, [*R0, "rename"], "gpu.small"), None,
     "sharing.timeSlicing.resources[0].rename: ignored by device plugin v0.20.0"),
    ("ignored-devices", _mutate(VALID_TIME_SLICING, [*R0, "devices"], [0]), None,
     "sharing.timeSlicing.resources[0].devices: ignored by device plugin v0.20.0"),
    ("ignored-top-level-resources", _mutate(VALID_TIME_SLICING, ["resources"], {"gpus": []}), None,
     "resources: ignored by device plugin v0.20.0"),
    ("replicas-1", _mutate(VALID_TIME_SLICING, [*R0, "replicas"], 1), None,
     "sharing.timeSlicing.resources[0].replicas: number of replicas must be >= 2, got 1"),
    ("mps-replicas-1", _as_mps(VALID_TIME_SLICING, replicas=1), None,
     "sharing.mps.resources[0].replicas: number of replicas must be >= 2, got 1"),
    ("replicas-string", _mutate(VALID_TIME_SLICING, [*R0, "replicas"], "4"), None,
     "sharing.timeSlicing.resources[0].replicas: must be an integer"),
    ("no-replicas", _mutate(VALID_TIME_SLICING, [*R0, "replicas"], delete=True), None,
     "sharing.timeSlicing.resources[0].replicas: no replicas specified"),
    ("no-name", _mutate(VALID_TIME_SLICING, [*R0, "name"], delete=True), None,
     "sharing.timeSlicing.resources[0].name: no resource name specified"),
    ("no-resources", _mutate(VALID_TIME_SLICING, [*TS, "resources"], []), None,
     "sharing.timeSlicing.resources: no resources specified"),
    ("version-v2", _mutate(VALID_TIME_SLICING, ["version"], "v2"), None, "version: must be v1, got 'v2'"),
    ("no-version", _mutate(VALID_TIME_SLICING, ["version"], delete=True), None, "version: must be v1, got None"),
    ("uppercase-resource-name", _mutate(VALID_TIME_SLICING, [*R0, "name"], "nvidia.com/GPU_X"), None,
     "incorrect format for resource name 'nvidia.com/GPU_X'"),
    ("resource-name-too-long", _mutate(VALID_TIME_SLICING, [*R0, "name"], "nvidia.com/" + "g" * 53), None,
     "fully-qualified resource name must be 63 characters or less"),
    ("foreign-prefix", _mutate(VALID_TIME_SLICING, [*R0, "name"], "example.com/gpu"), None,
     "incorrect format for resource name 'nvidia.com/example.com/gpu'"),
    ("bool-as-string", _mutate(VALID_TIME_SLICING, [*TS, "renameByDefault"], "yes"), None,
     "sharing.timeSlicing.renameByDefault: must be true or false, got 'yes'"),
    ("unknown-mig-strategy", _mutate(VALID_TIME_SLICING, ["flags", "migStrategy"], "auto"), None,
     "flags.migStrategy: got 'auto'; allowed: none, single, mixed"),
    ("bad-device-list-strategy", _mutate(VALID_TIME_SLICING, ["flags", "plugin"], {"deviceListStrategy": ["x"]}),
     None, "flags.plugin.deviceListStrategy: got ['x']"),
    ("bad-imex-channels", _mutate(VALID_TIME_SLICING, ["imex"], {"channelIDs": [1]}), None,
     "imex.channelIDs: must be [] or [0], got [1]"),
    ("sharing-not-a-mapping", _mutate(VALID_TIME_SLICING, ["sharing"], ["timeSlicing"]), None,
     "sharing: must be a mapping"),
    ("not-a-mapping", ["version", "v1"], None, "(the file): must be a mapping"),
    ("mps-and-mixed", _as_mps(VALID_TIME_SLICING, strategy="mixed"), None,
     "sharing.mps: MPS is not supported with migStrategy mixed"),
    ("mps-on-mig", _as_mps(VALID_TIME_SLICING), MIG_SINGLE, "sharing.mps: MPS is not supported on MIG devices"),
    ("mps-on-mig-resource", _mutate(_as_mps(VALID_TIME_SLICING), ["sharing", "mps", "resources", 0, "name"],
                                    "nvidia.com/mig-1g.5gb"), None,
     "sharing.mps.resources[0].name: MPS shares only whole GPUs (nvidia.com/gpu)"),
    ("mps-over-client-limit", _as_mps(VALID_TIME_SLICING, replicas=49), T4,
     "sharing.mps.resources[0].replicas: the device plugin's MPS control daemon accepts at most 48 replicas "
     "per GPU on these nodes, got 49"),
    ("both-time-slicing-and-mps", _mutate(VALID_TIME_SLICING, ["sharing", "mps"],
                                          _as_mps(VALID_TIME_SLICING)["sharing"]["mps"]), None,
     "sharing: both timeSlicing and mps are set"),
    ("resource-the-node-lacks", _mutate(VALID_TIME_SLICING, ["flags", "migStrategy"], "mixed"), MIG_MIXED_1G,
     "sharing.timeSlicing.resources[0].name: these nodes advertise nvidia.com/mig-1g.5gb, got nvidia.com/gpu"),
    ("strategy-the-chart-overrides", _mutate(VALID_TIME_SLICING, ["flags", "migStrategy"], "none"), T4,
     "flags.migStrategy: the chart's mig.strategy sets MIG_STRATEGY=single on every node"),
]


@pytest.mark.parametrize(("doc", "target", "expected"), [case[1:] for case in REJECTED],
                         ids=[f"rejects-{case[0]}" for case in REJECTED])
def test_validator_rejects(doc, target, expected):
    problems = validate_config(doc, target)
    assert any(expected in problem for problem in problems), problems


ACCEPTED = [
    ("time-slicing", VALID_TIME_SLICING, T4),
    ("mps-48-on-t4", _as_mps(VALID_TIME_SLICING, replicas=48), T4),
    ("flags-only", {"version": "v1", "flags": {"migStrategy": "none"}}, None),
    ("mixed-time-slicing-on-mig", _mutate(_mutate(VALID_TIME_SLICING, ["flags", "migStrategy"], "mixed"),
                                          [*R0, "name"], "nvidia.com/mig-1g.5gb"), MIG_MIXED_1G),
    ("short-resource-name", _mutate(VALID_TIME_SLICING, [*R0, "name"], "gpu"), T4),
    ("every-known-flag", {
        "version": "v1",
        "flags": {
            "migStrategy": "single", "failOnInitError": True, "mpsRoot": "/run/nvidia/mps", "nvidiaDriverRoot": "/",
            "nvidiaDevRoot": "/", "gdrcopyEnabled": False, "gdsEnabled": False, "mofedEnabled": False,
            "useNodeFeatureAPI": False, "deviceDiscoveryStrategy": "auto",
            "plugin": {"passDeviceSpecs": False, "deviceListStrategy": ["envvar", "cdi-cri"],
                       "deviceIDStrategy": "uuid",
                       "cdiAnnotationPrefix": "cdi.k8s.io/", "nvidiaCTKPath": "/usr/bin/nvidia-ctk",
                       "containerDriverRoot": "/driver-root", "sharedDevicesAllocationPolicy": "packed"},
            "gfd": {"oneshot": False, "noTimestamp": False, "sleepInterval": "60s", "outputFile": "/out",
                    "machineTypeFile": "/sys/class/dmi/id/product_name"},
        },
        "imex": {"channelIDs": [0], "required": False},
    }, None),
]


@pytest.mark.parametrize(("doc", "target"), [case[1:] for case in ACCEPTED], ids=[case[0] for case in ACCEPTED])
def test_validator_accepts_what_the_plugin_honours(doc, target):
    assert validate_config(doc, target) == []


@pytest.mark.parametrize(
    ("name", "ok"),
    [("nvidia.com/gpu", True), ("gpu", True), ("nvidia.com/mig-1g.5gb", True), ("nvidia.com/gpu.shared", True),
     ("nvidia.com/" + "g" * 52, True), ("nvidia.com/" + "g" * 53, False), ("nvidia.com/-gpu", False),
     ("nvidia.com/gpu_x", False), ("nvidia.com/", False)],
    ids=["gpu", "bare-gpu", "mig", "shared", "63-chars", "64-chars", "leading-dash", "underscore", "empty"],
)
def test_resource_name_format(name, ok):
    assert (resource_name_problem(name) is None) is ok


def test_sharing_keys_cover_every_strategy():
    """A new SharingStrategy must get a config key, or its pools would silently not share."""
    for strategy in SharingStrategy:
        config = stack(pool("t4", "Standard_NC4as_T4_v3", sharing=mps(2) if strategy is SharingStrategy.MPS
                            else time_slicing(2)))
        assert "sharing" in yaml.safe_load(plugin_configs(config)[1].text)
