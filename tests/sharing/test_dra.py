"""The objects a stack's DRA pools need, judged by the code that acts on them: every opaque config gpushare renders is
accepted by NVIDIA's DRA driver v0.5.0's own checks with the feature gates gpushare renders, planted mistakes are
refused with the driver's words, and every DeviceClass selector compiles with the DRA CEL compiler and selects
exactly its kind of device among devices shaped as the driver's ResourceSlices publish them (`tools/dracheck`).
The chart values are checked against the chart's own values.yaml where the driver's module is downloaded."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpushare.model.stack import StackConfig
from gpushare.plan.stack_plan import build_plan
from gpushare.sharing import dra
from gpushare.sharing.pool_facts import derive_pool_facts
from gpushare.stackfile.config import parse_config, parse_stack_file
from gpushare.stackfile.files import read_stack_file
from tests import go_tools

BUILD = Path(__file__).resolve().parents[2] / "tools" / "dracheck" / "build"
DRA_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "dra" / "Pulumi.dra.yaml"
H100_NVL = "Standard_NC40ads_H100_v5"
STACK_YAML = f"""\
azure-native:location: westeurope
gpushare:cluster:
  name: gpushare-dra
gpushare:pools:
  - {{name: h100mps, vmSize: {H100_NVL}, mig: MIG3g, allocation: dra, sharing: {{strategy: mps, replicas: 2}}}}
  - {{name: h100whole, vmSize: {H100_NVL}, allocation: dra}}
  - {{name: t4ts, vmSize: Standard_NC4as_T4_v3, allocation: dra, sharing: {{strategy: time-slicing, replicas: 4}}}}
  - {{name: t4plugin, vmSize: Standard_NC4as_T4_v3, sharing: {{strategy: time-slicing, replicas: 4}}}}
gpushare:tenants:
  - {{name: vision, pools: [h100mps, t4plugin]}}
  - {{name: nlp, pools: [t4ts, t4plugin, h100whole]}}
