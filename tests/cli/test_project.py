"""Which stack file a STACK names, from wherever the command runs: a path is a path; a name is a stack of the Pulumi
project found from the current directory upwards (its Pulumi.yaml's stackConfigDir), or of `--project DIR`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gpushare.cli import main
from gpushare.stackfile.project import find_project, project_at

REPO_ROOT = Path(__file__).resolve().parents[2]
DEV = REPO_ROOT / "stacks" / "Pulumi.dev.yaml"


@pytest.fixture
def project(tmp_path) -> Path:
    """A project of its own, its stacks in `envs/`, with one stack: the example dev stack as `lab`."""
    root = tmp_path / "platform"
    (root / "envs").mkdir(parents=True)
    (root / "Pulumi.yaml").write_text("name: gpus\nruntime: python\nstackConfigDir: envs\n")
    shutil.copy(DEV, root / "envs" / "Pulumi.lab.yaml")
    (root / "docs" / "runbooks").mkdir(parents=True)
    return root


def plan_json(capsys, *args: str) -> dict:
    assert main(["plan", *args, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_a_name_is_found_in_the_project_above_the_current_directory(project, monkeypatch, capsys):
    monkeypatch.chdir(project / "docs" / "runbooks")

    plan = plan_json(capsys, "lab")

    assert plan["stack"] == "lab"
    assert [p["name"] for p in plan["pools"]] == ["t4ts", "t4mps"]


def test_project_option_names_the_project_from_anywhere(project, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no Pulumi.yaml here or above

    assert plan_json(capsys, "lab", "--project", str(project))["stack"] == "lab"


def test_project_option_wins_over_the_project_around_the_current_directory(project, monkeypatch, capsys):
    monkeypatch.chdir(REPO_ROOT)  # gpushare's own project, which has no `lab` stack

    assert plan_json(capsys, "lab", "--project", str(project))["stack"] == "lab"
    assert main(["plan", "lab"]) == 2
    assert "stacks in stacks: contoso-prod, dev, existing, prod" in capsys.readouterr().err


def test_a_path_needs_no_project(tmp_path, monkeypatch, capsys):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    monkeypatch.chdir(outside)
    assert find_project() is None

    assert plan_json(capsys, str(DEV))["stack"] == "dev"


def test_a_name_outside_any_project_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)

    assert main(["plan", "dev"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"error: no Pulumi.yaml in {tmp_path} or any directory above it"), err
    assert "hint: run inside the project, pass --project DIR, or give the stack file's path" in err
    assert "Traceback" not in err


def test_project_option_without_pulumi_yaml_is_a_clear_error(tmp_path, capsys):
    assert main(["preflight", "lab", "--project", str(tmp_path)]) == 2
    assert f"error: {tmp_path}: no Pulumi.yaml here, so it is not a Pulumi project" in capsys.readouterr().err


def test_a_misspelt_name_lists_the_found_projects_stacks(project, monkeypatch, capsys):
    monkeypatch.chdir(project / "docs")

    assert main(["plan", "lba"]) == 2
    err = capsys.readouterr().err
    assert f"hint: did you mean lab? stacks in {project / 'envs'}: lab; or pass a file's path" in err


def test_stacks_uses_the_same_project(project, monkeypatch, capsys):
    monkeypatch.chdir(project / "docs" / "runbooks")

    assert main(["stacks", "--named", "lab", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == ["lab"]
    assert main(["stacks", "--named", "dev", "--json"]) == 2
    assert "no envs/Pulumi.dev.yaml in" in capsys.readouterr().err


def test_stack_files_default_to_the_project_directory(tmp_path):
    """Pulumi's default when Pulumi.yaml has no stackConfigDir."""
    (tmp_path / "Pulumi.yaml").write_text("name: gpus\nruntime: python\n")
    (tmp_path / "Pulumi.lab.yaml").write_text("config: {}\n")

    project = project_at(tmp_path)

    assert project.stacks() == ["lab"]
    assert project.stack_file("lab") == tmp_path / "Pulumi.lab.yaml"
