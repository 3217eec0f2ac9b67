"""Deployed pools from a saved file: `az aks nodepool list -o json` output, or an ARM list body."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from gpushare.azure.deployed import DeployedFileError, DeployedPool, read_file
from gpushare.azure.guard.guard_runs import check_file
from gpushare.model.catalog import MigProfile
from tests.azure.guard_builders import MIG_POOL, T4_POOL, gpu_stack

FIXTURES = Path(__file__).parent.parent / "fixtures" / "deployed"
CLI_OUTPUT = FIXTURES / "nodepool-list.json"
ARM_BODY = FIXTURES / "agentpools-arm.json"

EXPECTED = [
    DeployedPool(
        name="a100mig",
        vm_size="Standard_ND96asr_v4",
        gpu_instance_profile="MIG1g",
        gpu_driver=None,
        availability_zones=("1", "2"),
        os_sku="Ubuntu",
        node_labels={
            "gpushare.io/pool": "a100mig",
            "gpushare.io/sharing": "none",
            "nvidia.com/device-plugin.config": "a100mig",
        },
        node_taints=("nvidia.com/gpu=present:NoSchedule",),
        count=2,
        mode="User",
        orchestrator_version="1.33.3",
        os_disk_type="Managed", os_disk_size_gb=256, max_pods=110,
    ),
    DeployedPool(
        name="system",
        vm_size="Standard_D4ds_v5",
        availability_zones=("1", "2", "3"),
        os_sku="Ubuntu",
        node_taints=("CriticalAddonsOnly=true:NoSchedule",),
        count=2,
        mode="System",
        orchestrator_version="1.33.3",
        os_disk_type="Managed", os_disk_size_gb=128, max_pods=110,
    ),
    DeployedPool(
        name="t4ts",
        vm_size="Standard_NC4as_T4_v3",
        gpu_driver="Install",
        os_sku="Ubuntu",
        node_labels={
            "gpushare.io/pool": "t4ts",
            "gpushare.io/sharing": "time-slicing-4",
            "nvidia.com/device-plugin.config": "t4ts",
        },
        node_taints=("nvidia.com/gpu=present:NoSchedule",),
        count=1,
        min_count=0,
        max_count=3,
        enable_auto_scaling=True,
        mode="User",
        orchestrator_version="1.33.3",
        os_disk_type="Managed", os_disk_size_gb=128, max_pods=110,
    ),
]


def origin(pools: list[DeployedPool], resource_groups: str, with_resource_group: bool) -> list[DeployedPool]:
    """EXPECTED with each pool's `id` (spelt `resourcegroups` by the CLI, `resourceGroups` by ARM) and, from the
    CLI only, `resourceGroup`."""
    return [
        dataclasses.replace(
            p,
            id=f"/subscriptions/3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3/{resource_groups}/rg-gpushare-dev/providers/"
               f"Microsoft.ContainerService/managedClusters/gpushare-dev/agentPools/{p.name}",
            resource_group="rg-gpushare-dev" if with_resource_group else None,
        )
        for p in pools
    ]


CLI_EXPECTED = origin(EXPECTED, "resourcegroups", with_resource_group=True)
ARM_EXPECTED = origin(EXPECTED, "resourceGroups", with_resource_group=False)


@pytest.mark.parametrize("path, expected", [(CLI_OUTPUT, CLI_EXPECTED), (ARM_BODY, ARM_EXPECTED)],
                         ids=["az-cli-output", "arm-body"])
def test_reads_every_pool(path, expected):
    assert read_file(path) == expected


@pytest.mark.parametrize("price, expected", [(-1, -1.0), (-1.0, -1.0), (0.98765, 0.98765), (None, None)])
def test_reads_a_spot_pools_price_whole_or_not(tmp_path, price, expected):
    """AKS prints `spotMaxPrice: -1.0`; a hand-written file may say -1."""
    saved = tmp_path / "deployed.json"
    saved.write_text(json.dumps(one_pool(scaleSetPriority="Spot", spotMaxPrice=price)))
    (pool,) = read_file(saved)
    assert (pool.scale_set_priority, pool.spot_max_price) == ("Spot", expected)


def test_reads_utf16_file_written_by_windows_powershell(tmp_path):
    # Windows PowerShell 5's `>` writes UTF-16 with a byte-order mark.
    saved = tmp_path / "pools.json"
    saved.write_bytes(CLI_OUTPUT.read_text().encode("utf-16"))

    assert read_file(saved) == CLI_EXPECTED


def test_check_file_passes_the_stack_as_deployed():
    report = check_file(gpu_stack(MIG_POOL, T4_POOL), CLI_OUTPUT)

    assert (report.source, report.violations, report.notes, report.warnings) == (str(CLI_OUTPUT), (), (), ())


def test_check_file_rejects_a_changed_mig_profile():
    config = gpu_stack(dataclasses.replace(MIG_POOL, mig=MigProfile.MIG2G), T4_POOL)

    report = check_file(config, ARM_BODY)

    assert [(v.pool, v.field, v.deployed, v.wanted) for v in report.violations] == [
        ("a100mig", "gpuInstanceProfile", "MIG1g", "MIG2g")
    ]
    assert report.source == str(ARM_BODY)


def one_pool(**changes) -> list:
    """The CLI fixture's T4 pool alone, with `changes` (None is JSON null, which the CLI prints for unset keys)."""
    pool = json.loads(CLI_OUTPUT.read_text())[2]
    pool.update(changes)
    return [pool]