"""


def load() -> StackConfig:
    raw = yaml.safe_load(STACK_YAML)
    raw["gpushare:operator"] = {"driver": "aks"}
    return parse_config(raw, source="stacks/Pulumi.dra.yaml", stack="dra")


@cache
def dracheck() -> Path:
    return go_tools.built_or_skip(BUILD, "the DRA driver checks", timeout=1800)


def judge(feature_gates: dict[str, bool], configs: list[dict[str, Any]] = (),
          selectors: list[dict[str, Any]] = ()) -> dict[str, Any]:
    request = {"featureGates": feature_gates, "configs": list(configs), "selectors": list(selectors)}
    done = subprocess.run([str(dracheck())], input=json.dumps(request), capture_output=True, text=True, timeout=60,
                          check=True)
    return json.loads(done.stdout)


def config_input(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "deviceType": "mig" if parameters["kind"] == "MigDeviceConfig" else "gpu", "devices": 1,
            "parameters": parameters}


def rendered_configs(stack: StackConfig) -> list[dict[str, Any]]:
    return [config_input(pool.name, dra.opaque_config(pool)) for pool in dra.dra_pools(stack)]


def verdicts(result: dict[str, Any]) -> dict[str, tuple[str, list[str]]]:
    return {r["name"]: (r["error"], r["effects"]) for r in result["configs"]}


def test_every_rendered_opaque_config_is_accepted_by_the_drivers_checks_with_the_rendered_gates():
    stack = load()
    result = judge(dra.feature_gates(stack), rendered_configs(stack))
    assert result["featureGates"] == ""
    assert verdicts(result) == {
        # 3g.47gb: 47 GiB, half each; the kubelet plugin's MPS daemon gets the limit in MB (sharing.go L257).
        "h100mps": ("", ["MPS control daemon, active threads 50%, pinned memory 24064M on mig-device-0"]),
        "h100whole": ("", ["none"]),
        "t4ts": ("", ["time-slice interval Default on the GPU"]),
    }


def test_without_the_rendered_gates_the_driver_refuses_the_sharing():
    errors = {name: error for name, (error, _) in verdicts(judge({}, rendered_configs(load()))).items()}
    assert errors["h100mps"] == 'error validating GPU config: "MPS" is selected as the GPU sharing strategy, but the ' \
                                '"MPSSupport" feature gate is not enabled'
    assert "TimeSlicingSettings" in errors["t4ts"] and errors["h100whole"] == ""


def planted(parameters: dict[str, Any], change) -> dict[str, Any]:
    parameters = copy.deepcopy(parameters)
    change(parameters)
    return parameters


def test_planted_invalid_configs_are_refused_by_the_driver():
    stack = load()
    mig_mps, _, whole_ts = (dra.opaque_config(pool) for pool in dra.dra_pools(stack))
    gates = {"MPSSupport": True, "TimeSlicingSettings": True}
    result = verdicts(judge(gates, [
        config_input("pinned-too-low", planted(
            mig_mps, lambda p: p["sharing"]["mpsConfig"].update(defaultPinnedDeviceMemoryLimit="1Ki"))),
        config_input("threads-over-100", planted(
            mig_mps, lambda p: p["sharing"]["mpsConfig"].update(defaultActiveThreadPercentage=150))),
        config_input("mig-time-slice-interval", planted(
            mig_mps, lambda p: p.update(sharing={"strategy": "TimeSlicing",
                                                 "timeSlicingConfig": {"interval": "Long"}}))),
        config_input("unknown-interval", planted(
            whole_ts, lambda p: p["sharing"]["timeSlicingConfig"].update(interval="Forever"))),
        {**config_input("gpu-config-on-mig", whole_ts), "deviceType": "mig"},
    ]))
    assert "invalid limit: default value set too low" in result["pinned-too-low"][0]
    assert "active thread percentage must not be greater than 100" in result["threads-over-100"][0]
    assert 'strict decoding error: unknown field "sharing.timeSlicingConfig"' in result["mig-time-slice-interval"][0]
    assert "unknown time-slice interval: Forever" in result["unknown-interval"][0]
    assert 'cannot apply GpuConfig to a device of type "mig"' in result["gpu-config-on-mig"][0]


def test_time_slicing_a_mig_device_does_nothing_in_the_driver_which_is_why_gpushare_refuses_it():
    """The stack file refuses time-slicing on a MIG DRA pool (`gpushare.stackfile.dra_pools`): the driver accepts
    the strategy on a MigDeviceConfig and then applies nothing to the device."""
    parameters = {"apiVersion": dra.CONFIG_API_VERSION, "kind": "MigDeviceConfig",
                  "sharing": {"strategy": "TimeSlicing"}}
    result = verdicts(judge({"TimeSlicingSettings": True}, [config_input("mig-ts", parameters)]))
    assert result == {"mig-ts": ("", ["none"])}


def test_mps_with_dynamic_mig_is_refused_by_the_drivers_gate_rules():
    assert judge({"MPSSupport": True, "DynamicMIG": True})["featureGates"] == (
        "feature gate DynamicMIG is currently mutually exclusive with MPSSupport")


def mig(name: str, profile: str, capability: str) -> dict[str, Any]:
    """A MIG device as a ResourceSlice of the driver lists it (mig.go L139-168 `CommonAttributesMig`)."""
    return {"name": name, "attributes": {"type": {"string": "mig"}, "profile": {"string": profile},
                                         "cudaComputeCapability": {"version": capability},
                                         "productName": {"string": "NVIDIA H100 NVL"}},
            "capacity": {"memory": {"value": "47Gi"}}}


def gpu(name: str, capability: str, memory: str) -> dict[str, Any]:
    """A whole GPU as the driver lists it (deviceinfo.go L168-192, partitions.go L34-43); memory is NVML's total."""
    return {"name": name, "attributes": {"type": {"string": "gpu"}, "cudaComputeCapability": {"version": capability}},
            "capacity": {"memory": {"value": memory}}}


DEVICES = [
    mig("h100nvl-mig-3g.47gb", "3g.47gb", "9.0.0"), mig("h100nvl-mig-1g.12gb", "1g.12gb", "9.0.0"),
    mig("a100-mig-3g.47gb", "3g.47gb", "8.0.0"),
    gpu("h100nvl", "9.0.0", "95830Mi"), gpu("h100-80gb", "9.0.0", "81559Mi"), gpu("h200", "9.0.0", "143771Mi"),
    gpu("t4", "7.5.0", "15360Mi"), gpu("a10", "8.6.0", "23028Mi"),
]


def test_every_device_class_selector_compiles_and_selects_exactly_its_kind_of_device():
    classes = dra.device_classes(load())
    selectors = [{"name": c["metadata"]["name"], "expression": c["spec"]["selectors"][0]["cel"]["expression"],
                  "devices": DEVICES} for c in classes]
    result = {r["name"]: (r["error"], r["matches"]) for r in judge({}, selectors=selectors)["selectors"]}
    assert result == {
        "gpushare-h100-nvl-94gb-mig-3g.47gb": ("", ["h100nvl-mig-3g.47gb"]),
        "gpushare-h100-nvl-94gb": ("", ["h100nvl"]),
        "gpushare-t4-16gb": ("", ["t4"]),
    }


def test_a_selector_naming_what_the_driver_does_not_publish_as_its_type_is_refused_by_the_compiler():
    bad = {"name": "typo", "expression": "device.attributes['gpu.nvidia.com'].profile = '3g.47gb'", "devices": []}
    (result,) = judge({}, selectors=[bad])["selectors"]
    assert result["error"].startswith("compilation failed")


