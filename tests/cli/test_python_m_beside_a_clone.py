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


def test_python_m_gpushare_beside_a_clone_runs_the_command(tmp_path):
    clone = tmp_path / "gpushare"
    clone.mkdir()
    for name in ("__main__.py", "Pulumi.yaml"):  # what makes the clone's top level a program, not a package
        shutil.copy(REPO_ROOT / name, clone / name)

    result = subprocess.run([sys.executable, "-m", "gpushare", "plan", str(DEV_STACK), "--json"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert json.loads(result.stdout)["stack"] == "dev"
