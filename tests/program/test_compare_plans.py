"""`compare` on real `plan --json` output of the example stacks: the figures match `plan`'s own pool rows, and an
edited stack gets the operations pulumi-azure-native would plan, with the flags."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from gpushare.cli import main
from gpushare.review.gpu_changes import pool_change
from gpushare.review.plan_compare import EMPTY, parse_plan, pool_transitions, render_compare
from gpushare.stackfile.project import resolve_stack_file

EXAMPLES = ("dev", "prod", "contoso-prod")


def plan_text(stack: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", stack, "--json"]) == 0
    return out.getvalue()


@pytest.fixture(scope="module")
def plans(tmp_path_factory) -> dict[str, str]:
    edited = resolve_stack_file("prod").read_text()
    edited = edited.replace("mig: MIG1g", "mig: MIG3g")
    edited = edited.replace("replicas: 8", "replicas: 4").replace("renameByDefault: false}\n      count: 2",
                                                                   "renameByDefault: false}\n      count: 3")
    start = edited.index("    - name: h100mig")
    edited = edited[:start] + edited[edited.index("    - name: t4batch"):]
    # The tenants name the removed pool and the old MIG slice: a change that edits pools edits them too.
    edited = edited[:edited.index("  # Teams on this shared cluster")]
    path = tmp_path_factory.mktemp("stacks") / "Pulumi.prod.yaml"
    path.write_text(edited)
    tenants = resolve_stack_file("prod").read_text()
    tenants = tenants[:tenants.index("    - name: vision")] + TENANTS_EDITED
    tenants_path = path.parent / "Pulumi.prod-tenants.yaml"
    tenants_path.write_text(tenants)
    return {**{stack: plan_text(stack) for stack in EXAMPLES}, "prod-edited": plan_text(str(path)),
            "prod-tenants": plan_text(str(tenants_path))}


TENANTS_EDITED = """\
    - name: vision
      pools: [h100mig, t4batch]
      quota:
        nvidia.com/mig-3g.47gb.shared: 6
        nvidia.com/gpu: 8
      groups: [3f2504e0-4f89-41d3-9a0c-0305e82c3301]
    - name: audio
      pools: [a100mig]
