"""`gpushare fleet plan`: a fleet of three stacks in three regions (the canary an existing cluster) planned offline
in one command, per member its capacity, its tenants' promises (a tenant declared once for the fleet among them),
its cost with prices, and the update order; a bad fleet file exits 2 with every problem at once."""

import copy
import json
from pathlib import Path

from tests.fleet_files import MEMBER_STACKS, fleet_doc, write_fleet
from tests.stack_files import run_cli

NODE_HOURLY = {"Standard_NC24ads_A100_v4": 4.0, "Standard_NC40ads_H100_v5": 7.0, "Standard_NC4as_T4_v3": 0.5}


def fleet_json(capsys, path, *args):
    code, out, err = run_cli(capsys, "fleet", "plan", str(path), "--json", *args)
    assert code == 0, err
    return json.loads(out)


def test_each_member_shows_its_region_capacity_promises_and_stage(tmp_path, capsys):
    document = fleet_json(capsys, write_fleet(tmp_path))
    members = {m["stack"]: m for m in document["members"]}
    assert [m["stack"] for m in document["members"]] == ["lab", "eu", "us"]
    assert {s: m["region"] for s, m in members.items()} == {"lab": "swedencentral", "eu": "westeurope",
                                                            "us": "eastus"}
    assert members["lab"]["cluster"] == {"name": "platform-aks", "resourceGroup": "rg-platform", "existing": True}
    # Capacity per kind of device: 7 MIG 1g slices per A100 node, 4 time-sliced shares per T4 node, whole H100s.
    assert members["eu"]["capacity"] == [{"device": "MIG 1g.10gb slice of A100 80GB", "resource": "nvidia.com/gpu",
                                          "minTotal": 7, "maxTotal": 14}]
    assert members["lab"]["capacity"] == [{"device": "1/4 of T4 16GB GPU (time-slicing, 4 replicas)",
                                           "resource": "nvidia.com/gpu", "minTotal": 4, "maxTotal": 12}]
    assert members["us"]["capacity"][0]["maxTotal"] == 2
    # vision, declared once in the fleet file, is a tenant of eu and us (with its promise on eu's queues), not of lab.
    tenants = {s: {t["name"]: t for t in m["tenants"]} for s, m in members.items()}
    assert set(tenants["eu"]) == {"nlp", "vision"} and set(tenants["us"]) == {"vision"} and tenants["lab"] == {}
    assert tenants["eu"]["vision"]["fleetWide"] is True and tenants["eu"]["nlp"]["fleetWide"] is False
    assert [(p["pool"], p["units"]) for p in tenants["eu"]["vision"]["promises"]] == [("a100mig", 4)]
    assert [(p["pool"], p["units"]) for p in tenants["eu"]["nlp"]["promises"]] == [("a100mig", 3)]
    assert tenants["us"]["vision"]["promises"] == []  # us has no queues: no per-pool promise, only its pool
    assert tenants["us"]["vision"]["offers"] == [{"pool": "h100", "resource": "nvidia.com/gpu", "maxTotal": 2,
                                                   "dedicated": True}]
    assert {s: (m["canary"], m["group"], m["stage"], m["dispatch"]) for s, m in members.items()} == {
        "lab": (True, "canary", "gpu-canary", "worker"), "eu": (False, "regions", "fleet", "manager"),
        "us": (False, "regions", "fleet", "worker")}
    assert document["updates"] == {
        "strategy": "gpushare",
        "stages": [{"name": "gpu-canary", "afterStageWaitSeconds": 1800,
                    "groups": [{"name": "canary", "members": ["lab"]}]},
                   {"name": "fleet", "afterStageWaitSeconds": 0,
                    "groups": [{"name": "regions", "members": ["eu", "us"]}]}],
        "autoUpgrade": {"channel": "NodeImage", "nodeImageSelection": "Latest"}}
    assert [(r["region"], r["members"]) for r in document["regions"]] == [
        ("swedencentral", ["lab"]), ("westeurope", ["eu"]), ("eastus", ["us"])]
    assert document["cost"] is None


def saved_prices(capsys, directory, stack_file, region):
    """`gpushare prices STACK --template` filled in with NODE_HOURLY, saved as DIR/REGION.json."""
    code, out, _ = run_cli(capsys, "prices", str(stack_file), "--template")
    assert code == 0
    document = json.loads(out)
    for size, items in document["items"].items():
        for item in items:
            item["retailPrice"] = NODE_HOURLY.get(size, 0.1)
    document["readAt"] = "2026-12-01"
    (directory / f"{region}.json").write_text(json.dumps(document))


