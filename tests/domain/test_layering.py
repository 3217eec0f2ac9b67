"""The domain package stays plain Python: importing any of it loads no Pulumi SDK."""

import pkgutil
import subprocess
import sys
from pathlib import Path

import gpushare

ROOT = Path(__file__).resolve().parents[2]


def test_no_gpushare_module_imports_pulumi():
    modules = sorted(m.name for m in pkgutil.walk_packages(gpushare.__path__, "gpushare."))
    assert "gpushare.config" in modules and "gpushare.commands.plan" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pulumi', 'pulumi_azure_native', "
        "'pulumi_kubernetes', 'components', 'render')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
