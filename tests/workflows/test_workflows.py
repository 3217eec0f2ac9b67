"""The GitHub workflows: valid against GitHub's schema, clean under zizmor (offline), and the rules the issue sets:
least privilege per job, pinned actions, no untrusted `${{ }}` in shell, OIDC, one deploy per stack at a time."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpushare.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
FILES = sorted(WORKFLOWS.glob("*.yml"))
BIN = Path(sys.executable).parent
PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")


def tool(name: str) -> str:
    path = BIN / name
    found = str(path) if path.exists() else shutil.which(name)
    assert found, f"{name} is not installed: make test installs requirements-dev.txt"
    return found


def load(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc


def steps(doc: dict):
    for name, job in doc["jobs"].items():
        for step in job.get("steps", []):
            yield name, job, step


def test_the_workflows_exist():
    """This repository's PR previews and deploys, and the reusable workflow for library users."""
    assert [p.name for p in FILES] == ["deploy.yml", "library-preview.yml", "preview.yml"]


def test_zizmor_finds_nothing_of_medium_severity_or_higher():
    result = subprocess.run(
        [tool("zizmor"), "--offline", "--persona", "auditor", "--min-severity", "medium", "--format", "json",
         str(WORKFLOWS)], capture_output=True, text=True, cwd=ROOT,
    )
    findings = json.loads(result.stdout or "[]")
    assert findings == [], json.dumps([(f["ident"], f["desc"]) for f in findings], indent=1)
    assert result.returncode == 0, result.stderr