def test_prices_per_region_give_each_member_its_cost_and_the_fleet_their_sum(tmp_path, capsys):
    path = write_fleet(tmp_path / "stacks")
    prices = tmp_path / "prices"
    prices.mkdir()
    for stack, region in (("lab", "swedencentral"), ("eu", "westeurope"), ("us", "eastus")):
        saved_prices(capsys, prices, path.parent / f"Pulumi.{stack}.yaml", region)
    document = fleet_json(capsys, path, "--prices", str(prices))
    costs = {m["stack"]: m["cost"] for m in document["members"]}
    # eu: 1-2 A100 nodes at 4.0/h (730 h) plus its system pool and tier fee; us: 2 H100 nodes at 7.0/h.
    assert costs["us"]["monthlyMin"] == costs["us"]["monthlyMax"]
    assert costs["us"]["monthlyMin"] >= 2 * 7.0 * 730
    assert costs["eu"]["monthlyMax"] - costs["eu"]["monthlyMin"] == 4.0 * 730
    assert costs["lab"]["complete"] is False  # an existing cluster's system pools are not read offline
    assert document["cost"]["monthlyMin"] == round(sum(c["monthlyMin"] for c in costs.values()), 2)
    assert document["cost"]["complete"] is False
    text = run_cli(capsys, "fleet", "plan", str(path), "--prices", str(prices))[1]
    assert "stage gpu-canary: group canary (lab), then wait 1800 s" in text
    assert "a month at list prices" in text


def test_a_bad_fleet_file_exits_2_with_every_problem_at_once(tmp_path, capsys):
    document = fleet_doc()
    document["members"][0]["canary"] = False  # no canary left
    document["members"].append({"stack": "asia", "group": "regions"})  # no such stack file
    document["dispatch"]["manager"] = "ue"
    document["tenants"][0]["members"]["us"]["pools"] = ["h100", "a100mig"]  # a100mig is eu's, not us's
    document["tenants"].append({"name": "nlp", "members": {"eu": {"pools": ["a100mig"]}}})  # eu declares nlp
    document["updates"]["autoUpgrade"]["channel"] = "node-image"
    code, out, err = run_cli(capsys, "fleet", "plan", str(write_fleet(tmp_path, document)))
    assert code == 2 and out == ""
    assert "fleet.yaml: 6 configuration errors" in err
    assert "members: no canary" in err
    assert "members[3].stack: no stack file" in err and "Pulumi.asia.yaml" in err
    assert "dispatch.manager: must be a member's stack" in err and "got 'ue'; members: lab, eu, us" in err
    assert "tenants[0].members.us.pools[1]: member us has no pool 'a100mig'; its pools: h100" in err
    assert "tenants[1].members.eu: member eu declares a tenant 'nlp' itself" in err
    assert "updates.autoUpgrade.channel: got 'node-image'" in err and "allowed: Stable, Rapid, NodeImage" in err
    assert "Traceback" not in err


def test_a_canary_that_is_the_only_member_is_refused(tmp_path, capsys):
    document = fleet_doc()
    document["members"] = [{"stack": "lab", "canary": True}]
    document["tenants"] = []
    document["dispatch"] = {"manager": "lab"}
    code, _, err = run_cli(capsys, "fleet", "plan", str(write_fleet(tmp_path, document)))
    assert code == 2 and "members: required: a list of at least two member stacks" in err
    document["members"] = [{"stack": "lab", "canary": True}, {"stack": "eu", "canary": True}]
    code, _, err = run_cli(capsys, "fleet", "plan", str(write_fleet(tmp_path, document)))
    assert code == 2 and "every member is a canary, so nothing waits for the canary" in err


def test_a_fleet_tenant_the_member_refuses_is_named_at_the_fleet_tenant(tmp_path, capsys):
    """What the member's own validation refuses in a tenant the fleet adds (here a promise over the pool's 14
    slices) is reported at that tenant's entry in the fleet file, not at an index of the member's stack file."""
    document = fleet_doc()
    document["tenants"][0]["members"]["eu"]["quota"] = {"pools": {"a100mig": 40}}
    code, _, err = run_cli(capsys, "fleet", "plan", str(write_fleet(tmp_path, document)))
    assert code == 2
    assert "tenants[0].members.eu.quota.pools.a100mig:" in err
    assert "gpushare:tenants[1]" not in err