def test_claim_templates_give_each_tenant_its_dra_pools_with_their_class_and_config():
    stack = load()
    templates = {(t["metadata"]["namespace"], t["metadata"]["name"]): t for t in dra.claim_templates(stack)}
    assert list(templates) == [("vision", "h100mps"), ("nlp", "t4ts"), ("nlp", "h100whole")]
    devices = templates[("vision", "h100mps")]["spec"]["spec"]["devices"]
    assert devices["requests"] == [{"name": "gpu", "exactly": {"deviceClassName": "gpushare-h100-nvl-94gb-mig-3g.47gb",
                                                               "count": 1}}]
    assert devices["config"][0]["requests"] == ["gpu"]
    assert devices["config"][0]["opaque"]["driver"] == "gpu.nvidia.com"
    assert devices["config"][0]["opaque"]["parameters"]["sharing"]["strategy"] == "MPS"


def test_only_dra_pools_get_the_label_that_keeps_the_operators_device_plugin_off_and_no_config_key():
    deploy, config = "nvidia.com/gpu.deploy.device-plugin", "nvidia.com/device-plugin.config"
    facts = derive_pool_facts(load())
    assert {name: (pool.node_labels.get(deploy), config in pool.node_labels, pool.config_key is None)
            for name, pool in facts.items()} == {
        "h100mps": ("false", False, True), "h100whole": ("false", False, True), "t4ts": ("false", False, True),
        "t4plugin": (None, True, False),
    }


def test_the_chart_finds_aks_driver_on_the_host():
    # The operator's driver container (root /run/nvidia/driver) is refused with DRA pools by the stack file
    # (tests/stackfile/test_config_dra.py).
    assert dra.chart_values(load())["nvidiaDriverRoot"] == "/"


def test_the_kubelet_plugin_runs_on_the_dra_pools_only_tolerating_their_taints():
    values = dra.chart_values(load())
    terms = values["kubeletPlugin"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [{"matchExpressions": [
        {"key": "gpushare.io/pool", "operator": "In", "values": ["h100mps", "h100whole", "t4ts"]}]}]
    assert values["kubeletPlugin"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        # h100mps is vision's alone, t4ts and h100whole nlp's: dedicated pools carry their tenant's taint.
        {"key": "gpushare.io/tenant", "operator": "Equal", "value": "vision", "effect": "NoSchedule"},
        {"key": "gpushare.io/tenant", "operator": "Equal", "value": "nlp", "effect": "NoSchedule"},
    ]
    assert values["featureGates"] == {"MPSSupport": True, "TimeSlicingSettings": True}
    assert values["gpuResourcesEnabledOverride"] is True


def chart_defaults() -> dict[str, Any]:
    """The chart's values.yaml from the driver's module in Go's module cache (downloaded by `tools/dracheck`)."""
    dracheck()
    go = shutil.which("go") or "/usr/local/go/bin/go"
    cache_dir = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    values = (Path(cache_dir) / f"sigs.k8s.io/dra-driver-nvidia-gpu@v{dra.CHART_VERSION}" / "deployments" / "helm" /
              dra.CHART_NAME / "values.yaml")
    if not values.is_file():
        pytest.skip(f"{values} is not in Go's module cache")
    return yaml.safe_load(values.read_text())


def leaf_paths(values: dict[str, Any], prefix: str = "") -> set[str]:
    paths = set()
    for key, value in values.items():
        path = f"{prefix}{key}"
        paths |= leaf_paths(value, f"{path}.") if isinstance(value, dict) and value else {path}
    return paths


def test_every_chart_value_gpushare_sets_is_a_value_of_the_charts_values_yaml():
    defaults = leaf_paths(chart_defaults())
    # The chart passes the affinity and the feature gates through as written: their own keys are free.
    free = ("kubeletPlugin.affinity", "featureGates")
    rendered = {next((f for f in free if p.startswith(f"{f}.")), p) for p in leaf_paths(dra.chart_values(load()))}
    assert rendered - defaults - set(free) == set()
    assert "featureGates" in defaults
    assert "kubeletPlugin.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms" \
        in defaults


@pytest.mark.parametrize("stack", [load(), parse_stack_file(read_stack_file(DRA_FIXTURE))], ids=["mixed", "fixture"])
def test_every_opaque_config_the_plan_deploys_is_accepted_with_the_gates_the_release_sets(stack):
    plan = build_plan(stack).dra
    deployed = [config_input(f"{template['metadata']['namespace']}/{template['metadata']['name']}",
                             template["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"])
                for templates in plan.claim_templates.values() for template in templates]
    deployed += [config_input(name, pool.config) for name, pool in plan.pools.items()]
    result = judge(plan.release.values["featureGates"], deployed)
    assert {name: error for name, (error, _) in verdicts(result).items() if error} == {}
    assert len(verdicts(result)) == len(deployed)
