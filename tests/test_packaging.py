"""The package as `pip install .` ships it: the wheel built offline from pyproject.toml holds every module and the
package data, and no tests; installed outside the repository, its `gpushare` command plans a stack from another
directory exactly as the repository does."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
OFFLINE = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def pip(*args: str, cwd: Path | None = None) -> None:
    result = subprocess.run([sys.executable, "-m", "pip", *args, "--quiet"], cwd=cwd, env=OFFLINE,
                            capture_output=True, text=True, check=False, timeout=300)
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """`pip wheel --no-deps --no-build-isolation .` on a copy of what a clone has (the build writes build/ and
    *.egg-info/ beside the sources; not into the worktree)."""
    setuptools = version("setuptools")
    assert Version(setuptools) >= Version("70.1"), (
        f"setuptools {setuptools} cannot build a wheel without the `wheel` package; requirements-dev.txt pins a newer "
        "one: `make test`, or `.venv/bin/pip install -r requirements-dev.txt`")
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in ("gpushare", "components"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    # tests/ too, as in a clone: the package list in pyproject.toml must leave it out.
    shutil.copytree(ROOT / "tests", source / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    pip("wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(out), str(source))
    (built,) = out.glob("gpushare-*.whl")
    return built


def wheel_text(wheel: Path, suffix: str) -> str:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(suffix)]
        return archive.read(name).decode()


def test_wheel_holds_every_module_and_the_package_data_but_no_tests(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    shipped = {p.relative_to(ROOT).as_posix() for p in (ROOT / "gpushare").rglob("*")
               if p.is_file() and p.suffix in (".py", ".txt", ".tsv", ".json", ".yaml") and "__pycache__" not in p.parts}
    # The top-level components/ folder ships as the package's gpushare.components.
    shipped |= {f"gpushare/components/{p.name}" for p in (ROOT / "components").glob("*.py")}
    assert "gpushare/components/deployment.py" in shipped and "gpushare/render/mock_engine.py" in shipped
    assert "gpushare/sharing/chart_value_paths/v26.7.0.txt" in shipped
    assert "gpushare/kubernetes/admission/validations.yaml" in shipped, "the admission policies' CEL"
    assert shipped <= names, sorted(shipped - names)
    assert not [n for n in names if n.startswith(("tests/", "benchmarks/", "stacks/")) or n == "__main__.py"]


def test_wheel_declares_the_console_script(wheel):
    entry_points = wheel_text(wheel, ".dist-info/entry_points.txt")
    assert re.search(r"^\[console_scripts\]\ngpushare = gpushare\.cli:console_main$", entry_points, re.MULTILINE)


def test_dependency_ranges_admit_the_pinned_runtime_set(wheel):
    """requirements.txt (what the Pulumi CLI installs) must satisfy the package's own ranges, and name the same
    distributions: a dependency added to one and not the other would surface here."""
    metadata = Parser().parsestr(wheel_text(wheel, ".dist-info/METADATA"))
    ranges = {Requirement(r).name.lower(): Requirement(r) for r in metadata.get_all("Requires-Dist")}
    pins = [Requirement(line) for line in (ROOT / "requirements.txt").read_text().splitlines()
            if line.strip() and not line.startswith(("#", "-e "))]
    assert sorted(ranges) == sorted(pin.name.lower() for pin in pins)
    for pin in pins:
        (version,) = [spec.version for spec in pin.specifier]
        assert ranges[pin.name.lower()].specifier.contains(version), (pin, ranges[pin.name.lower()])


def test_installed_command_plans_a_stack_from_another_directory(wheel, tmp_path):
    """Installed with `--target` (offline; the dependencies come from this venv), away from the repository: the
    console script's `plan` runs the packaged Pulumi program and prints the same plan as the repository's."""
    site = tmp_path / "site"
    pip("install", "--no-deps", "--target", str(site), str(wheel))
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "stacks").mkdir(parents=True)
    for stack in ("dev", "prod"):  # prod has tenants: their policies' CEL is the package's YAML data
        shutil.copy(ROOT / "stacks" / f"Pulumi.{stack}.yaml", elsewhere / "stacks" / f"Pulumi.{stack}.yaml")
    env = {**OFFLINE, "PYTHONPATH": str(site)}

    where = subprocess.run([sys.executable, "-c", "import gpushare; print(gpushare.__file__)"], cwd=elsewhere,
                           env=env, capture_output=True, text=True, check=True)
    assert Path(where.stdout.strip()).is_relative_to(site), "the installed copy, not the repository's"
    for stack in ("dev", "prod"):
        result = subprocess.run([str(site / "bin" / "gpushare"), "plan", f"stacks/Pulumi.{stack}.yaml", "--json"],
                                cwd=elsewhere, env=env, capture_output=True, text=True, check=False, timeout=300)

        assert result.returncode == 0, result.stderr
        assert result.stdout == (ROOT / "tests" / "golden" / "plan" / f"{stack}.json").read_text(encoding="utf-8")


def test_the_package_list_names_every_package_folder():
    """pyproject.toml lists the packages (a package-dir mapping cannot be found by `packages.find`): a new stage
    package left out of the list would be missing from `pip install .`."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "gpushare").rglob("__init__.py")}
    assert sorted(setuptools["packages"]) == sorted(folders | {"gpushare.components"})
    assert setuptools["package-dir"] == {"gpushare.components": "components"}


def test_the_clone_imports_the_components_from_the_top_level_folder():
    """The design card's layout: the ComponentResources in components/ beside Pulumi.yaml and __main__.py. The venv's
    editable install (requirements.txt's `-e .`) maps gpushare.components there, for the tests, `make plan` and the
    Pulumi CLI's run of __main__.py alike; no second copy inside gpushare/."""
    assert not (ROOT / "gpushare" / "components").exists()
    code = "import gpushare.components.deployment as d; print(d.__file__)"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert Path(result.stdout.strip()) == ROOT / "components" / "deployment.py"
