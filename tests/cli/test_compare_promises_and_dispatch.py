"""`compare` (two `plan --json`) and `report` (a preview of the same change) name a tenant's promise per pool before ->
after in the pool's own units, as `plan` shows them, and say that whether a lowered promise is below what the tenant
holds now is not known offline; on a fleet's dispatch manager, they name the namespaces that enter or leave the
fleet's dispatch (issues 41 and 43). The preview is made of the two plans' resources, as `pulumi preview --json
--show-sames` lists them (`preview_between`)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from tests.fleet_files import MEMBER_STACKS, fleet_doc, write_fleet
from tests.review import preview_builders as b
from tests.stack_files import plan, run_cli, write_stack

A100_SLICE = "MIG 3g.40gb slice of A100 80GB"
T4_SHARE = "1/4 of T4 16GB GPU (time-slicing, 4 replicas)"


def promise_stack(vision: dict[str, int], nlp: dict[str, int]) -> dict:
    """A100 MIG 3g.40gb (2 nodes: 4 slices) and a T4 time-sliced 4 ways (1-2 nodes: 8 shares at most), both shared
    by vision and nlp; queues on, each tenant's promise per pool as given (0 on a shared pool it does not name)."""
    return {
        "azure-native:location": "westeurope",
        "gpushare:cluster": {"name": "gpu", "resourceGroup": "rg-gpu"},
        "gpushare:queues": {"enabled": True},
        "gpushare:pools": [
            {"name": "a100mig", "vmSize": "Standard_NC24ads_A100_v4", "mig": "MIG3g", "count": 2},
            {"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "sharing": {"strategy": "time-slicing", "replicas": 4},
             "autoscale": {"min": 1, "max": 2}}],
        "gpushare:tenants": [{"name": "vision", "pools": ["a100mig", "t4"], "quota": {"pools": vision}},
                             {"name": "nlp", "pools": ["a100mig", "t4"], "quota": {"pools": nlp}}],
    }


def plan_json(capsys, path: Path) -> dict:
    code, out, err = plan(capsys, path, "--json")
    assert code == 0, err
    return json.loads(out)


def compare(capsys, tmp_path: Path, base: dict, head: dict) -> str:
    (tmp_path / "base.json").write_text(json.dumps(base))
    (tmp_path / "head.json").write_text(json.dumps(head))
    code, out, err = run_cli(capsys, "compare", str(tmp_path / "base.json"), str(tmp_path / "head.json"))
    assert code == 0, err
    return out


def preview_between(base: dict, head: dict, show_sames: bool = True) -> dict:
    """The preview of going from `base`'s resources to `head`'s, each as the plan registers it: a resource in both
    is `same` or `update`, one only in `head` `create`, one only in `base` `delete`; without `show_sames`, no
    `same` step (`pulumi preview --json` without `--show-sames`)."""
    old = {(r["type"], r["name"]): r["inputs"] for r in base["resources"]}
    new = {(r["type"], r["name"]): r["inputs"] for r in head["resources"]}
    steps = []
    for key in dict.fromkeys([*new, *old]):
        before, after = old.get(key), new.get(key)
        op = "create" if before is None else "delete" if after is None else "same" if before == after else "update"
        if show_sames or op != "same":
            steps.append(b.step(op, *key, before, after))
    return b.preview(steps)


