"""A managed stack's reads for `gpushare usage` under faults (issue 39): the workspace's ARM GET through the SDK client
and its Prometheus query endpoint through azure-core's pipeline, both bounded by `gpushare.azure.sdk_bounds`. Each
fault is one exit-4 error naming the read, within a short deadline."""

from __future__ import annotations

import pytest

from gpushare.azure.monitor_workspace import PROMETHEUS_SCOPES, read_query_endpoint
from gpushare.azure.remote_read import ReadDeadline
from gpushare.errors import AzureReadError
from gpushare.kubernetes.prometheus_api import PrometheusReadError
from gpushare.kubernetes.workspace_prometheus import WorkspacePrometheusReader
from gpushare.model.stack import AzureEnvironment
from tests.azure_stub import ArmStub, StaticTokenCredential, arm_error, monitor_workspace_id
from tests.https_stub import Fault, HttpsStub, StubResponse

SUB = "3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3"
WORKSPACE_ID = monitor_workspace_id(SUB, "monitoring", "gpus")
DEADLINE = 2.0


class QueryStub(HttpsStub):
    def no_route(self, method: str, path: str) -> StubResponse:
        return StubResponse(404, "")

    def answer(self, *responses: StubResponse) -> None:
        self._set_route("/api/v1/query", responses)


def query(stub: QueryStub) -> list:
    reader = WorkspacePrometheusReader(stub.url, deadline=ReadDeadline(DEADLINE, "--read-deadline"),
                                       credential=StaticTokenCredential(),
                                       scope=PROMETHEUS_SCOPES[AzureEnvironment.PUBLIC],
                                       transport_kwargs={"connection_verify": stub.ca_path, "use_env_settings": False})
    return reader.query("sum by (pool) (up)", 1_795_996_800, ("pool",))


@pytest.mark.parametrize("answer, message", [
    (StubResponse(200, {}, fault=Fault.SILENT), f"no complete answer within the read deadline of {DEADLINE:g} s"),
    (StubResponse(200, {"status": "success", "data": {"resultType": "vector", "result": []}}, fault=Fault.DRIP),
     f"no complete answer within the read deadline of {DEADLINE:g} s"),
    (StubResponse(429, "", {"Retry-After": "3600"}), "the server asked to retry later, after the read deadline"),
    (StubResponse(200, "[" * 5000 + "]" * 5000), "nests JSON deeper than 64 levels"),
    (StubResponse(200, {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}}]}}),
     "has no pool label"),
], ids=["never-answers", "drips", "retry-after-an-hour", "nested", "no-pool-label"])
def test_the_query_endpoint_under_faults_is_one_error_within_the_deadline(answer, message):
    with QueryStub() as stub:
        stub.answer(answer)
        with pytest.raises(PrometheusReadError, match=message) as error:
            query(stub)
    assert error.value.exit_code == 4 and f"{stub.url}/api/v1/query" in str(error.value).split(": ")[0]


@pytest.mark.parametrize("answer, message", [
    (StubResponse(200, '{"properties": ' + "{\"a\": " * 3000 + "1" + "}" * 3000 + "}"),
     "nests JSON deeper than 64 levels"),
    (StubResponse(200, {}, fault=Fault.SILENT), f"no complete answer within the read deadline of {DEADLINE:g} s"),
    (StubResponse(429, arm_error("TooManyRequests", "slow down"), {"Retry-After": "1e400"}),
     "the server asked to retry later"),
], ids=["nested", "never-answers", "retry-after-overflow"])
def test_the_workspace_read_under_faults_is_one_error_within_the_deadline(answer, message):
    with ArmStub() as arm:
        arm.route(WORKSPACE_ID, answer)
        with pytest.raises(AzureReadError, match=message) as error:
            read_query_endpoint(WORKSPACE_ID, credential=StaticTokenCredential(),
                                deadline=ReadDeadline(DEADLINE, "--read-deadline"), **arm.client_kwargs())
    assert str(error.value).startswith(f"could not read Azure Monitor workspace {WORKSPACE_ID}")
