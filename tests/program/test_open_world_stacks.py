"""What gpushare does not know is no longer a wall (issue 19): a size outside the catalog, the operator's own values
from a private registry, the pool's own labels, taints, OS disk, max pods and tags, and Spot pools, through
`plan --json` (the real program (`gpushare.components.program.program`, what `__main__.py` runs) under the mock engine) and the CLI's refusals."""

from __future__ import annotations

import contextlib
import copy
import io
import json

import pytest

from gpushare.cli import main
from gpushare.review.plan_compare import EMPTY, operator_transition, parse_plan
from tests.stack_files import plan, write_stack

AGENT_POOL = "azure-native:containerservice:AgentPool"
RELEASE = "kubernetes:helm.sh/v3:Release"

OPEN_WORLD = """\
config:
  azure-native:location: westeurope
  gpushare:cluster:
    name: gpushare-open
  gpushare:operator:
    repository: oci://mirror.example.azurecr.io/helm
    values:
      operator: {repository: mirror.example.azurecr.io/nvidia, imagePullSecrets: [mirror-pull]}
      dcgmExporter: {serviceMonitor: {enabled: false}}
  gpushare:pools:
    - name: l4
      vmSize: Standard_NC16ads_L4_v9
      gpu: {model: L4, count: 1, memoryGb: 24}
      sharing: {strategy: time-slicing, replicas: 2}
    - name: a10ts
      vmSize: Standard_NV36ads_A10_v5
      sharing: {strategy: time-slicing, replicas: 4}
      labels: {example.com/team: vision}
      taints: ["example.com/dedicated=vision:NoSchedule"]
      osDisk: {sizeGb: 128, type: Ephemeral}
      maxPods: 60
      tags: {costCenter: "1234"}
    - name: t4spot
      vmSize: Standard_NC4as_T4_v3
      spot: {maxPrice: 0.25}
      autoscale: {min: 0, max: 4}
  gpushare:tenants:
    - name: vision
      pools: [a10ts, t4spot]
"""


def plan_open(tmp_path, capsys, text: str, *extra: str) -> tuple[int, str, str]:
    return plan(capsys, write_stack(tmp_path, text, "Pulumi.open.yaml"), *extra)


@pytest.fixture(scope="module")
def document(tmp_path_factory):
    path = tmp_path_factory.mktemp("open") / "Pulumi.open.yaml"
    path.write_text(OPEN_WORLD)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", str(path), "--json"]) == 0
    return json.loads(out.getvalue())


def agent_pool(document, name):
    return next(r["inputs"] for r in document["resources"]
                if r["type"] == AGENT_POOL and r["inputs"]["agentPoolName"] == name)


def release(document):
    return next(r["inputs"] for r in document["resources"] if r["type"] == RELEASE)


def test_an_uncatalogued_size_is_planned_from_its_gpu_block_and_marked(document):
    row = next(p for p in document["pools"] if p["name"] == "l4")
    assert (row["describedBy"], row["gpu"], row["gpusPerNode"], row["resource"], row["perNode"]) == (
        "stack", "NVIDIA L4 24GB", 1, "nvidia.com/gpu", 2)
    assert agent_pool(document, "l4")["vmSize"] == "Standard_NC16ads_L4_v9"
    assert any("Standard_NC16ads_L4_v9 is described by the stack, not the catalog" in w
               for w in document["warnings"])


