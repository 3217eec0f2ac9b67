"""`plan` of a private cluster says where its previews and deploys must run, and how the workflows get there."""

from __future__ import annotations

import yaml

from gpushare.cli import main
from gpushare.stackfile.project import resolve_stack_file


def test_a_private_cluster_names_the_runner_map_both_workflows_read(tmp_path, capsys):
    document = yaml.safe_load(resolve_stack_file("contoso-prod").read_text())
    document["config"]["gpushare:cluster"]["apiServer"] = {"private": True, "privateDnsZone": "none"}
    path = tmp_path / "Pulumi.private.yaml"
    path.write_text(yaml.safe_dump(document))

    assert main(["plan", str(path)]) == 0

    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  private API server:")]
    assert "GitHub-hosted runners cannot reach it" in line
    assert "repository variable GPUSHARE_RUNNERS, which both workflows read" in line
