"""An existing cluster in `plan --json`: its settings as read (`--deployed`) or marked unknown, never gpushare's
defaults; a pool without `subnetId` shows the subnet of the cluster's system pool as read, or says it is that
subnet, never an ID the mock engine made up; a pool in another VNet than the deployed system pool is warned of."""

from __future__ import annotations

import json

from gpushare.cli import main
from gpushare.render.mock_engine import MOCK_EXISTING_SUBNET
from gpushare.review.cluster_facts import SYSTEM_POOL_SUBNET
from tests.stack_files import write_stack

SUB = "3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3"
VNET = f"/subscriptions/{SUB}/resourceGroups/rg-network/providers/Microsoft.Network/virtualNetworks/vnet-spoke"
READ_SUBNET = f"{VNET}/subnets/snet-system"
CLUSTER_ID = f"/subscriptions/{SUB}/resourcegroups/rg-platform/providers/Microsoft.ContainerService/managedClusters/" \
             "platform-aks"


def system_pool(subnet: str = READ_SUBNET) -> dict:
    """One System pool as `az aks nodepool list -o json` prints it."""
    return {"name": "sys", "vmSize": "Standard_D8ds_v5", "mode": "System", "count": 3, "osSku": "Ubuntu",
            "currentOrchestratorVersion": "1.32.5", "vnetSubnetId": subnet, "id": f"{CLUSTER_ID}/agentPools/sys",
            "resourceGroup": "rg-platform"}


