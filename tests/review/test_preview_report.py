"""`report`: what a reviewer reads first for each kind of change, with the figures asserted, not just present."""

from __future__ import annotations

import json

import pytest

from gpushare.review.markdown import DEFAULT_MAX_CHARS
from gpushare.review.preview_report.digest import MalformedPreviewError, parse_preview
from gpushare.review.preview_report.pr_comment import render_report
from tests.review import preview_builders as b
from tests.upstream_data import upstream_file

SAMPLES = ("pulumi-preview-json-sample-mixed-ops.json", "pulumi-preview-json-sample-replace.json")


def report(doc: dict, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    return render_report(parse_preview(json.dumps(doc), "preview.json"), None, max_chars)


def gpu_row(text: str, pool: str) -> list[str]:
    """The GPU table row of `pool`, split into cells."""
    line = next(line for line in text.splitlines() if line.startswith(f"| **{pool}** |"))
    return [cell.strip() for cell in line.strip("|").split(" | ")]


def test_mig_profile_replace_is_flagged_and_capacity_drops():
    text = report(b.mig_profile_replace())
    assert "> - **a100mig**: replace destroys the pool's nodes and every pod on them" in text
    # 8 x A100 40GB: MIG1g builds 7 x 1g.5gb per GPU (56), MIG3g 2 x 3g.20gb (16); strategy mixed names them.
    assert gpu_row(text, "a100mig") == [
        "**a100mig**", "**replace**", "`gpuInstanceProfile: MIG1g -> MIG3g`",
        "nvidia.com/mig-1g.5gb -> nvidia.com/mig-3g.20gb", "56 -> 16", "1-2", "56-112 -> 16-32"]
    assert "1 to replace · 9 unchanged" in text


def test_pool_delete_is_flagged_with_the_capacity_it_takes():
    text = report(b.pool_delete())
    assert "> - **t4batch**: delete destroys the pool's nodes and every pod on them" in text
    # 4 x T4 per node, time-slicing x8 without rename: 32 x nvidia.com/gpu per node, 0-4 nodes.
    assert gpu_row(text, "t4batch")[3:] == ["nvidia.com/gpu -> -", "32 -> -", "0-4 -> -", "0-128 -> -"]
    assert "- device-plugin ConfigMap: removed `t4batch-77e0d2a1`" in text
    assert "1 to update · 1 to delete · 7 unchanged" in text


def test_time_slicing_replica_change_restarts_the_plugin_and_doubles_capacity():
    text = report(b.time_slicing_replicas())
    assert "> - **t4ts**: device plugin restarts on these nodes" in text
    assert "destroys" not in text
    row = gpu_row(text, "t4ts")
    assert row[1] == "update"
    assert "`config: sharing.timeSlicing.resources[0].replicas: 4 -> 8`" in row[2]
    # The pool's label follows the content-addressed key, so its config is found under the new key.
    assert '`nodeLabels["nvidia.com/device-plugin.config"]: t4ts-1a2b3c4d -> t4ts-5e6f7a8b`' in row[2]
    assert row[3:] == ["nvidia.com/gpu.shared", "4 -> 8", "1-3", "4-12 -> 8-24"]
    # Content-addressed keys: only this pool's nodes reload; the release (and every other node) is untouched.
    assert "every GPU node" not in text
    assert "- device-plugin ConfigMap: added `t4ts-5e6f7a8b`; removed `t4ts-1a2b3c4d`" in text


def test_release_changes_that_reach_the_device_plugin_restart_it_everywhere():
    doc = b.mig_profile_replace()
    release = doc["steps"][3]
    release["op"] = "update"
    release["newState"]["inputs"]["values"]["mig"]["strategy"] = "single"
    release["newState"]["inputs"]["version"] = "v26.7.1"
    text = report(doc)
    assert "- release: **update**, chart `v26.7.0 -> v26.7.1`" in text
    assert "  - `mig.strategy: mixed -> single`" in text
    assert "  - **device plugin restarts on every GPU node (its DaemonSet's pod template changes)**" in text
    # The MIG pool now advertises whole-GPU names: the release's strategy beats the pool's label.
    assert gpu_row(text, "a100mig")[3] == "nvidia.com/mig-1g.5gb -> nvidia.com/gpu"


def test_autoscale_max_change_without_the_config_in_the_preview():
    text = report(b.autoscale_max())
    row = gpu_row(text, "t4ts")
    assert row[1:3] == ["update", "`maxCount: 3 -> 6`"]
    # Replicas from the pool's gpushare.io/sharing label; the resource name needs the config (renameByDefault).
    assert row[3:] == ["?", "4", "1-3 -> 1-6", "4-12 -> 4-24"]
    assert "--show-sames" in text
    assert "[!CAUTION]" not in text and "[!WARNING]" not in text


def test_first_deployment_creates_with_capacity_after_only():
    text = report(b.first_deployment())
    # 1 x T4 per node, MPS x4 with rename: 4 x nvidia.com/gpu.shared per node, 2 nodes.
    assert gpu_row(text, "t4mps") == [
        "**t4mps**", "create", "new pool: Standard_NC8as_T4_v3", "- -> nvidia.com/gpu.shared", "- -> 4", "- -> 2",
        "- -> 8"]
    assert "- release: **create**, chart `- -> v26.7.0`" in text
    assert "5 to create" in text
    assert "(known after apply)" not in text  # resourceName is unknown, but a created pool shows no field diff


def test_guard_error_comes_first():
    text = report(b.guard_error())
    lines = text.splitlines()
    assert lines[2] == "> [!CAUTION]"
    assert lines[3] == "> **The preview failed with 1 error**: `pulumi up` would stop here."
    assert lines[5] == "**Error**:"
    assert text.index("would delete pool a100mig") < text.index("#### GPU pools") < text.index("#### Warnings (1)")


def test_non_gpu_preview_says_so_and_lists_resources():
    text = report(b.non_gpu())
    assert "No GPU node pool in this change." in text
    assert "#### GPU Operator" not in text
    assert "- **update** `azure-native:storage:StorageAccount` `logs`: `minimumTlsVersion (add)`" in text
    assert "1 to create · 1 to update · 4 unchanged" in text


def test_size_limit_cuts_details_never_the_gpu_table():
    doc = b.large(3_000)
    assert len(doc["steps"]) == 3_001  # with the root stack
    text = report(doc)
    assert len(text) <= DEFAULT_MAX_CHARS
    assert "> - **h100mig**: replace destroys the pool's nodes and every pod on them" in text
    assert gpu_row(text, "h100mig")[2] == '`availabilityZones[2]: (none) -> 3`'
    assert "2999 to update · 1 to replace · 1 unchanged" in text
    assert text.rstrip().endswith("</details>")
    shown = text.count("\n- **update** `kubernetes:core/v1:ConfigMap`")
    assert 100 < shown < 2_999
    assert f"_{2_999 - shown} more not shown: the comment is limited to 60,000 characters." in text
    # The most destructive step stays at the top of the details.
    assert text.index("- **replace** `azure-native:containerservice:AgentPool` `h100mig-agentpool`") < text.index(
        "- **update** `kubernetes:core/v1:ConfigMap`")


def test_a_small_limit_keeps_the_summary_whole():
    text = report(b.large(300), max_chars=3_000)
    assert len(text) <= 3_000
    assert "| **h100mig** | **replace** |" in text and "299 to update" in text
    assert "<details>" in text and "</details>" in text


def test_replacement_steps_collapse_into_one_replace():
    doc = b.mig_profile_replace()
    replace = doc["steps"][1]
    create = {**replace, "op": "create-replacement"}
    delete = {**replace, "op": "delete-replaced"}
    doc["steps"][1:2] = [create, replace, delete]
    text = report(doc)
    assert text.count("| **a100mig** |") == 1
    assert gpu_row(text, "a100mig")[1] == "**replace**"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty; `pulumi preview --json` printed nothing"),
        ("Previewing update (prod)", "not JSON (line 1, column 1"),
        ("[]", "the top level must be an object, got list"),
        ('{"steps": {}}', "`steps` must be a list, got dict"),
        ('{"steps": [{"op": "create"}]}', "steps[0].urn is missing or not a string"),
        ('{"config": {}}', "neither `steps` nor `diagnostics` is present"),
        ('{"steps": [], "changeSummary": {"create": "1"}}', "`changeSummary` must map operations to counts"),
    ],
    ids=["empty", "not-json", "list", "steps-object", "no-urn", "no-steps", "bad-summary"],
)
def test_malformed_input_is_a_clear_error(text, fragment):
    with pytest.raises(MalformedPreviewError) as caught:
        parse_preview(text, "preview.json")
    assert str(caught.value).startswith("preview.json: ")
    assert fragment in str(caught.value)
    assert caught.value.exit_code == 2