"""


@pytest.mark.parametrize("stack", EXAMPLES)
def test_capacity_matches_the_plan_rows(plans, stack):
    """One model for `plan` and `compare`: the 'after' of a new stack is exactly what plan reports per pool."""
    head = parse_plan(plans[stack], "head.json")
    rows = {p["name"]: p for p in json.loads(plans[stack])["pools"]}
    changes = [pool_change(t) for t in pool_transitions(EMPTY, head)]
    assert [c.name for c in changes] == list(rows)
    for change in changes:
        row = rows[change.name]
        assert change.op == "create"
        assert change.after.resource == row["resource"]
        assert change.after.per_node == row["perNode"]
        assert (change.after.min_nodes, change.after.max_nodes) == (row["minNodes"], row["maxNodes"])
        assert change.after.total() == (str(row["minTotal"]) if row["minTotal"] == row["maxTotal"]
                                        else f"{row['minTotal']}-{row['maxTotal']}")


def test_same_plan_twice_changes_nothing(plans):
    plan = parse_plan(plans["prod"], "prod.json")
    text = render_compare(plan, plan)
    assert "[!CAUTION]" not in text and "[!WARNING]" not in text
    assert text.count("| same | (no input changes) |") == 3
    assert "No change to the GPU Operator release or the device-plugin configs." in text


def rows(text: str) -> dict[str, list[str]]:
    out = {}
    for line in text.splitlines():
        if line.startswith("| **"):
            cells = [cell.strip() for cell in line.strip("|").split(" | ")]
            out[cells[0].strip("*")] = cells[1:]
    return out


def test_edited_prod_stack(plans, tmp_path, capsys):
    base, head = tmp_path / "base.json", tmp_path / "head.json"
    base.write_text(plans["prod"])
    head.write_text(plans["prod-edited"])
    assert main(["compare", str(base), str(head)]) == 0
    text = capsys.readouterr().out
    table = rows(text)
    # gpuInstanceProfile is create-only: a replace. 8 x A100 40GB, strategy mixed.
    # Dropping the tenant that had a100mig to itself also lifts its dedicated-pool taint; the autoscaler's
    # node-template tags follow the new MIG resource.
    tag = "k8s.io_cluster-autoscaler_node-template_resources_nvidia.com_mig"
    assert table["a100mig"] == ["**replace**", "`gpuInstanceProfile: MIG1g -> MIG3g`<br>"
                                f"`tags[\"{tag}-1g.5gb\"]: 56 -> (none)`<br>"
                                f"`tags[\"{tag}-3g.20gb\"]: (none) -> 16`<br>"
                                "`nodeTaints: tenant taint (see Tenants)`",
                                "nvidia.com/mig-1g.5gb -> nvidia.com/mig-3g.20gb", "56 -> 16", "2",
                                "112 -> 32"]
    assert table["h100mig"] == ["**delete**", "pool removed", "nvidia.com/mig-3g.47gb.shared -> -", "4 -> -",
                                "2 -> -", "8 -> -"]
    op, changes, *capacity = table["t4batch"]
    assert op == "update"
    assert "`count: 2 -> 3`" in changes
    assert "`config: sharing.timeSlicing.resources[0].replicas: 8 -> 4`" in changes
    assert capacity == ["nvidia.com/gpu", "32 -> 16", "2 -> 3", "64 -> 48"]
    assert ("> - **a100mig**: replace destroys the pool's nodes and every pod on them (protected: `pulumi up` "
            "stops unless the stack sets `recreate: true`)") in text
    assert "> - **h100mig**: delete destroys the pool's nodes and every pod on them" in text
    assert "> - **t4batch**: device plugin restarts on these nodes" in text
    # Content-addressed keys: only t4batch's nodes reload their config.
    assert "every GPU node" not in text
    assert text.count("device plugin restarts") == 1


def test_a_tenant_change_shows_tenants_pools_quotas_lost_access_and_warnings(plans):
    text = render_compare(parse_plan(plans["prod"], "base.json"), parse_plan(plans["prod-tenants"], "head.json"))
    gpu, tenants = text.index("#### GPU pools"), text.index("#### Tenants")
    assert gpu < tenants, "the GPU table stays first"
    section = text[tenants:text.index("#### Warnings that change")].splitlines()
    assert section[2:] == [
        "- **vision**: gains pool `t4batch`; quota `nvidia.com/mig-3g.47gb.shared` 4 -> 6, `nvidia.com/gpu` none -> 8",
        "- **audio**: added; pools `a100mig`; quota none",
        "- **nlp**: removed (its namespace and workloads stay; its quota, defaults and policy go, and its pods are "
        "judged like any other namespace's)",
        "- **Namespaces losing access to a pool** (running pods stay, new ones are refused): `nlp` loses `a100mig`; "
        "namespaces outside tenants lose `t4batch` (no GPU pool left: their GPU pods are refused)",
        "- **Taints and tolerations** (follow from the tenants, not listed above): 2 node-taint change(s) on pools "
        "that become or stop being dedicated to one tenant, 2 change(s) to the GPU Operator's tolerations of them",
        ""]
    # The churn is one line, not listed field by field.
    assert "gpushare.io/tenant=nlp" not in text and "tolerations[" not in text
    assert rows(text)["t4batch"][1] == "`nodeTaints: tenant taint (see Tenants)`"
    assert "  - tolerations of the tenant taints (see Tenants)" in text
    assert "- new: every GPU pool is listed by a tenant, so every namespace but the tenants' (vision, audio)" in text
    # t4batch becomes vision's alone: the advice to use MIG for multi-tenant work no longer applies to it.
    gone = [line for line in text.splitlines() if line.startswith("- gone:")]
    assert gone == ["- gone: pool t4batch: time-slicing gives 8 pods per GPU with no memory or fault isolation "
                    "between them; use MIG for multi-tenant work"]


def test_no_tenant_change_no_tenant_section(plans):
    plan = parse_plan(plans["prod"], "prod.json")
    assert "#### Tenants" not in render_compare(plan, plan) and "Warnings that change" not in render_compare(plan, plan)


def test_new_stack_from_an_empty_base(plans, tmp_path, capsys):
    base, head = tmp_path / "base.json", tmp_path / "head.json"
    base.write_text("")
    head.write_text(plans["dev"])
    assert main(["compare", str(base), str(head)]) == 0
    text = capsys.readouterr().out
    assert "The stack is new in this change" in text
    assert rows(text)["t4ts"] == ["create", "new pool: Standard_NC4as_T4_v3", "- -> nvidia.com/gpu",
                                  "- -> 4", "- -> 1-3", "- -> 4-12"]
    assert "- release: **create**, chart `- -> v26.7.0`" in text


def test_malformed_plan_exits_2(tmp_path, capsys):
    bad = tmp_path / "plan.json"
    bad.write_text('{"stack": "dev"}')
    assert main(["compare", str(bad), str(bad)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{bad}: not a `plan --json` document" in captured.err
    assert "`pools` is missing or not a list of objects" in captured.err
    assert "Traceback" not in captured.err
    assert main(["compare", str(tmp_path / "missing.json"), str(bad)]) == 2
    assert "missing.json: no such file" in capsys.readouterr().err