def empty_project(tmp_path: Path) -> Path:
    """A project without the stack's file: `report` shows no fleet section (tests/cli/test_report_fleet.py)."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "Pulumi.yaml").write_text("name: gpushare\nruntime: python\n")
    return project


def report(capsys, tmp_path: Path, base: dict, head: dict, stack: str, show_sames: bool = True) -> str:
    path = tmp_path / "preview.json"
    path.write_text(json.dumps(preview_between(base, head, show_sames)))
    code, out, err = run_cli(capsys, "report", str(path), "--stack", stack, "--project", str(empty_project(tmp_path)))
    assert code == 0, err
    return out


def tenants(text: str) -> str:
    assert "#### Tenants\n" in text, text
    return text.split("#### Tenants\n", 1)[1].split("\n####", 1)[0]


def test_a_promise_per_pool_that_moves_between_tenants_is_named_in_the_pools_units(tmp_path, capsys):
    """vision's A100 promise 2 -> 3 slices and a new T4 promise of 2 shares; nlp's 2 -> 1 (lowered: said, not
    judged); the same lines in `compare` and in `report`."""
    base = plan_json(capsys, write_stack(tmp_path, promise_stack({"a100mig": 2}, {"a100mig": 2}), "Pulumi.base.yaml"))
    head = plan_json(capsys, write_stack(tmp_path, promise_stack({"a100mig": 3, "t4": 2}, {"a100mig": 1}),
                                         "Pulumi.head.yaml"))
    # The units are the plan's own (its tenants' `promises`), which the lines must repeat.
    [vision] = [t for t in head["tenants"] if t["name"] == "vision"]
    assert [(p["pool"], p["units"], p["unit"]) for p in vision["promises"]] == [
        ("a100mig", 3, A100_SLICE), ("t4", 2, T4_SHARE)]
    want = [f"- **vision**: promise per pool `a100mig` 2 -> 3 x {A100_SLICE}, `t4` 0 -> 2 x {T4_SHARE}",
            f"- **nlp**: promise per pool `a100mig` 2 -> 1 x {A100_SLICE}",
            "- **Promises lowered** (`nlp` on `a100mig`): whether a tenant holds more there now than its new promise "
            "is not known offline (neither the plans nor the preview carry what runs); `gpushare verify STACK` shows "
            "what each queue uses per pool on the cluster"]
    compared = tenants(compare(capsys, tmp_path, base, head))
    reported = tenants(report(capsys, tmp_path, base, head, "head"))
    for section in (compared, reported):
        # In the plan's tenant order in `compare`, in the preview's step order in `report`.
        assert sorted(line for line in section.splitlines() if line.startswith("- ")) == sorted(want), section
    # Without --show-sames the unchanged pools are not in the preview: the units are the resources' names, and the
    # tenants whose Namespace, quota and policy are unchanged are still named, from their ClusterQueues.
    bare = tenants(report(capsys, tmp_path, base, head, "head", show_sames=False))
    assert "- **vision**: promise per pool `a100mig` 2 -> 3 x `nvidia.com/gpu`, `t4` 0 -> 2 x `nvidia.com/gpu`" in bare
    assert "- **nlp**: promise per pool `a100mig` 2 -> 1 x `nvidia.com/gpu`" in bare
    assert "- **Promises lowered** (`nlp` on `a100mig`):" in bare
    # Back again: nothing lowered but vision's, whose T4 promise goes down to 0.
    back = tenants(compare(capsys, tmp_path, head, base))
    assert f"- **vision**: promise per pool `a100mig` 3 -> 2 x {A100_SLICE}, `t4` 2 -> 0 x {T4_SHARE}" in back
    assert "- **Promises lowered** (`vision` on `a100mig`, `vision` on `t4`):" in back


def test_a_tenant_added_with_promises_and_a_pool_leaving_its_queue(tmp_path, capsys):
    """audio is added with its promise; nlp leaves a100mig (its promise there goes) for a promise on t4."""
    base_stack = promise_stack({"a100mig": 2}, {"a100mig": 2})
    head_stack = copy.deepcopy(base_stack)
    head_stack["gpushare:tenants"][1] = {"name": "nlp", "pools": ["t4"], "quota": {"pools": {"t4": 4}}}
    head_stack["gpushare:tenants"].append({"name": "audio", "pools": ["a100mig"], "quota": {"pools": {"a100mig": 1}}})
    base = plan_json(capsys, write_stack(tmp_path, base_stack, "Pulumi.base.yaml"))
    head = plan_json(capsys, write_stack(tmp_path, head_stack, "Pulumi.head.yaml"))
    for section in (tenants(compare(capsys, tmp_path, base, head)), tenants(report(capsys, tmp_path, base, head,
                                                                                   "head"))):
        assert f"- **audio**: added; pools `a100mig`; quota none; promise per pool `a100mig` 1 x {A100_SLICE}" \
            in section, section
        assert (f"- **nlp**: loses pool `a100mig`; promise per pool `a100mig` 2 x {A100_SLICE} -> none, `t4` 0 -> "
                f"4 x {T4_SHARE}") in section, section
        assert "- **Promises lowered** (`nlp` on `a100mig`):" in section


def queues(text: str) -> str:
    return text.split("#### Queues\n", 1)[1].split("\n####", 1)[0] if "#### Queues\n" in text else ""


def test_a_guarantee_change_is_named_once_in_the_tenants_section_and_the_borrowing_in_the_queues(tmp_path, capsys):
    """vision's A100 promise 2 -> 3 and its T4 0 -> 2, with a borrowing limit of 1 from now on: the promises are named
    in the Tenants section in the pools' units, and the Queues section says only what it alone says (the borrowing),
    not the guarantee again in the resource's name."""
    base = plan_json(capsys, write_stack(tmp_path, promise_stack({"a100mig": 2}, {"a100mig": 2}), "Pulumi.base.yaml"))
    head_stack = promise_stack({"a100mig": 3, "t4": 2}, {"a100mig": 1})
    head_stack["gpushare:tenants"][0]["queue"] = {"borrowingLimit": {"nvidia.com/gpu": 1}}
    head = plan_json(capsys, write_stack(tmp_path, head_stack, "Pulumi.head.yaml"))
    out = compare(capsys, tmp_path, base, head)
    assert (f"- **vision**: promise per pool `a100mig` 2 -> 3 x {A100_SLICE}, `t4` 0 -> 2 x {T4_SHARE}"
            in tenants(out)), out
    queue_lines = [line for line in queues(out).splitlines() if line.startswith("- ")]
    assert queue_lines == ["- tenant `vision` on pool `a100mig`: may borrow no limit -> up to 1",
                           "- tenant `vision` on pool `t4`: may borrow no limit -> up to 1"], out
    # Each guarantee change named exactly once in the whole report.
    assert out.count("2 -> 3") == 1 and out.count("0 -> 2") == 1 and out.count("2 -> 1") == 1, out
    assert "guarantee" not in queues(out)
    # Without the Tenants section's promises (a base plan from before `promises`), Queues still names the guarantee.
    for tenant in base["tenants"]:
        del tenant["promises"]
    older = compare(capsys, tmp_path, base, head)
    assert "- tenant `vision` on pool `a100mig`: guarantee grows 2 -> 3 `nvidia.com/gpu`; may borrow no limit -> up " \
           "to 1" in queues(older), older
    assert older.count("2 -> 3") == 1, older


