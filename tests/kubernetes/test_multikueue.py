"""The MultiKueue objects `gpushare.kubernetes.multikueue.dispatch` compiles for a fleet: which workers each tenant's
MultiKueueConfig lists, what its ClusterQueue on the manager covers, the kubeconfig Secrets named (never filled),
the refusals; every object valid for Kueue v0.19.2's CRD schemas and admitted by its webhooks (`tools/kueuecheck`).
Dispatch itself is shown on real control planes (`tests/controlplane/test_multikueue_on_real_control_planes.py`)."""

from __future__ import annotations

import base64
import json

import jsonschema
import pytest
import yaml

from gpushare.errors import ConfigError
from gpushare.kubernetes.admission.policies import shared_pool_policy, tenant_policy
from gpushare.kubernetes.kueue_admission import KUEUE_CONTROLLER_USER, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from gpushare.kubernetes.multikueue import (
    MULTIKUEUE_CONTROLLER,
    dispatch,
    kubeconfig_secret,
    manager_configuration,
    worker_access_objects,
    worker_kubeconfig,
)
from gpushare.kubernetes.queues import queue_manifests
from gpushare.kubernetes.tenant_objects import tenant_manifests
from gpushare.plan.stack_plan import build_plan
from gpushare.stackfile.config import load_stack_file, parse_config
from gpushare.stackfile.fleet_config import load_fleet
from tests.kubernetes.test_kueue_webhooks import judge
from tests.kubernetes.test_queues import closed, crd_schemas

HUB = """
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: hub}
  gpushare:queues: {enabled: true}
  gpushare:pools:
    - {name: hubt4, vmSize: Standard_NC4as_T4_v3, count: 1}
"""
WEST = """
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: west}
  gpushare:queues: {enabled: true}
  gpushare:operator: {migStrategy: mixed}
  gpushare:pools:
    - {name: westa100, vmSize: Standard_NC24ads_A100_v4, count: 2}
    - {name: westmig, vmSize: Standard_NC40ads_H100_v5, mig: MIG1g, count: 1}
    - {name: westt4, vmSize: Standard_NC4as_T4_v3, sharing: {strategy: time-slicing, replicas: 4}, count: 2}
  gpushare:tenants:
    - {name: vision, pools: [westa100, westt4]}
    - {name: nlp, pools: [westmig, westt4], queue: {priority: 50}}
"""
EAST = """
config:
  azure-native:location: eastus
  gpushare:cluster: {name: east}
  gpushare:queues: {enabled: true}
  gpushare:pools:
    - {name: easta100, vmSize: Standard_NC24ads_A100_v4, count: 1}
  gpushare:tenants:
    - {name: vision, pools: [easta100]}
"""
"""vision: A100s in both workers and T4 shares in west; nlp: H100 MIG slices and T4 shares in west only."""


def stack(name: str, text: str, **changes):
    config = {**yaml.safe_load(text)["config"], **changes}
    return parse_config(config, source=f"stacks/Pulumi.{name}.yaml", stack=name)


@pytest.fixture(scope="module")
def members():
    return {"hub": stack("hub", HUB), "west": stack("west", WEST), "east": stack("east", EAST)}


@pytest.fixture(scope="module")
def compiled(members):
    return dispatch("hub", members, {name: build_plan(s).pool_facts for name, s in members.items()})


