"""The guard sees every replacement the program's own inputs cause (issue 39: 17 of 360 random edits of deployed
stacks planned the replacement of a protected pool while the guard said "no change deletes a GPU pool").

Pulumi diffs the inputs the program sends against the inputs in its state, not against the live pool. So the guard
compares the agent pool request itself (`pool_request`, what `components/deployment.py` sends) for every input in
`CREATE_ONLY_INPUTS` (the table `replaceOnChanges` reads): an input the deployed pools do not report may replace the
pool and is refused, and an OS disk or max pods the stack leaves to AKS is ignored, so leaving it out replaces
nothing."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json

import pytest

from gpushare.azure.agent_pool_request import CREATE_ONLY_INPUTS
from gpushare.azure.deployed import DeployedPool
from gpushare.azure.guard.create_only import input_changes, pool_request
from gpushare.cli import main
from gpushare.model.catalog import MigProfile
from gpushare.model.stack import DriverOwner, OsDisk, OsDiskType, Spot, SpotEviction
from gpushare.sharing.node_labels import pool_node_labels
from gpushare.stackfile.config import load_stack_file
from tests.azure.guard_builders import SYSTEM_POOL, T4_POOL, deployed_like, gpu_stack, run
from tests.builders import pool
from tests.stack_files import MINIMAL_STACK_YAML, write_stack

VNET = ("/subscriptions/3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3/resourceGroups/rg-net/providers/Microsoft.Network/"
        "virtualNetworks/vnet")
NODES, PODS = f"{VNET}/subnets/snet-nodes", f"{VNET}/subnets/snet-pods"


def fields(report) -> list[tuple[str, str, str, str]]:
    return [(v.pool, v.field, v.deployed, v.wanted) for v in report.violations]


# --- Kind 1: removing `osDisk: {type: Ephemeral}` from a Spot pool, against a file in AKS's own shape ---------------

SPOT_EPHEMERAL = MINIMAL_STACK_YAML + "      spot: {}\n      osDisk: {type: Ephemeral}\n"
SPOT_LEFT_TO_AKS = MINIMAL_STACK_YAML + "      spot: {}\n"


def aks_nodepool_list(stack_path) -> list[dict]:
    """`az aks nodepool list -o json` for the Spot pool as AKS reports it after creating it with an ephemeral disk."""
    stack = load_stack_file(stack_path)
    gpu = stack.pools[0]
    return [
        {"name": "nodepool1", "mode": "System", "vmSize": "Standard_D4ds_v5", "count": 2, "osSku": "Ubuntu",
         "osDiskType": "Managed", "osDiskSizeGb": 128, "maxPods": 250},
        {"name": gpu.name, "mode": "User", "vmSize": gpu.vm_size.name, "count": 1, "osSku": "Ubuntu",
         "osType": "Linux", "availabilityZones": None, "nodeLabels": pool_node_labels(stack, gpu),
         "nodeTaints": list(gpu.taints), "gpuInstanceProfile": None, "gpuProfile": None,
         "enableAutoScaling": False, "osDiskType": "Ephemeral", "osDiskSizeGb": 128, "maxPods": 250,
         "scaleSetPriority": "Spot", "scaleSetEvictionPolicy": "Delete", "spotMaxPrice": -1.0,
         "podSubnetId": None, "vnetSubnetId": None, "kubeletDiskType": "OS"},
    ]


def plan_json(path, deployed) -> tuple[int, dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["plan", str(path), "--json", "--deployed", str(deployed)])
    return code, json.loads(out.getvalue())


def agent_pool(plan: dict) -> dict:
    return next(r for r in plan["resources"] if r["type"] == "azure-native:containerservice:AgentPool")


def test_removing_an_ephemeral_os_disk_from_a_deployed_spot_pool_keeps_it_and_replaces_nothing(tmp_path):
    """The state holds osDiskType Ephemeral from the run that created the pool; the edit stops sending it. As a
    changed replaceOnChanges input that was a replace (delete first) the guard never saw. The program now ignores
    the input the stack leaves to AKS: the engine keeps the stored Ephemeral, so nothing is replaced, and the guard's
    "no change deletes a GPU pool" is true."""
    base = write_stack(tmp_path, SPOT_EPHEMERAL)
    deployed = tmp_path / "nodepools.json"
    deployed.write_text(json.dumps(aks_nodepool_list(base)))
    head = write_stack(tmp_path, SPOT_LEFT_TO_AKS)

    code, plan = plan_json(head, deployed)

    assert code == 0 and plan["guard"]["violations"] == []
    sent = agent_pool(plan)
    assert "osDiskType" not in sent["inputs"]
    assert "osDiskType" in sent["ignoreChanges"] and "osDiskType" in sent["replaceOnChanges"]


# --- Kinds 2-17: a create-only input the program sends, on a pool whose deployed file leaves it unreported ----------

UNREPORTED = {
    "max-pods": (dataclasses.replace(T4_POOL, max_pods=110), {}, "maxPods", "110"),
    "os-disk-type": (dataclasses.replace(T4_POOL, os_disk=OsDisk(type=OsDiskType.EPHEMERAL)), {},
                     "osDiskType", "Ephemeral"),
    "os-disk-size": (dataclasses.replace(T4_POOL, os_disk=OsDisk(size_gb=256)), {}, "osDiskSizeGB", "256"),
    "spot-eviction": (dataclasses.replace(T4_POOL, spot=Spot(eviction=SpotEviction.DEALLOCATE)),
                      {"scale_set_eviction_policy": None}, "scaleSetEvictionPolicy", "Deallocate"),
    "spot-price": (dataclasses.replace(T4_POOL, spot=Spot(max_price=0.4)), {"spot_max_price": None},
                   "spotMaxPrice", "0.4 USD per node-hour"),
}


@pytest.mark.parametrize("gpu_pool, unreported, field, wanted", UNREPORTED.values(), ids=UNREPORTED.keys())
def test_an_input_the_deployed_file_does_not_report_is_refused_as_one_that_may_replace(
        gpu_pool, unreported, field, wanted):
    """The state may hold another value, or none (a pool created without it): the guard cannot show it unchanged."""
    report = run(gpu_stack(gpu_pool), [SYSTEM_POOL, deployed_like(gpu_pool, **unreported)])

    assert fields(report) == [("t4ts", field, "not reported", wanted)]
    assert report.headline == "1 change may delete running GPU pools (a setting the deployed pools do not report)"
    (violation,) = report.violations
    assert f"{field} not reported -> {wanted}" in violation.message
    assert f"do not report {field}, so the guard cannot show that pool t4ts keeps it" in violation.message
    assert "az aks nodepool list --resource-group" in violation.message and "--deployed FILE" in violation.message
    assert "remove it from pool t4ts" in violation.message, "the fix: keep the input as it was"


def existing(*pools, system: DeployedPool) -> tuple:
    config = gpu_stack(*pools)
    config = dataclasses.replace(config, cluster=dataclasses.replace(config.cluster, existing=True))
    return config, system


SYSTEM_IN_OWN_VNET = dataclasses.replace(SYSTEM_POOL, vnet_subnet_id=NODES, pod_subnet_id=PODS)


@pytest.mark.parametrize("deployed_changes, field, wanted", [
    ({"pod_subnet_id": PODS}, "vnetSubnetID", NODES),
    ({"vnet_subnet_id": NODES}, "podSubnetID", PODS),
], ids=["node-subnet", "pod-subnet"])
def test_an_existing_clusters_subnets_the_program_sends_are_compared(deployed_changes, field, wanted):
    """On an existing cluster a pool whose stack names no subnet is sent its system pool's subnets
    (`components/deployment.py`): a pool deployed without them would be replaced for a subnet the stack never
    names, which the guard compared only when the stack named one."""
    config, system = existing(T4_POOL, system=SYSTEM_IN_OWN_VNET)
    report = run(config, [system, deployed_like(T4_POOL, **deployed_changes)])
    assert fields(report) == [("t4ts", field, "none (a VNet AKS manages)", wanted)]


def test_a_subnet_the_stack_names_on_a_pool_whose_file_reports_none_is_refused():
    """AKS reports no vnetSubnetID for a pool in a VNet it manages, so none reported reads as none: naming a subnet
    there is a move, refused like any other."""
    named = dataclasses.replace(T4_POOL, subnet_id=NODES)
    report = run(gpu_stack(named), [SYSTEM_POOL, deployed_like(named)])
    assert fields(report) == [("t4ts", "vnetSubnetID", "none (a VNet AKS manages)", NODES)]


def test_an_existing_clusters_pool_in_its_system_pools_subnets_passes_and_settles_them():
    config, system = existing(T4_POOL, system=SYSTEM_IN_OWN_VNET)
    deployed = [system, deployed_like(T4_POOL, vnet_subnet_id=NODES, pod_subnet_id=PODS)]
    report = run(config, deployed)
    assert report.violations == ()
    assert report.settled(config, T4_POOL) == ("vnetSubnetID", "podSubnetID")


def test_the_cli_exits_3_naming_pool_key_values_and_fix_for_an_unreported_max_pods(tmp_path, capsys):
    path = write_stack(tmp_path, MINIMAL_STACK_YAML + "      maxPods: 60\n")
    deployed = tmp_path / "nodepools.json"
    pools = aks_nodepool_list(path)
    del pools[1]["maxPods"], pools[1]["scaleSetPriority"], pools[1]["scaleSetEvictionPolicy"], pools[1]["spotMaxPrice"]
    deployed.write_text(json.dumps(pools))

    code = main(["plan", str(path), "--deployed", str(deployed)])
    out, err = capsys.readouterr()

    assert code == 3
    assert "pool t4: maxPods not reported -> 60" in err and "Traceback" not in err
    assert "remove it from pool t4 in" in err and f"read from {deployed}" in err
    assert "1 change may delete running GPU pools (a setting the deployed pools do not report)" in err


# --- Every create-only input, whatever comes next --------------------------------------------------------------------

EVERYTHING = dataclasses.replace(
    pool("a100", "Standard_ND96asr_v4", mig=MigProfile.MIG1G), zones=("1", "2"), max_pods=110,
    os_disk=OsDisk(size_gb=256, type=OsDiskType.MANAGED), spot=Spot(max_price=0.9))
"""A pool that sends every create-only input (on an existing cluster in its own VNet, with the operator's driver)."""


@pytest.fixture
def sends_everything():
    config, system = existing(EVERYTHING, system=SYSTEM_IN_OWN_VNET)
    config = dataclasses.replace(config, operator=dataclasses.replace(config.operator, driver=DriverOwner.OPERATOR))
    live = deployed_like(EVERYTHING, DriverOwner.OPERATOR, os_disk_type="Managed", os_disk_size_gb=256, max_pods=110,
                         vnet_subnet_id=NODES, pod_subnet_id=PODS)
    request = pool_request(config, EVERYTHING, [system, live])
    assert input_changes(request.inputs, live) == [], "deployed as the request sends it"
    return request, live


def other(value):
    """Another value of the same shape: what a stack edit would send instead."""
    if isinstance(value, dict):
        return {key: other(item) for key, item in value.items()}
    if isinstance(value, list):
        return [*value, "3"]
    if isinstance(value, (int, float)):
        return value + 1
    return f"{value}-other"


def test_every_create_only_input_is_sent_by_the_pool_that_sets_everything(sends_everything):
    request, _ = sends_everything
    assert [entry.key for entry in CREATE_ONLY_INPUTS if request.inputs.get(entry.keyword) is None] == []
    assert set(request.replace_on_changes) == {e.key for e in CREATE_ONLY_INPUTS if not e.replaced_by_provider}


@pytest.mark.parametrize("entry", CREATE_ONLY_INPUTS, ids=lambda entry: entry.key)
def test_changing_any_create_only_input_alone_is_refused(sends_everything, entry):
    """Property: each input `replaceOnChanges` (or azure-native itself) replaces on, changed with everything else
    kept, is a violation naming it; a create-only input added to the table without the guard knowing it fails here."""
    request, live = sends_everything
    changed = {**request.inputs, entry.keyword: other(request.inputs[entry.keyword])}
    assert [change.field for change in input_changes(changed, live)] == [entry.field]


SPOT_INPUTS = ("scale_set_priority", "scale_set_eviction_policy", "spot_max_price")


@pytest.mark.parametrize("entry", [e for e in CREATE_ONLY_INPUTS if e.key != "vmSize"],  # every pool sends one
                         ids=lambda entry: entry.key)
def test_no_longer_sending_any_create_only_input_is_refused_ignored_or_leaves_replace_on_changes(
        sends_everything, entry):
    """Property: an input the program stops sending is refused (its absence is a setting: no MIG, AKS's driver, no
    zones, Regular), or ignored (left to AKS: the stored value stands), or was listed only while sent. A Spot
    setting goes only with the whole Spot block, refused for its priority."""
    request, live = sends_everything
    removed = SPOT_INPUTS if entry.keyword in SPOT_INPUTS else (entry.keyword,)
    without = {**request.inputs, **dict.fromkeys(removed)}
    refused = [change.field for change in input_changes(without, live)]
    if entry.keyword in SPOT_INPUTS:
        assert refused == ["scaleSetPriority"]
    else:
        assert (refused == [entry.field]) != (entry.left_to_aks or entry.when_sent), refused
