"""An existing cluster and subnets of your own, read by `preflight` and the guard through the real SDK clients
against the local ARM stub: baseline findings, a missing cluster, a stack pool whose name an unmanaged pool holds,
a missing subnet and one too small for the pools' `max` nodes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpushare.azure.deployed import read_live
from gpushare.azure.guard.guard_runs import evaluate
from gpushare.cli import main
from gpushare.stackfile.config import load_stack_file
from tests.azure.preflight_region import REGION, T4, serve_region, usages, vm_sizes
from tests.azure_stub import (
    StaticTokenCredential,
    StubResponse,
    arm_agent_pool,
    arm_error,
    arm_existing_cluster,
    arm_maintenance_windows,
    arm_subnet,
    arm_usage,
    arm_vm_sku,
    maintenance_configurations_path,
    managed_cluster_id,
    reached_arm,
    role_assignments_path,
    serve_existing_cluster,
)
from tests.stack_files import write_stack

SUB = "3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3"
CLUSTER, RG = "platform-aks", "rg-platform"
VNET = f"/subscriptions/{SUB}/resourceGroups/rg-network/providers/Microsoft.Network/virtualNetworks/vnet-spoke"
NODES, GPU = f"{VNET}/subnets/snet-nodes", f"{VNET}/subnets/snet-gpu"
OWN_POOLS = StubResponse(200, {"value": [
    arm_agent_pool(SUB, RG, CLUSTER, "system", vmSize="Standard_D8ds_v5", count=3, mode="System"),
    arm_agent_pool(SUB, RG, CLUSTER, "apps", vmSize="Standard_D16ds_v5", count=5, mode="User"),
]})


@pytest.fixture
def arm(monkeypatch):
    with reached_arm(monkeypatch, SUB) as stub:
        yield stub


def existing_cluster_stack(tmp_path, pool_name: str = "t4ts", pool_extra: str = "", cluster_extra: str = "") -> str:
    return str(write_stack(
        tmp_path,
        f"config:\n  azure-native:location: {REGION}\n  gpushare:cluster:\n    name: {CLUSTER}\n"
        f"    resourceGroup: {RG}\n{cluster_extra}  gpushare:pools:\n"
        f"    - {{name: {pool_name}, vmSize: {T4}, autoscale: {{min: 1, max: 8}}{pool_extra}}}\n",
        "Pulumi.existing.yaml"))


def existing(tmp_path, **kwargs) -> str:
    return existing_cluster_stack(tmp_path, cluster_extra="    existing: true\n", **kwargs)


def test_baseline_findings_each_with_its_fix_and_the_clusters_own_pools_left_alone(arm, tmp_path, capsys):
    serve_region(arm, SUB, RG, CLUSTER, pools=OWN_POOLS)
    serve_existing_cluster(arm, SUB, RG, CLUSTER, arm_existing_cluster(SUB, RG, CLUSTER, local_accounts=True,
                                                                      tier="Free"))

    assert main(["preflight", existing(tmp_path), "--json"]) == 0  # findings warn: the cluster is its owners'

    report = json.loads(capsys.readouterr().out)
    baseline = {c["subject"]: c for c in report["checks"] if c["check"] == "baseline"}
    assert sorted(baseline) == [f"cluster {CLUSTER} aadProfile.managed", f"cluster {CLUSTER} disableLocalAccounts",
                                f"cluster {CLUSTER} sku.tier"]
    tier = baseline[f"cluster {CLUSTER} sku.tier"]
    assert tier["verdict"] == "warn"
    assert tier["detail"].startswith("sku.tier is Free, gpushare's baseline is Standard")
    assert tier["fix"] == f"az aks update -g {RG} -n {CLUSTER} --tier standard"
    assert "--enable-aad --enable-azure-rbac" in baseline[f"cluster {CLUSTER} aadProfile.managed"]["fix"]
    # The cluster's own system pool is neither sized nor counted, and its version is not gpushare's to check.
    subjects = [c["subject"] for c in report["checks"]]
    assert not any("system" in s for s in subjects)
    assert "kubernetes-version" not in {c["check"] for c in report["checks"]}


def test_a_cluster_at_the_baseline_passes_the_baseline_row(arm, tmp_path, capsys):
    serve_region(arm, SUB, RG, CLUSTER, pools=OWN_POOLS)
    serve_existing_cluster(arm, SUB, RG, CLUSTER)

    assert main(["preflight", existing(tmp_path), "--json"]) == 0

    (row,) = [c for c in json.loads(capsys.readouterr().out)["checks"] if c["check"] == "baseline"]
    assert row["verdict"] == "pass"
    assert "maintenance windows included" in row["detail"]
    # The pools, the region (three), the cluster and its maintenance windows: one request each.
    assert arm.count(maintenance_configurations_path(SUB, RG, CLUSTER)) == 1
    assert len(arm.requests) == 6


def baseline_rows(capsys) -> dict[str, dict]:
    return {c["subject"].removeprefix(f"cluster {CLUSTER} "): c
            for c in json.loads(capsys.readouterr().out)["checks"] if c["check"] == "baseline"}


def test_an_upgrade_channel_without_its_maintenance_window_is_a_finding_with_the_command_that_adds_it(
        arm, tmp_path, capsys):
    serve_region(arm, SUB, RG, CLUSTER, pools=OWN_POOLS)
    # upgradeChannel patch and nodeOSUpgradeChannel NodeImage both upgrade; only the node OS channel has a window.
    serve_existing_cluster(arm, SUB, RG, CLUSTER, windows=StubResponse(200, arm_maintenance_windows(
        SUB, RG, CLUSTER, "aksManagedNodeOSUpgradeSchedule")))

    assert main(["preflight", existing(tmp_path), "--json"]) == 0  # a warning: the cluster is its owners'

    rows = baseline_rows(capsys)
    assert list(rows) == ["maintenanceConfigurations/aksManagedAutoUpgradeSchedule"]
    row = rows["maintenanceConfigurations/aksManagedAutoUpgradeSchedule"]
    assert row["verdict"] == "warn"
    assert row["detail"].startswith(
        "maintenanceConfigurations/aksManagedAutoUpgradeSchedule is missing, gpushare's baseline is weekly, Sunday "
        "02:00 UTC for 4 hours: autoUpgradeProfile.upgradeChannel is patch, so AKS applies Kubernetes version "
        "upgrades at any time")
    assert row["fix"] == (f"az aks maintenanceconfiguration add --resource-group {RG} --cluster-name {CLUSTER} "
                          "--name aksManagedAutoUpgradeSchedule --schedule-type Weekly --day-of-week Sunday "
                          "--interval-weeks 1 --start-time 02:00 --duration 4 --utc-offset +00:00")
    assert arm.count(maintenance_configurations_path(SUB, RG, CLUSTER)) == 1
    assert len(arm.requests) == 6


def test_a_channel_that_upgrades_nothing_needs_no_window_and_one_the_baseline_turns_on_does(arm, tmp_path, capsys):
    serve_region(arm, SUB, RG, CLUSTER, pools=OWN_POOLS)
    cluster = arm_existing_cluster(SUB, RG, CLUSTER)
    cluster["properties"]["autoUpgradeProfile"] = {"upgradeChannel": "none", "nodeOSUpgradeChannel": "SecurityPatch"}
    serve_existing_cluster(arm, SUB, RG, CLUSTER, cluster, StubResponse(200, {"value": []}))

    assert main(["preflight", existing(tmp_path), "--json"]) == 0

    rows = baseline_rows(capsys)
    assert sorted(rows) == ["autoUpgradeProfile.upgradeChannel",
                            "maintenanceConfigurations/aksManagedAutoUpgradeSchedule",
                            "maintenanceConfigurations/aksManagedNodeOSUpgradeSchedule"]
    # SecurityPatch is at the baseline but upgrades nodes, so it needs its window; the channel that is off needs its
    # window before the fix above turns it on.
    assert "nodeOSUpgradeChannel is SecurityPatch, so AKS applies node image upgrades at any time" in \
        rows["maintenanceConfigurations/aksManagedNodeOSUpgradeSchedule"]["detail"]
    assert "once autoUpgradeProfile.upgradeChannel is set to the baseline's channel" in \
        rows["maintenanceConfigurations/aksManagedAutoUpgradeSchedule"]["detail"]
    assert "--name aksManagedNodeOSUpgradeSchedule --schedule-type Weekly" in \
        rows["maintenanceConfigurations/aksManagedNodeOSUpgradeSchedule"]["fix"]


def test_maintenance_windows_that_cannot_be_read_exit_as_other_failed_reads_with_the_role(arm, tmp_path, capsys):
    serve_region(arm, SUB, RG, CLUSTER, pools=OWN_POOLS)
    serve_existing_cluster(arm, SUB, RG, CLUSTER, windows=StubResponse(403, arm_error(
        "AuthorizationFailed", "does not have authorization to perform action 'Microsoft.ContainerService/"
                               "managedClusters/maintenanceConfigurations/read'")))

    assert main(["preflight", existing(tmp_path)]) == 4

    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"error: could not read the maintenance configurations of AKS cluster {CLUSTER} "
                          f"(resource group {RG}, subscription {SUB}): permission denied (HTTP 403 "
                          "AuthorizationFailed")
    assert "managedClusters/maintenanceConfigurations/read', which the built-in Reader role has" in err
    assert "Traceback" not in err
    assert arm.count(maintenance_configurations_path(SUB, RG, CLUSTER)) == 1  # a 403 is not retried


def test_preflight_existing_prints_each_missing_window_with_its_fix(arm, monkeypatch, capsys):
    """The example stack `stacks/Pulumi.existing.yaml`, by name, as its comment says to run it."""
    a100 = "Standard_NC24ads_A100_v4"
    skus = vm_sizes(arm_vm_sku(a100, "StandardNCADSA100v4Family", 24, REGION, gpus=1))
    quota = [*usages(), arm_usage("StandardNCADSA100v4Family", "Standard NCADS_A100_v4 Family vCPUs", 0, 96)]
    serve_region(arm, SUB, RG, CLUSTER, pools=OWN_POOLS, skus=skus, quota=quota)
    serve_existing_cluster(arm, SUB, RG, CLUSTER, arm_existing_cluster(SUB, RG, CLUSTER, subnet_id=NODES),
                           StubResponse(200, {"value": []}))
    arm.route(NODES, StubResponse(200, arm_subnet(NODES, "10.1.0.0/24", 8)))
    arm.route(GPU, StubResponse(200, arm_subnet(GPU, "10.1.1.0/24", 0)))
    arm.route(role_assignments_path(GPU), StubResponse(200, {"value": []}))  # the VNet's grant is inherited
    monkeypatch.chdir(Path(__file__).parents[2])

    assert main(["preflight", "existing"]) == 0

    out = capsys.readouterr().out
    for schedule in ("aksManagedAutoUpgradeSchedule", "aksManagedNodeOSUpgradeSchedule"):
        assert (f"  baseline cluster {CLUSTER} maintenanceConfigurations/{schedule}: az aks maintenanceconfiguration "
                f"add --resource-group {RG} --cluster-name {CLUSTER} --name {schedule} --schedule-type Weekly "
                "--day-of-week Sunday --interval-weeks 1 --start-time 02:00 --duration 4 --utc-offset +00:00") in out
    assert out.rstrip().endswith("All checks passed")


def test_missing_existing_cluster_is_one_failed_check_naming_cluster_and_group(arm, tmp_path, capsys):
    missing = StubResponse(404, arm_error("ResourceNotFound", "not found"))
    serve_region(arm, SUB, RG, CLUSTER, pools=missing)
    arm.route(managed_cluster_id(SUB, RG, CLUSTER), missing)

    assert main(["preflight", existing(tmp_path)]) == 1

    out, err = capsys.readouterr()
    assert f"AKS cluster {CLUSTER} not found in resource group {RG} (subscription {SUB})" in out
    assert out.rstrip().endswith("1 check(s) failed") and "vm-size" not in out  # nothing else is worth checking
    assert err.startswith("error: preflight: 1 check failed") and f"cluster {CLUSTER} (resource group {RG})" in err
    assert "Traceback" not in err
    assert arm.count(maintenance_configurations_path(SUB, RG, CLUSTER)) == 0  # no cluster, no windows to read


def test_a_stack_pool_named_like_an_unmanaged_pool_is_refused_with_the_import_command(arm, tmp_path):
    arm.route(f"{managed_cluster_id(SUB, RG, CLUSTER)}/agentPools", OWN_POOLS)
    stack = load_stack_file(Path(existing(tmp_path, pool_name="apps")))

    deployed = read_live(SUB, RG, CLUSTER, credential=StaticTokenCredential(), **arm.client_kwargs())
    report = evaluate(stack, deployed, "azure")

    (violation,) = report.violations
    assert (violation.pool, violation.field) == ("apps", "pool")
    pool_id = f"{managed_cluster_id(SUB, RG, CLUSTER)}/agentPools/apps"
    assert "gpushare did not create it (no gpushare.io/pool label)" in violation.message
    assert "another name" in violation.message
    assert ("echo '{\"resources\":[{\"type\":\"gpushare:pool:GpuNodePool\",\"name\":\"apps\",\"component\":true},"
            "{\"type\":\"azure-native:containerservice:AgentPool\",\"name\":\"apps-agentpool\","
            f"\"id\":\"{pool_id}\",\"parent\":\"apps\"}}]}}' > import-apps.json && pulumi import --stack existing "
            "--file import-apps.json") in violation.message
    assert f"az aks nodepool update -g {RG} --cluster-name {CLUSTER} -n apps --labels gpushare.io/pool=apps" \
        in violation.message
    # The cluster's other pool (`system`) is not the stack's and not gpushare's: left alone.
    assert [v.pool for v in report.violations] == ["apps"]


def subnet_stack(tmp_path) -> str:
    network = f"    network: {{subnetId: {NODES}}}\n"
    return existing_cluster_stack(tmp_path, cluster_extra=network, pool_extra=f", subnetId: {GPU}")


def test_missing_subnet_fails(arm, tmp_path, capsys):
    serve_region(arm, SUB, RG, CLUSTER)  # the cluster does not exist yet
    arm.route(NODES, StubResponse(200, arm_subnet(NODES, "10.1.0.0/24", 0)))
    arm.route(GPU, StubResponse(404, arm_error("NotFound", "Resource snet-gpu not found")))

    assert main(["preflight", subnet_stack(tmp_path), "--json"]) == 1

    rows = {c["subject"]: c for c in json.loads(capsys.readouterr().out)["checks"] if c["check"] == "subnet"}
    assert rows["vnet-spoke/snet-gpu"]["verdict"] == "fail"
    assert rows["vnet-spoke/snet-gpu"]["detail"] == f"subnet {GPU} does not exist (or this identity cannot see it)"
    assert rows["vnet-spoke/snet-nodes"]["verdict"] == "pass"
    assert arm.count(NODES) == arm.count(GPU) == 1


def test_subnet_too_small_for_the_pools_max_nodes_says_what_it_counts(arm, tmp_path, capsys):
    serve_region(arm, SUB, RG, CLUSTER)
    arm.route(NODES, StubResponse(200, arm_subnet(NODES, "10.1.0.0/24", 0)))
    # /29: 8 addresses - 5 Azure reserves - 1 in use = 2 free, for a pool that can grow to 8 nodes.
    arm.route(GPU, StubResponse(200, arm_subnet(GPU, "10.1.1.0/29", 1)))

    assert main(["preflight", subnet_stack(tmp_path), "--json"]) == 1

    (row,) = [c for c in json.loads(capsys.readouterr().out)["checks"] if c["subject"] == "vnet-spoke/snet-gpu"]
    assert row["verdict"] == "fail"
    assert row["detail"] == ("10.1.1.0/29: 8 addresses - 5 Azure reserves - 1 in use = 2 free; the pools can add 8 "
                             "nodes (t4ts 8), one address each with Azure CNI Overlay: short by 6")
    assert "larger subnet" in row["fix"]


def test_a_service_range_overlapping_the_subnet_fails_once_the_subnet_is_read(arm, tmp_path, capsys):
    serve_region(arm, SUB, RG, CLUSTER)
    arm.route(NODES, StubResponse(200, arm_subnet(NODES, "10.0.0.0/22", 0)))  # inside the default 10.0.0.0/16
    arm.route(GPU, StubResponse(200, arm_subnet(GPU, "10.1.1.0/24", 0)))

    assert main(["preflight", subnet_stack(tmp_path), "--json"]) == 1

    rows = {c["subject"]: c for c in json.loads(capsys.readouterr().out)["checks"] if c["check"] == "subnet"}
    assert rows["vnet-spoke/snet-nodes"]["detail"] == "10.0.0.0/22 overlaps the cluster's serviceCidr 10.0.0.0/16"
    assert "network.serviceCidr" in rows["vnet-spoke/snet-nodes"]["fix"]
    assert rows["vnet-spoke/snet-gpu"]["verdict"] == "pass"


def test_existing_clusters_pools_without_subnet_id_count_against_its_system_pools_subnet(arm, tmp_path, capsys):
    serve_region(arm, SUB, RG, CLUSTER, pools=OWN_POOLS)
    serve_existing_cluster(arm, SUB, RG, CLUSTER, arm_existing_cluster(SUB, RG, CLUSTER, subnet_id=NODES))
    # /28: 16 - 5 reserved - 8 in use (the cluster's own 3 + 5 nodes) = 3 free, for a pool that can grow to 8.
    arm.route(NODES, StubResponse(200, arm_subnet(NODES, "10.1.0.0/28", 8)))

    assert main(["preflight", existing(tmp_path), "--json"]) == 1

    (row,) = [c for c in json.loads(capsys.readouterr().out)["checks"] if c["check"] == "subnet"]
    assert (row["subject"], row["verdict"]) == ("vnet-spoke/snet-nodes", "fail")
    assert row["detail"].startswith("10.1.0.0/28: 16 addresses - 5 Azure reserves - 8 in use = 3 free; the pools can "
                                    "add 8 nodes (t4ts 8)")
    assert arm.count(NODES) == 1


def test_a_service_principal_cluster_fails_preflight_when_a_pool_names_a_subnet(arm, tmp_path, capsys):
    serve_region(arm, SUB, RG, CLUSTER, pools=OWN_POOLS)
    document = arm_existing_cluster(SUB, RG, CLUSTER, subnet_id=NODES)
    document.pop("identity")
    document["properties"]["servicePrincipalProfile"] = {"clientId": "9a8b7c6d-0000-4e8a-9c61-7f3b2a9d4e10"}
    serve_existing_cluster(arm, SUB, RG, CLUSTER, document)
    arm.route(NODES, StubResponse(200, arm_subnet(NODES, "10.1.0.0/24", 8)))
    arm.route(GPU, StubResponse(200, arm_subnet(GPU, "10.1.1.0/24", 0)))

    assert main(["preflight", existing(tmp_path, pool_extra=f", subnetId: {GPU}"), "--json"]) == 1

    (row,) = [c for c in json.loads(capsys.readouterr().out)["checks"] if c["check"] == "identity"]
    assert row["verdict"] == "fail"
    assert row["detail"] == (f"cluster {CLUSTER} authenticates to Azure with service principal "
                             "9a8b7c6d-0000-4e8a-9c61-7f3b2a9d4e10 (servicePrincipalProfile.clientId), not a managed "
                             "identity: it has no principal ID, so gpushare cannot grant it Network Contributor on "
                             "the subnets the pools name (vnet-spoke/snet-gpu)")
    assert row["fix"].startswith(f"move the cluster to a managed identity: az aks update -g {RG} -n {CLUSTER} "
                                 "--enable-managed-identity")


def test_the_system_pools_subnet_is_found_by_its_mode_not_its_place_in_the_list(arm, tmp_path, capsys):
    """`agentPoolProfiles` lists the cluster's pools in no documented order: a user pool in a subnet of its own may come
    first, and the GPU pool still joins (and is counted against) the system pool's subnet."""
    apps = f"{VNET}/subnets/snet-apps"
    document = arm_existing_cluster(SUB, RG, CLUSTER, subnet_id=NODES)
    document["properties"]["agentPoolProfiles"] = [
        {"name": "apps", "mode": "User", "vmSize": "Standard_D16ds_v5", "vnetSubnetID": apps},
        {"name": "system", "mode": "System", "vmSize": "Standard_D8ds_v5", "vnetSubnetID": NODES}]
    serve_region(arm, SUB, RG, CLUSTER, pools=OWN_POOLS)
    serve_existing_cluster(arm, SUB, RG, CLUSTER, document)
    arm.route(NODES, StubResponse(200, arm_subnet(NODES, "10.1.0.0/24", 8)))

    main(["preflight", existing(tmp_path), "--json"])

    (row,) = [c for c in json.loads(capsys.readouterr().out)["checks"] if c["check"] == "subnet"]
    assert (row["subject"], row["verdict"]) == ("vnet-spoke/snet-nodes", "pass")
    assert arm.count(apps) == 0
