"""`.github/workflows/library-preview.yml`, the reusable workflow for a team that calls `deploy()` from its own
Pulumi project: its compare step, run as the runner would on a library project in a scratch git repository, and
docs/ci.md's caller, checked like the shipped workflows and against the reusable workflow's inputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.workflows.test_workflows import PINNED, WORKFLOWS, load, tool

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = WORKFLOWS / "library-preview.yml"
CALLER_START = "<!-- library-caller-example:start -->\n```yaml\n"
CALLER_END = "```\n<!-- library-caller-example:end -->"
PROGRAM = """\
from gpushare.components import deploy

deploy({{"azure-native:location": "westeurope", "gpushare:cluster": {{"name": "ml-platform"}},
        "gpushare:pools": [{{"name": "t4ts", "vmSize": "Standard_NC4as_T4_v3", "count": 1,
                            "sharing": {{"strategy": "time-slicing", "replicas": {replicas}}}}}]}})
"""


def caller_example() -> str:
    text = (ROOT / "docs" / "ci.md").read_text()
    return text[text.index(CALLER_START) + len(CALLER_START):text.index(CALLER_END)]


def step(job: str, name: str) -> dict:
    return next(s for s in load(LIBRARY)["jobs"][job]["steps"] if s.get("name") == name)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}).stdout.strip()


def test_the_reusable_workflow_is_called_with_the_program_directory_and_stacks():
    doc = load(LIBRARY)
    assert list(doc["on"]) == ["workflow_call"]
    inputs = doc["on"]["workflow_call"]["inputs"]
    assert inputs["stacks"]["required"] is True and inputs["program"]["default"] == "."
    assert inputs["preview"]["default"] is False, "the cloud preview needs the caller's identity: opt in"
    jobs = doc["jobs"]
    assert jobs["compare"]["strategy"]["matrix"]["stack"] == jobs["preview"]["strategy"]["matrix"]["stack"] \
        == "${{ fromJSON(inputs.stacks) }}"
    assert "inputs.preview" in jobs["preview"]["if"]
    assert jobs["compare"]["if"] == "inputs.stacks != '[]'" and "inputs.stacks != '[]'" in jobs["preview"]["if"]
    assert "head.repo.full_name == github.repository" in jobs["preview"]["if"], "forks get no OIDC token"
    assert jobs["preview"]["needs"] == "compare", "the report must replace the comparison, not race it"
    plan = step("compare", "plan base and head, compare")["run"]
    assert 'gpushare plan --program "$GITHUB_WORKSPACE/$PROGRAM" "$STACK" --json $PRICES' in plan
    assert 'pulumi preview --cwd "$PROGRAM" --stack "$STACK" --non-interactive --json --show-sames' in \
        step("preview", "pulumi preview")["run"]
    assert "-m gpushare report" in step("preview", "report")["run"]
    comments = [s for job in jobs.values() for s in job["steps"]
                if s.get("uses", "").startswith("marocchino/sticky-pull-request-comment@")]
    assert [c["with"]["header"] for c in comments] == ["gpushare-preview:${{ matrix.stack }}"] * 2


def test_the_compare_step_comments_a_library_projects_change(tmp_path):
    """The step's own script, run as the runner runs it (bash -e), on a repository whose program changes a pool's
    replicas: the comparison names the pool and both counts. The program's directory is relative to the
    repository, as a caller writes it."""
    repo, out = tmp_path / "repo", tmp_path / "gpushare-out"
    program = repo / "infra"
    program.mkdir(parents=True)
    (program / "Pulumi.yaml").write_text("name: ml-infra\nruntime: python\n")
    (program / "__main__.py").write_text(PROGRAM.format(replicas=4))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    (program / "__main__.py").write_text(PROGRAM.format(replicas=8))
    git(repo, "commit", "-q", "-am", "head")
    # The install step's virtualenv, standing for the one built from the caller's requirements.
    (out / "venv" / "bin").mkdir(parents=True)
    python = out / "venv" / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    summary = tmp_path / "summary.md"
    env = {**os.environ, "STACK": "ml", "PROGRAM": "infra", "PRICES": "", "BASE_SHA": base, "OUT": str(out),
           "GITHUB_WORKSPACE": str(repo), "GITHUB_STEP_SUMMARY": str(summary)}
    env.pop("GPUSHARE_OFFLINE", None)
    done = subprocess.run(["bash", "-e", "-c", step("compare", "plan base and head, compare")["run"]], cwd=repo,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    comparison = (out / "compare.md").read_text()
    row = next(line for line in comparison.splitlines() if line.startswith("| **t4ts**") or line.startswith("| t4ts"))
    assert "4 -> 8" in row, comparison
    assert summary.read_text() == comparison
    assert json.loads((out / "base.json").read_text())["stackFile"] == "deploy(config)"


def test_the_documented_caller_passes_githubs_schema_and_zizmor(tmp_path):
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    caller = workflows / "gpushare.yml"
    caller.write_text(caller_example())
    checked = subprocess.run([tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(caller)],
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    audited = subprocess.run([tool("zizmor"), "--offline", "--persona", "auditor", "--min-severity", "medium",
                              "--format", "json", str(workflows)], capture_output=True, text=True)
    assert json.loads(audited.stdout or "[]") == [] and audited.returncode == 0, audited.stdout + audited.stderr


def test_the_documented_caller_gives_what_the_reusable_workflow_asks_for():
    """Every input it passes is declared, every required one passed, its secret declared, its reference pinned to
    a commit, and it grants each permission a called job needs (a called job gets no more than its caller has)."""
    caller = yaml.safe_load(caller_example())
    caller["on"] = caller.pop(True)
    assert list(caller["on"]) == ["pull_request"] and caller["permissions"] == {}
    job = caller["jobs"]["gpushare"]
    path, _, ref = job["uses"].partition("@")
    assert path.endswith("/.github/workflows/library-preview.yml") and PINNED.match(f"{path}@{ref}"), job["uses"]
    called = load(LIBRARY)["on"]["workflow_call"]
    assert set(job["with"]) <= set(called["inputs"])
    assert {name for name, spec in called["inputs"].items() if spec.get("required")} <= set(job["with"])
    assert set(job.get("secrets", {})) <= set(called["secrets"])
    needed: dict[str, str] = {}
    for called_job in load(LIBRARY)["jobs"].values():
        needed.update(called_job["permissions"])
    assert job["permissions"] == needed