def test_an_added_tenant_and_a_pool_leaving_a_queue_are_not_repeated_in_the_queues_section(tmp_path, capsys):
    """audio's new promise and nlp's a100mig promise going are named in the Tenants section; the Queues section keeps
    only audio's borrowing and lending."""
    base_stack = promise_stack({"a100mig": 2}, {"a100mig": 2})
    head_stack = copy.deepcopy(base_stack)
    head_stack["gpushare:tenants"][1] = {"name": "nlp", "pools": ["t4"], "quota": {"pools": {"t4": 4}}}
    head_stack["gpushare:tenants"].append({"name": "audio", "pools": ["a100mig"], "quota": {"pools": {"a100mig": 1}}})
    base = plan_json(capsys, write_stack(tmp_path, base_stack, "Pulumi.base.yaml"))
    head = plan_json(capsys, write_stack(tmp_path, head_stack, "Pulumi.head.yaml"))
    out = compare(capsys, tmp_path, base, head)
    section = queues(out)
    assert "guarantee" not in section and "no longer in its queue" not in section, out
    assert "- tenant `audio` on pool `a100mig`: may borrow " in section, out
    assert out.count(f"`a100mig` 1 x {A100_SLICE}") == 1 and out.count(f"2 x {A100_SLICE} -> none") == 1, out


def dispatching_fleet(directory: Path, dispatched: dict[str, dict]) -> Path:
    """The test fleet with us's queues on and eu its dispatch manager (its own tenant nlp); `dispatched`: the
    fleet's tenants -> their members (a tenant with pools only on us is dispatched from eu)."""
    stacks = copy.deepcopy(MEMBER_STACKS)
    stacks["us"]["gpushare:queues"] = {"enabled": True}
    document = fleet_doc()
    document["tenants"] = [{"name": name, "members": members} for name, members in dispatched.items()]
    return write_fleet(directory, document, stacks).parent / "Pulumi.eu.yaml"


