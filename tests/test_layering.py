"""The domain stays plain Python: importing any module outside `gpushare.components` and `gpushare.render` loads
no Pulumi SDK, and the CLI loads the Pulumi side only when a command runs the program."""

import importlib.util
import pkgutil
import subprocess
import sys
from pathlib import Path

import gpushare

ROOT = Path(__file__).resolve().parents[1]
PULUMI_SIDE = ("gpushare.components", "gpushare.render")


def package_paths() -> dict[str, list[str]]:
    """Where each part of the package is imported from: gpushare/ and, wherever it lives (the clone's top-level
    components/ through the editable install's mapping, or gpushare/components in a wheel), gpushare.components."""
    components = importlib.util.find_spec("gpushare.components")
    assert components is not None, "gpushare.components is not importable: `make test` installs the clone editable"
    return {"gpushare.": list(gpushare.__path__), "gpushare.components.": list(components.submodule_search_locations)}


def all_modules() -> list[str]:
    return sorted({m.name for prefix, paths in package_paths().items()
                   for m in pkgutil.walk_packages(paths, prefix)} | {"gpushare.components"})


def domain_modules() -> list[str]:
    return [m for m in all_modules() if not m.startswith(PULUMI_SIDE)]


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
    top_level = sorted({m.name for m in pkgutil.iter_modules(gpushare.__path__)} | {"components"})
    assert "gpushare.components.gpu_node_pool" in all_modules() and "gpushare.components.tenant" in all_modules()
    assert top_level == ["__main__", "azure", "cli", "components", "errors", "kubernetes", "render", "review",
                         "sharing", "stackfile"]


def test_an_offline_plan_loads_only_what_it_uses():
    """What a plan of the dev stack (no role assignment, no tenant group) does not use stays unloaded, each a share
    of every run's CPU: azure-identity (with msal and cryptography), the azure-mgmt clients and azure-core, which
    only reads need (0.3 s, azure-core 0.04 s of it); pulumi_azure_native's authorization package (0.18 s), which
    the typed getClientToken function and a class-level annotation naming RoleAssignment would load;
    pulumi_kubernetes's rbac.v1 (0.03 s); the other commands' modules (0.05 s)."""
    stack = ROOT / "stacks" / "Pulumi.dev.yaml"
    code = (
        "import contextlib, io, sys\n"
        "from gpushare.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['plan', {str(stack)!r}, '--json']) == 0\n"
        "print(sorted({'.'.join(m.split('.')[:3]) for m in sys.modules "
        "if m.startswith(('azure.', 'msal', 'gpushare.cli.'))}))\n"
        # The providers' packages are lazy modules, in sys.modules before they load: their _inputs is not.
        "print(sorted(m for m in ('pulumi_azure_native.authorization._inputs', 'pulumi_kubernetes.rbac.v1._inputs')"
        " if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.splitlines() == [
        "['gpushare.cli.plan', 'gpushare.cli.price_options', 'gpushare.cli.stack_argument']", "[]"]