def test_the_docs_fleet_file_plans_as_the_page_describes(tmp_path, capsys):
    """docs/fleets.md's example, beside the member stacks it names (those of tests/fleet_files.py)."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "fleets.md").read_text()
    example = page.split("<!-- not-a-stack: a fleet file", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    document = fleet_json(capsys, write_fleet(tmp_path, example))
    assert [m["stack"] for m in document["members"]] == ["lab", "eu", "us"]
    assert [s["name"] for s in document["updates"]["stages"]] == ["gpu-canary", "fleet"]
    assert {t["name"] for m in document["members"] for t in m["tenants"] if t["fleetWide"]} == {"vision"}


def test_compare_shows_the_regions_delta_and_the_members_a_change_touches_with_their_stage(tmp_path, capsys):
    """eu grows its A100 pool to 3 nodes and us leaves the fleet: westeurope's slices 7-14 -> 7-21, eastus's H100s
    2 -> none, eu changes in stage fleet, us leaves; lab is untouched."""
    base = tmp_path / "base.json"
    base.write_text(run_cli(capsys, "fleet", "plan", str(write_fleet(tmp_path / "base")), "--json")[1])
    stacks = copy.deepcopy(MEMBER_STACKS)
    stacks["eu"]["gpushare:pools"][0]["autoscale"]["max"] = 3
    document = fleet_doc()
    document["members"] = document["members"][:2]
    del document["tenants"][0]["members"]["us"]
    head = tmp_path / "head.json"
    head.write_text(run_cli(capsys, "fleet", "plan", str(write_fleet(tmp_path / "head", document, stacks)),
                            "--json")[1])
    code, out, err = run_cli(capsys, "fleet", "compare", str(base), str(head))
    assert code == 0, err
    assert "| westeurope | MIG 1g.10gb slice of A100 80GB (nvidia.com/gpu) | 7-14 -> 7-21 |  |" in out
    assert "| eastus | whole H100 NVL 94GB GPU (nvidia.com/gpu) | 2 -> - |  |" in out
    assert "| eu | changes | fleet | pools, tenants |" in out
    assert "| us | leaves | fleet | - |" in out
    assert "| lab |" not in out
    empty = tmp_path / "empty.json"
    empty.write_text("")
    out = run_cli(capsys, "fleet", "compare", str(empty), str(head))[1]
    assert "| lab | joins | gpu-canary | - |" in out
    code, _, err = run_cli(capsys, "fleet", "compare", str(tmp_path / "base" / "fleet.yaml"), str(head))
    assert code == 2 and "not a `fleet plan --json` document" in err


def test_the_dispatch_shows_which_tenant_may_go_to_which_member(tmp_path, capsys):
    """With eu as MultiKueue's manager: vision, whose pools are on us only (queues on there), may go to us; nlp has
    its pools on the manager and runs there; lab, with no queues, gets no dispatched job. The kubeconfig Secrets are
    named, never filled: no credential is in the plan."""
    stacks = copy.deepcopy(MEMBER_STACKS)
    stacks["us"]["gpushare:queues"] = {"enabled": True}
    stacks["lab"]["gpushare:tenants"] = [{"name": "ops", "pools": ["t4ts"]}]
    document = fleet_doc()
    document["tenants"][0]["members"] = {"us": {"pools": ["h100"]}}
    path = write_fleet(tmp_path, document, stacks)
    plan = fleet_json(capsys, path)
    dispatch = plan["dispatch"]
    assert dispatch["manager"] == "eu"
    assert dispatch["tenants"] == [{"name": "vision", "members": ["us"], "resources": ["nvidia.com/gpu"]}]
    assert dispatch["kubeconfigSecrets"] == [{"member": "us", "namespace": "kueue-system",
                                              "secret": "gpushare-fleet-us-kubeconfig"}]
    assert len(dispatch["leftOut"]) == 1 and dispatch["leftOut"][0].startswith(
        "member lab gets no dispatched jobs: it has no queues")
    code, text, _ = run_cli(capsys, "fleet", "plan", str(path))
    assert code == 0
    assert "dispatch (Kueue MultiKueue from eu):\n  tenant vision: jobs may go to us (nvidia.com/gpu)\n" \
           "  left out: member lab gets no dispatched jobs" in text
    # The fleet file's own example: us, where vision has its other pool, runs no queues, so nothing is dispatched.
    default = fleet_json(capsys, write_fleet(tmp_path / "default"))["dispatch"]
    assert default["tenants"] == [] and len(default["leftOut"]) == 1
    assert default["leftOut"][0].startswith("member us gets no dispatched jobs: it has no queues")
    assert "certificate-authority-data" not in json.dumps(plan) and "token" not in json.dumps(plan)
