"""`gpushare verify` against a Kubernetes API server that answers badly (issue 39): the real `kubernetes` client
against the local HTTPS stub, its node list turned into a fault. Each is one exit-4 error naming the API server and
the call, each call within the read deadline (GPUSHARE_READ_DEADLINE); the command runs in a child process bounded
by a timeout, so a hang fails the test instead of stalling the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpushare.azure.remote_read import MAX_JSON_DEPTH
from tests.cli.test_verify_command import DEV_STACK, NODES
from tests.https_stub import Fault
from tests.kube_stub import KubeStub, StubResponse, object_list
from tests.read_faults import CHILD_TIMEOUT, one_read_error
from tests.stack_files import write_stack

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 3


@pytest.fixture
def kube():
    with KubeStub() as stub:
        yield stub


def verify(kube: KubeStub, tmp_path: Path) -> subprocess.CompletedProcess:
    stack = write_stack(tmp_path, DEV_STACK, "Pulumi.dev.yaml")
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(GPUSHARE_READ_DEADLINE=str(DEADLINE))
    return subprocess.run([sys.executable, "-m", "gpushare", "verify", str(stack), "--kubeconfig",
                           str(kube.kubeconfig(tmp_path))], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT)


@pytest.mark.parametrize("answer, message", [
    (StubResponse(200, object_list("NodeList"), fault=Fault.SILENT),
     f"no complete answer within the read deadline of {DEADLINE} s (set by GPUSHARE_READ_DEADLINE)"),
    (StubResponse(200, object_list("NodeList"), fault=Fault.DRIP),
     f"no complete answer within the read deadline of {DEADLINE} s (set by GPUSHARE_READ_DEADLINE)"),
    (StubResponse(200, object_list("NodeList"), fault=Fault.CUT_SHORT), "the answer was cut short after"),
    (StubResponse(200, '{"items": ' + "[" * 5000 + "]" * 5000 + "}"),
     f"the answer nests JSON deeper than {MAX_JSON_DEPTH} levels"),
    (StubResponse(200, "<html>login</html>"), "answered list nodes with a body that is not JSON"),
], ids=["never-answers", "drips", "cut-short", "nested", "not-json"])
def test_a_bad_answer_to_a_call_is_one_error_within_the_deadline(kube, tmp_path, answer, message):
    kube.route("GET", NODES, answer)
    result = verify(kube, tmp_path)
    first = one_read_error(result, (f"error: {kube.server}", f"error: the API server {kube.server}")).splitlines()[0]
    assert "list nodes" in first and message in first, first