def _sample(name: str) -> str:
    return upstream_file(name, "a sample of `pulumi preview --json`").read_text()


def test_real_sample_with_mixed_operations():
    text = render_report(parse_preview(_sample(SAMPLES[0]), SAMPLES[0]), None)
    assert text.startswith("### gpushare preview of stack `test-a692d456`")
    assert "1 to create · 1 to update · 2 to replace · 1 to delete · 7 unchanged" in text
    assert "No GPU node pool in this change." in text
    # detailedDiff is null on the replaces: replaceReasons say what changed.
    assert "- **replace** `tls:index/privateKey:PrivateKey` `tls-key-0`: `algorithm`, `ecdsaCurve`" in text
    assert "- **update** `command:local:Command` `cmd-0`: `create (update)`, `environment (delete)`" in text
    assert text.index("**delete**") < text.index("**replace**") < text.index("**update**") < text.index("**create**")


def test_real_sample_without_change_summary_counts_steps():
    text = render_report(parse_preview(_sample(SAMPLES[1]), SAMPLES[1]), None)
    assert "1 to create · 1 to update · 1 to replace" in text
    assert "3 changed resources" in text


def test_protected_pool_replace_shows_the_engine_error_and_the_flag():
    doc = b.mig_profile_replace()
    pool = doc["steps"][1]
    pool["oldState"]["protect"] = pool["newState"]["protect"] = True
    doc["diagnostics"] = [{"urn": pool["urn"], "prefix": "error: ", "severity": "error",
                           "message": "<{%reset%}>unable to replace resource \"a100mig-agentpool\"\nas it is currently "
                                      "marked for protection.<{%reset%}>\n"}]
    text = report(doc)
    assert text.index("**Error** at `a100mig-agentpool` (`azure-native:containerservice:AgentPool`):") < text.index(
        "#### GPU pools")
    assert "```\nunable to replace resource \"a100mig-agentpool\"\nas it is currently marked for protection.\n```" in text
    assert ("> - **a100mig**: replace destroys the pool's nodes and every pod on them (protected: `pulumi up` stops "
            "unless the stack sets `recreate: true`)") in text


