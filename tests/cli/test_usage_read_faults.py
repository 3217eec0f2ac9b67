"""`gpushare usage` against a Prometheus HTTP API that answers in another shape than the documented instant vector, or
not at all (issue 39): a local HTTPS stub on `POST /api/v1/query`. Each ends in one message (exit 4) naming the
endpoint and where the answer differs, within the command's read deadline; the command runs in a child process
bounded by a timeout, so a hang fails the test instead of stalling the suite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpushare.azure.remote_read import MAX_JSON_DEPTH
from gpushare.kubernetes.prometheus_api import MAX_ANSWER_BYTES
from tests.https_stub import Fault, HttpsStub, StubResponse
from tests.read_faults import CHILD_TIMEOUT, one_read_error
from tests.showback.showback_scenario import STACK_FILE

ROOT = Path(__file__).resolve().parents[2]
QUERY = "/api/v1/query"
END = 1_795_996_800
DEADLINE = 4
NO_RULES = StubResponse(200, {"status": "success", "data": {"resultType": "vector", "result": []}})
"""The first query's answer (has the rule group recorded the window? no): the report goes on to the figures."""


def figures(result: object) -> StubResponse:
    return StubResponse(200, {"status": "success", "data": {"resultType": "vector", "result": result}})


class PrometheusStub(HttpsStub):
    def no_route(self, method: str, path: str) -> StubResponse:
        return StubResponse(404, {"status": "error", "errorType": "not_found", "error": f"no route {path}"})

    def answer(self, *responses: StubResponse) -> None:
        """The first query's answer is NO_RULES, then `responses` in order (the last repeats)."""
        self._set_route(QUERY, (NO_RULES, *responses))


@pytest.fixture
def prometheus():
    with PrometheusStub() as stub:
        yield stub


def usage(stub: PrometheusStub, *argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(SSL_CERT_FILE=stub.ca_path)
    return subprocess.run([sys.executable, "-m", "gpushare", "usage", str(STACK_FILE), "--prometheus", stub.url,
                           "--at", str(END), *argv], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT)


def one_error(result: subprocess.CompletedProcess, stub: PrometheusStub, *fragments: str) -> str:
    return one_read_error(result, f"error: {stub.url}{QUERY}: ", *fragments)


NOT_A_VECTOR = "is not a Prometheus instant vector: "


@pytest.mark.parametrize("answer, problem", [
    (StubResponse(200, []), "the body is a list, not an object"),
    (StubResponse(200, "\"ok\""), "the body is a string, not an object"),
    (StubResponse(200, {"status": "success", "data": []}), "`data` is a list, not an object"),
    (StubResponse(200, {"status": "success", "data": "vector"}), "`data` is a string, not an object"),
    (StubResponse(200, {"status": "success", "data": {"resultType": "matrix", "result": []}}),
     '`data.resultType` is "matrix", not "vector"'),
    (figures({}), "`data.result` is an object, not a list"),
    (figures(None), "`data.result` is null, not a list"),
    (figures(["t4ts"]), "`data.result[0]` is a string, not an object"),
    (figures([{"metric": {"pool": "t4ts"}}]), '`data.result[0]`.value is null, not [<time>, "<number>"]'),
    (figures([{"value": [END, "1"]}]), "`data.result[0]`.metric is null, not an object of label values"),
    (figures([{"metric": {"pool": 7}, "value": [END, "1"]}]),
     "`data.result[0]`.metric is an object, not an object of label values"),
    (figures([{"metric": {"namespace": "vision"}, "value": [END, "1"]}]),
     "`data.result[0]`.metric has no pool label, which the query aggregates by"),
    (figures([{"metric": {"pool": "t4ts"}, "value": [END, "lots"]}]), "`data.result[0]`.value's sample 'lots' is "
                                                                      "not a number"),
    (figures([{"metric": {"pool": "t4ts"}, "value": [END, 1.5]}]), '`data.result[0]`.value is [1795996800, 1.5]'),
    (StubResponse(200, {"status": "error", "errorType": "bad_data", "error": "parse error"}),
     'status is "error", not "success" (bad_data: parse error)'),
], ids=["list-body", "string-body", "data-list", "data-string", "matrix", "result-object", "result-null",
        "series-string", "no-value", "no-metric", "label-not-text", "no-pool-label", "value-not-numeric",
        "value-not-text", "status-error"])
def test_an_answer_of_another_shape_is_one_error_saying_where(prometheus, answer, problem):
    prometheus.answer(answer)
    err = one_error(usage(prometheus), prometheus, NOT_A_VECTOR + problem)
    assert "hint: is --prometheus (or gpushare:metrics.prometheus) the base URL of a Prometheus HTTP API" in err


def test_an_answer_that_is_not_json_is_one_error(prometheus):
    prometheus.answer(StubResponse(200, "<html>sign in</html>"))
    one_error(usage(prometheus), prometheus, "the answer is not JSON (b'<html>sign in</html>')")


def test_deep_nesting_is_one_error(prometheus):
    prometheus.answer(StubResponse(200, '{"status": "success", "data": ' + "[" * 5000 + "]" * 5000 + "}"))
    one_error(usage(prometheus), prometheus, f"nests JSON deeper than {MAX_JSON_DEPTH} levels")


def test_a_body_cut_short_is_one_error(prometheus):
    prometheus.answer(StubResponse(200, figures([]).body, fault=Fault.CUT_SHORT))
    one_error(usage(prometheus), prometheus, "the answer was cut short after")


def test_a_body_larger_than_any_aggregate_is_refused_as_it_arrives(prometheus):
    prometheus.answer(StubResponse(200, b'{"x": "' + b"x" * MAX_ANSWER_BYTES + b'"}'))
    one_error(usage(prometheus), prometheus, "the answer is larger than 16 MiB")


@pytest.mark.parametrize("fault", [Fault.SILENT, Fault.DRIP], ids=["never-answers", "drips-a-byte-a-second"])
def test_a_server_that_never_finishes_answering_ends_at_the_deadline(prometheus, fault):
    prometheus.answer(StubResponse(200, figures([]).body, fault=fault))
    one_error(usage(prometheus, "--read-deadline", str(DEADLINE)), prometheus,
              f"no complete answer within the read deadline of {DEADLINE} s (set by --read-deadline)")


def test_the_documented_shape_reports(prometheus):
    """The control: the same stub answering documented vectors (a pool's figure, NaN and +Inf left out)."""
    prometheus.answer(figures([{"metric": {"pool": "t4ts"}, "value": [END, "0.5"]},
                               {"metric": {"pool": "t4mps"}, "value": [END, "NaN"]},
                               {"metric": {"pool": "a100mig"}, "value": [END, "+Inf"]}]))
    result = usage(prometheus, "--json", "--read-deadline", str(DEADLINE))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["queries"] == 9
