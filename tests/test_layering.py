"""The domain stays plain Python: importing any module outside `gpushare.components` and `gpushare.render` loads
no Pulumi SDK, and the CLI loads the Pulumi side only when a command runs the program. Stages only look down: a
module imports gpushare modules of its own floor or the floors below it (`gpushare/__init__.py` lists them)."""

import ast
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
    assert top_level == ["__main__", "azure", "cli", "components", "errors", "kubernetes", "model", "plan",
                         "render", "review", "sharing", "showback", "stackfile"]
    assert set(top_level) == set(FLOORS)


FLOORS = {"errors": 1, "model": 1, "sharing": 2, "stackfile": 3, "azure": 4, "kubernetes": 5, "showback": 6,
          "plan": 7, "review": 8, "components": 8, "render": 9, "cli": 10, "__main__": 10}
"""Bottom up. `plan` derives, once, what `review` and `components` read; those two share a floor and neither needs
the other (`review` imports no Pulumi)."""


def floor_of(module: str) -> int | None:
    parts = module.split(".")
    return FLOORS.get(parts[1]) if parts[0] == "gpushare" and len(parts) > 1 else None


def upward_imports(module: str, source: str) -> list[str]:
    """The gpushare modules `source` (the text of `module`) imports from a higher floor, wherever the import sits
    (module level or inside a function, which is how the CLI defers its heavy imports)."""
    floor = floor_of(module)
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from gpushare import cli` names the stage in the alias.
            names = ([node.module] if floor_of(node.module) is not None
                     else [f"{node.module}.{alias.name}" for alias in node.names])
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [name for name in names if floor is not None and (floor_of(name) or 0) > floor]
    return found


def test_stages_only_look_down():
    upward = {}
    for module in all_modules():
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin, module
        if found := upward_imports(module, Path(spec.origin).read_text()):
            upward[module] = found
    assert upward == {}


def test_an_upward_import_is_found_wherever_it_sits():
    """The check above can fail: an import of a higher floor is caught at module level, inside a function, and
    as `from gpushare import <stage>`; one of the same or a lower floor is not."""
    source = ("from gpushare.model.stack import StackConfig\n"
              "from gpushare.sharing import pool_facts\n"
              "def later():\n    from gpushare.kubernetes.tenants import tenant_objects\n"
              "from gpushare import cli\n")
    assert sorted(upward_imports("gpushare.sharing.example", source)) == ["gpushare.cli", "gpushare.kubernetes.tenants"]
    assert upward_imports("gpushare.cli.example", source) == []


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
        "['gpushare.cli.plan', 'gpushare.cli.price_options', 'gpushare.cli.read_deadline', "
        "'gpushare.cli.stack_argument']", "[]"]