def test_a_tenant_change_shows_each_tenant_and_the_namespaces_losing_a_pool():
    text = report(b.tenant_change())
    assert text.index("#### GPU pools") < text.index("#### Tenants") < text.index("#### Changes")
    section = text[text.index("#### Tenants"):text.index("#### Changes")].splitlines()
    assert section[2:] == [
        "- **audio**: added; pools `a100mig`; quota none",
        "- **vision**: gains pool `t4batch`; quota `nvidia.com/mig-3g.47gb.shared` 4 -> 6, `nvidia.com/gpu` none -> 8",
        "- **nlp**: removed (its namespace and workloads stay; its quota, defaults and policy go, and its pods are "
        "judged like any other namespace's)",
        "- **Namespaces losing access to a pool** (running pods stay, new ones are refused): `nlp` loses `a100mig`; "
        "namespaces outside tenants lose `t4batch` (no GPU pool left: their GPU pods are refused)",
        "- **Taints and tolerations** (follow from the tenants, not listed above): 1 node-taint change(s) on pools "
        "that become or stop being dedicated to one tenant, 0 change(s) to the GPU Operator's tolerations of them",
        ""]
    assert gpu_row(text, "t4batch")[2] == "`nodeTaints: tenant taint (see Tenants)`"


def test_a_retained_namespace_is_not_reported_as_deleted_from_the_cluster():
    """The engine's `delete` of a tenant namespace (retainOnDelete) only drops it from the stack."""
    text = report(b.tenant_change())
    assert ("- **delete** `kubernetes:core/v1:Namespace` `tenant-nlp-namespace` (retained: it leaves the stack, "
            "the object stays in the cluster)") in text
    assert "`tenant-nlp-quota` (retained" not in text


def test_a_read_step_is_no_change():
    """The real engine reads GpuOperator's StackReference in every preview that keeps a config key: not a change,
    and the details count what changeSummary counts."""
    text = report(b.tenant_change())
    assert "StackReference" not in text
    steps = b.tenant_change()["steps"]
    changed = sum(1 for s in steps if s["op"] not in ("same", "read"))
    assert f"<summary>{changed} changed resources</summary>" in text


def test_a_preview_without_tenant_steps_has_no_tenant_section():
    assert "#### Tenants" not in report(b.time_slicing_replicas())