def test_workflows_match_githubs_schema():
    result = subprocess.run(
        [tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *map(str, FILES)],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_action_is_pinned_to_a_commit_with_its_version(path):
    lines = path.read_text().splitlines()
    uses = [line for line in lines if line.strip().startswith(("uses:", "- uses:"))]
    assert uses
    for line in uses:
        ref, _, comment = line.split("uses:", 1)[1].partition("#")
        assert PINNED.match(ref.strip()), line
        assert re.fullmatch(r" v\d+(\.\d+)*", comment), f"version comment missing: {line}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_least_privilege_and_no_untrusted_expressions_in_shell(path):
    doc = load(path)
    assert "pull_request_target" not in doc["on"]
    assert doc["permissions"] == {}, "workflow-level permissions must be empty; jobs ask for what they need"
    for name, job, step in steps(doc):
        assert "${{" not in step.get("run", ""), f"{name}: pass values to run: through env:, not ${{{{ }}}}"
        assert "${{" not in step.get("with", {}).get("script", ""), f"{name}: github-script reads env, not ${{{{ }}}}"
        if step.get("uses", "").startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False, name
    for name, job in doc["jobs"].items():
        permissions = job["permissions"]
        uses = [s.get("uses", "") for s in job.get("steps", [])]
        azure = any(u.startswith("azure/login@") for u in uses)
        comments = any(u.startswith(("actions/github-script@", "marocchino/sticky-pull-request-comment@"))
                       for u in uses)
        assert (permissions.get("id-token") == "write") == azure, f"{name}: id-token only where Azure is used"
        assert (permissions.get("pull-requests") == "write") == comments, f"{name}: pull-requests only to comment"
        assert set(permissions) <= {"contents", "id-token", "pull-requests"}
        assert permissions.get("contents") == "read"
        if azure:
            assert job["env"]["ARM_USE_OIDC"] == "true"
            assert {"ARM_CLIENT_ID", "ARM_TENANT_ID", "ARM_SUBSCRIPTION_ID"} <= set(job["env"])
            assert "secrets.AZURE" not in json.dumps(job), "OIDC, not stored Azure secrets"


def test_preview_runs_on_pull_request_and_only_same_repo_prs_reach_the_cloud():
    doc = load(WORKFLOWS / "preview.yml")
    assert list(doc["on"]) == ["pull_request"]
    jobs = doc["jobs"]
    assert "head.repo.full_name == github.repository" in jobs["preview"]["if"]
    assert "environment" not in jobs["preview"], "an environment would change the OIDC subject from pull_request"
    compare_comment = next(s for s in jobs["compare"]["steps"] if s.get("uses", "").startswith("actions/github"))
    assert compare_comment["if"] == "github.event.pull_request.head.repo.full_name == github.repository"
    runs = "\n".join(s.get("run", "") for _, _, s in steps(doc))
    for command in ("gpushare stacks --changed-since", "gpushare plan", "gpushare compare", "gpushare preflight",
                    "pulumi preview --stack \"$STACK\" --non-interactive --json --show-sames", "gpushare report"):
        assert command in runs, command
    assert jobs["preview"]["needs"] == ["stacks", "compare"], "the report must replace the comparison, not race it"


def test_a_private_clusters_preview_and_deploy_run_on_the_runner_its_stack_is_mapped_to():
    """A private API server answers only inside its network: both jobs that reach the cluster take the stack's
    runner label from the same repository variable; the offline jobs stay on GitHub's runners."""
    mapped = "fromJSON(vars.GPUSHARE_RUNNERS || '{}')[matrix.stack] || 'ubuntu-24.04' }}"
    preview, deploy = (load(WORKFLOWS / name)["jobs"] for name in ("preview.yml", "deploy.yml"))
    assert preview["preview"]["runs-on"] == "${{ " + mapped
    assert deploy["deploy"]["runs-on"] == "${{ inputs.runner || " + mapped
    assert {preview["stacks"]["runs-on"], preview["compare"]["runs-on"]} == {"ubuntu-24.04"}


def test_deploy_goes_through_an_environment_per_stack_one_run_at_a_time():
    doc = load(WORKFLOWS / "deploy.yml")
    assert set(doc["on"]) == {"push", "workflow_dispatch"}
    assert doc["on"]["push"]["branches"] == ["main"]
    job = doc["jobs"]["deploy"]
    assert job["environment"] == "${{ matrix.stack }}"
    assert job["concurrency"] == {"group": "deploy-${{ matrix.stack }}", "cancel-in-progress": False}
    runs = [s.get("run", "") for s in job["steps"]]
    preflight = next(i for i, r in enumerate(runs) if "gpushare preflight" in r)
    up = next(i for i, r in enumerate(runs) if r.startswith("pulumi up"))
    verify = next(i for i, r in enumerate(runs) if "gpushare verify" in r)
    assert preflight < up < verify
    assert job["steps"][verify]["shell"] == "bash", "GitHub adds -o pipefail only to an explicit bash shell"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_step_piping_a_command_keeps_its_exit_status(path):
    """GitHub runs `run:` with `bash -e` by default and adds `-o pipefail` only to an explicit `shell: bash`:
    without it `gpushare ... | tee` succeeds whatever gpushare returned."""
    for name, _, step in steps(load(path)):
        if "|" in step.get("run", "").replace("||", ""):
            assert step.get("shell") == "bash", f"{name}: {step.get('name')}"


def test_workflows_call_commands_that_exist():
    commands = set(build_parser()._subparsers._group_actions[0].choices)
    used = set()
    for path in FILES:
        used |= set(re.findall(r"-m gpushare (\w+)", path.read_text()))
    assert used == {"stacks", "plan", "compare", "preflight", "report", "verify", "fleet"}
    assert used <= commands


def test_zizmor_really_audits_offline(tmp_path):
    """The check above can fail: an unpinned action and a PR title in shell are found without the network."""
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: pull_request\npermissions: {}\njobs:\n  x:\n    runs-on: ubuntu-24.04\n    steps:\n"
        "      - uses: actions/checkout@v7\n"
        "      - run: echo \"${{ github.event.pull_request.title }}\"\n"
    )
    result = subprocess.run([tool("zizmor"), "--offline", "--min-severity", "medium", "--format", "json", str(bad)],
                            capture_output=True, text=True)
    assert {f["ident"] for f in json.loads(result.stdout)} >= {"template-injection", "unpinned-uses"}
    assert result.returncode != 0


def test_pr_comments_carry_list_prices():
    """Issue 20: the compare and the cloud report price the change (the public Retail Prices API needs no
    credentials, so forks get it too); a base commit older than --prices still plans."""
    preview = (WORKFLOWS / "preview.yml").read_text()
    assert 'gpushare plan "$STACK" --json --prices > "$OUT/head.json"' in preview
    assert 'plan "$STACK" --json --prices \\' in preview and '|| "$GITHUB_WORKSPACE/.venv/bin/python" -m gpushare plan "$STACK" --json; }' in preview
    assert 'gpushare report "$OUT/preview.json" --stack "$STACK" --prices' in preview


