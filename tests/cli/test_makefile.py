"""`make plan` as users run it: `make plan JSON=1 > plan.json` must write only the plan to stdout, also on the run
that installs the dependencies, and `JSON=0` must not mean JSON."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed"),
    pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="needs the project's venv (`make test` runs in it)"),
]


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory) -> Path:
    """A copy of the project whose `.venv` sees this test run's packages but has no install stamp, so `make` runs
    the install recipe as on a fresh clone. The venv's `bin` links to this interpreter's venv; its site-packages is
    its own, with a path entry for this venv's, so pip finds every pinned requirement installed (with PIP_NO_INDEX,
    no network) and installs only the clone itself, editable (requirements.txt's `-e .`), into the copy's venv,
    leaving this venv's own editable install of the work tree alone."""
    clone = tmp_path_factory.mktemp("clone")
    shutil.copytree(REPO_ROOT, clone, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", ".pytest_cache", "*.egg-info",
                                                  "build"))
    venv = clone / ".venv"
    venv.mkdir()
    (venv / "bin").symlink_to(Path(sys.prefix) / "bin")
    shutil.copy(Path(sys.prefix) / "pyvenv.cfg", venv / "pyvenv.cfg")
    (site_packages,) = [Path(p) for p in sys.path if p.startswith(sys.prefix) and p.endswith("site-packages")]
    own = venv / site_packages.relative_to(sys.prefix)
    own.mkdir(parents=True)
    (own / "this-test-runs-packages.pth").write_text(f"{site_packages}\n")
    return clone


def make(clone: Path, *args: str) -> subprocess.CompletedProcess:
    """`make ARGS` in the clone as a user types it: not as a sub-make, which is why MAKELEVEL and MAKEFLAGS (set when
    the suite itself runs under `make test`) are dropped; a sub-make would print "Entering directory" to stdout."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "FORCE_COLOR")}
    env["PIP_NO_INDEX"] = "1"
    # The editable install builds with this venv's setuptools rather than one fetched into an isolated build env.
    env["PIP_NO_BUILD_ISOLATION"] = "0"
    return subprocess.run(["make", *args], cwd=clone, env=env, capture_output=True, text=True, timeout=300)


def test_first_make_plan_json_writes_only_json_to_stdout(fresh_clone):
    assert not list((fresh_clone / ".venv").glob(".installed-*")), "the install recipe must run in this test"

    result = make(fresh_clone, "plan", "STACK=contoso-prod", "JSON=1")

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["stack"] == "contoso-prod"
    assert "installing pinned dependencies (requirements.txt)" in result.stderr
    assert list((fresh_clone / ".venv").glob(".installed-*")), "the install recipe ran"


def test_make_plan_installs_the_runtime_set_only_and_make_test_adds_the_test_tools(fresh_clone):
    make(fresh_clone, "plan", "STACK=contoso-prod", "JSON=1")
    assert [p.name.rsplit("-", 1)[0] for p in (fresh_clone / ".venv").glob(".installed-*")] == [".installed-runtime"]

    again = make(fresh_clone, "--dry-run", "plan")
    assert "pip install" not in again.stdout, "make plan reuses what it installed"
    test = make(fresh_clone, "--dry-run", "test")
    installs = [line for line in test.stdout.splitlines() if "pip install" in line]
    assert len(installs) == 1 and installs[0].split(" -r ")[1].split()[0] == "requirements-dev.txt", test.stdout
    assert test.stdout.rstrip().endswith("-m pytest")


@pytest.mark.parametrize("flag", ["JSON=0", None], ids=["zero", "unset"])
def test_json_0_prints_the_tables(fresh_clone, flag):
    result = make(fresh_clone, "plan", "STACK=contoso-prod", *([flag] if flag else []))

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Stack contoso-prod (stacks/Pulumi.contoso-prod.yaml)"), result.stdout[:200]


def test_install_recipe_sends_pip_output_to_stderr():
    recipe = (REPO_ROOT / "Makefile").read_text()
    (install,) = [line for line in recipe.splitlines() if "pip install" in line]
    assert install.startswith("\t@") and install.rstrip().endswith(">&2"), install


def test_make_plan_deployed_runs_the_guard_as_readme_shows(fresh_clone, tmp_path):
    system = {"name": "system", "mode": "System", "vmSize": "Standard_D4ds_v5", "count": 2}
    changed = {"name": "a100mig", "mode": "User", "vmSize": "Standard_ND96amsr_A100_v4", "count": 1,
               "gpuInstanceProfile": "MIG1g", "nodeLabels": {"gpushare.io/pool": "a100mig"}}
    saved = tmp_path / "pools.json"
    saved.write_text(json.dumps([system, changed]))

    result = make(fresh_clone, "plan", "STACK=contoso-prod", "JSON=1", f"DEPLOYED={saved}")

    assert result.returncode == 2, "make reports the guard's exit 3 as its own failure"
    guard = json.loads(result.stdout)["guard"]
    assert [(v["pool"], v["field"]) for v in guard["violations"]] == [("a100mig", "vmSize")]
    assert "error: 1 change would delete running GPU pools" in result.stderr


def test_readme_runs_gpushare_with_the_project_venv():
    """`python -m gpushare` only works inside the venv; the command lines of README and docs/ must work as written."""
    pages = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
    uses = [line for page in pages for line in page.read_text().splitlines() if "-m gpushare" in line]
    assert uses
    for line in uses:
        assert all(part.endswith(".venv/bin/python") for part in line.split(" -m gpushare")[:-1]), line
