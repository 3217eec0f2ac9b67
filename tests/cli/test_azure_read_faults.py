"""Faulty Azure answers against `gpushare preflight` (issue 39): the real SDK clients, through the local ARM stub in
ARM's shapes, each answer turned into what a broken server or network does. Every one ends in one message naming the
read (exit 4) within the command's read deadline; the command runs in a child process bounded by a timeout, so a
hang fails the test instead of stalling the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from email.utils import formatdate
from pathlib import Path

import pytest

from gpushare.azure import remote_read
from gpushare.cli import main
from tests.azure.preflight_region import serve_region, usages
from tests.azure_stub import ArmStub, StubResponse, arm_error, reached_arm
from tests.cli.test_preflight_command import CLUSTER, RG, SUB, preflight_stack
from tests.https_stub import Fault
from tests.read_faults import CHILD_TIMEOUT, one_read_error

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 4
"""Far above DEADLINE, far below what the faults took before (2 to 7 minutes)."""
READS = {
    "pools": f"could not read the node pools of AKS cluster {CLUSTER}",
    "skus": "could not list the VM sizes offered in westeurope",
    "usages": "could not read the vCPU quota in westeurope",
    "versions": "could not list the Kubernetes versions AKS offers in westeurope",
}

# The CLI in a child process, signed in with the tests' static credential (no identity provider to reach).
_RUN = """
import sys
import azure.identity
from tests.azure_stub import StubDefaultCredential
azure.identity.DefaultAzureCredential = StubDefaultCredential
from gpushare.cli import main, run_as_command
run_as_command(lambda: main(sys.argv[1:]))
"""


def gpushare(arm: ArmStub, *argv: str, **environ: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(GPUSHARE_ARM_ENDPOINT=arm.base_url, REQUESTS_CA_BUNDLE=arm.ca_path, AZURE_SUBSCRIPTION_ID=SUB,
               **environ)
    return subprocess.run([sys.executable, "-c", _RUN, *argv], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT)


def one_error(result: subprocess.CompletedProcess, read: str, *fragments: str) -> str:
    return one_read_error(result, f"error: {READS[read]}", *fragments)


@pytest.fixture
def arm():
    with ArmStub() as stub:
        yield stub


def nested(depth: int = 5000) -> str:
    return '{"value": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("read", READS)
def test_deeply_nested_json_from_any_read_is_one_error(arm, tmp_path, read):
    paths = serve_region(arm, SUB, RG, CLUSTER)
    arm.route(paths[read], StubResponse(200, nested()))

    one_error(gpushare(arm, "preflight", preflight_stack(tmp_path)), read,
              f"nests JSON deeper than {remote_read.MAX_JSON_DEPTH} levels")


@pytest.mark.parametrize("retry_after", ["3600", formatdate(2_000_000_000, usegmt=True), "1e400"])
def test_a_retry_after_past_the_deadline_is_not_waited_for(arm, tmp_path, retry_after):
    """Capped at 10 s, the wait would still end past a 5 s deadline: the command stops at once instead."""
    paths = serve_region(arm, SUB, RG, CLUSTER)
    arm.route(paths["usages"], StubResponse(429, arm_error("TooManyRequests", "slow down"),
                                            {"Retry-After": retry_after}))

    result = gpushare(arm, "preflight", preflight_stack(tmp_path), "--read-deadline", "5")
    one_error(result, "usages", "the server asked to retry later, after the read deadline of 5 s "
                                "(set by --read-deadline)")


@pytest.mark.parametrize("retry_after, waited", [
    ("3600", 10.0), (formatdate(2_000_000_000, usegmt=True), 10.0), ("1e400", 10.0), ("nan", 1.0), ("-3", 0.0)],
    ids=["an-hour", "http-date", "overflow", "nan", "negative"])
def test_retry_after_is_capped_then_the_read_is_retried(tmp_path, monkeypatch, capsys, retry_after, waited):
    """Within the deadline a throttled read is retried after what Retry-After asks, at most 10 s (azure-core itself
    would sleep an hour, or raise OverflowError on 1e400); NaN is no time, so the backoff's first step (1 s)."""
    slept: list[float] = []
    monkeypatch.setattr(remote_read, "_sleep", slept.append)
    with reached_arm(monkeypatch, SUB) as stub:
        paths = serve_region(stub, SUB, RG, CLUSTER)
        stub.route(paths["usages"], StubResponse(429, arm_error("TooManyRequests", "slow down"),
                                                 {"Retry-After": retry_after}),
                   StubResponse(200, {"value": usages()}))
        assert main(["preflight", preflight_stack(tmp_path)]) == 0, capsys.readouterr().err
        assert stub.count(paths["usages"]) == 2
    assert slept == ([waited] if waited else [])