def test_compare_shows_an_uncatalogued_pools_resource_and_counts_from_the_plans_own_figures(document, tmp_path,
                                                                                           capsys):
    """compare cannot look the size up in the catalog: it reads what the plans computed (pools[].resource, perNode)."""
    head = copy.deepcopy(document)
    next(r for r in head["resources"] if r["type"] == AGENT_POOL and r["inputs"]["agentPoolName"] == "l4")[
        "inputs"]["count"] = 3
    (tmp_path / "base.json").write_text(json.dumps(document))
    (tmp_path / "head.json").write_text(json.dumps(head))
    assert main(["compare", str(tmp_path / "base.json"), str(tmp_path / "head.json")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| **l4**"))
    assert row == "| **l4** | update | `count: 1 -> 3` | nvidia.com/gpu | 2 | 1 -> 3 | 2 -> 6 |"


def test_a10_time_slicing_pool_from_the_catalog(document):
    row = next(p for p in document["pools"] if p["name"] == "a10ts")
    assert (row["describedBy"], row["gpu"], row["resource"], row["perNode"]) == (
        "catalog", "NVIDIA A10 24GB", "nvidia.com/gpu", 4)


def test_operator_values_are_merged_and_the_chart_comes_from_the_private_registry(document):
    inputs = release(document)
    assert inputs["chart"] == "oci://mirror.example.azurecr.io/helm/gpu-operator"
    assert "repositoryOpts" not in inputs
    values = inputs["values"]
    assert values["operator"] == {"runtimeClass": "nvidia-container-runtime",
                                  "repository": "mirror.example.azurecr.io/nvidia",
                                  "imagePullSecrets": ["mirror-pull"]}
    assert values["dcgmExporter"] == {"serviceMonitor": {"enabled": False}}
    changed = {c["path"]: c for c in document["operator"]["changedValues"]}
    assert changed["operator.repository"] == {"path": "operator.repository",
                                              "value": "mirror.example.azurecr.io/nvidia",
                                              "default": "nvcr.io/nvidia", "inChart": True, "setBy": "stack"}
    assert changed["driver.enabled"]["setBy"] == "gpushare"
    assert "mig.strategy" not in changed  # single is the chart's default too


def test_user_labels_taints_disk_pods_and_tags_reach_the_agent_pool(document):
    inputs = agent_pool(document, "a10ts")
    assert inputs["nodeLabels"]["example.com/team"] == "vision"
    assert inputs["nodeTaints"] == ["nvidia.com/gpu=present:NoSchedule", "example.com/dedicated=vision:NoSchedule",
                                    "gpushare.io/tenant=vision:NoSchedule"]
    assert (inputs["osDiskType"], inputs["osDiskSizeGB"], inputs["maxPods"]) == ("Ephemeral", 128, 60)
    # Beside the user's tag, gpushare's node-template tags for the cluster autoscaler (issue 16).
    assert inputs["tags"]["costCenter"] == "1234"
    assert {name for name in inputs["tags"] if name != "costCenter"} == {
        name for name in inputs["tags"] if name.startswith("k8s.io_cluster-autoscaler_node-template_resources_")}


def test_every_gpu_node_taint_is_tolerated_by_the_operator_nfd_and_the_tenant_pod(document):
    values = release(document)["values"]
    # The GPU taint as ExtendedResourceToleration writes it (any value), the others by their value.
    expected = {("example.com/dedicated", "Equal", "vision"), ("gpushare.io/tenant", "Equal", "vision"),
                ("kubernetes.azure.com/scalesetpriority", "Equal", "spot"), ("nvidia.com/gpu", "Exists", None)}
    for tolerations in (values["daemonsets"]["tolerations"],
                        values["node-feature-discovery"]["worker"]["tolerations"],
                        document["tenants"][0]["podSpec"]["tolerations"]):
        assert {(t["key"], t["operator"], t.get("value")) for t in tolerations} == expected


def test_a_spot_t4_pool_is_spot_in_azure_and_warned_about(document):
    inputs = agent_pool(document, "t4spot")
    assert (inputs["scaleSetPriority"], inputs["scaleSetEvictionPolicy"], inputs["spotMaxPrice"]) == (
        "Spot", "Delete", 0.25)
    assert (inputs["enableAutoScaling"], inputs["minCount"], inputs["maxCount"]) == (True, 0, 4)
    # gpushare sends the taint AKS adds to Spot pools' nodeTaints itself, last, so a refresh that reads it back shows
    # no diff; and AKS's label, which a label update without it removed from the nodes (Azure/AKS#3152).
    assert inputs["nodeTaints"][-1] == "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"
    assert not any("scalesetpriority" in taint for taint in agent_pool(document, "l4")["nodeTaints"])
    assert inputs["nodeLabels"]["kubernetes.azure.com/scalesetpriority"] == "spot"
    assert "kubernetes.azure.com/scalesetpriority" not in agent_pool(document, "l4")["nodeLabels"]
    assert any(w.startswith("pool t4spot: Spot nodes can be evicted at any time, with 30 seconds' notice")
               for w in document["warnings"])
    assert next(p for p in document["pools"] if p["name"] == "t4spot")["spot"] == {"maxPrice": 0.25,
                                                                                  "eviction": "Delete"}


def test_a_spot_pool_upgrades_as_aks_upgrades_spot_pools(document):
    """AKS refuses maxSurge and maxUnavailable on a Spot pool: none is sent, and the plan says how AKS upgrades it
    (aks-docs spot-node-pool.md, "Upgrade a Spot node pool")."""
    assert "upgradeSettings" not in agent_pool(document, "t4spot")
    assert agent_pool(document, "l4")["upgradeSettings"] == {"maxSurge": "0", "maxUnavailable": "1"}
    upgrade = next(p for p in document["pools"] if p["name"] == "t4spot")["upgrade"]
    assert (upgrade["maxSurge"], upgrade["maxUnavailable"]) == (None, None)
    assert upgrade["summary"].startswith("upgrade: AKS's Spot pool upgrade, no extra VM: each node is cordoned and "
                                         "gets an eviction notice, not drained")


def test_pools_without_the_new_settings_send_none_of_them(document):
    inputs = agent_pool(document, "l4")
    assert not {"osDiskType", "osDiskSizeGB", "maxPods", "scaleSetPriority", "spotMaxPrice"} & set(inputs)
    assert all(name.startswith("k8s.io_cluster-autoscaler_node-template_resources_") for name in inputs["tags"]), \
        "only gpushare's autoscaler tags"


def test_an_unverified_chart_version_is_a_warning_naming_what_was_verified(tmp_path, capsys):
    text = OPEN_WORLD.replace("  gpushare:operator:\n", "  gpushare:operator:\n    chartVersion: v26.10.1\n")
    code, out, _ = plan_open(tmp_path, capsys, text, "--json")
    assert code == 0
    document = json.loads(out)
    assert release(document)["version"] == "v26.10.1"
    assert any("chartVersion v26.10.1 is not one gpushare has verified (verified: v26.7.0)" in w
               for w in document["warnings"])


POOL = "gpushare:pools[0]"
BAD = [
    ("gpu_block_contradicting_the_catalog",
     "      vmSize: Standard_NC4as_T4_v3\n      gpu: {model: A100, count: 1}\n",
     (f"{POOL}.gpu: contradicts gpushare's catalog for Standard_NC4as_T4_v3 (model 'A100')",
      "remove `gpu:`")),
    ("unmappable_model", "      vmSize: Standard_NC16ads_Q9_v9\n      gpu: {model: Q9000, count: 1, memoryGb: 24}\n",
     (f"{POOL}.gpu.model: gpushare cannot map 'Q9000' to an NVIDIA GPU product; allowed: T4, V100, A10",)),
    ("memory_not_a_positive_integer",
     "      vmSize: Standard_NC16ads_L4_v9\n      gpu: {model: L4, count: 1, memoryGb: 23.5}\n",
     (f"{POOL}.gpu.memoryGb: expected a whole number 1 or more, got a number 23.5",)),
    ("uncatalogued_size_without_gpu_block", "      vmSize: Standard_NC16ads_L4_v9\n",
     ("is not a GPU size gpushare knows", "gpu: {model: A10, count: 1, memoryGb: 24}")),
    ("mig_without_a_slice_table",
     "      vmSize: Standard_ND96isr_B200_v6\n      gpu: {model: B200, count: 8, memoryGb: 180}\n      mig: MIG1g\n",
     (f"{POOL}.mig: B200 is MIG-capable, but gpushare has no MIG slice table for a 180 GB B200",)),
    ("fractional_a10", "      vmSize: Standard_NV12ads_A10_v5\n      gpu: {model: A10, count: 1}\n",
     (f"{POOL}.vmSize: 'Standard_NV12ads_A10_v5' cannot be a gpushare GPU pool",
      "fraction of one A10 through NVIDIA vGPU", "ConvergedGPUDriverSizes", "use Standard_NV36ads_A10_v5")),
    ("label_with_a_gpushare_key", "      vmSize: Standard_NC4as_T4_v3\n      labels: {gpushare.io/pool: x}\n",
     (f"{POOL}.labels.gpushare.io/pool: 'gpushare.io/pool' is not yours to set",)),
    ("label_with_an_aks_key",
     "      vmSize: Standard_NC4as_T4_v3\n      labels: {kubernetes.azure.com/mode: x}\n",
     ("AKS reserves the kubernetes.azure.com prefix",)),
    ("label_bad_syntax", "      vmSize: Standard_NC4as_T4_v3\n      labels: {team: \"a b\"}\n",
     (f"{POOL}.labels.team: label value must be at most 63 letters", "got 'a b'")),
    ("taint_bad_syntax", "      vmSize: Standard_NC4as_T4_v3\n      taints: [dedicated=vision]\n",
     (f"{POOL}.taints[0]: expected a taint `key=value:Effect`", "NoSchedule, PreferNoSchedule, NoExecute")),
    ("taint_with_the_gpu_key", "      vmSize: Standard_NC4as_T4_v3\n      taints: [\"nvidia.com/gpu:NoExecute\"]\n",
     (f"{POOL}.taints[0]: taint key 'nvidia.com/gpu' is not yours to set",)),
    ("max_pods_out_of_bounds", "      vmSize: Standard_NC4as_T4_v3\n      maxPods: 5\n",
     (f"{POOL}.maxPods: must be from 10 to 250 (AKS's bounds with Azure CNI), got 5",)),
    ("spot_price_zero", "      vmSize: Standard_NC4as_T4_v3\n      spot: {maxPrice: 0}\n",
     (f"{POOL}.spot.maxPrice: must be -1 (up to the on-demand price) or above 0", "got 0")),
    ("spot_price_below_minus_one", "      vmSize: Standard_NC4as_T4_v3\n      spot: {maxPrice: -2}\n",
     (f"{POOL}.spot.maxPrice: must be -1", "got -2")),
    ("spot_price_six_decimals", "      vmSize: Standard_NC4as_T4_v3\n      spot: {maxPrice: 0.123456}\n",
     (f"{POOL}.spot.maxPrice: must have at most 5 decimal places (AKS's `spotMaxPrice` rule), got 0.123456; "
      "e.g. 0.12346",)),
    ("spot_with_upgrade_settings", "      vmSize: Standard_NC4as_T4_v3\n      spot: {}\n      upgrade: {maxSurge: 1}\n",
     (f"{POOL}.upgrade: a Spot pool takes no upgrade settings: AKS takes no maxSurge or maxUnavailable on a Spot "
      "pool (it refuses them", "remove `upgrade:` from this pool")),
    ("spot_errors_reported_together",
     "      vmSize: Standard_NC4as_T4_v3\n      spot: {maxPrice: 0, eviction: Deallocate}\n      upgrade: {maxSurge: 1}\n"
     "      osDisk: {type: Ephemeral}\n",
     (f"{POOL}.spot.maxPrice: must be -1", f"{POOL}.upgrade: a Spot pool takes no upgrade settings",
      f"{POOL}.spot.eviction: Deallocate keeps an evicted node's OS disk")),
    ("spot_deallocate_with_ephemeral_os_disk",
     "      vmSize: Standard_NC4as_T4_v3\n      spot: {eviction: Deallocate}\n      osDisk: {type: Ephemeral}\n",
     (f"{POOL}.spot.eviction: Deallocate keeps an evicted node's OS disk, and an ephemeral OS disk cannot be "
      "stop-deallocated", "use eviction: Delete, or osDisk.type: Managed")),
    ("aks_reserved_label", "      vmSize: Standard_NC4as_T4_v3\n      labels: {node.kubernetes.io/instance-type: t4}\n",
     (f"{POOL}.labels.node.kubernetes.io/instance-type: 'node.kubernetes.io/instance-type' is a label AKS sets",)),
    ("tag_of_gpushare", "      vmSize: Standard_NC4as_T4_v3\n      tags: "
                        "{k8s.io_cluster-autoscaler_node-template_resources_nvidia.com_gpu: \"4\"}\n",
     ("tags starting with k8s.io_cluster-autoscaler_node-template_resources_ are gpushare's",)),
    # Azure tag names are case-insensitive: another spelling still overwrites gpushare's tag.
    ("tag_of_gpushare_in_another_case", "      vmSize: Standard_NC4as_T4_v3\n      tags: "
                                        "{K8s.io_Cluster-Autoscaler_Node-Template_Resources_nvidia.com_gpu: \"4\"}\n",
     (f"{POOL}.tags.K8s.io_Cluster-Autoscaler_Node-Template_Resources_nvidia.com_gpu: tags starting with",
      "are gpushare's")),
    # The kubelet's --node-labels check: a node with such a label does not join.
    ("label_under_k8s_io", "      vmSize: Standard_NC4as_T4_v3\n      labels: {k8s.io/team: vision}\n",
     (f"{POOL}.labels.k8s.io/team: 'k8s.io/team': the kubelet refuses node labels under kubernetes.io and k8s.io",)),
    ("label_under_a_kubernetes_io_subdomain",
     "      vmSize: Standard_NC4as_T4_v3\n      labels: {team.kubernetes.io/name: vision}\n",
     (f"{POOL}.labels.team.kubernetes.io/name: 'team.kubernetes.io/name': the kubelet refuses node labels",)),
    ("taint_listed_twice",
     "      vmSize: Standard_NC4as_T4_v3\n      taints: [\"dedicated=a:NoSchedule\", \"dedicated=b:NoSchedule\"]\n",
     (f"{POOL}.taints[1]: a taint with key 'dedicated' and effect NoSchedule is already listed at {POOL}.taints[0]; "
      "a node holds one per key and effect",)),
]


@pytest.mark.parametrize("pool, fragments", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_pool_settings_are_refused_with_key_value_and_fix(tmp_path, capsys, pool, fragments):
    text = ("config:\n  azure-native:location: westeurope\n  gpushare:cluster: {name: c1}\n  gpushare:pools:\n"
            "    - name: p\n" + pool)
    code, out, err = plan_open(tmp_path, capsys, text)
    assert (code, out) == (2, "")
    for fragment in fragments:
        assert fragment in err, err
    assert "Traceback" not in err


BAD_VALUES = [
    ("owned_path", "{mig: {strategy: mixed}}",
     ("gpushare:operator.values.mig.strategy: mig.strategy is gpushare's", "use gpushare:operator.migStrategy")),
    ("owned_tolerations", "{daemonsets: {tolerations: []}}",
     ("gpushare:operator.values.daemonsets.tolerations: daemonsets.tolerations is gpushare's",
      "each pool's `taints`")),
    ("owned_nfd_worker_tolerations", "{node-feature-discovery: {worker: {tolerations: []}}}",
     ("gpushare:operator.values.node-feature-discovery.worker.tolerations: node-feature-discovery.worker.tolerations "
      "is gpushare's", "each pool's `taints`")),
    ("unknown_path", "{dcgmExportr: {enabled: false}}",
     ("gpushare:operator.values.dcgmExportr.enabled: is not a value of GPU Operator chart v26.7.0",
      "did you mean 'dcgmExporter.enabled'?")),
]


@pytest.mark.parametrize("values, fragments", [b[1:] for b in BAD_VALUES], ids=[b[0] for b in BAD_VALUES])
def test_bad_operator_values_are_refused(tmp_path, capsys, values, fragments):
    text = ("config:\n  azure-native:location: westeurope\n  gpushare:cluster: {name: c1}\n"
            f"  gpushare:operator:\n    values: {values}\n"
            "  gpushare:pools:\n    - {name: t4, vmSize: Standard_NC4as_T4_v3}\n")
    code, out, err = plan_open(tmp_path, capsys, text)
    assert (code, out) == (2, "")
    for fragment in fragments:
        assert fragment in err, err


def test_spot_on_the_system_pool_is_refused(tmp_path, capsys):
    text = ("config:\n  azure-native:location: westeurope\n"
            "  gpushare:cluster: {name: c1, systemPool: {spot: {maxPrice: -1}}}\n"
            "  gpushare:pools:\n    - {name: t4, vmSize: Standard_NC4as_T4_v3}\n")
    code, _, err = plan_open(tmp_path, capsys, text)
    assert code == 2
    assert "gpushare:cluster.systemPool.spot: AKS does not allow Spot for system pools" in err, err


def test_compare_finds_the_operator_release_pulled_from_an_oci_registry(document):
    head = parse_plan(json.dumps(document), "head.json")
    transition = operator_transition(EMPTY, head)
    assert transition is not None and transition.op == "create"
    assert transition.after["chart"] == "oci://mirror.example.azurecr.io/helm/gpu-operator"
