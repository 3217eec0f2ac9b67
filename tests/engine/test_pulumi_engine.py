"""gpushare's Kubernetes half through the real Pulumi engine: the CLI and pulumi-resource-kubernetes built from
source (tools/pulumi/build), a local file backend with a passphrase secrets provider, against a real Kubernetes
1.36 API server (tests/controlplane/controlplane.py). The program (tests/engine/program.py) composes
`gpushare.components` as a library user does.

One stack lives through the whole module (`history`, run once): `up` of the first config with the provider's
defaults; a second config that changes pool t4ts's sharing (a new content-addressed device-plugin key), removes
tenant nlp and adds tenant speech: previewed with the provider's defaults, then with `enableConfigMapMutable` as
`ClusterAccess` sets it (`pulumi preview --json`, read by `gpushare report`), then its `up`; the nodes relabelled to the new key, and
`up` again; `destroy --exclude-protected` with the GPU Operator protected, a plain `destroy` that protect stops,
and the last `destroy` once unprotected. The GPU Operator's chart is a stand-in served from loopback
(tests/engine/chart_repo.py): NVIDIA's cannot be fetched offline.
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi import automation as auto

from gpushare.cli import main
from gpushare.model.stack import DEVICE_PLUGIN_CONFIG_LABEL
from gpushare.sharing.operator_values import CONFIG_MAP_NAME, NAMESPACE
from gpushare.stackfile.config import parse_config
from tests.controlplane.controlplane import (
    ADMIN,
    ApiError,
    ControlPlane,
    ensure_namespace,
    refused_by_a_policy,
    register_nodes,
)
from tests.engine import program as engine_program
from tests.engine.chart_repo import VALUES_CONFIG_MAP
from tests.engine.engine import Engine, Run, inline_kubeconfig, recorded

STACK = "engine"
TENANT_GROUP = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"


def config(repository: str, replicas: int = 4, tenants: tuple[str, ...] = ("vision", "nlp")) -> dict[str, Any]:
    pools = {"vision": ["t4ts"], "nlp": ["a100"], "speech": ["a100"]}
    return {
        "azure-native:location": "westeurope",
        "gpushare:cluster": {"name": "engine"},
        "gpushare:operator": {"repository": repository},
        "gpushare:pools": [
            {"name": "t4ts", "vmSize": "Standard_NC4as_T4_v3",
             "sharing": {"strategy": "time-slicing", "replicas": replicas}},
            {"name": "a100", "vmSize": "Standard_NC24ads_A100_v4"},
        ],
        "gpushare:tenants": [{"name": name, "pools": pools[name],
                              **({"groups": [TENANT_GROUP]} if name == "vision" else {})} for name in tenants],
        "gpushare:platform": {"namespaces": [{"name": "monitoring", "pools": ["a100"]}]},
    }


def plan(folder: Path, name: str, mapping: dict[str, Any]) -> dict[str, Any]:
    """`gpushare plan --json` of `mapping` written as a stack file (in-process)."""
    path = folder / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": mapping}))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", str(path), "--json"]) == 0
    return json.loads(out.getvalue())


def command(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


def kubernetes_resources(plan_document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(type, name) -> the plan's resource, for the Kubernetes objects (the provider is the program's own)."""
    return {(r["type"], r["name"]): r for r in plan_document["resources"] if r["type"].startswith("kubernetes:")}


def predicted_ops(base: dict[str, Any], head: dict[str, Any]) -> dict[tuple[str, str], str]:
    """What two plans say the engine will do to each Kubernetes object: create, delete, update (inputs differ)."""
    before, after = kubernetes_resources(base), kubernetes_resources(head)
    ops = {key: "create" for key in after.keys() - before.keys()}
    ops.update({key: "delete" for key in before.keys() - after.keys()})
    ops.update({key: "update" for key in before.keys() & after.keys() if before[key]["inputs"] != after[key]["inputs"]})
    return ops


def engine_ops(run: Run) -> dict[tuple[str, str], str]:
    """(type, name) -> the engine's step for each Kubernetes object (not `same`)."""
    return {(s["type"], s["urn"].rsplit("::", 1)[1]): s["op"] for s in run.steps()
            if s["type"].startswith("kubernetes:") and s["op"] != "same"}


def live(plane: ControlPlane, manifest: dict[str, Any]) -> dict[str, Any] | None:
    meta = manifest["metadata"]
    try:
        return plane.get(manifest["apiVersion"], manifest["kind"], meta["name"], meta.get("namespace"))
    except ApiError as error:
        if error.status == 404:
            return None
        raise


