"""`python -m gpushare preflight STACK [--json]` end to end: a stack file, the environment a user has (subscription,
endpoint, CA bundle), the real SDK clients against the local ARM stub, exit codes and output."""

from __future__ import annotations

import json

import pytest

from gpushare.cli import main
from tests.azure.preflight_region import REGION, T4, T4_FAMILY, serve_region, usages
from tests.azure_stub import StubResponse, arm_agent_pool, arm_error, reached_arm
from tests.stack_files import write_stack

SUB = "3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3"
FILE_SUB = "0b9e1c2d-3a4f-4e5d-8c7b-6a5f4e3d2c1b"
CLUSTER = "gpushare-pf"
RG = f"{CLUSTER}-rg"


def stack_yaml(pools: int, extra: str = "") -> str:
    pool_lines = "".join(f"    - {{name: t4p{i}, vmSize: {T4}, count: 1}}\n" for i in range(pools))
    return (f"config:\n  azure-native:location: {REGION}\n{extra}  gpushare:cluster:\n    name: {CLUSTER}\n"
            # The fake region's calendar is older than gpushare's: 1.33 is LTS-only now, so the stack takes LTS.
            f"    kubernetesVersion: \"1.33\"\n    tier: Premium\n    supportPlan: AKSLongTermSupport\n"
            f"  gpushare:pools:\n{pool_lines}")


@pytest.fixture
def arm(monkeypatch):
    with reached_arm(monkeypatch, SUB) as stub:
        yield stub


def preflight_stack(tmp_path, pools: int = 1, extra: str = "") -> str:
    return str(write_stack(tmp_path, stack_yaml(pools, extra), "Pulumi.pf.yaml"))


def test_passing_stack_prints_the_table_and_exits_0(arm, tmp_path, capsys):
    serve_region(arm, SUB, RG, CLUSTER)

    assert main(["preflight", preflight_stack(tmp_path)]) == 0

    out, err = capsys.readouterr()
    assert err == ""
    assert out.startswith(f"Preflight for stack pf ({tmp_path}/Pulumi.pf.yaml) in {REGION}, subscription {SUB}; "
                          "cluster does not exist yet\n\nCHECK")
    assert f"vm-size             pool t4p0 ({T4})" in out
    assert "kubernetes-version  1.33" in out
    assert out.rstrip().endswith("All checks passed")


@pytest.mark.parametrize("pools", [1, 20])
def test_four_calls_whatever_the_pool_count(arm, tmp_path, capsys, pools):
    paths = serve_region(arm, SUB, RG, CLUSTER, quota=usages(**{T4_FAMILY: (0, 100)}))

    assert main(["preflight", preflight_stack(tmp_path, pools), "--json"]) == 0

    report = json.loads(capsys.readouterr().out)
    assert len([c for c in report["checks"] if c["check"] == "vm-size"]) == pools + 1
    assert {path: arm.count(path) for path in paths.values()} == {path: 1 for path in paths.values()}
    assert len(arm.requests) == 4


def test_a_failed_check_exits_1_with_json_on_stdout_and_the_findings_on_stderr(arm, tmp_path, capsys):
    serve_region(arm, SUB, RG, CLUSTER)  # T4 family: 64 free, 20 pools x 4 vCPUs need 80

    assert main(["preflight", preflight_stack(tmp_path, 20), "--json"]) == 1

    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["passed"] is False
    (failure,) = [c for c in report["checks"] if c["verdict"] == "fail"]
    assert (failure["check"], failure["subject"]) == ("quota", T4_FAMILY)
    assert failure["detail"].endswith("64 free (limit 64, in use 0): short by 16 vCPUs in westeurope")
    assert "value=80" in failure["fix"]
    assert err == (f"error: preflight: 1 check failed for stack pf in westeurope (subscription {SUB}); `pulumi up` "
                   f"would fail on it: quota {T4_FAMILY} (see the fix for each in the output)\n")
    assert "Traceback" not in err


def test_subscription_from_the_stack_file(arm, tmp_path, capsys):
    serve_region(arm, FILE_SUB, RG, CLUSTER)

    assert main(["preflight", preflight_stack(tmp_path, extra=f"  azure-native:subscriptionId: {FILE_SUB}\n")]) == 0
    assert {r.path.split("/")[2] for r in arm.requests} == {FILE_SUB}