def test_the_dispatch_managers_namespaces_entering_and_leaving_the_fleets_dispatch(tmp_path, capsys):
    """vision is dispatched from eu, then gets an A100 promise on eu (its own tenant there, no longer dispatched),
    and beta joins the fleet on us only (dispatched from eu now)."""
    only_us = {"us": {"pools": ["h100"]}}
    base = plan_json(capsys, dispatching_fleet(tmp_path / "base", {"vision": only_us}))
    head = plan_json(capsys, dispatching_fleet(tmp_path / "head", {
        "vision": {"eu": {"pools": ["a100mig"], "quota": {"pools": {"a100mig": 1}}}}, "beta": only_us}))
    assert [ns["name"] for ns in base["fleetDispatch"]["namespaces"]] == ["vision"]
    assert [ns["name"] for ns in head["fleetDispatch"]["namespaces"]] == ["beta"]
    enters = ("- **Fleet dispatch**: namespace `beta` now judged by the fleet's dispatch policies and a quota of no "
              "pods{workers}; no longer by `gpushare-shared-gpu-pools`")
    leaves_to_own = ("- **Fleet dispatch**: namespace `vision` no longer judged by the fleet's dispatch policies: it "
                     "is this stack's own tenant now (above)")
    compared = tenants(compare(capsys, tmp_path, base, head))
    assert enters.format(workers=", its Jobs go to `us`") in compared
    assert leaves_to_own in compared
    assert "- **vision**: added; pools `a100mig`; quota none; promise per pool `a100mig` 1 x MIG 1g.10gb slice " \
           "of A100 80GB" in compared
    # The manager's preview: its shared binding leaves beta out instead of vision (the workers are the fleet's).
    reported = tenants(report(capsys, tmp_path, base, head, "eu"))
    assert enters.format(workers="") in reported and leaves_to_own in reported
    # The other way: beta leaves the dispatch to the shared policy; vision, the manager's tenant, enters it.
    back = tenants(compare(capsys, tmp_path, head, base))
    leaves_to_shared = ("- **Fleet dispatch**: namespace `beta` no longer judged by the fleet's dispatch policies: "
                        "judged by `gpushare-shared-gpu-pools` again (GPU pods only on the pools no tenant lists)")
    assert leaves_to_shared in back
    assert ("- **Fleet dispatch**: namespace `vision` now judged by the fleet's dispatch policies and a quota of no "
            "pods, its Jobs go to `us`; it was this stack's own tenant") in back
    assert leaves_to_shared in tenants(report(capsys, tmp_path, head, base, "eu"))
    assert leaves_to_shared in tenants(report(capsys, tmp_path, head, base, "eu", show_sames=False))
    # A stack that is no dispatch manager says nothing of dispatch.
    assert "Fleet dispatch" not in compare(capsys, tmp_path, base, base)


def test_the_workers_of_a_dispatched_namespace_change(tmp_path, capsys):
    """vision, dispatched from eu to us, gets a T4 pool on lab too (its queues on): its Jobs may go to either."""
    base = plan_json(capsys, dispatching_fleet(tmp_path / "base", {"vision": {"us": {"pools": ["h100"]}}}))
    path = dispatching_fleet(tmp_path / "head", {"vision": {"us": {"pools": ["h100"]}, "lab": {"pools": ["t4ts"]}}})
    lab = path.parent / "Pulumi.lab.yaml"
    lab.write_text(lab.read_text().replace("gpushare:pools:", "gpushare:queues:\n    enabled: true\n  gpushare:pools:"))
    head = plan_json(capsys, path)
    assert [ns["workers"] for ns in head["fleetDispatch"]["namespaces"]] == [["lab", "us"]] or \
        [ns["workers"] for ns in head["fleetDispatch"]["namespaces"]] == [["us", "lab"]]
    workers = ", ".join(f"`{w}`" for w in head["fleetDispatch"]["namespaces"][0]["workers"])
    assert f"- **Fleet dispatch**: namespace `vision`: its Jobs go to `us` -> {workers}" in tenants(
        compare(capsys, tmp_path, base, head))


def test_a_clusterqueue_or_binding_of_another_shape_leaves_the_report_standing(tmp_path, capsys):
    """Objects a preview may carry that gpushare did not write (or wrote in another version) say nothing."""
    queue = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
    binding = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
    odd = [{"metadata": "x", "spec": {"resourceGroups": [{"flavors": 3}, "y", {"flavors": [{"resources": {}}]}]}},
           {"metadata": {"name": "gpushare-shared-gpu-pools"}, "spec": {"matchResources": "z"}},
           {"metadata": {"name": "gpushare-shared-gpu-pools"}, "spec": {"matchResources": {"namespaceSelector": {
               "matchExpressions": [{"operator": "NotIn", "values": "beta"}]}}}}]
    path = tmp_path / "preview.json"
    path.write_text(json.dumps(b.preview([b.step("update", queue, "q", odd[0], {"spec": 1}),
                                          b.step("update", binding, "b", odd[1], odd[2])])))
    code, out, err = run_cli(capsys, "report", str(path), "--stack", "odd", "--project", str(empty_project(tmp_path)))
    assert (code, err) == (0, "") and "Fleet dispatch" not in out and "promise" not in out
