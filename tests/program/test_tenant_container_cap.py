"""A tenant's namespace default for containers that state no CPU or memory is capped (`DEFAULT_CONTAINER_CAP`): on
a pool whose fair share per GPU is larger (one A100 on 24 vCPUs: 18 CPUs), a CPU-only sidecar must not default to
the whole share. Through `plan`: the LimitRange the program registers and the plan's tenant entry."""

from __future__ import annotations

import json

from gpushare.cli import main
from gpushare.kubernetes.tenants import pool_share
from gpushare.stackfile.config import load_stack_file
from tests.stack_files import write_stack

STACK = """\
config:
  azure-native:location: westeurope
  gpushare:cluster: {name: gpushare-cap, kubernetesVersion: "1.36"}
  gpushare:pools:
    - {name: a100, vmSize: Standard_NC24ads_A100_v4, count: 1}
  gpushare:tenants:
    - {name: vision, pools: [a100]}
"""


def test_a_share_above_one_cpu_is_capped_to_cpu_1(tmp_path, capsys):
    path = write_stack(tmp_path, STACK, "Pulumi.cap.yaml")
    share = pool_share(load_stack_file(path), "a100")
    assert share["cpu"] not in ("1", "1000m") and int(share["cpu"]) > 1  # the share itself is well above the cap

    assert main(["plan", str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    (tenant,) = document["tenants"]
    assert tenant["containerDefaults"] == {"cpu": "1", "memory": "4Gi"}
    limit_range = next(r for r in document["resources"] if r["type"] == "kubernetes:core/v1:LimitRange")
    (limit,) = limit_range["inputs"]["spec"]["limits"]
    assert limit["default"] == limit["defaultRequest"] == {"cpu": "1", "memory": "4Gi"}