MALFORMED = {
    "not-json": ('[{"name": "t4ts",', "not valid JSON (line 1, column 18: Expecting property name"),
    "object-without-value": ({"pools": []}, "expected a JSON list of node pools (or an ARM body with a `value` list), "
                                            "got an object"),
    "empty-list": ([], "the list has no node pools, but every AKS cluster has at least its system pool"),
    "empty-arm-value": ({"value": []}, "the list has no node pools"),
    "pool-not-object": (["t4ts"], "node pool [0]: expected an object, got a string"),
    "name-missing": (one_pool(name=None), "node pool [0]: `name` must be a non-empty string, got null"),
    "vm-size-missing": (one_pool(vmSize=None), "node pool [0] t4ts: `vmSize` is missing"),
    "count-not-number": (one_pool(count="1"), "node pool [0] t4ts: `count` must be an integer, got a string"),
    "count-boolean": (one_pool(count=True), "node pool [0] t4ts: `count` must be an integer, got a boolean"),
    "zones-not-strings": (one_pool(availabilityZones=[1, 2]),
                          "node pool [0] t4ts: `availabilityZones` must be a list of strings, got a number in it"),
    "label-not-string": (one_pool(nodeLabels={"gpushare.io/pool": 7}),
                         "node pool [0] t4ts: `nodeLabels.gpushare.io/pool` must be a string, got a number"),
    "gpu-profile-not-object": (one_pool(gpuProfile="None"),
                               "node pool [0] t4ts: `gpuProfile` must be an object, got a string"),
    "gpu-driver-not-string": (one_pool(gpuProfile={"driver": False}),
                              "node pool [0] t4ts gpuProfile: `driver` must be a string, got a boolean"),
    "autoscale-not-boolean": (one_pool(enableAutoScaling="true"),
                              "node pool [0] t4ts: `enableAutoScaling` must be true or false, got a string"),
    "spot-price-not-number": (one_pool(scaleSetPriority="Spot", spotMaxPrice="-1"),
                              "node pool [0] t4ts: `spotMaxPrice` must be a number, got a string"),
    "arm-properties-not-object": ({"value": [{"name": "t4ts", "properties": []}]},
                                  "node pool [0] t4ts: `properties` must be an object, got a list"),
}