def test_no_subscription_exits_2_before_any_call(arm, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID")

    assert main(["preflight", preflight_stack(tmp_path)]) == 2

    out, err = capsys.readouterr()
    assert out == ""
    assert "no Azure subscription to read: set `azure-native:subscriptionId: <id>`" in err
    assert arm.requests == []


def test_invalid_stack_exits_2(arm, tmp_path, capsys):
    path = write_stack(tmp_path, stack_yaml(1).replace("count: 1", "count: -1") + "  gpushare:preflight: maybe\n",
                       "Pulumi.bad.yaml")

    assert main(["preflight", str(path)]) == 2

    err = capsys.readouterr().err
    assert "2 configuration errors" in err and "gpushare:preflight" in err
    assert arm.requests == []


def test_existing_cluster_counts_only_growth(arm, tmp_path, capsys):
    running = StubResponse(200, {"value": [
        arm_agent_pool(SUB, RG, CLUSTER, "system", vmSize="Standard_D4ds_v5", count=2, mode="System"),
        *(arm_agent_pool(SUB, RG, CLUSTER, f"t4p{i}", vmSize=T4, count=1, mode="User") for i in range(20)),
    ]})
    # All 20 nodes already run: usage holds their 80 vCPUs of the 84 allowed.
    serve_region(arm, SUB, RG, CLUSTER, pools=running, quota=usages(**{T4_FAMILY: (80, 84)}))

    assert main(["preflight", preflight_stack(tmp_path, 20), "--json"]) == 0

    report = json.loads(capsys.readouterr().out)
    assert report["clusterExists"] is True
    (t4,) = [c for c in report["checks"] if c["subject"] == T4_FAMILY]
    assert t4["detail"].startswith("needs 0 vCPUs more than the cluster runs now")


@pytest.mark.parametrize("status, code, words", [
    (401, "InvalidAuthenticationToken", "Azure rejected the credentials (HTTP 401 InvalidAuthenticationToken"),
    (403, "AuthorizationFailed", "Grant Reader on the cluster or its resource group"),
])
def test_azure_refusing_exits_4_saying_what_to_do(arm, tmp_path, capsys, status, code, words):
    paths = serve_region(arm, SUB, RG, CLUSTER)
    arm.route(paths["pools"], StubResponse(status, arm_error(code, "refused")))

    assert main(["preflight", preflight_stack(tmp_path)]) == 4

    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"error: could not read the node pools of AKS cluster {CLUSTER}")
    assert words in err and "Traceback" not in err


def test_region_read_forbidden_names_reader_on_the_subscription(arm, tmp_path, capsys):
    paths = serve_region(arm, SUB, RG, CLUSTER)
    arm.route(paths["skus"], StubResponse(403, arm_error("AuthorizationFailed", "refused")))

    assert main(["preflight", preflight_stack(tmp_path)]) == 4

    assert "the built-in Reader role on the subscription has all of them" in capsys.readouterr().err


def test_throttled_read_is_retried(arm, tmp_path, capsys):
    paths = serve_region(arm, SUB, RG, CLUSTER)
    arm.route(paths["usages"], StubResponse(429, arm_error("TooManyRequests", "slow down"), {"Retry-After": "1"}),
              StubResponse(200, {"value": usages()}))

    assert main(["preflight", preflight_stack(tmp_path)]) == 0
    assert arm.count(paths["usages"]) == 2



# A run whose credential chain has nothing to offer, with azure-identity's own credentials and logging: the
# chain logs its multi-line WARNING through logging's last-resort handler (pytest's log capture would hide that
# in-process), so the command runs in a child process with no AZURE_* variables and no `az` on PATH.
_NO_CREDENTIALS_RUN = """
import sys
import azure.identity
from azure.identity import AzureCliCredential, ChainedTokenCredential, EnvironmentCredential
from gpushare.cli import main

def unconfigured(**kwargs):
    return ChainedTokenCredential(EnvironmentCredential(), AzureCliCredential())

azure.identity.DefaultAzureCredential = unconfigured
sys.exit(main(["preflight", sys.argv[1]]))
"""


def test_no_credentials_is_one_short_line_with_the_fix_first(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    empty_path = tmp_path / "bin"
    empty_path.mkdir()
    environ = {key: value for key, value in os.environ.items() if not key.startswith(("AZURE_", "ARM_", "MSI_",
                                                                                        "IDENTITY_"))}
    environ.update(PATH=str(empty_path), AZURE_SUBSCRIPTION_ID=SUB, GPUSHARE_ARM_ENDPOINT="https://127.0.0.1:9")
    result = subprocess.run([sys.executable, "-c", _NO_CREDENTIALS_RUN, preflight_stack(tmp_path)], env=environ,
                            cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=60)

    assert result.returncode == 4 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: no usable Azure credentials: log in with `az login`")
    assert f"could not read the node pools of AKS cluster {CLUSTER}" in lines[0]
    assert len(lines[0]) < 500
