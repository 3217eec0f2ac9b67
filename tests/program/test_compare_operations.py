"""`compare` derives each pool's operation the way pulumi-azure-native plans it, from real `plan --json` output:
create-only inputs replace (with the destroy caution), inputs in the plan's `replaceOnChanges` replace, inputs in
`ignoreChanges` do not count."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from gpushare.cli import main
from gpushare.azure.agent_pool_request import CREATE_ONLY_REPLACED_BY_GPUSHARE
from gpushare.review import plan_compare
from gpushare.review.plan_compare import parse_plan, render_compare
from gpushare.stackfile.project import resolve_stack_file
from tests.stack_files import write_stack

DEV = resolve_stack_file("dev").read_text()
CAUTION = "> - **t4mps**: replace destroys the pool's nodes and every pod on them"


def plan_json(tmp_path, text: str, name: str) -> str:
    path = write_stack(tmp_path, text, f"Pulumi.{name}.yaml")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", str(path), "--json"]) == 0
    return out.getvalue()


def row(text: str, pool: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"| **{pool}** |"))
    return [cell.strip() for cell in line.strip("|").split(" | ")]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> str:
    return plan_json(tmp_path_factory.mktemp("base"), DEV, "dev")


def compare(base: str, head: str) -> str:
    return render_compare(parse_plan(base, "base.json"), parse_plan(head, "head.json"))


def test_a_vm_size_change_is_a_replace_with_the_destroy_caution(base, tmp_path):
    head = plan_json(tmp_path, DEV.replace("vmSize: Standard_NC8as_T4_v3", "vmSize: Standard_NC16as_T4_v3"), "dev")
    text = compare(base, head)
    assert row(text, "t4mps")[:3] == ["**t4mps**", "**replace**",
                                      "`vmSize: Standard_NC8as_T4_v3 -> Standard_NC16as_T4_v3`"]
    assert CAUTION in text and "[!CAUTION]" in text
    assert row(text, "t4ts")[1] == "same"


@pytest.mark.parametrize("edit, field", [
    (lambda text: text.replace("      count: 1", "      count: 1\n      zones: [\"1\"]"), "availabilityZones"),
    (lambda text: text.replace("    name: gpushare-dev\n", "    name: gpushare-dev\n  gpushare:operator: {driver: operator}\n"),
     "gpuProfile"),
], ids=["zones", "gpuProfile"])
def test_a_change_to_an_input_in_replace_on_changes_is_a_replace(base, tmp_path, edit, field):
    assert field in CREATE_ONLY_REPLACED_BY_GPUSHARE and field not in plan_compare.AZURE_NATIVE_REPLACE_KEYS
    head = plan_json(tmp_path, edit(DEV), "dev")
    assert field in json.dumps([r.get("replaceOnChanges") for r in json.loads(head)["resources"]])
    text = compare(base, head)
    assert row(text, "t4mps")[1] == "**replace**" and field in row(text, "t4mps")[2]
    assert CAUTION in text


def test_a_plan_where_only_an_ignored_count_changes_is_same(base):
    doc = json.loads(base)
    pool = next(r for r in doc["resources"] if r["name"] == "t4ts-agentpool")
    assert pool["ignoreChanges"] == ["count", "osDiskType", "osDiskSizeGB", "maxPods"]
    pool["inputs"]["count"] = 3
    text = compare(base, json.dumps(doc))
    assert row(text, "t4ts")[1] == "same"
    assert "[!CAUTION]" not in text and "device plugin restarts" not in text


def test_leaving_a_create_only_setting_to_aks_again_is_no_replace(tmp_path):
    """A stack drops `maxPods` and `osDisk` an earlier run sent (issue 39): the inputs lose two replaceOnChanges keys,
    but both are in `ignoreChanges`, so the engine keeps the stored values and the pool is not replaced."""
    set_before = DEV.replace("      vmSize: Standard_NC8as_T4_v3\n",
                             "      vmSize: Standard_NC8as_T4_v3\n      maxPods: 110\n      osDisk: {type: Managed}\n")
    text = compare(plan_json(tmp_path, set_before, "dev"), plan_json(tmp_path, DEV, "dev"))
    assert row(text, "t4mps")[1] == "same" and "[!CAUTION]" not in text


def test_the_docstring_names_the_replace_on_changes_the_pool_component_sets():
    """plan_compare's docstring once listed osSKU, which the component deliberately leaves out (an OS change is an
    in-place reimage): what it says gpushare adds must be exactly the component's list."""
    source = Path(plan_compare.__file__).read_text()
    said = re.search(r"gpushare adds: ((?:`\w+`(?:, )?)+)\)", source)
    assert said, "plan_compare no longer says which replaceOnChanges gpushare adds"
    assert re.findall(r"`(\w+)`", said.group(1)) == list(CREATE_ONLY_REPLACED_BY_GPUSHARE)


def test_a_removed_stack_file_gets_the_steps_that_remove_its_resources(base):
    text = render_compare(parse_plan(base, "base.json"), parse_plan("", "head.json"))
    assert "The stack file is removed in this change: stack dev: its file was deleted" in text
    assert "`git checkout BASE_SHA -- stacks/Pulumi.dev.yaml`" in text
    assert "pulumi state unprotect --all --stack dev -y && pulumi destroy --run-program --stack dev" in text
