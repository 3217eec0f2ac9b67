"""A stack with a DRA pool (MPS inside 3g MIG devices) beside a device-plugin T4 pool (tests/fixtures/dra/
Pulumi.dra.yaml), planned and run under the mock engine: the DRA pool leaves the device plugin (no ConfigMap key, the
label that keeps the operator's device plugin off, no extended resource for the autoscaler), and the program
registers the DRA driver's release, gpushare's DeviceClass and the tenant's claim template, as `plan` shows them."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from gpushare.cli import main
from gpushare.render.mock_engine import Recording, run_program
from gpushare.stackfile.config import encode_engine_config, read_stack_file

STACK = Path(__file__).resolve().parents[1] / "fixtures" / "dra" / "Pulumi.dra.yaml"
MIG_CLASS = "gpushare-h100-nvl-94gb-mig-3g.47gb"
DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"
RESOURCE_TAG = "k8s.io_cluster-autoscaler_node-template_resources_"


@cache
def recording() -> Recording:
    return run_program("dra", encode_engine_config(read_stack_file(STACK).config), stack_file=STACK)


def plan_json(capsys) -> dict:
    assert main(["plan", str(STACK), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def agent_pool(name: str) -> dict:
    return recording().get("azure-native:containerservice:AgentPool", f"{name}-agentpool").inputs


def test_the_configmap_holds_only_the_device_plugin_pools_configs():
    data = recording().get("kubernetes:core/v1:ConfigMap", "gpu-operator-configmap").inputs["data"]
    assert sorted(key.rpartition("-")[0] for key in data) == ["default-whole", "t4ts"]


def test_the_dra_pools_nodes_keep_the_device_plugin_off_and_name_no_config():
    dra, plugin = agent_pool("h100mps")["nodeLabels"], agent_pool("t4ts")["nodeLabels"]
    assert dra[DEPLOY_LABEL] == "false" and "nvidia.com/device-plugin.config" not in dra
    assert "gpushare.io/mig-strategy" not in dra
    assert DEPLOY_LABEL not in plugin and plugin["nvidia.com/device-plugin.config"].startswith("t4ts-")


def test_the_autoscaler_is_told_of_no_extended_resource_on_the_dra_pool():
    resources = {name.removeprefix(RESOURCE_TAG): value for name, value in agent_pool("h100mps")["tags"].items()
                 if name.startswith(RESOURCE_TAG)}
    assert resources == {"nvidia.com_gpu": "0"}


def test_the_program_registers_the_dra_driver_its_class_and_the_tenants_template():
    found = recording()
    release = found.get("kubernetes:helm.sh/v3:Release", "dra-driver-release")
    assert (release.inputs["chart"], release.inputs["version"], release.inputs["namespace"]) == (
        "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu", "0.5.0", "dra-driver-nvidia-gpu")
    values = release.inputs["values"]
    assert values["featureGates"] == {"MPSSupport": True} and values["nvidiaDriverRoot"] == "/"
    terms = values["kubeletPlugin"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["h100mps"]
    (device_class,) = found.by_type("kubernetes:resource.k8s.io/v1:DeviceClass")
    assert device_class.inputs["metadata"]["name"] == MIG_CLASS
    (template,) = found.by_type("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate")
    assert template.inputs["metadata"]["namespace"] == "vision" and template.inputs["metadata"]["name"] == "h100mps"
    assert "tenant-vision-namespace" in template.depends_on
    request = template.inputs["spec"]["spec"]["devices"]["requests"][0]
    assert request["exactly"]["deviceClassName"] == MIG_CLASS


def test_plan_shows_the_dra_pools_devices_classes_sharing_and_who_may_claim_them(capsys):
    document = plan_json(capsys)
    (pool,) = document["dra"]["pools"]
    assert pool["devices"] == {"kind": "mig", "migProfile": "3g.47gb", "parentGpu": "NVIDIA H100 NVL 94GB",
                               "perNode": 2}
    assert pool["deviceClass"] == MIG_CLASS and pool["claimTemplates"] == {"vision": "h100mps"}
    assert pool["sharing"]["kind"] == "MigDeviceConfig" and pool["sharing"]["sharing"]["strategy"] == "MPS"
    assert [c["name"] for c in document["dra"]["deviceClasses"]] == [MIG_CLASS]
    rows = {row["name"]: row for row in document["pools"]}
    assert rows["h100mps"]["allocation"] == "dra" and "allocation" not in rows["t4ts"]
    # A claim takes a whole device: sharing does not multiply what the pool holds.
    assert (rows["h100mps"]["resource"], rows["h100mps"]["perNode"]) == (
        f"{MIG_CLASS}.deviceclass.resource.k8s.io/devices", 2)
    assert [config["pool"] for config in document["devicePluginConfigs"]] == [None, "t4ts"]
    registered = {r["name"] for r in document["resources"]}
    assert {"dra-driver-release", f"dra-driver-class-{MIG_CLASS}", "dra-driver-template-vision-h100mps"} <= registered


def test_plans_text_view_lists_the_dra_pool(capsys):
    assert main(["plan", str(STACK)]) == 0
    text = capsys.readouterr().out
    assert ("  h100mps: 2 x MIG 3g.47gb device per node (parent GPU NVIDIA H100 NVL 94GB), DeviceClass "
            f"{MIG_CLASS}") in text
    assert "    may claim it: vision -> ResourceClaimTemplate vision/h100mps" in text


def test_plans_pod_snippet_on_a_dra_pool_names_the_claim_template_not_a_resource_limit(capsys):
    """vision's first pool is the DRA pool: its snippet claims a device through its template (the pod's claim, each
    container's claim, the pool's node selector) and asks for no extended resource; its second pool, the
    device-plugin t4ts, has a snippet of its own that asks for nvidia.com/gpu and claims nothing."""
    assert main(["plan", str(STACK)]) == 0
    text = capsys.readouterr().out
    dra_header = ("    pod snippet on pool h100mps (claims a device through ResourceClaimTemplate vision/h100mps, "
                  "admitted in this namespace):")
    plugin_header = "    pod snippet on pool t4ts (asks for 1 nvidia.com/gpu, admitted in this namespace):"
    snippet = text[text.index(dra_header):text.index(plugin_header)]
    assert "gpushare.io/pool: h100mps" in snippet
    assert "resourceClaims:\n        - name: gpu\n          resourceClaimTemplateName: h100mps" in snippet
    assert "            claims:\n            - name: gpu" in snippet
    assert "nvidia.com/gpu: 1" not in snippet and MIG_CLASS not in snippet.split("limits:")[1].split("requests:")[0]
    t4 = text[text.index(plugin_header):text.index("  nlp: namespace nlp")]
    assert "gpushare.io/pool: t4ts" in t4 and "nvidia.com/gpu: 1" in t4 and "resourceClaims" not in t4
    # nlp has t4ts only: one snippet.
    nlp = text[text.index("  nlp: namespace nlp"):]
    assert nlp.count("    pod snippet on pool ") == 1