@pytest.mark.parametrize("content, problem", MALFORMED.values(), ids=MALFORMED.keys())
def test_rejects_malformed_file(tmp_path, content, problem):
    saved = tmp_path / "deployed.json"
    saved.write_text(content if isinstance(content, str) else json.dumps(content))

    with pytest.raises(DeployedFileError) as caught:
        read_file(saved)

    assert caught.value.exit_code == 2
    message = str(caught.value)
    assert message.startswith(f"{saved}: {problem}")
    assert message.endswith(
        "; save it with: az aks nodepool list --resource-group RG --cluster-name NAME -o json > FILE"
    )


def test_rejects_missing_file(tmp_path):
    missing = tmp_path / "nope.json"

    with pytest.raises(DeployedFileError) as caught:
        read_file(missing)

    assert str(caught.value).startswith(f"{missing}: cannot read it: No such file or directory; save it with")


def test_rejects_binary_file(tmp_path):
    saved = tmp_path / "deployed.json"
    saved.write_bytes(b"\x80\x81\x82 not text")

    with pytest.raises(DeployedFileError) as caught:
        read_file(saved)

    assert str(caught.value).startswith(f"{saved}: not a text file (invalid start byte)")


def saved_from(tmp_path, document) -> Path:
    saved = tmp_path / "pools.json"
    saved.write_text(json.dumps(document))
    return saved


def test_check_file_refuses_pools_of_another_cluster(tmp_path):
    pools = json.loads(CLI_OUTPUT.read_text())
    for pool in pools:
        pool["id"] = pool["id"].replace("managedClusters/gpushare-dev", "managedClusters/gpushare-prod")

    with pytest.raises(DeployedFileError) as caught:
        check_file(gpu_stack(MIG_POOL, T4_POOL), saved_from(tmp_path, pools))

    assert caught.value.exit_code == 2
    assert str(caught.value) == (
        f"{tmp_path / 'pools.json'}: node pool a100mig is from AKS cluster gpushare-prod in resource group "
        "rg-gpushare-dev (its `id`), but stack dev deploys cluster gpushare-dev in resource group rg-gpushare-dev; "
        "the guard would compare the stack with the wrong cluster. Save this stack's pools: az aks nodepool list "
        "--resource-group rg-gpushare-dev --cluster-name gpushare-dev -o json > FILE"
    )


def test_check_file_refuses_an_arm_body_from_another_resource_group(tmp_path):
    body = json.loads(ARM_BODY.read_text())
    for pool in body["value"]:
        pool["id"] = pool["id"].replace("resourceGroups/rg-gpushare-dev", "resourceGroups/rg-other")

    with pytest.raises(DeployedFileError) as caught:
        check_file(gpu_stack(MIG_POOL, T4_POOL), saved_from(tmp_path, body))

    assert "is from AKS cluster gpushare-dev in resource group rg-other (its `id`)" in str(caught.value)


def test_check_file_refuses_a_resource_group_without_an_id(tmp_path):
    pools = json.loads(CLI_OUTPUT.read_text())
    for pool in pools:
        del pool["id"]
        pool["resourceGroup"] = "rg-elsewhere"

    with pytest.raises(DeployedFileError) as caught:
        check_file(gpu_stack(MIG_POOL, T4_POOL), saved_from(tmp_path, pools))

    assert "is from an AKS cluster in resource group rg-elsewhere (its `resourceGroup`)" in str(caught.value)


def test_check_file_matches_cluster_and_group_case_insensitively(tmp_path):
    pools = json.loads(CLI_OUTPUT.read_text())
    for pool in pools:
        pool["id"] = pool["id"].replace("rg-gpushare-dev", "RG-GPUSHARE-DEV").replace("gpushare-dev/", "GpuShare-Dev/")
        pool["resourceGroup"] = "RG-GPUSHARE-DEV"

    assert check_file(gpu_stack(MIG_POOL, T4_POOL), saved_from(tmp_path, pools)).violations == ()


def test_check_file_accepts_a_hand_written_file_without_origin(tmp_path):
    pools = json.loads(CLI_OUTPUT.read_text())
    for pool in pools:
        del pool["id"], pool["resourceGroup"]

    assert check_file(gpu_stack(MIG_POOL, T4_POOL), saved_from(tmp_path, pools)).violations == ()
