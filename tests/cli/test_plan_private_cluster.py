"""`plan` of a private cluster says where its previews and deploys must run, and how the workflows get there."""

from __future__ import annotations

import yaml

from gpushare.cli import main
from gpushare.stackfile.project import resolve_stack_file
from tests.stack_files import write_stack


def test_a_private_cluster_names_the_runner_map_both_workflows_read(tmp_path, capsys):
    document = yaml.safe_load(resolve_stack_file("contoso-prod").read_text())
    document["config"]["gpushare:cluster"]["apiServer"] = {"private": True, "privateDnsZone": "none"}
    path = write_stack(tmp_path, yaml.safe_dump(document), "Pulumi.private.yaml")

    assert main(["plan", str(path)]) == 0

    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  private API server:")]
    assert "GitHub-hosted runners cannot reach it" in line
    assert "repository variable GPUSHARE_RUNNERS, which both workflows read" in line


def test_a_private_cluster_says_what_a_peered_runner_needs_to_resolve_it(tmp_path, capsys):
    """A runner in a peered VNet reaches the private endpoint only if it resolves the name the kubeconfig holds."""
    lines = {}
    for zone in ("system", "none"):
        document = yaml.safe_load(resolve_stack_file("contoso-prod").read_text())
        document["config"]["gpushare:cluster"]["apiServer"] = {"private": True, "privateDnsZone": zone}
        path = write_stack(tmp_path, yaml.safe_dump(document), f"Pulumi.{zone}.yaml")
        assert main(["plan", str(path)]) == 0
        out = capsys.readouterr().out.splitlines()
        lines[zone] = out[out.index(next(line for line in out if line.startswith("  private API server:"))) + 1]
    assert "resolves only in VNets linked to the private DNS zone" in lines["system"]
    assert "az network private-dns link vnet create" in lines["system"]
    assert lines["none"].startswith("  privateDnsZone none: no private zone")