@pytest.mark.parametrize("fault", [Fault.SILENT, Fault.DRIP], ids=["never-answers", "drips-a-byte-a-second"])
def test_a_server_that_never_finishes_answering_ends_at_the_deadline(arm, tmp_path, fault):
    paths = serve_region(arm, SUB, RG, CLUSTER)
    arm.route(paths["skus"], StubResponse(200, {"value": []}, fault=fault, drip_seconds=1.0))

    result = gpushare(arm, "preflight", preflight_stack(tmp_path), "--read-deadline", str(DEADLINE))
    one_error(result, "skus", f"no complete answer within the read deadline of {DEADLINE} s (set by --read-deadline)",
              "raise it with --read-deadline SECONDS or GPUSHARE_READ_DEADLINE=SECONDS")


def test_the_deadline_can_be_set_in_the_environment_for_the_program_too(arm, tmp_path):
    paths = serve_region(arm, SUB, RG, CLUSTER)
    arm.route(paths["pools"], StubResponse(200, {"value": []}, fault=Fault.SILENT))

    result = gpushare(arm, "preflight", preflight_stack(tmp_path), GPUSHARE_READ_DEADLINE="2")
    one_error(result, "pools", "no complete answer within the read deadline of 2 s (set by GPUSHARE_READ_DEADLINE)")


@pytest.mark.parametrize("value", ["soon", "0", "-5", "nan", "99999"])
def test_a_deadline_that_is_not_seconds_is_a_setting_error(arm, tmp_path, value):
    result = gpushare(arm, "preflight", preflight_stack(tmp_path), GPUSHARE_READ_DEADLINE=value)
    assert result.returncode == 2 and result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: GPUSHARE_READ_DEADLINE={value!r}: the read deadline is a number of "
                                    "seconds above 0 and at most 3600")
    assert arm.requests == [], "nothing is read with a deadline that is not one"


def test_a_body_cut_short_is_one_error(arm, tmp_path):
    paths = serve_region(arm, SUB, RG, CLUSTER)
    arm.route(paths["versions"], StubResponse(200, {"values": []}, fault=Fault.CUT_SHORT))

    one_error(gpushare(arm, "preflight", preflight_stack(tmp_path)), "versions", "the answer was cut short")


def test_a_body_larger_than_any_arm_answer_is_refused_as_it_arrives(arm, tmp_path):
    from gpushare.azure.sdk_bounds import MAX_ARM_BODY_BYTES

    paths = serve_region(arm, SUB, RG, CLUSTER)
    huge = b'{"value": ["' + b"x" * (MAX_ARM_BODY_BYTES + 1) + b'"]}'
    arm.route(paths["skus"], StubResponse(200, huge))

    one_error(gpushare(arm, "preflight", preflight_stack(tmp_path)), "skus", "the answer is larger than 32 MiB")


@pytest.mark.parametrize("value", ["soon", "0", "inf"])
def test_a_read_deadline_option_that_is_not_seconds_is_a_usage_error(tmp_path, capsys, value):
    with pytest.raises(SystemExit) as exit_:
        main(["preflight", preflight_stack(tmp_path), "--read-deadline", value])
    assert exit_.value.code == 2
    assert f"--read-deadline={value!r}: the read deadline is a number of seconds above 0" in capsys.readouterr().err