def node_config_keys(plane: ControlPlane) -> dict[str, str]:
    """pool -> the device-plugin key its Nodes are labelled with (what the guard reads from AKS in `deploy()`)."""
    keys = {}
    for node in plane.list("v1", "Node"):
        labels = node["metadata"].get("labels", {})
        if DEVICE_PLUGIN_CONFIG_LABEL in labels:
            keys[labels["kubernetes.azure.com/agentpool"]] = labels[DEVICE_PLUGIN_CONFIG_LABEL]
    return keys


def relabel(plane: ControlPlane, pool: str, key: str) -> None:
    """What AKS does once a pool's update completes: its nodes carry the new label."""
    for node in plane.list("v1", "Node", selector=f"kubernetes.azure.com/agentpool={pool}"):
        node["metadata"]["labels"][DEVICE_PLUGIN_CONFIG_LABEL] = key
        plane.request("PUT", f"/api/v1/nodes/{node['metadata']['name']}", node)


def config_key(plan_document: dict[str, Any], pool: str) -> str:
    return next(c["key"] for c in plan_document["devicePluginConfigs"] if c["pool"] == pool)


@dataclass
class History:
    plans: list[dict[str, Any]] = field(default_factory=list)
    runs: dict[str, Run] = field(default_factory=dict)
    objects: dict[str, dict[tuple[str, str], dict[str, Any] | None]] = field(default_factory=dict)
    """after which run -> (type, name) -> the live object of each Kubernetes resource of every plan."""
    preview_json: str = ""
    report: str = ""
    compare: str = ""
    state: str = ""
    stack_config_file: str = ""
    config_map_data: dict[str, dict[str, str]] = field(default_factory=dict)
    chart_values: dict[str, Any] = field(default_factory=dict)
    unguarded: list[str] = field(default_factory=list)
    """Tenant namespaces a probe pod found judged by no policy, sampled during the second `up`."""
    protect_error: str = ""
    token: str = ""
    node_keys: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="module")
