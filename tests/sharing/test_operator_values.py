"""GPU Operator chart values: derived from the stack, limited to verified value paths; content-addressed config keys."""

from __future__ import annotations

import dataclasses
import hashlib
from importlib import resources
from pathlib import Path

import pytest
import yaml

from gpushare.model.catalog import MigProfile
from gpushare.model.stack import Autoscale, DriverOwner, MigStrategy, pool_node_taints
from gpushare.sharing.device_plugin import DEFAULT_CONFIG_KEY, config_key
from gpushare.sharing.operator_values import (
    AKS_RUNTIME_CLASS,
    CONFIG_MAP_NAME,
    VERIFIED_CHART_VERSIONS,
    config_hash,
    operator_plan,
    toleration,
    unknown_value_paths,
    value_leaf_paths,
    verified_value_paths,
)
from tests.builders import CASES, mps, pool, stack, time_slicing, with_pool
from tests.upstream_data import upstream_file

# The chart's own values.yaml, read only to check the path list against it; never part of the project.

MIXED_FLEET = stack(
    pool("a100mig", "Standard_ND96asr_v4", mig=MigProfile.MIG1G, sharing=time_slicing(2)),
    pool("t4mps", "Standard_NC64as_T4_v3", sharing=mps(10)),
    pool("t4", "Standard_NC4as_T4_v3", count=None, autoscale=Autoscale(0, 4)),
)
STACKS = {
    **CASES,
    "mixed-fleet": MIXED_FLEET,
    "operator-driver": dataclasses.replace(
        MIXED_FLEET, operator=dataclasses.replace(MIXED_FLEET.operator, driver=DriverOwner.OPERATOR)),
    "no-pools": stack(),
}


def _values(config):
    return operator_plan(config).values


@pytest.mark.parametrize("name", list(STACKS), ids=list(STACKS))
def test_every_value_path_exists_in_the_pinned_chart(name):
    values = _values(STACKS[name])
    known = verified_value_paths(STACKS[name].operator.chart_version)
    assert value_leaf_paths(values)
    assert [path for path in value_leaf_paths(values) if path not in known] == []


@pytest.mark.parametrize(
    ("typo", "path"),
    [
        ({"devicePlugin": {"configs": {"name": CONFIG_MAP_NAME}}}, "devicePlugin.configs.name"),
        ({"devicePlugin": {"config": {"nmae": CONFIG_MAP_NAME}}}, "devicePlugin.config.nmae"),
        ({"nodeFeatureDiscovery": {"worker": {"tolerations": []}}}, "nodeFeatureDiscovery.worker.tolerations"),
        ({"daemonsets": {"toleration": []}}, "daemonsets.toleration"),
        ({"migManager": {}}, "migManager"),
    ],
    ids=["rejects-configs", "rejects-nmae", "rejects-nfd-camel-case", "rejects-toleration", "rejects-empty-section"],
)
def test_path_checker_catches_typos(typo, path):
    values = _values(MIXED_FLEET)
    values.update(typo)
    assert path in unknown_value_paths(values, "v26.7.0")


def test_leaf_paths_treat_lists_as_leaves():
    values = {"a": {"b": [{"c": 1}], "d": {"e": True}}, "f": {}}
    assert value_leaf_paths(values) == ["a.b", "a.d.e", "f"]


def chart_values_file() -> Path:
    return upstream_file("gpu-operator-values.yaml", "the GPU Operator chart's values.yaml, which the value-path list "
                                                     "is checked against")


@pytest.mark.parametrize("version", VERIFIED_CHART_VERSIONS)
def test_path_list_matches_the_chart_values_file(version):
    chart = yaml.safe_load(chart_values_file().read_text())
    for path in verified_value_paths(version):
        node = chart
        for part in path.split("."):
            assert isinstance(node, dict) and part in node, f"{path} is not in the chart's values.yaml"
            node = node[part]


def test_each_verified_version_has_exactly_one_path_list_and_one_index_of_the_charts_values():
    files = {p.name for p in resources.files("gpushare.sharing").joinpath("chart_value_paths").iterdir()}
    assert files == {name for version in VERIFIED_CHART_VERSIONS
                     for name in (f"{version}.txt", f"{version}.defaults.tsv")}


def test_every_path_gpushare_sets_is_in_the_charts_own_values():
    from gpushare.sharing.operator_values import chart_defaults, verified_value_paths
    for version in VERIFIED_CHART_VERSIONS:
        assert verified_value_paths(version) <= set(chart_defaults(version))