def named(objects, kind):
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def test_each_tenants_config_lists_exactly_the_workers_where_it_has_a_pool(compiled):
    assert compiled.tenant_workers == {"vision": ["west", "east"], "nlp": ["west"]}
    configs = named(compiled.manager_objects, "MultiKueueConfig")
    assert {n: c["spec"]["clusters"] for n, c in configs.items()} == {
        "gpushare-fleet-vision": ["west", "east"], "gpushare-fleet-nlp": ["west"]}
    checks = named(compiled.manager_objects, "AdmissionCheck")
    assert checks["gpushare-fleet-nlp"]["spec"] == {"controllerName": MULTIKUEUE_CONTROLLER, "parameters": {
        "apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "gpushare-fleet-nlp"}}


def test_a_queue_on_the_manager_covers_only_what_the_tenants_pools_advertise_and_what_its_queues_reach(compiled):
    queues = named(compiled.manager_objects, "ClusterQueue")
    vision, nlp = queues["vision"]["spec"], queues["nlp"]["spec"]
    assert vision["admissionChecksStrategy"] == {"admissionChecks": [{"name": "gpushare-fleet-vision"}]}
    assert vision["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "vision"}}
    [group] = vision["resourceGroups"]
    assert group["coveredResources"] == ["nvidia.com/gpu", "nvidia.com/gpu.shared", "cpu", "memory"]
    quota = {r["name"]: r["nominalQuota"] for r in group["flavors"][0]["resources"]}
    # 2 A100s in west + 1 in east; the 8 T4 shares in west it may borrow all of (shared with nlp, no limit).
    assert (quota["nvidia.com/gpu"], quota["nvidia.com/gpu.shared"]) == (3, 8)
    assert nlp["resourceGroups"][0]["coveredResources"] == ["nvidia.com/mig-1g.12gb", "nvidia.com/gpu.shared",
                                                            "cpu", "memory"]
    assert "cohortName" not in vision  # the workers lend and borrow; the manager only dispatches
    assert named(compiled.manager_objects, "LocalQueue")["nlp"]["spec"] == {"clusterQueue": "nlp"}
    assert named(compiled.manager_objects, "WorkloadPriorityClass")["gpushare-nlp"]["value"] == 50


def test_workers_get_their_usual_queues_and_the_manager_names_kubeconfig_secrets_only(members, compiled):
    assert compiled.worker_objects == {"west": queue_manifests(members["west"]),
                                       "east": queue_manifests(members["east"])}
    clusters = named(compiled.manager_objects, "MultiKueueCluster")
    assert {n: c["spec"] for n, c in clusters.items()} == {
        w: {"clusterSource": {"kubeConfig": {"location": kubeconfig_secret(w), "locationType": "Secret"}}}
        for w in ("west", "east")}
    assert compiled.kubeconfig_secrets == {"west": "gpushare-fleet-west-kubeconfig",
                                           "east": "gpushare-fleet-east-kubeconfig"}
    assert compiled.secret_namespace == "kueue-system"
    assert not any(o["kind"] == "Secret" for o in compiled.manager_objects)


def test_a_tenant_removed_from_the_fleet_has_no_object_anywhere(members):
    smaller = {**members, "west": stack("west", WEST, **{"gpushare:tenants": [
        {"name": "vision", "pools": ["westa100", "westt4"]}]})}
    text = json.dumps(dispatch("hub", smaller).manager_objects) + json.dumps(dispatch("hub", smaller).worker_objects)
    assert "nlp" not in text


def test_the_managers_configuration_turns_on_multikueue_for_jobs(members):
    config = manager_configuration(members["hub"], ["nlp", "vision"])
    assert config["multiKueue"] == {"gcInterval": "1m0s", "origin": "multikueue", "workerLostTimeout": "15m0s"}
    assert config["integrations"] == {"frameworks": ["batch/job"]}
    assert config["managedJobsNamespaceSelector"]["matchExpressions"][0]["values"] == ["nlp", "vision"]


def test_what_cannot_be_dispatched_is_left_out_and_said(members):
    """A tenant with pools on the manager (its Jobs queue there), a worker without queues, a tenant whose priority
    differs between workers: each left out with its reason, the rest still dispatched."""
    hub = stack("hub", HUB, **{"gpushare:tenants": [{"name": "nlp", "pools": ["hubt4"]}]})
    east = stack("east", EAST, **{"gpushare:tenants": [
        {"name": "vision", "pools": ["easta100"], "queue": {"priority": 7}}]})
    north = stack("north", EAST, **{"gpushare:queues": {"enabled": False}})
    compiled = dispatch("hub", {"hub": hub, "west": members["west"], "east": east, "north": north})
    assert compiled.tenant_workers == {} and compiled.manager_objects == [] and compiled.workers == []
    text = "\n".join(compiled.left_out)
    assert "member north gets no dispatched jobs: it has no queues" in text
    assert "stacks/Pulumi.north.yaml" in text
    assert "tenant nlp is not dispatched: it has pools on the manager hub" in text
    assert "tenant vision is not dispatched: its queue.priority differs between its workers (0 in " \
           "stacks/Pulumi.west.yaml, 7 in stacks/Pulumi.east.yaml)" in text
    without_kueue = stack("hub", HUB, **{"gpushare:queues": {"enabled": False}})
    compiled = dispatch("hub", {**members, "hub": without_kueue})
    assert compiled.tenant_workers == {} and compiled.manager_objects == []
    assert compiled.left_out == ["nothing is dispatched: the manager hub runs no Kueue (set gpushare:queues.enabled: "
                                 "true in stacks/Pulumi.hub.yaml)"]
    with pytest.raises(ConfigError, match="'south' is not one of the members"):
        dispatch("south", members)


def test_a_tenant_on_the_manager_gets_its_namespace_and_groups_but_may_run_no_pod_there(compiled):
    vision = [o for o in compiled.manager_objects if o["metadata"].get("namespace") == "vision"
              or (o["kind"] == "Namespace" and o["metadata"]["name"] == "vision")]
    assert [o["kind"] for o in vision] == ["Namespace", "ResourceQuota", "LocalQueue"]  # vision names no group
    quota = named(compiled.manager_objects, "ResourceQuota")["gpushare-fleet-no-pods"]
    assert quota["spec"] == {"hard": {"pods": "0"}}


def test_the_workers_identity_and_the_kubeconfig_the_manager_reads_it_with():
    objects = {o["kind"]: o for o in worker_access_objects()}
    assert objects["Secret"]["type"] == "kubernetes.io/service-account-token"
    assert objects["ClusterRoleBinding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "gpushare-multikueue", "namespace": "kueue-system"}]
    text = worker_kubeconfig("https://west:443", {"token": base64.b64encode(b"tok").decode(), "ca.crt": "Q0E="})
    config = json.loads(text)
    assert config["clusters"][0]["cluster"] == {"server": "https://west:443", "certificate-authority-data": "Q0E="}
    assert config["users"][0]["user"] == {"token": "tok"}


# --- Kueue's own schemas and webhooks ------------------------------------------------------------------------------


def multikueue_schemas():
    """The CRDs Kueue's manager build copies from its module (`config/components/crd/bases`), for the kinds the
    shared schema file lacks."""
    from tests.controlplane import kueue

    if reason := kueue.unavailable_reason():
        pytest.skip(reason)
    found = {}
    for path in sorted((kueue.binary().parent / "crd").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        for version in crd["spec"]["versions"]:
            found[f"{version['name']}/{crd['spec']['names']['kind']}"] = {
                "scope": crd["spec"]["scope"], "schema": python_patterns(version["schema"]["openAPIV3Schema"])}
    return found


def python_patterns(schema):
    """Go's `^(?i)...` (AdmissionCheck's `parameters.kind`) as Python's regex reads it, flags first."""
    if isinstance(schema, list):
        return [python_patterns(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    fixed = {key: python_patterns(value) for key, value in schema.items()}
    if isinstance(fixed.get("pattern"), str) and fixed["pattern"].startswith("^(?i)"):
        fixed["pattern"] = "(?i)^" + fixed["pattern"][len("^(?i)"):]
    return fixed


def test_every_manager_object_is_valid_for_kueues_crd_schemas(compiled):
    schemas = {**crd_schemas(), **multikueue_schemas()}
    for obj in [o for o in compiled.manager_objects if o["apiVersion"] == "kueue.x-k8s.io/v1beta2"]:
        entry = schemas[f"v1beta2/{obj['kind']}"]
        assert ("namespace" in obj["metadata"]) == (entry["scope"] == "Namespaced")
        jsonschema.Draft7Validator(closed(entry["schema"])).validate(obj)


def test_kueues_webhooks_admit_the_managers_queues_and_flavor(compiled):
    judged = [o for o in compiled.manager_objects if o["kind"] in ("ClusterQueue", "ResourceFlavor")]
    verdicts = judge(judged)
    assert len(verdicts) == 3 and all(errors == [] for errors in verdicts.values()), verdicts


# --- the tenants' admission policies on the manager ---------------------------------------------------------------


def test_the_manager_holds_each_dispatched_tenant_to_its_policy_as_each_of_its_workers_builds_it(members, compiled):
    """One policy per tenant and worker, bound to the tenant's namespace, exactly the worker's own policy for it but
    for the pool rule (the manager runs no pod; the worker's Kueue gives MultiKueue's copy its pool)."""
    policies = named(compiled.manager_objects, "ValidatingAdmissionPolicy")
    assert set(policies) == {"gpushare-tenant-vision.west", "gpushare-tenant-vision.east",
                             "gpushare-tenant-nlp.west"}
    bindings = named(compiled.manager_objects, "ValidatingAdmissionPolicyBinding")
    assert bindings["gpushare-tenant-nlp.west"]["spec"]["matchResources"] == {"namespaceSelector": {
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["nlp"]}]}}
    facts = build_plan(members["west"]).pool_facts
    west_vision = next(t for t in members["west"].tenants if t.name == "vision")
    own = tenant_policy(members["west"], west_vision, facts)[0]["spec"]
    on_manager = policies["gpushare-tenant-vision.west"]["spec"]
    assert on_manager["matchConstraints"] == own["matchConstraints"]
    assert on_manager["matchConditions"] == own["matchConditions"]
    assert on_manager["variables"] == own["variables"]
    dropped = [v for v in own["validations"] if v not in on_manager["validations"]]
    assert [v["message"] for v in dropped] == [
        "GPU pods in namespace vision must set nodeSelector gpushare.io/pool to one of: westa100, westt4"]
    assert [v for v in own["validations"] if v not in dropped] == on_manager["validations"]
    # The queued-Job rules are there, with the tenant's own names.
    text = json.dumps(on_manager)
    assert "may name only its LocalQueue (kueue.x-k8s.io/queue-name: vision)" in text
    assert "may name only its Kueue WorkloadPriorityClass (kueue.x-k8s.io/priority-class: gpushare-vision)" in text
    assert policies["gpushare-tenant-vision.east"]["metadata"]["annotations"] == {"gpushare.io/pools": "easta100"}


def manager_job(labels, resource="nvidia.com/gpu", suspend=True):
    """A Job as it reaches validating admission on the manager after Kueue's webhooks: suspended, MultiKueue's."""
    asks = {"cpu": "1", "memory": "4Gi", resource: 1}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "labels": labels},
            "spec": {"suspend": suspend, "managedBy": MULTIKUEUE_CONTROLLER, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "train", "image": "busybox",
                                "resources": {"requests": asks, "limits": dict(asks)}}]}}}}


