"""`plan`'s warnings on a correct stack: each one where it helps, none where the stack already took care of it."""

from __future__ import annotations

import json
from pathlib import Path

from gpushare.cli import main
from gpushare.kubernetes.tenant_objects import tenant_manifests
from gpushare.stackfile.config import load_stack_file
from tests.kubernetes.apiserver_admission import plugin_cluster
from tests.stack_files import write_stack

ROOT = Path(__file__).resolve().parents[2]
SAME_NAME = "all advertise nvidia.com/gpu but"
MIG_ADVICE = "use MIG for multi-tenant work"


def dev_with(tmp_path, tail: str) -> Path:
    """stacks/Pulumi.dev.yaml (t4ts time-slicing and t4mps MPS, both `nvidia.com/gpu`: t4ts autoscales) plus `tail`."""
    path = write_stack(tmp_path, (ROOT / "stacks" / "Pulumi.dev.yaml").read_text() + tail, "Pulumi.devt.yaml")
    return path


def plan_warnings(path: Path, capsys) -> list[str]:
    assert main(["plan", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["warnings"]


def gpu_pod(pool: str | None) -> dict:
    spec = {"containers": [{"name": "c", "image": "busybox",
                            "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "1", "memory": "1Gi"}}}]}
    if pool:
        spec["nodeSelector"] = {"gpushare.io/pool": pool}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def test_without_tenants_both_warnings_stay(tmp_path, capsys):
    warnings = plan_warnings(dev_with(tmp_path, ""), capsys)
    assert any(SAME_NAME in w for w in warnings)
    assert any(w.startswith("pool t4ts:") and MIG_ADVICE in w for w in warnings)


TENANT_ON_T4TS = "  gpushare:tenants:\n    - {name: vision, pools: [t4ts]}\n"


def test_a_tenant_pins_every_gpu_pod_to_one_pool_so_the_same_name_is_moot(tmp_path, capsys):
    path = dev_with(tmp_path, TENANT_ON_T4TS)
    warnings = plan_warnings(path, capsys)
    assert not any(SAME_NAME in w for w in warnings), warnings
    # Why it is moot: the real policies refuse a GPU pod that names no pool, in the tenant's namespace and outside.
    cluster = plugin_cluster(tenant_manifests(load_stack_file(path)))
    for namespace in ("vision", "default"):
        assert not cluster.admit(gpu_pod(None), namespace).allowed
    assert cluster.admit(gpu_pod("t4mps"), "default").allowed
    assert not cluster.admit(gpu_pod("t4ts"), "default").allowed


def test_a_pool_dedicated_to_one_tenant_gets_no_multi_tenant_advice(tmp_path, capsys):
    warnings = plan_warnings(dev_with(tmp_path, TENANT_ON_T4TS), capsys)
    t4ts = [w for w in warnings if w.startswith("pool t4ts: time-slicing")]
    assert t4ts == ["pool t4ts: time-slicing gives 4 pods per GPU with no memory or fault isolation between them "
                    "(all of them tenant vision's: the pool is dedicated to it)"]


def test_a_pool_two_tenants_share_keeps_the_advice(tmp_path, capsys):
    tail = "  gpushare:tenants:\n    - {name: vision, pools: [t4ts]}\n    - {name: nlp, pools: [t4ts, t4mps]}\n"
    warnings = plan_warnings(dev_with(tmp_path, tail), capsys)
    assert any(w.startswith("pool t4ts:") and MIG_ADVICE in w for w in warnings)


AZURE_LINUX_GPU = """config:
  azure-native:location: westeurope
  gpushare:cluster:
    name: c1
    upgrades: {{channel: patch, nodeOs: {node_os}}}
  gpushare:operator: {{driver: aks}}
  gpushare:pools:
    - {{name: t4, vmSize: Standard_NC4as_T4_v3, osSku: {os_sku}}}
"""


def test_security_patch_does_not_patch_azure_linux_gpu_nodes(tmp_path, capsys):
    """aks-docs auto-upgrade-node-os-image.md: "Azure Linux doesn't support this channel on GPU-enabled VMs"."""
    def warnings(node_os: str, os_sku: str) -> list[str]:
        path = write_stack(tmp_path, AZURE_LINUX_GPU.format(node_os=node_os, os_sku=os_sku),
                           f"Pulumi.{node_os}-{os_sku}.yaml")
        return [w for w in plan_warnings(path, capsys) if "nodeOs SecurityPatch" in w]

    (warning,) = warnings("SecurityPatch", "AzureLinux")
    assert "pools t4 get no automatic security patches" in warning and "use nodeOs: NodeImage" in warning
    assert warnings("SecurityPatch", "Ubuntu") == [] and warnings("NodeImage", "AzureLinux") == []


ROUTED = """config:
  azure-native:location: westeurope
  gpushare:cluster:
    name: c1
    network:
      subnetId: /subscriptions/3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/spoke/subnets/nodes
      outboundType: {outbound}
    apiServer: {{authorizedIpRanges: [203.0.113.0/24]}}
  gpushare:pools:
    - {{name: t4, vmSize: Standard_NC4as_T4_v3}}
"""


def test_authorized_ranges_behind_your_own_egress_ask_for_its_address(tmp_path, capsys):
    """aks-docs api-server-authorized-ip-ranges.md: AKS adds only the load balancer's outbound IP; list the
    cluster egress IP (firewall, NAT gateway)."""
    def warnings(outbound: str) -> list[str]:
        path = write_stack(tmp_path, ROUTED.format(outbound=outbound), f"Pulumi.{outbound}.yaml")
        return [w for w in plan_warnings(path, capsys) if "authorizedIpRanges with network.outboundType" in w]

    (warning,) = warnings("userDefinedRouting")
    assert "list that egress address among authorizedIpRanges" in warning
    assert warnings("loadBalancer") == []
