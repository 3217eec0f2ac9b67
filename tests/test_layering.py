"""The domain stays plain Python: importing any module outside `gpushare.components` and `gpushare.render` loads
no Pulumi SDK, and the CLI loads the Pulumi side only when a command runs the program."""

import pkgutil
import subprocess
import sys
from pathlib import Path

import gpushare

ROOT = Path(__file__).resolve().parents[1]
PULUMI_SIDE = ("gpushare.components", "gpushare.render")


def domain_modules() -> list[str]:
    modules = sorted(m.name for m in pkgutil.walk_packages(gpushare.__path__, "gpushare."))
    return [m for m in modules if not m.startswith(PULUMI_SIDE)]


def test_no_domain_module_imports_pulumi():
    modules = domain_modules()
    assert "gpushare.stackfile.config" in modules and "gpushare.cli.plan" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pulumi', 'pulumi_azure_native', "
        f"'pulumi_kubernetes') or m.startswith({PULUMI_SIDE!r})))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_every_module_sits_in_a_stage_package():
    top_level = sorted(m.name for m in pkgutil.iter_modules(gpushare.__path__))
    assert top_level == ["__main__", "azure", "cli", "components", "errors", "kubernetes", "render", "review",
                         "sharing", "stackfile"]


def test_an_offline_plan_loads_no_azure_client():
    """azure-identity (with msal and cryptography) and the azure-mgmt clients are imported where a read needs them:
    an offline `plan`, the same program with every read skipped, spends about 0.3 s less without them."""
    stack = ROOT / "stacks" / "Pulumi.dev.yaml"
    code = (
        "import contextlib, io, sys\n"
        "from gpushare.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['plan', {str(stack)!r}, '--json']) == 0\n"
        "print(sorted({'.'.join(m.split('.')[:3]) for m in sys.modules "
        "if m.startswith(('azure.identity', 'azure.mgmt', 'msal'))}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