def test_the_managers_policies_refuse_another_tenants_queue_or_priority_and_let_kueue_start_the_job(compiled):
    """Judged by the API server's own ValidatingAdmissionPolicy plugin (`tools/vapcheck`): on the manager a Job of
    vision's may name only vision's LocalQueue and WorkloadPriorityClass, by either worker's policy; its device
    rules hold there too; the manager's Kueue unsuspends it on its flavor without node labels."""
    from tests.kubernetes.apiserver_admission import plugin_cluster, unavailable_reason

    if reason := unavailable_reason():
        pytest.skip(reason)
    manifests = [o for o in compiled.manager_objects
                 if o["kind"] in ("Namespace", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")]
    with plugin_cluster(manifests) as cluster:
        assert cluster.compile_errors == []
        own = {QUEUE_NAME_LABEL: "vision", PRIORITY_CLASS_LABEL: "gpushare-vision"}
        assert cluster.admit(manager_job(own), "vision").allowed
        foreign_priority = cluster.admit(manager_job({**own, PRIORITY_CLASS_LABEL: "gpushare-nlp"}), "vision")
        assert len(foreign_priority.messages) == 2  # west's and east's policy for vision
        assert all(m.endswith("; got gpushare-nlp") for m in foreign_priority.messages)
        foreign_queue = cluster.admit(manager_job({QUEUE_NAME_LABEL: "nlp"}), "vision")
        assert foreign_queue.messages[-1].startswith("Jobs in namespace vision may name only its LocalQueue")
        devices = manager_job(own)
        devices["spec"]["template"]["spec"]["containers"][0]["env"] = [
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
        assert any("NVIDIA_VISIBLE_DEVICES" in m for m in cluster.admit(devices, "vision").messages)
        # Kueue's admission on the manager: unsuspended, the fleet flavor's (no) node labels, the podset label.
        started = manager_job(own, suspend=False)
        started["spec"]["template"]["metadata"] = {"labels": {"kueue.x-k8s.io/podset": "main"}}
        assert cluster.admit(started, "vision", operation="UPDATE", old=manager_job(own),
                             user=KUEUE_CONTROLLER_USER).allowed
        # Nobody else starts it.
        assert not cluster.admit(started, "vision", operation="UPDATE", old=manager_job(own)).allowed


def write_hub_fleet(directory, hub_tenants=None, **hub_changes):
    """HUB, WEST and EAST as stack files naming a fleet file beside them whose dispatch manager is hub, hub with
    `hub_tenants` of its own; hub's stack file's path."""
    stacks = {"hub": HUB, "west": WEST, "east": EAST}
    for name, text in stacks.items():
        config = {**yaml.safe_load(text)["config"], "gpushare:fleet": "fleet.yaml"}
        if name == "hub":
            config |= ({"gpushare:tenants": hub_tenants} if hub_tenants else {}) | hub_changes
        (directory / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": config}))
    (directory / "fleet.yaml").write_text(yaml.safe_dump({
        "fleet": {"name": "gpu-fleet", "resourceGroup": "rg-gpu-fleet", "location": "westeurope"},
        "members": [{"stack": "west", "canary": True, "group": "canary"}, {"stack": "hub", "group": "rest"},
                    {"stack": "east", "group": "rest"}],
        "dispatch": {"manager": "hub"}}))
    return directory / "Pulumi.hub.yaml"


def test_the_managers_stack_learns_through_its_fleet_which_namespaces_are_dispatched_from_it(tmp_path):
    """Its shared policy's binding leaves exactly those out, by name; every other namespace is judged as before.
    The same choice as the fleet plan's dispatch, and nothing for a member that is no manager."""
    hub = load_stack_file(write_hub_fleet(tmp_path, [{"name": "gamma", "pools": ["hubt4"]}]))
    assert hub.fleet_manager is not None and hub.fleet_manager.fleet == str(tmp_path / "fleet.yaml")
    assert {t.name: t.workers for t in hub.fleet_manager.tenants} == {"vision": ("west", "east"), "nlp": ("west",)}
    fleet = load_fleet(tmp_path / "fleet.yaml")
    assert fleet.stacks["hub"].fleet_manager == hub.fleet_manager  # the fleet plan's member plan says the same
    assert dispatch("hub", fleet.stacks).tenant_workers == {t.name: list(t.workers) for t in hub.fleet_manager.tenants}
    binding = shared_pool_policy(hub)[1]
    assert binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"] == [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
         "values": ["gamma", "gpu-operator", "kube-system", "nlp", "vision"]}]
    assert load_stack_file(tmp_path / "Pulumi.west.yaml").fleet_manager is None
    # The same stack in no fleet (or a manager whose Kueue is off, which dispatches nothing) leaves only its own
    # tenants and the exempt namespaces out.
    alone = stack("hub", HUB, **{"gpushare:tenants": [{"name": "gamma", "pools": ["hubt4"]}]})
    assert shared_pool_policy(alone)[1]["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0][
        "values"] == ["gamma", "gpu-operator", "kube-system"]
    (tmp_path / "off").mkdir()
    off = write_hub_fleet(tmp_path / "off", [{"name": "gamma", "pools": ["hubt4"]}],
                          **{"gpushare:queues": {"enabled": False}})
    assert load_stack_file(off).fleet_manager is None


def test_a_dispatched_tenant_named_as_a_platform_namespace_of_the_manager_is_refused(tmp_path):
    path = write_hub_fleet(tmp_path, [{"name": "gamma", "pools": ["hubt4"]}],
                           **{"gpushare:platform": {"namespaces": [{"name": "vision"}]}})
    with pytest.raises(ConfigError) as refused:
        load_stack_file(path)
    assert "tenant vision is dispatched from hub (pools in west, east, none in hub)" in str(refused.value)
    assert "lists vision among its platform namespaces" in str(refused.value)


def test_a_manager_with_tenants_of_its_own_lets_dispatched_tenants_jobs_through(tmp_path):
    """Judged by the API server's ValidatingAdmissionPolicy plugin with everything bound on the manager: its own
    stack's tenant, shared and debug policies, and the fleet stack's dispatch objects. A dispatched tenant's Job
    passes (its own policies judge it); the manager's own tenant and every other namespace are held as before."""
    from tests.kubernetes.apiserver_admission import plugin_cluster, unavailable_reason

    if reason := unavailable_reason():
        pytest.skip(reason)
    hub = load_stack_file(write_hub_fleet(tmp_path, [{"name": "gamma", "pools": ["hubt4"]}]))
    compiled = dispatch("hub", load_fleet(tmp_path / "fleet.yaml").stacks)
    assert compiled.tenant_workers == {"vision": ["west", "east"], "nlp": ["west"]}
    manifests = tenant_manifests(hub) + [o for o in compiled.manager_objects if o["kind"] in (
        "Namespace", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")] + [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}]
    with plugin_cluster(manifests) as cluster:
        assert cluster.compile_errors == []
        decision = cluster.admit(manager_job({QUEUE_NAME_LABEL: "vision"}), "vision")
        assert decision.allowed, decision.messages
        # Still held by its own dispatch policies there.
        foreign = cluster.admit(manager_job({QUEUE_NAME_LABEL: "nlp"}), "vision")
        assert not foreign.allowed and all("gpushare-shared-gpu-pools" not in m for m in foreign.messages)
        # A GPU Job in any other namespace is refused by the shared policy, as before: every pool is gamma's.
        other = cluster.admit(manager_job({}), "other")
        assert other.messages == ["Job pod template: GPU pods in namespace other are not allowed: every GPU pool "
                                  "belongs to a tenant (gamma: hubt4)"], other.messages
        # gamma's own GPU Job without its pool is refused by gamma's policy.
        own = cluster.admit(manager_job({}), "gamma")
        assert any("must set nodeSelector gpushare.io/pool to one of: hubt4" in m for m in own.messages), own.messages
