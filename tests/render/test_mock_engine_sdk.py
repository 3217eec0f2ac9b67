"""The mock engine leans on Pulumi SDK internals (`gpushare/render/mock_engine.py`'s docstring lists them, at the
version requirements.txt pins): the installed SDK is that version, and each internal is still where the module
reaches for it, so an SDK upgrade fails here by name rather than as a wrong plan."""

from __future__ import annotations

import importlib.metadata
import inspect
import re
from pathlib import Path

from pulumi import resource as sdk_resource
from pulumi.runtime import mocks, rpc, settings
from pulumi.runtime import resource as resource_runtime
from pulumi.runtime.proto import alias_pb2, resource_pb2, source_pb2

from gpushare.render import mock_engine

ROOT = Path(__file__).resolve().parents[2]


def pinned_pulumi() -> str:
    pins = re.findall(r"^pulumi==(\S+)$", (ROOT / "requirements.txt").read_text(), re.MULTILINE)
    assert len(pins) == 1, pins
    return pins[0]


def test_the_docstring_names_the_pinned_sdk_and_it_is_the_installed_one():
    assert f"pulumi=={pinned_pulumi()}" in mock_engine.__doc__
    assert importlib.metadata.version("pulumi") == pinned_pulumi()


def test_every_internal_the_mock_engine_uses_is_there():
    for owner, name in [(mocks, "MockMonitor"), (mocks, "set_mocks"), (mocks, "test"), (mocks, "_ensure_event_loop"),
                        (rpc, "deserialize_properties"), (rpc, "is_rpc_secret"), (rpc, "unwrap_rpc_secret"),
                        (settings, "reset_options"), (settings, "get_root_resource"),
                        (sdk_resource, "collapse_alias_to_urn"), (resource_runtime, "prepare_aliases"),
                        (resource_runtime, "create_alias_spec"), (resource_runtime, "_get_stack_trace"),
                        (alias_pb2.Alias, "Spec"), (source_pb2, "StackTrace")]:
        assert hasattr(owner, name), f"{owner.__name__}.{name} is gone: re-check gpushare/render/mock_engine.py"
    assert {"monitor", "organization"} <= set(inspect.signature(mocks.set_mocks).parameters)
    fields = set(resource_pb2.RegisterResourceRequest.DESCRIPTOR.fields_by_name)
    assert {"type", "name", "custom", "object", "dependencies", "propertyDependencies", "protect", "parent",
            "provider", "ignoreChanges", "replaceOnChanges", "deleteBeforeReplace", "retainOnDelete",
            "aliases"} <= fields
