"""A config change must not pull a device-plugin config out from under nodes that still name it.

The ConfigMap updates before the pools; until AKS has relabelled a pool, its nodes' `nvidia.com/device-plugin.config`
label names the old key, and a device-plugin pod starting there fails with "specified config ... does not exist"
(k8s-device-plugin config-manager). So the real program keeps every key a deployed pool still names, its text read
back from the stack's last completed update (a StackReference to the same stack), and prunes it once the pool's
labels have moved on.
"""

from __future__ import annotations

import json

import pytest

from gpushare.render.mock_engine import GpushareMocks, run_program
from gpushare.sharing.node_labels import pool_node_labels
from gpushare.sharing.operator_values import operator_plan
from gpushare.sharing.retained_configs import CONFIG_DATA_OUTPUT
from gpushare.stackfile.config import encode_engine_config, load_stack_file, read_stack_file
from gpushare.stackfile.project import resolve_stack_file
from tests.program.test_guard_in_program import nodepool_list

STACK = "contoso-prod"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
LABEL = "nvidia.com/device-plugin.config"
OLD_KEY = "a100mig-0badc0de"
OLD_TEXT = "version: v1\nflags:\n  migStrategy: single\n"


def run(tmp_path, label: str, previous: dict | None = None, monkeypatch=None):
    """The program as `pulumi preview` runs it after the stack's sharing changed: the deployed a100mig pool's
    nodes are labelled `label`."""
    stack = load_stack_file(resolve_stack_file(STACK))
    labels = {**pool_node_labels(stack, stack.pools[0]), LABEL: label}
    deployed = tmp_path / "nodepools.json"
    deployed.write_text(json.dumps(nodepool_list(nodeLabels=labels)))
    if previous is not None:
        monkeypatch.setattr(GpushareMocks, "stack_outputs", previous)
    raw = read_stack_file(resolve_stack_file(STACK)).config
    recording = run_program(STACK, encode_engine_config(raw), deployed=deployed)
    (config_map,) = recording.by_type(CONFIG_MAP)
    return recording, config_map.inputs["data"], operator_plan(stack).config_map_data


def test_a_key_a_deployed_pool_still_names_stays_with_its_recorded_text(tmp_path, monkeypatch):
    recording, data, desired = run(tmp_path, OLD_KEY, {CONFIG_DATA_OUTPUT: {OLD_KEY: OLD_TEXT, "other-1": "x"}},
                                   monkeypatch)
    assert data == {**desired, OLD_KEY: OLD_TEXT}  # only the key in use, not all the old data
    assert recording.exports[CONFIG_DATA_OUTPUT] == data  # what the next run reads back
    assert any(w.startswith(f"pool a100mig: its nodes still name device-plugin config {OLD_KEY}")
               for w in recording.warnings), recording.warnings


def test_the_key_is_pruned_once_the_pool_is_relabelled(tmp_path, monkeypatch):
    stack = load_stack_file(resolve_stack_file(STACK))
    current = pool_node_labels(stack, stack.pools[0])[LABEL]
    recording, data, desired = run(tmp_path, current, {CONFIG_DATA_OUTPUT: {OLD_KEY: OLD_TEXT}}, monkeypatch)
    assert data == desired
    assert not any("device-plugin config" in w and "pool a100mig" in w for w in recording.warnings)


def test_a_key_no_earlier_run_recorded_cannot_be_kept_and_says_what_will_fail(tmp_path, monkeypatch):
    recording, data, desired = run(tmp_path, OLD_KEY, {}, monkeypatch)
    assert data == desired
    (warning,) = [w for w in recording.warnings if OLD_KEY in w]
    assert f"specified config {OLD_KEY} does not exist" in warning and CONFIG_DATA_OUTPUT in warning


@pytest.mark.parametrize("preview", [True, False])
def test_the_stack_records_the_data_it_deploys(preview):
    raw = read_stack_file(resolve_stack_file(STACK)).config
    recording = run_program(STACK, encode_engine_config(raw), preview=preview)
    (config_map,) = recording.by_type(CONFIG_MAP)
    assert recording.exports[CONFIG_DATA_OUTPUT] == config_map.inputs["data"]