def history(engine: Engine, engine_control_plane: ControlPlane, chart_repository, tmp_path_factory) -> History:
    plane, folder = engine_control_plane, tmp_path_factory.mktemp("engine-plans")
    record = History(token=plane.tokens[ADMIN])
    mappings = [config(chart_repository.url),
                config(chart_repository.url, replicas=2, tenants=("vision", "speech")),
                config(chart_repository.url, replicas=2, tenants=("vision", "speech", "nlp"))]
    record.plans = [plan(folder, f"{STACK}{i}", m) for i, m in enumerate(mappings[:2])]
    register_nodes(plane, parse_config(mappings[0], source="engine", stack=STACK))
    ensure_namespace(plane, "monitoring")
    # The first `up` with the provider's defaults, as a stack deployed before ClusterAccess set
    # enableConfigMapMutable; every run after it with the option on.
    current = {"config": mappings[0], "protect": False, "mutable": False}

    def the_program():
        engine_program.program(lambda: current["config"], lambda: node_config_keys(plane),
                               protect_operator=current["protect"], enable_config_map_mutable=current["mutable"])()

    stack = engine.stack(STACK, the_program, {
        "kubeconfig": (inline_kubeconfig(plane.url, plane.ca, plane.tokens[ADMIN]), True),
        "pulumi:disable-default-providers": ('["kubernetes"]', False),
    })
    record.stack_config_file = (Path(stack.workspace.work_dir) / f"Pulumi.{STACK}.yaml").read_text()

    def timed(name: str, operation, **kwargs) -> Run:
        record.runs[name] = recorded(operation, **kwargs)
        return record.runs[name]

    def snapshot(name: str) -> None:
        resources = {**kubernetes_resources(record.plans[0]), **kubernetes_resources(record.plans[1])}
        record.objects[name] = {key: live(plane, r["inputs"]) for key, r in resources.items()
                                if key[0] != HELM_RELEASE}
        record.config_map_data[name] = (live(plane, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": CONFIG_MAP_NAME, "namespace": NAMESPACE}}) or {}).get("data", {})

    timed("up", stack.up)
    snapshot("up")
    values = live(plane, {"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": VALUES_CONFIG_MAP, "namespace": NAMESPACE}})
    record.chart_values = json.loads(values["data"]["values.json"]) if values else {}
    record.node_keys = node_config_keys(plane)

    current["config"] = mappings[1]
    timed("preview-provider-defaults", stack.preview)
    current["mutable"] = True
    preview = timed("preview", stack.preview, json=True)
    record.preview_json = preview.stdout
    preview_file = folder / "preview.json"
    preview_file.write_text(preview.stdout)
    record.report = command(["report", str(preview_file), "--stack", STACK])
    base, head = folder / "base.json", folder / "head.json"
    base.write_text(json.dumps(record.plans[0]))
    head.write_text(json.dumps(record.plans[1]))
    record.compare = command(["compare", str(base), str(head)])

    # Sampled while the engine works: any tenant namespace of either config that a GPU pod probe finds judged by
    # no gpushare policy at all.
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            for tenant in ("vision", "speech", "nlp"):
                try:
                    exists = plane.get("v1", "Namespace", tenant)
                except ApiError:
                    continue
                if exists and not refused_by_a_policy(plane, tenant):
                    record.unguarded.append(tenant)
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        timed("up-changed", stack.up)
    finally:
        stop.set()
        sampler.join()
    snapshot("up-changed")

    relabel(plane, "t4ts", config_key(record.plans[1], "t4ts"))
    current["config"] = mappings[2]  # and tenant nlp back
    timed("up-relabelled", stack.up)
    snapshot("up-relabelled")
    timed("preview-unchanged", stack.preview)
    # The backend's own file (`stack.export_stack()` runs `pulumi stack export --show-secrets`).
    record.state = engine.state_file(STACK).read_text()

    current["protect"] = True
    timed("up-protected", stack.up)
    timed("destroy-exclude-protected", stack.destroy, exclude_protected=True)
    snapshot("destroy-exclude-protected")
    try:
        stack.destroy(color="never")
    except auto.errors.CommandError as error:
        record.protect_error = str(error)
    snapshot("destroy-refused")
    engine.cli(["state", "unprotect", "--all", "--yes", "--stack", STACK])
    timed("destroy", stack.destroy)
    snapshot("destroy")
    return record


def matches(expected: Any, actual: Any) -> bool:
    """Every field of `expected` (the plan's inputs) is in `actual` (the live object) with the same value; the API
    server may add defaults (a ValidatingAdmissionPolicy's `matchPolicy`, a rule's `scope`) but change nothing."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(matches(v, actual.get(k)) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(map(matches, expected, actual))
    return expected == actual


def test_up_creates_every_object_of_the_plan_as_the_plan_renders_it(history):
    planned = {key: r for key, r in kubernetes_resources(history.plans[0]).items() if key[0] != HELM_RELEASE}
    created = {key for key, op in engine_ops(history.runs["up"]).items() if op == "create"}
    assert created == set(kubernetes_resources(history.plans[0]))
    wrong = [f"{kind} {name}" for (kind, name), r in planned.items()
             if not matches({k: v for k, v in r["inputs"].items() if k not in ("apiVersion", "kind")},
                            history.objects["up"][(kind, name)])]
    assert not wrong, f"live objects differ from the plan's inputs: {wrong}"


def test_the_helm_release_gets_the_values_the_plan_shows(history):
    """The release is real (the provider's Helm, gpushare's values); its chart is the stand-in (chart_repo.py)."""
    release = kubernetes_resources(history.plans[0])[(HELM_RELEASE, "gpu-operator-release")]
    assert matches(release["inputs"]["values"], history.chart_values)


def test_preview_json_is_read_by_report_which_leads_with_the_change(history):
    """The real `pulumi preview --json`: the report's head says what changes (the ConfigMap's new key, the tenants)
    before the counts and the details; the details count what changeSummary counts (no `read` step), and the
    retained namespace is not said to be deleted from the cluster."""
    report = history.report
    changes = report.index("#### Changes")
    assert report.index(f"device-plugin ConfigMap: added `{config_key(history.plans[1], 't4ts')}`") < changes
    assert report.index("- **speech**: added") < changes
    assert report.index("- **nlp**: removed") < changes
    summary = json.loads(history.preview_json)["changeSummary"]
    changed = sum(n for op, n in summary.items() if op != "same")
    assert f"<summary>{changed} changed resources</summary>" in report
    assert "`tenant-nlp-namespace` (retained: it leaves the stack" in report
    assert "StackReference" not in report


def test_engine_steps_are_what_the_plans_and_compare_predicted(history):
    predicted = predicted_ops(*history.plans)
    assert engine_ops(history.runs["preview"]) == predicted
    assert engine_ops(history.runs["up-changed"]) == predicted
    assert "replace" not in predicted.values()
    assert predicted[("kubernetes:core/v1:ConfigMap", "gpu-operator-configmap")] == "update"
    assert f"added `{config_key(history.plans[1], 't4ts')}`" in history.compare


def test_with_the_providers_defaults_a_changed_configmap_is_deleted_and_created(history):
    """pulumi-kubernetes's default, which the mock engine cannot show: hence ClusterAccess's
    enableConfigMapMutable. Turning it on for a deployed stack updates the provider (same clusterIdentifier), and
    the same change is then an update of the ConfigMap."""
    config_map = ("kubernetes:core/v1:ConfigMap", "gpu-operator-configmap")
    assert engine_ops(history.runs["preview-provider-defaults"])[config_map] == "create-replacement"
    assert engine_ops(history.runs["preview"])[config_map] == "update"
    providers = {s["op"] for s in history.runs["preview"].steps() if s["type"] == "pulumi:providers:kubernetes"}
    assert providers == {"update"}


def test_a_config_key_stays_while_a_node_names_it(history):
    old, new = config_key(history.plans[0], "t4ts"), config_key(history.plans[1], "t4ts")
    assert history.node_keys["t4ts"] == old
    assert {old, new} <= set(history.config_map_data["up-changed"])
    assert new in history.config_map_data["up-relabelled"]
    assert old not in history.config_map_data["up-relabelled"]


def test_a_tenant_is_never_without_its_policy(history):
    assert not history.unguarded, f"namespaces judged by no policy during up: {sorted(set(history.unguarded))}"
    after = history.objects["up-changed"]
    assert after[("kubernetes:core/v1:Namespace", "tenant-nlp-namespace")] is not None, "retainOnDelete"
    assert after[(BINDING, "tenant-nlp-policy-binding")] is None
    assert after[(BINDING, "tenant-speech-policy-binding")] is not None


def test_an_unchanged_stack_previews_no_change(history):
    """No perpetual diff: what the API server defaults (a policy's matchPolicy, a namespace's metadata.name label)
    and what the provider stores do not make the next preview plan an update; the mock engine cannot show this."""
    assert history.runs["preview-unchanged"].ops() == {}


def test_a_tenant_added_again_gets_its_retained_namespace_back(history):
    """The provider creates with server-side apply, which adopts the namespace its removal left (with the team's
    workloads) instead of failing on an existing object; the tenant's policy is bound again."""
    namespace = ("kubernetes:core/v1:Namespace", "tenant-nlp-namespace")
    kept, back = history.objects["up-changed"][namespace], history.objects["up-relabelled"][namespace]
    assert back["metadata"]["uid"] == kept["metadata"]["uid"]
    assert history.runs["up-relabelled"].ops()[next(
        s["urn"] for s in history.runs["up-relabelled"].steps() if s["urn"].endswith("::tenant-nlp-namespace"))] \
        == "create"
    assert history.objects["up-relabelled"][(BINDING, "tenant-nlp-policy-binding")] is not None


