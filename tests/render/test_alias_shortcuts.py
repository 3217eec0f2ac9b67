"""The mock engine's alias shortcuts send the engine exactly the aliases the SDK's own code sends."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pulumi
import pytest
from pulumi_azure_native import containerservice

from gpushare.components.cluster_access import ClusterAccess, ClusterAccessArgs
from gpushare.render import mock_engine
from gpushare.render.mock_engine import RecordingMonitor, run_pulumi
from gpushare.stackfile.config import encode_engine_config, read_stack_file

DEV_STACK = Path(__file__).resolve().parents[2] / "stacks" / "Pulumi.dev.yaml"


def program():
    # A typed class's type aliases (110 on an AgentPool), a named alias under another parent, and a typed
    # Kubernetes provider with no type alias.
    containerservice.AgentPool("pool", agent_pool_name="pool", resource_name_="c1", resource_group_name="rg")
    ClusterAccess("cluster-access", ClusterAccessArgs(
        resource_group_name="rg", cluster_name="c1", cluster_id="/subscriptions/s/c1",
        provider_aliases=[pulumi.Alias(name="old-provider", parent=pulumi.create_urn("old", "gpushare:x:Old"))]))
    pulumi.CustomResource("test:index:Thing", "thing", {}, pulumi.ResourceOptions(
        aliases=["urn:pulumi:dev::gpushare::test:index:Thing::before", pulumi.Alias(name="earlier"),
                 pulumi.Alias(type_="test:index:Old", parent=None)]))


def sent_aliases(monkeypatch: pytest.MonkeyPatch, shortcuts: bool) -> dict[str, list[bytes]]:
    sent: dict[str, list[bytes]] = {}
    register = RecordingMonitor.RegisterResource

    def recording(self, request):
        sent[request.name] = [alias.SerializeToString() for alias in request.aliases]
        return register(self, request)

    monkeypatch.setattr(RecordingMonitor, "RegisterResource", recording)
    if not shortcuts:
        monkeypatch.setattr(mock_engine, "_alias_shortcuts", contextlib.nullcontext)
    run_pulumi(program)
    return sent


def test_every_registration_carries_the_aliases_the_sdk_would_send(monkeypatch):
    with_shortcuts = sent_aliases(monkeypatch, shortcuts=True)
    monkeypatch.undo()
    by_the_sdk = sent_aliases(monkeypatch, shortcuts=False)
    assert with_shortcuts == by_the_sdk
    assert len(by_the_sdk["pool"]) > 100 and len(by_the_sdk["thing"]) == 3 and by_the_sdk["cluster-access-provider"]



def plan_of_dev_stack(monkeypatch: pytest.MonkeyPatch, traced: bool) -> tuple[list, int]:
    """The dev stack's recording, and how many of the program's registrations carried a stack trace (the root stack
    registers in `set_mocks`, before the program runs)."""
    traces = []
    register = RecordingMonitor.RegisterResource

    def recording(self, request):
        if request.type != "pulumi:pulumi:Stack":
            traces.append(len(request.stackTrace.frames))
        return register(self, request)

    monkeypatch.setattr(RecordingMonitor, "RegisterResource", recording)
    if traced:
        monkeypatch.setattr(mock_engine, "_untraced_registrations", contextlib.nullcontext)
    recorded = mock_engine.run_program("dev", encode_engine_config(read_stack_file(DEV_STACK).config)).resources
    # By URN: the order registrations complete in follows the event loop's scheduling.
    return sorted(recorded, key=lambda r: r.urn), sum(1 for frames in traces if frames)


def test_registrations_record_the_same_without_their_stack_traces(monkeypatch):
    """The mock engine leaves each registration's stack trace empty, because no monitor reads it: what a plan
    records is what it records with the SDK's traces."""
    untraced, with_trace = plan_of_dev_stack(monkeypatch, traced=False)
    monkeypatch.undo()
    traced, sdk_traces = plan_of_dev_stack(monkeypatch, traced=True)
    assert with_trace == 0 and sdk_traces == len(traced) > 10
    assert untraced == traced