@pytest.mark.parametrize("name, client", [("deploy.yml", "AZURE_CLIENT_ID"), ("preview.yml", "AZURE_PREVIEW_CLIENT_ID")])
def test_the_cloud_jobs_give_kubelogin_its_identity_and_keep_azure_identity_on_the_az_session(name, client,
                                                                                              monkeypatch):
    """kubelogin's workloadidentity mode on GitHub Actions exchanges the job's own OIDC token (id-token: write) for
    AZURE_CLIENT_ID in AZURE_TENANT_ID (Azure/kubelogin v0.2.19, pkg/internal/token/provider.go and options.go); the
    same variables must not turn azure-identity's DefaultAzureCredential, which the guard and preflight use, away
    from the az CLI session azure/login leaves."""
    from azure.identity import AzureCliCredential
    from azure.identity._credentials.default import DefaultAzureCredential as RealDefaultAzureCredential

    job = load(WORKFLOWS / name)["jobs"]["deploy" if name == "deploy.yml" else "preview"]
    assert job["permissions"]["id-token"] == "write"
    env = job["env"]
    assert env["AZURE_CLIENT_ID"] == env["ARM_CLIENT_ID"] == "${{ vars.%s }}" % client
    assert env["AZURE_TENANT_ID"] == env["ARM_TENANT_ID"]
    for key in ("AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_TOKEN_CREDENTIALS"):
        monkeypatch.setenv(key, "00000000-0000-4000-8000-000000000001" if key != "AZURE_TOKEN_CREDENTIALS"
                           else env[key])
    chain = RealDefaultAzureCredential()
    assert [type(c) for c in chain.credentials] == [AzureCliCredential]


def test_a_fleet_members_report_gets_the_base_commits_fleet_plan(tmp_path):
    """The preview job's own shell, run in a repository of two commits (eu's A100 pool grows from 2 to 3 nodes at
    most): `the fleet at the base` plans the fleet file the stack names on the base commit with the base's code,
    and `report` shows the fleet-wide delta against it. A stack in no fleet gets no base plan and no section."""
    import copy

    from tests.cli.test_report_fleet import eu_preview
    from tests.fleet_files import MEMBER_STACKS, write_fleet

    job = load(WORKFLOWS / "preview.yml")["jobs"]["preview"]
    base_step = next(s["run"] for s in job["steps"] if s.get("name") == "the fleet at the base")
    report_step = next(s["run"] for s in job["steps"] if s.get("name") == "report")
    repo, out = tmp_path / "repo", tmp_path / "out"
    repo.mkdir()
    out.mkdir()
    (repo / ".venv").symlink_to(BIN.parent)  # the job's .venv; untracked, so not in the base's worktree
    (repo / "Pulumi.yaml").write_text("name: gpushare\nruntime: python\nstackConfigDir: stacks\n")
    write_fleet(repo / "stacks")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]

    def commit(message: str) -> str:
        subprocess.run([*git, "add", "Pulumi.yaml", "stacks"], cwd=repo, check=True)
        subprocess.run([*git, "commit", "-qm", message], cwd=repo, check=True)
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True,
                              text=True).stdout.strip()

    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    base_sha = commit("base")
    stacks = copy.deepcopy(MEMBER_STACKS)
    stacks["eu"]["gpushare:pools"][0]["autoscale"]["max"] = 3
    write_fleet(repo / "stacks", stacks=stacks)
    commit("eu grows")
    (out / "preview.json").write_text(eu_preview(tmp_path).read_text())
    env = {**os.environ, "STACK": "eu", "BASE_SHA": base_sha, "OUT": str(out), "GITHUB_WORKSPACE": str(repo),
           "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
           # --prices reads nothing from the internet here: a closed local port, given up on after a second, so
           # each side plans unpriced.
           "GPUSHARE_PRICES_ENDPOINT": "https://127.0.0.1:9", "GPUSHARE_READ_DEADLINE": "1"}
    (out / "preflight.txt").write_text("")
    for script in (base_step, report_step):
        result = subprocess.run(["bash", "-e", "-c", script], cwd=repo, env=env, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
    assert json.loads((out / "fleet-base.json").read_text())["kind"] == "gpushare-fleet-plan"
    report = (out / "report.md").read_text()
    assert "| westeurope | MIG 1g.10gb slice of A100 80GB (nvidia.com/gpu) | 7-14 -> 7-21 |" in report
    assert "| eu | changes | fleet | pools, tenants |" in report
    (repo / "stacks" / "Pulumi.solo.yaml").write_text("config:\n  azure-native:location: westeurope\n")
    (out / "fleet-base.json").unlink()
    env["STACK"] = "solo"
    result = subprocess.run(["bash", "-e", "-c", base_step], cwd=repo, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert not (out / "fleet-base.json").exists()
