"""`python -m gpushare` typed in the folder that holds a clone named `gpushare` (where `git clone` puts it): the
current directory comes first on the import path, so Python finds the clone as a namespace package whose `__main__`
is the repository's Pulumi program (`__main__.py`); that file hands over to the installed command."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEV_STACK = REPO_ROOT / "stacks" / "Pulumi.dev.yaml"


def clone_in(folder: Path) -> Path:
    clone = folder / "gpushare"
    clone.mkdir()
    for name in ("__main__.py", "Pulumi.yaml"):  # what makes the clone's top level a program, not a package
        shutil.copy(REPO_ROOT / name, clone / name)
    return clone


def test_python_m_gpushare_beside_a_clone_runs_the_command(tmp_path):
    clone_in(tmp_path)

    result = subprocess.run([sys.executable, "-m", "gpushare", "plan", str(DEV_STACK), "--json"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert json.loads(result.stdout)["stack"] == "dev"


def test_python_m_gpushare_beside_a_clone_without_gpushare_installed_says_so(tmp_path):
    """A Python without the package (`-S`: no site-packages, so no install of any kind) finds only the clone."""
    clone = clone_in(tmp_path)

    result = subprocess.run([sys.executable, "-S", "-m", "gpushare", "plan", "dev"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)

    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f"error: gpushare is not installed in {sys.executable}: `python -m gpushare` in "
                             f"{tmp_path.resolve()} found only the clone {clone.resolve()}, the Pulumi project\n"
                             f"hint: pip install -e {clone.resolve()}\n")