def plan_json(capsys, *args: str) -> dict:
    code = main(["plan", "existing", "--json", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def agent_pool_subnet(document: dict, pool: str) -> str | None:
    (resource,) = [r for r in document["resources"] if r["name"] == f"{pool}-agentpool"]
    return resource["inputs"].get("vnetSubnetID")


def test_offline_the_existing_clusters_settings_are_unknown_not_gpushares_defaults(capsys):
    document = plan_json(capsys)
    cluster = document["cluster"]
    assert cluster["systemPool"] == {"vmSize": None, "count": None}, "not 2 x Standard_D4ds_v5"
    assert cluster["tier"] is None and cluster["upgrades"]["channel"] is None
    assert cluster["upgrades"]["window"] == {"day": None, "start": None, "hours": None}
    assert cluster["apiServer"]["authorizedIpRanges"] is None
    assert cluster["sources"] == {"systemPool": "unknown", "kubernetesVersion": "unknown", "tier": "unknown",
                                  "upgrades": "unknown", "apiServer": "unknown"}
    t4ts = next(p for p in document["pools"] if p["name"] == "t4ts")
    assert (t4ts["subnetId"], t4ts["subnetSource"]) == (SYSTEM_POOL_SUBNET, "unknown")
    assert agent_pool_subnet(document, "t4ts") == SYSTEM_POOL_SUBNET
    assert MOCK_EXISTING_SUBNET not in json.dumps(document), "no made-up subnet ID anywhere in the plan"


def test_with_deployed_pools_the_plan_shows_the_system_pool_and_its_subnet_as_read(capsys, tmp_path):
    deployed = tmp_path / "pools.json"
    deployed.write_text(json.dumps([system_pool()]))
    document = plan_json(capsys, "--deployed", str(deployed))
    cluster = document["cluster"]
    assert cluster["systemPool"] == {"vmSize": "Standard_D8ds_v5", "count": 3}
    assert cluster["systemPools"] == [{"name": "sys", "vmSize": "Standard_D8ds_v5", "count": 3,
                                       "subnetId": READ_SUBNET}]
    assert cluster["kubernetesVersion"] == "1.32.5"
    assert cluster["sources"]["systemPool"] == "deployed" and cluster["sources"]["tier"] == "unknown"
    t4ts = next(p for p in document["pools"] if p["name"] == "t4ts")
    assert (t4ts["subnetId"], t4ts["subnetSource"]) == (READ_SUBNET, "deployed")
    assert agent_pool_subnet(document, "t4ts") == READ_SUBNET, "the program sends the subnet read"
    a100 = next(p for p in document["pools"] if p["name"] == "a100mig")
    assert a100["subnetSource"] == "stack"
    assert not any("VNet" in w for w in document["warnings"])


def test_a_pool_in_another_vnet_than_the_deployed_system_pool_is_warned_of(capsys, tmp_path):
    deployed = tmp_path / "pools.json"
    other = f"/subscriptions/{SUB}/resourceGroups/rg-network/providers/Microsoft.Network/virtualNetworks/vnet-hub"
    deployed.write_text(json.dumps([system_pool(f"{other}/subnets/snet-system")]))
    document = plan_json(capsys, "--deployed", str(deployed))
    assert ("pool a100mig's subnet is in VNet vnet-spoke, but the cluster's system pool (as deployed) is in "
            f"vnet-hub: AKS puts every node pool of a cluster in one VNet and refuses the pool; use a subnet of "
            f"{other}") in document["warnings"]


def test_a_cluster_gpushare_creates_marks_its_settings_as_the_stacks(capsys):
    code = main(["plan", "dev", "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and set(document["cluster"]["sources"].values()) == {"stack"}
    assert document["cluster"]["tier"] == "Standard" and document["cluster"]["systemPool"]["count"] == 2


POOL_SETTINGS_STACK = """\
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: settings}
  gpushare:pools:
    - name: t4spot
      vmSize: Standard_NC4as_T4_v3
      count: 1
      labels: {team: vision}
      taints: [dedicated=batch:NoSchedule]
      osDisk: {sizeGb: 128, type: Managed}
      maxPods: 30
      tags: {costCenter: ml-42}
      spot: {maxPrice: 0.3, eviction: Deallocate}
    - name: plain
      vmSize: Standard_NC4as_T4_v3
      count: 1
"""


def test_the_text_plan_shows_each_pools_own_settings_when_set(capsys, tmp_path):
    stack = write_stack(tmp_path, POOL_SETTINGS_STACK, "Pulumi.settings.yaml")
    assert main(["plan", str(stack)]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("Pool settings (those set; AKS's defaults otherwise):")
    (t4spot,) = [line for line in lines[start:] if line.startswith("  t4spot: ")]
    for shown in ("labels team=vision", "dedicated=batch:NoSchedule", "kubernetes.azure.com/scalesetpriority=spot",
                  "OS disk 128 GB Managed", "maxPods 30", "tags costCenter=ml-42",
                  "Spot at most $0.3/node-hour, evicted nodes Deallocate"):
        assert shown in t4spot, shown
    assert not any(line.startswith("  plain: ") for line in lines[start:]), "nothing set, nothing shown"


def test_the_text_plan_of_an_existing_cluster_shows_its_system_pools_as_read_or_not_read(capsys, tmp_path):
    assert main(["plan", "existing"]) == 0
    out = capsys.readouterr().out
    assert "its system pools, tier and upgrades: not read offline" in out
    assert "t4ts: taints nvidia.com/gpu=present:NoSchedule" in out and "subnet the system pool's subnet" in out
    deployed = tmp_path / "pools.json"
    deployed.write_text(json.dumps([system_pool()]))
    assert main(["plan", "existing", "--deployed", str(deployed)]) == 0
    out = capsys.readouterr().out
    assert "its system pools (as deployed): 3 x Standard_D8ds_v5, Kubernetes 1.32.5" in out
    assert f"subnet {READ_SUBNET} (as deployed)" in out


def test_plan_program_of_an_existing_cluster_shows_the_subnet_read_from_deployed(capsys, tmp_path):
    """`plan --program DIR STACK --deployed FILE`: the user's program's pool joins the subnet the file reports."""
    directory = tmp_path / "infra"
    directory.mkdir()
    (directory / "__main__.py").write_text(
        "from gpushare.components import deploy\n"
        "deploy({'azure-native:location': 'westeurope',\n"
        "        'gpushare:cluster': {'name': 'platform-aks', 'resourceGroup': 'rg-platform', 'existing': True},\n"
        "        'gpushare:pools': [{'name': 't4ts', 'vmSize': 'Standard_NC4as_T4_v3', 'count': 1}]})\n")
    deployed = tmp_path / "pools.json"
    deployed.write_text(json.dumps([system_pool()]))
    code = main(["plan", "--program", str(directory), "ml", "--json", "--deployed", str(deployed)])
    out, err = capsys.readouterr()
    assert code == 0, err
    document = json.loads(out)
    assert document["pools"][0]["subnetId"] == READ_SUBNET and agent_pool_subnet(document, "t4ts") == READ_SUBNET
    assert document["cluster"]["systemPool"] == {"vmSize": "Standard_D8ds_v5", "count": 3}
    assert document["guard"] is not None