# --- driver ownership, MIG, device-plugin config -------------------------------------------------------------

@pytest.mark.parametrize(
    ("driver", "expected"),
    [
        # With AKS's toolkit the device list stays in NVIDIA_VISIBLE_DEVICES, which AKS's default runtime reads.
        (DriverOwner.AKS, {"driver": {"enabled": False}, "toolkit": {"enabled": False},
                           "operator": {"runtimeClass": AKS_RUNTIME_CLASS}, "cdi": {"enabled": False}}),
        (DriverOwner.OPERATOR, {"driver": {"enabled": True}, "toolkit": {"enabled": True},
                                "operator": {"runtimeClass": "nvidia"}, "cdi": {"enabled": True}}),
    ],
    ids=["aks-owns-driver", "operator-owns-driver"],
)
def test_driver_ownership(driver, expected):
    values = _values(stack(pool("t4", "Standard_NC4as_T4_v3"), driver=driver))
    assert {key: values[key] for key in expected} == expected


@pytest.mark.parametrize("strategy", list(MigStrategy), ids=[s.value for s in MigStrategy])
def test_mig_strategy_is_the_stacks_and_mig_manager_is_off(strategy):
    values = _values(stack(pool("a100", "Standard_ND96asr_v4", mig=MigProfile.MIG3G), mig_strategy=strategy))
    assert values["mig"] == {"strategy": strategy.value}
    assert values["migManager"] == {"enabled": False}


def test_device_plugin_points_at_gpushares_configmap_and_its_default_key():
    plan = operator_plan(MIXED_FLEET)
    config = plan.values["devicePlugin"]["config"]
    assert config == {"name": CONFIG_MAP_NAME, "default": DEFAULT_CONFIG_KEY}
    assert config["default"] in plan.config_map_data
    assert {key.rsplit("-", 1)[0] for key in plan.config_map_data} == {"default-whole", "a100mig", "t4mps", "t4"}


# --- tolerations ----------------------------------------------------------------------------------------------

def _tolerates(t: dict, taint: str) -> bool:
    """Kubernetes matching: same key and effect, and Exists, or Equal with the same value."""
    key_value, _, effect = taint.rpartition(":")
    key, _, value = key_value.partition("=")
    if t.get("key") != key or t.get("effect") not in (None, effect):
        return False
    return t.get("operator") == "Exists" or (t.get("operator", "Equal") == "Equal" and t.get("value") == value)


@pytest.mark.parametrize("name", list(STACKS), ids=list(STACKS))
def test_operator_daemonsets_and_nfd_worker_tolerate_every_gpu_pool_taint(name):
    config = STACKS[name]
    values = _values(config)
    for where, tolerations in (("daemonsets", values["daemonsets"]["tolerations"]),
                               ("nfd worker", values["node-feature-discovery"]["worker"]["tolerations"])):
        for gpu_pool in config.pools:
            for taint in pool_node_taints(config, gpu_pool):
                assert any(_tolerates(t, taint) for t in tolerations), f"{where} does not tolerate {taint}"


def test_tolerations_follow_the_pools_taints_not_a_literal(monkeypatch):
    """Tolerations come from GpuPool.taints: a new taint there must reach both lists."""
    from gpushare.model.stack import GpuPool

    monkeypatch.setattr(GpuPool, "taints", property(lambda self: ("nvidia.com/gpu=present:NoSchedule",
                                                                  f"gpushare.io/pool={self.name}:NoSchedule")))
    # A fresh stack object: pool facts (taints among them) are derived once per stack, before the patch here.
    values = _values(dataclasses.replace(MIXED_FLEET))
    expected = [toleration("gpushare.io/pool=a100mig:NoSchedule"), toleration("gpushare.io/pool=t4:NoSchedule"),
                toleration("gpushare.io/pool=t4mps:NoSchedule"), toleration("nvidia.com/gpu=present:NoSchedule")]
    assert values["daemonsets"]["tolerations"] == expected
    assert values["node-feature-discovery"]["worker"]["tolerations"] == expected


