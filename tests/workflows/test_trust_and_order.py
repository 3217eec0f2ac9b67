"""What pull-request code can reach, the order deploys run in, and the pinned tool versions (issue 16 items 7-9).

A same-repository PR runs its own copy of the workflow files, so anything a `pull_request` run can name (repository
secrets, the preview identity) is readable by PR code; deploy secrets live only in the stacks' environments."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.workflows.test_workflows import ROOT, WORKFLOWS, load, steps

SECRET = re.compile(r"secrets\.([A-Za-z_][A-Za-z0-9_]*)")
DEPLOY_SECRETS = {"PULUMI_ACCESS_TOKEN", "PULUMI_CONFIG_PASSPHRASE"}


def requirement(name: str) -> str:
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.startswith(f"{name}=="):
            return line.split("==", 1)[1].strip()
    raise AssertionError(f"{name} is not pinned in requirements.txt")


def test_pull_request_runs_read_only_the_read_only_preview_token():
    preview = (WORKFLOWS / "preview.yml").read_text()
    assert set(SECRET.findall(preview)) == {"PULUMI_PREVIEW_ACCESS_TOKEN"}
    assert "PULUMI_CONFIG_PASSPHRASE" not in preview


def test_deploy_secrets_are_read_only_by_jobs_in_the_stacks_environment():
    doc = load(WORKFLOWS / "deploy.yml")
    for name, job in doc["jobs"].items():
        used = set(SECRET.findall(json.dumps(job)))
        if used:
            assert job.get("environment") == "${{ matrix.stack }}", f"{name} reads {used} outside an environment"
            assert used <= DEPLOY_SECRETS


def test_deploy_runs_one_at_a_time_and_one_stack_at_a_time_stopping_at_the_first_failure():
    doc = load(WORKFLOWS / "deploy.yml")
    assert doc["concurrency"] == {"group": "deploy", "cancel-in-progress": False}
    strategy = doc["jobs"]["deploy"]["strategy"]
    assert strategy["max-parallel"] == 1 and strategy["fail-fast"] is True
    assert doc["jobs"]["stacks"]["outputs"]["stacks"] == "${{ steps.order.outputs.stacks }}"


def order(changed: list[str], tmp_path: Path) -> list[str]:
    """The deploy workflow's `deploy order` step, run by bash as the runner would."""
    doc = load(WORKFLOWS / "deploy.yml")
    (step,) = [s for _, _, s in steps(doc) if s.get("id") == "order"]
    output = tmp_path / "github_output"
    output.write_text("")
    env = {"PATH": "/usr/bin:/bin", "STACKS": json.dumps(changed), "DEPLOY_ORDER": doc["env"]["DEPLOY_ORDER"],
           "GITHUB_OUTPUT": str(output)}
    subprocess.run(["bash", "-eo", "pipefail", "-c", step["run"]], env=env, check=True)
    (line,) = output.read_text().splitlines()
    assert line.startswith("stacks=")
    return json.loads(line.removeprefix("stacks="))


@pytest.mark.parametrize(("changed", "deployed"), [
    (["contoso-prod", "dev", "prod"], ["dev", "prod", "contoso-prod"]),
    (["prod", "dev"], ["dev", "prod"]),
    (["staging", "prod", "dev", "alpha"], ["dev", "prod", "staging", "alpha"]),
    (["prod"], ["prod"]),
    ([], []),
], ids=["all", "dev-and-prod", "unlisted-after", "one", "none"])
def test_dev_deploys_before_prod(changed, deployed, tmp_path):
    assert order(changed, tmp_path) == deployed


def test_the_pulumi_cli_is_the_sdks_version_and_install_cli_is_pinned():
    sdk = requirement("pulumi")
    for path in (WORKFLOWS / "preview.yml", WORKFLOWS / "deploy.yml"):
        doc = load(path)
        pulumi_steps = [s for _, _, s in steps(doc) if s.get("uses", "").startswith("pulumi/actions@")]
        assert pulumi_steps, path.name
        for step in pulumi_steps:
            assert step["with"]["pulumi-version"] == "${{ env.PULUMI_VERSION }}", path.name
        assert doc["env"]["PULUMI_VERSION"] == sdk, path.name
    for path, command in ((WORKFLOWS / "deploy.yml", "pulumi up"), (WORKFLOWS / "preview.yml", "pulumi preview")):
        doc = load(path)
        runs = [s.get("run", "") for _, _, s in steps(doc)]
        install = next(i for i, r in enumerate(runs) if "az aks install-cli" in r)
        assert install < next(i for i, r in enumerate(runs) if r.startswith(command)), "kubelogin-* credentials"
        assert '--client-version "$KUBECTL_VERSION"' in runs[install], path.name
        assert '--kubelogin-version "$KUBELOGIN_VERSION"' in runs[install], path.name
        assert re.fullmatch(r"v\d+\.\d+\.\d+", doc["env"]["KUBECTL_VERSION"])
        assert re.fullmatch(r"v\d+\.\d+\.\d+", doc["env"]["KUBELOGIN_VERSION"])
