"""The mock engine's alias shortcuts send the engine exactly the aliases the SDK's own code sends."""

from __future__ import annotations

import contextlib

import pulumi
import pytest
from pulumi_azure_native import containerservice

from gpushare.components.cluster_access import ClusterAccess, ClusterAccessArgs
from gpushare.render import mock_engine
from gpushare.render.mock_engine import RecordingMonitor, run_pulumi


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
