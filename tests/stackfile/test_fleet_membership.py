"""`gpushare:fleet`: a member stack gets the fleet's tenants that have pools in it, in its own `plan` (and so in the
program `pulumi up` runs); a stack the fleet does not list, or a fleet tenant on a member that does not name the fleet,
is refused."""

import copy
import json

from tests.fleet_files import MEMBER_STACKS, fleet_doc, write_fleet
from tests.stack_files import plan, run_cli


def test_a_members_own_plan_deploys_the_fleet_tenant_with_its_objects(tmp_path, capsys):
    path = write_fleet(tmp_path)
    code, out, err = plan(capsys, path.parent / "Pulumi.eu.yaml", "--json")
    assert code == 0, err
    document = json.loads(out)
    assert [t["name"] for t in document["tenants"]] == ["nlp", "vision"]
    [vision] = [t for t in document["tenants"] if t["name"] == "vision"]
    assert vision["pools"] == ["a100mig"] and vision["poolQuota"] == {"a100mig": 4}
    namespaces = {r["name"] for r in document["resources"] if r["type"] == "kubernetes:core/v1:Namespace"}
    assert any("vision" in name for name in namespaces)
    # lab has no pool of vision's: not its tenant.
    code, out, _ = plan(capsys, path.parent / "Pulumi.lab.yaml", "--json")
    assert code == 0 and json.loads(out)["tenants"] == []


def test_a_stack_the_fleet_does_not_list_is_refused(tmp_path, capsys):
    stacks = copy.deepcopy(MEMBER_STACKS)
    stacks["asia"] = {**copy.deepcopy(MEMBER_STACKS["us"]), "azure-native:location": "japaneast"}
    path = write_fleet(tmp_path, stacks=stacks)
    code, _, err = plan(capsys, path.parent / "Pulumi.asia.yaml")
    assert code == 2
    assert "gpushare:fleet: " in err and "does not list stack 'asia' among its members (lab, eu, us)" in err


def test_the_fleet_files_problems_are_the_members_too(tmp_path, capsys):
    """A member's plan shows what is wrong in its fleet file, each under gpushare:fleet with the fleet file."""
    document = fleet_doc()
    document["dispatch"]["manager"] = "asia"
    path = write_fleet(tmp_path, document)
    code, _, err = plan(capsys, path.parent / "Pulumi.us.yaml")
    assert code == 2
    assert f"gpushare:fleet ({path}) dispatch.manager: must be a member's stack" in err


def test_a_missing_fleet_file_is_named_with_its_resolved_path_and_the_fix(tmp_path, capsys):
    path = write_fleet(tmp_path)
    path.unlink()
    code, _, err = plan(capsys, path.parent / "Pulumi.us.yaml")
    assert code == 2
    assert f"gpushare:fleet ({path}) (file): no such fleet file ({path.resolve()}); fix the path that names it" in err
    assert "Traceback" not in err


def test_a_fleet_tenant_on_a_member_that_does_not_name_the_fleet_is_refused(tmp_path, capsys):
    stacks = copy.deepcopy(MEMBER_STACKS)
    del stacks["us"]["gpushare:fleet"]
    path = write_fleet(tmp_path, stacks=stacks)
    code, _, err = run_cli(capsys, "fleet", "plan", str(path))
    assert code == 2
    assert ("tenants[0].members.us: member us's stack file does not name this fleet, so its own `pulumi up` would "
            "not create the tenant there; add `gpushare:fleet: fleet.yaml` to Pulumi.us.yaml") in err


def test_the_managers_own_plan_shows_the_dispatched_namespaces_its_shared_policy_leaves_to_the_fleet(tmp_path, capsys):
    """eu, the fleet's dispatch manager with its own tenant nlp, learns through its `gpushare:fleet` that vision
    (pools on us only, whose queues are on) is dispatched from it: its shared policy's binding leaves vision's
    namespace out, and its plan says which policies judge it there. Every other member's plan is as before."""
    stacks = copy.deepcopy(MEMBER_STACKS)
    stacks["us"]["gpushare:queues"] = {"enabled": True}
    document = fleet_doc()
    document["tenants"][0]["members"] = {"us": {"pools": ["h100"]}}
    path = write_fleet(tmp_path, document, stacks)
    code, out, err = plan(capsys, path.parent / "Pulumi.eu.yaml", "--json")
    assert code == 0, err
    eu = json.loads(out)
    assert eu["fleetDispatch"] == {"fleet": str(path), "namespaces": [{
        "name": "vision", "workers": ["us"], "policies": ["gpushare-tenant-vision.us"],
        "quota": "gpushare-fleet-no-pods"}]}
    assert [t["name"] for t in eu["tenants"]] == ["nlp"]
    [binding] = [r for r in eu["resources"] if r["type"].endswith("ValidatingAdmissionPolicyBinding")
                 and r["inputs"]["metadata"]["name"] == "gpushare-shared-gpu-pools"]
    assert binding["inputs"]["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"] == [
        "gpu-operator", "kube-system", "nlp", "vision"]
    code, text, _ = plan(capsys, path.parent / "Pulumi.eu.yaml")
    assert code == 0
    assert f"Dispatched from here by the fleet ({path}, Kueue MultiKueue): these namespaces are the fleet stack's, " \
           "judged by its dispatch policies and a quota of no pods, not by gpushare-shared-gpu-pools:\n" \
           "  vision: Jobs go to us; policies gpushare-tenant-vision.us, quota gpushare-fleet-no-pods" in text
    for member in ("us", "lab"):
        code, out, _ = plan(capsys, path.parent / f"Pulumi.{member}.yaml", "--json")
        assert code == 0 and "fleetDispatch" not in json.loads(out)
    # The fleet file's own example dispatches nothing (us runs no queues): eu's plan has no such key.
    code, out, _ = plan(capsys, write_fleet(tmp_path / "default").parent / "Pulumi.eu.yaml", "--json")
    assert code == 0 and "fleetDispatch" not in json.loads(out)