def test_destroy_exclude_protected_keeps_the_protected_operator(history):
    kept = history.objects["destroy-exclude-protected"]
    assert kept[("kubernetes:core/v1:ConfigMap", "gpu-operator-configmap")] is not None
    assert kept[("kubernetes:core/v1:Namespace", "gpu-operator-namespace")] is not None
    assert kept[(BINDING, "shared-gpu-pools-binding")] is None
    assert "protected" in history.protect_error
    assert history.objects["destroy-refused"][("kubernetes:core/v1:ConfigMap", "gpu-operator-configmap")] is not None
    gone = history.objects["destroy"]
    assert gone[("kubernetes:core/v1:ConfigMap", "gpu-operator-configmap")] is None
    # Retained on delete: the teams' namespaces outlive the stack.
    assert gone[("kubernetes:core/v1:Namespace", "tenant-vision-namespace")] is not None


def test_secrets_stay_secret_in_state_and_preview(history):
    assert "secure:" in history.stack_config_file and history.token not in history.stack_config_file
    for what, text in [("state", history.state), ("preview --json", history.preview_json),
                       ("report", history.report),
                       *((f"{name} events", json.dumps(run.events)) for name, run in history.runs.items())]:
        assert history.token not in text, f"the kubeconfig's token is in plain text in the {what}"
    assert "ciphertext" in history.state  # the provider's kubeconfig, stored encrypted


@pytest.mark.parametrize("first, then", [
    ("gpu-operator-configmap", "gpu-operator-release"),  # the operator reads the ConfigMap at start-up
    ("tenant-vision-limits", "tenant-vision-policy-binding"),  # the policy judges pods by the LimitRange defaults
    ("tenant-vision-policy", "tenant-vision-policy-binding"),
    ("shared-gpu-pools-policy", "shared-gpu-pools-binding"),
])
def test_the_engine_waits_where_the_components_say(history, first, then):
    """dependsOn as the mock engine records it (`plan --json`), honoured by the real engine's step order."""
    assert history.runs["up"].order(first)[1] < history.runs["up"].order(then)[0]


def test_the_shared_policy_lets_go_of_a_new_tenant_only_once_its_own_policy_is_bound(history):
    """The shared binding's update that excludes tenant speech's namespace waits for speech's own binding: in
    between, speech's namespace would be judged by no policy."""
    up = history.runs["up-changed"]
    assert up.order("tenant-speech-policy-binding")[1] < up.order("shared-gpu-pools-binding")[0]