@pytest.mark.parametrize(
    ("taint", "expected"),
    [# Exactly what ExtendedResourceToleration adds to a pod requesting nvidia.com/gpu: an Equal one beside it is
     # dropped by PodTolerationRestriction on the pod's first update, which the API server then refuses
     # (tests/controlplane/test_lifecycle_on_a_real_control_plane.py shows it on the real API server).
     ("nvidia.com/gpu=present:NoSchedule", {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}),
     ("nvidia.com/gpu.shared=yes:NoSchedule",
      {"key": "nvidia.com/gpu.shared", "operator": "Exists", "effect": "NoSchedule"}),
     # The plugin adds NoSchedule only: another effect is covered by nothing, and keeps its value.
     ("nvidia.com/gpu=present:NoExecute",
      {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoExecute"}),
     # A tenant's isolation rests on the value, and the Spot taint's key is no resource a pod requests.
     ("gpushare.io/tenant=vision:NoSchedule",
      {"key": "gpushare.io/tenant", "operator": "Equal", "value": "vision", "effect": "NoSchedule"}),
     ("kubernetes.azure.com/scalesetpriority=spot:NoSchedule",
      {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}),
     ("dedicated:NoExecute", {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"})],
    ids=["gpu-taint", "another-nvidia-resource", "gpu-key-noexecute", "tenant", "spot", "key-only"],
)
def test_toleration_from_taint(taint, expected):
    assert toleration(taint) == expected


# --- content-addressed keys ----------------------------------------------------------------------------------

def _keys(config) -> dict[str, str]:
    """Each pool's ConfigMap key (= its nodes' device-plugin.config label)."""
    plan = operator_plan(config)
    assert plan.config_map_data == {c.key: c.text for c in plan.configs}
    return {c.pool: c.key for c in plan.configs if c.pool}


def test_no_chart_value_carries_a_config_hash():
    """A hash in the DaemonSets' env would restart the device plugin on every GPU node on any config change."""
    values = operator_plan(MIXED_FLEET).values
    assert "env" not in values["devicePlugin"]
    assert "gfd" not in values


def test_a_pool_key_is_its_name_and_the_first_8_hex_of_its_configs_sha256():
    plan = operator_plan(MIXED_FLEET)
    for config in plan.configs:
        if config.pool:
            assert config.key == f"{config.pool}-{hashlib.sha256(config.text.encode()).hexdigest()[:8]}"
            assert config.key == config_key(config.pool, config.text)
        else:
            assert config.key == DEFAULT_CONFIG_KEY


UNCHANGED = {
    "count": lambda c: with_pool(c, 2, count=None, autoscale=Autoscale(1, 8)),
    "autoscale": lambda c: with_pool(c, 2, count=None, autoscale=Autoscale(0, 2)),
    "fixed-count": lambda c: with_pool(c, 0, count=5),
    "zones": lambda c: with_pool(c, 1, zones=("1", "2")),
    "recreate": lambda c: with_pool(c, 1, recreate=True),
    # Under `single` every MIG slice is advertised as nvidia.com/gpu, so the file does not name the profile.
    "mig-profile-under-single": lambda c: with_pool(c, 0, mig=MigProfile.MIG2G),
    "pool-order": lambda c: dataclasses.replace(c, pools=tuple(reversed(c.pools))),
    "driver-owner": lambda c: dataclasses.replace(c, operator=dataclasses.replace(c.operator,
                                                                                  driver=DriverOwner.OPERATOR)),
}
# change -> (stack after it, the one pool whose key changes)
CHANGED = {
    "replicas": (lambda c: with_pool(c, 1, sharing=mps(12)), "t4mps"),
    "strategy": (lambda c: with_pool(c, 1, sharing=time_slicing(10)), "t4mps"),
    "rename": (lambda c: with_pool(c, 0, sharing=time_slicing(2, rename_by_default=False)), "a100mig"),
    "fail-requests": (lambda c: with_pool(c, 0, sharing=time_slicing(2, fail_requests_greater_than_one=False)),
                      "a100mig"),
    "sharing-added": (lambda c: with_pool(c, 2, sharing=time_slicing(2)), "t4"),
}


@pytest.mark.parametrize("change", list(UNCHANGED), ids=[f"same-on-{c}" for c in UNCHANGED])
def test_keys_ignore_what_no_config_shows(change):
    assert _keys(UNCHANGED[change](MIXED_FLEET)) == _keys(MIXED_FLEET)


@pytest.mark.parametrize("change", list(CHANGED), ids=[f"changes-on-{c}" for c in CHANGED])
def test_a_config_change_changes_that_pools_key_only(change):
    """Only the changed pool's nodes get a new label, so only their device plugin and MPS daemon reload."""
    mutate, changed_pool = CHANGED[change]
    before, after = _keys(MIXED_FLEET), _keys(mutate(MIXED_FLEET))
    assert after[changed_pool] != before[changed_pool]
    assert {p: k for p, k in after.items() if p != changed_pool} == {p: k for p, k in before.items()
                                                                       if p != changed_pool}
    assert operator_plan(mutate(MIXED_FLEET)).config_hash != operator_plan(MIXED_FLEET).config_hash


def test_added_or_renamed_pools_leave_the_other_keys_alone():
    before = _keys(MIXED_FLEET)
    added = _keys(dataclasses.replace(MIXED_FLEET, pools=(*MIXED_FLEET.pools, pool("t4b", "Standard_NC4as_T4_v3"))))
    assert {p: k for p, k in added.items() if p != "t4b"} == before and added["t4b"].startswith("t4b-")
    renamed = _keys(with_pool(MIXED_FLEET, 2, name="t4new"))
    assert renamed["t4new"].startswith("t4new-") and renamed["a100mig"] == before["a100mig"]


def test_mig_strategy_changes_every_key_and_the_profile_under_mixed_changes_its_pools():
    """Every config states the strategy (the chart's MIG_STRATEGY env overrides it anyway, restarting all)."""
    single = stack(pool("a100", "Standard_ND96asr_v4", mig=MigProfile.MIG1G, sharing=time_slicing(2)),
                   pool("t4", "Standard_NC4as_T4_v3"))
    mixed = dataclasses.replace(single, operator=dataclasses.replace(single.operator, mig_strategy=MigStrategy.MIXED))
    assert all(_keys(single)[p] != _keys(mixed)[p] for p in ("a100", "t4"))
    assert _keys(with_pool(mixed, 0, mig=MigProfile.MIG2G))["a100"] != _keys(mixed)["a100"]


def test_hash_is_sha256_of_canonical_json():
    data = {"b": "x", "a": "y"}
    assert config_hash(data) == config_hash(dict(reversed(list(data.items()))))
    assert config_hash(data) == hashlib.sha256(b'{"a":"y","b":"x"}').hexdigest()


# --- plan data ------------------------------------------------------------------------------------------------

def test_plan_lists_each_pools_key_and_config_text():
    plan = operator_plan(MIXED_FLEET)
    by_pool = {c.pool: c for c in plan.configs}
    assert list(by_pool) == [None, "a100mig", "t4mps", "t4"]
    assert by_pool["t4mps"].key.startswith("t4mps-") and by_pool[None].key == DEFAULT_CONFIG_KEY
    assert yaml.safe_load(by_pool["t4mps"].text)["sharing"]["mps"]["resources"] == [
        {"name": "nvidia.com/gpu", "replicas": 10}]
    assert plan.config_map_data == {c.key: c.text for c in plan.configs}


@pytest.mark.parametrize(
    ("driver", "expected"),
    [(DriverOwner.AKS, "driver.enabled=false, toolkit.enabled=false, operator.runtimeClass=nvidia-container-runtime"),
     (DriverOwner.OPERATOR, "GPU pools skip AKS's driver (gpuProfile.driver=None)")],
    ids=["aks", "operator"],
)
def test_plan_summary_states_the_decisions(driver, expected):
    config = dataclasses.replace(MIXED_FLEET, operator=dataclasses.replace(MIXED_FLEET.operator, driver=driver))
    plan = operator_plan(config)
    summary = "\n".join(plan.summary)
    assert expected in summary
    assert "gpu-operator v26.7.0 from https://helm.ngc.nvidia.com/nvidia" in summary
    assert "mig.strategy=single" in summary and "migManager.enabled=false" in summary
    assert f"data sha256 {plan.config_hash[:12]}" in summary
    assert "relabels that pool's nodes only" in summary
    assert "nvidia.com/gpu=present:NoSchedule" in summary


@pytest.mark.parametrize(("driver", "layers"), [
    (DriverOwner.AKS, "the tenant policies' device rules are the one layer"),
    (DriverOwner.OPERATOR, "runc is the default runtime, so an image's NVIDIA_VISIBLE_DEVICES is read only under an "
                           "NVIDIA runtime class, which the tenant policies refuse: two layers"),
], ids=["aks", "operator"])
def test_plan_says_which_layers_keep_a_container_to_its_devices(driver, layers):
    """With the operator's toolkit CDI is on, so containerd injects the allocation and the NVIDIA runtime is no
    longer every container's (the chart's cdi.enabled, which gpushare owns); with AKS's, admission is all there is."""
    config = dataclasses.replace(MIXED_FLEET, operator=dataclasses.replace(MIXED_FLEET.operator, driver=driver))
    values = operator_plan(config).values
    assert values["cdi"]["enabled"] is (driver is DriverOwner.OPERATOR)
    assert layers in "\n".join(operator_plan(config).summary)


# --- the user's own values (issue 19) -------------------------------------------------------------------------

def test_user_values_merge_key_by_key_and_replace_lists():
    from gpushare.sharing.operator_values import merge_values
    base = {"daemonsets": {"tolerations": [{"key": "a"}], "priorityClassName": "x"}, "driver": {"enabled": False}}
    merged = merge_values(base, {"daemonsets": {"labels": {"team": "gpu"}}, "validator": {"env": [{"name": "E"}]}})
    assert merged == {"daemonsets": {"tolerations": [{"key": "a"}], "priorityClassName": "x",
                                     "labels": {"team": "gpu"}},
                      "driver": {"enabled": False}, "validator": {"env": [{"name": "E"}]}}
    assert merge_values({"x": {"list": [1, 2]}}, {"x": {"list": [3]}}) == {"x": {"list": [3]}}


@pytest.mark.parametrize("values, path, fragment", [
    ({"devicePlugin": {"enabled": False}}, "devicePlugin.enabled", "devicePlugin.enabled is gpushare's"),
    ({"driver": False}, "driver", "driver.enabled is gpushare's"),  # a scalar over a mapping holding an owned path
    ({"cdi": {"enabled": True}}, "cdi.enabled", "use gpushare:operator.driver"),
    ({"toolkit": {"repositry": "x"}}, "toolkit.repositry", "did you mean 'toolkit.repository'?"),
    ({"validator": {"repository": {"x": 1}}}, "validator.repository.x", "is a string (\"nvcr.io/nvidia\")"),
])
def test_owned_and_unknown_user_value_paths_are_refused(values, path, fragment):
    from gpushare.sharing.operator_values import check_user_values
    findings = check_user_values(values, "v26.7.0")
    assert [p for p, _ in findings.problems] == [path]
    assert fragment in findings.problems[0][1]


def test_free_form_mappings_and_subchart_paths_are_accepted():
    from gpushare.sharing.operator_values import check_user_values
    findings = check_user_values({"daemonsets": {"labels": {"team": "gpu"}},
                                  "dcgmExporter": {"resources": {"limits": {"memory": "1Gi"}}},
                                  "node-feature-discovery": {"worker": {"nodeSelector": {"a": "b"}}}}, "v26.7.0")
    assert findings.problems == ()
    assert findings.warnings == ("operator values node-feature-discovery.worker.nodeSelector.a are passed to the "
                                 "node-feature-discovery subchart unchecked: the GPU Operator's values.yaml lists "
                                 "only part of its values",)


def test_an_unverified_chart_version_turns_unknown_paths_into_warnings():
    from gpushare.sharing.operator_values import check_user_values
    findings = check_user_values({"newComponent": {"enabled": True}}, "v27.1.0")
    assert findings.problems == ()
    assert findings.warnings[0].startswith("newComponent.enabled is not a value of GPU Operator chart v26.7.0")
    assert findings.warnings[0].endswith("chart v27.1.0 itself was not checked")


@pytest.mark.parametrize(("driver", "warned"), [(DriverOwner.AKS, True), (DriverOwner.OPERATOR, False)])
def test_values_for_a_component_the_driver_mode_turns_off_are_named(driver, warned):
    """With AKS's driver the chart renders no driver or toolkit: their values would be silently inert."""
    from gpushare.sharing.operator_values import operator_warnings
    values = {"driver": {"version": "570.86.15"}, "toolkit": {"env": [{"name": "X", "value": "1"}]},
              "dcgmExporter": {"serviceMonitor": {"enabled": False}}}
    config = dataclasses.replace(MIXED_FLEET, operator=dataclasses.replace(MIXED_FLEET.operator, driver=driver,
                                                                           values=values))
    inert = [w for w in operator_warnings(config) if "take no effect" in w]
    if warned:
        assert inert == ["gpushare:operator.values driver.version, toolkit.env take no effect with "
                         "gpushare:operator.driver aks: AKS installs the NVIDIA driver and container toolkit itself, "
                         "so gpushare sets driver.enabled and toolkit.enabled false and the chart renders neither; "
                         "drop them, or set gpushare:operator.driver: operator to have the operator install its own"]
    else:
        assert inert == []
