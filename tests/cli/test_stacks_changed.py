"""`stacks --changed-since REF` on a temporary git repository: what a PR's workflow matrix gets."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpushare.cli import main
from gpushare.review.changed_stacks import affected_stacks

REPO_ROOT = Path(__file__).resolve().parents[2]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "t@example.com")
    git(tmp_path, "config", "user.name", "t")
    for stack in ("dev", "prod", "staging"):
        write(tmp_path, f"stacks/Pulumi.{stack}.yaml", f"config: {{}}  # {stack}\n")
    write(tmp_path, "Pulumi.yaml", "name: gpushare\nstackConfigDir: stacks\n")
    write(tmp_path, "requirements.txt", "pulumi==3.272.0\n")
    write(tmp_path, "gpushare/capacity.py", "# capacity\n")
    write(tmp_path, "README.md", "# readme\n")
    commit(tmp_path, "base")
    git(tmp_path, "checkout", "-q", "-b", "feature")
    return tmp_path


def write(repo: Path, path: str, text: str) -> None:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def stacks(repo: Path, capsys, ref: str = "main") -> tuple[int, list[str] | None, str]:
    code = main(["stacks", "--changed-since", ref, "--json", "--project", str(repo)])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if code == 0 else None, captured.err


def test_changed_stack_file_selects_that_stack(repo, capsys):
    write(repo, "stacks/Pulumi.prod.yaml", "config: {changed: true}\n")
    commit(repo, "prod")
    assert stacks(repo, capsys)[:2] == (0, ["prod"])


@pytest.mark.parametrize("path", ["gpushare/capacity.py", "Pulumi.yaml", "requirements.txt", "requirements-dev.txt",
                                  "__main__.py", ".github/workflows/deploy.yml"])
def test_code_and_dependencies_select_every_stack(repo, path, capsys):
    # Appended: a Pulumi.yaml rewritten without its stackConfigDir would move the stacks.
    write(repo, path, ((repo / path).read_text() if (repo / path).exists() else "") + "# changed\n")
    commit(repo, path)
    code, listed, err = stacks(repo, capsys)
    assert (code, listed) == (0, ["dev", "prod", "staging"])
    assert f"{path} changed: every stack" in err


def test_docs_and_tests_select_nothing(repo, capsys):
    write(repo, "README.md", "# better readme\n")
    write(repo, "docs/setup.md", "setup\n")
    write(repo, "tests/test_x.py", "def test(): pass\n")
    commit(repo, "docs")
    assert stacks(repo, capsys)[:2] == (0, [])


def test_deleted_stack_is_reported_not_listed(repo, capsys):
    git(repo, "rm", "-q", "stacks/Pulumi.staging.yaml")
    write(repo, "stacks/Pulumi.dev.yaml", "config: {changed: true}\n")
    commit(repo, "drop staging")
    code, listed, err = stacks(repo, capsys)
    assert (code, listed) == (0, ["dev"])
    assert "stack staging: its file was deleted" in err


def test_deleted_stack_steps_restore_its_file_and_lift_protection(repo, capsys):
    """The pools are protected and `destroy --run-program` runs the program, which needs the deleted file: the
    steps must restore it from the base before destroying, and unprotect first."""
    git(repo, "rm", "-q", "stacks/Pulumi.staging.yaml")
    commit(repo, "drop staging")
    err = stacks(repo, capsys)[2]
    restore = re.search(r"`(git checkout [^`]+)`", err).group(1)
    git(repo, *restore.split()[1:])
    assert (repo / "stacks/Pulumi.staging.yaml").read_text() == "config: {}  # staging\n"
    destroy = re.search(r"`(pulumi state unprotect [^`]+)`", err).group(1)
    assert destroy.index("pulumi state unprotect --all --stack staging -y") < destroy.index(
        "pulumi destroy --run-program --stack staging")


def test_renamed_stack_file_is_a_new_stack_and_a_deleted_one(repo, capsys):
    git(repo, "mv", "stacks/Pulumi.staging.yaml", "stacks/Pulumi.qa.yaml")
    commit(repo, "rename")
    code, listed, err = stacks(repo, capsys)
    assert (code, listed) == (0, ["qa"])
    assert "stack staging: its file was deleted" in err


def test_merge_base_semantics_ignore_changes_that_landed_on_main(repo, capsys):
    write(repo, "stacks/Pulumi.dev.yaml", "config: {feature: true}\n")
    commit(repo, "feature edits dev")
    git(repo, "checkout", "-q", "main")
    write(repo, "gpushare/capacity.py", "# changed on main after the branch point\n")
    commit(repo, "main moves on")
    git(repo, "checkout", "-q", "feature")
    # Two-dot would see capacity.py (reverted on this side) and select every stack; the PR diff does not.
    assert stacks(repo, capsys)[:2] == (0, ["dev"])


def test_unknown_ref_is_a_clear_error(repo, capsys):
    code, listed, err = stacks(repo, capsys, "no-such-ref")
    assert code == 2 and listed is None
    assert "error: git diff" in err and "fetch-depth: 0" in err
    assert "Traceback" not in err


def test_plain_output_is_one_stack_per_line(repo, capsys):
    write(repo, "stacks/Pulumi.prod.yaml", "config: {changed: true}\n")
    write(repo, "stacks/Pulumi.dev.yaml", "config: {changed: true}\n")
    commit(repo, "two")
    result = subprocess.run([sys.executable, "-m", "gpushare", "stacks", "--changed-since", "main", "--project",
                             str(repo)], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert result.stdout == "dev\nprod\n"


def test_stack_file_changes_only_count_for_stacks_that_exist():
    result = affected_stacks([("M", "stacks/Pulumi.prod.yaml"), ("M", "stacks/README.md")], ["dev", "prod"], "stacks")
    assert result.stacks == ("prod",)


def test_a_new_branch_has_no_base_so_every_stack(repo, capsys):
    assert stacks(repo, capsys, "0" * 40)[:2] == (0, ["dev", "prod", "staging"])


def test_named_stack_must_exist(repo, capsys):
    assert main(["stacks", "--named", "prod", "--json", "--project", str(repo)]) == 0
    assert json.loads(capsys.readouterr().out) == ["prod"]
    assert main(["stacks", "--named", "prod; rm -rf /", "--json", "--project", str(repo)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "no stacks/Pulumi.prod; rm -rf /.yaml" in captured.err
    assert "stacks here: dev, prod, staging" in captured.err


def test_a_file_with_a_name_no_stack_can_have_is_unknown_so_every_stack(repo, capsys):
    write(repo, "stacks/Pulumi.$(id).yaml", "config: {}\n")
    commit(repo, "odd name")
    assert stacks(repo, capsys)[:2] == (0, ["dev", "prod", "staging"])
