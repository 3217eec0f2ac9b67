"""gpushare's Pulumi program: one AKS cluster, its GPU pools, the GPU Operator and the tenants, from the stack file.

The program's body is in the package (`gpushare.components.program`), so an installed gpushare (`gpushare plan`
from any directory) runs the very program `pulumi up` runs here. Validation runs before any resource registers; a bad
stack file stops `pulumi preview` with one message listing every problem, never a traceback.

`python -m gpushare` in the folder that holds a clone named `gpushare` lands here too: the current directory comes
first on the import path, and a folder without `__init__.py` there is a namespace package `gpushare` whose
`__main__` is this file. An editable install does not win over it, because setuptools' import finder sits after
Python's own path finder (pypa/setuptools#3557). Run so (module `gpushare.__main__`, where the Pulumi CLI runs the
program as `__main__`), this file hands over to the installed command.
"""

import importlib.util
import sys
from pathlib import Path


def _run_installed_command() -> None:
    """Forget the namespace package and the folder that holds it, then run the installed `gpushare` command."""
    holder = Path(__file__).resolve().parent.parent
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != holder]
    del sys.modules["gpushare"]
    if importlib.util.find_spec("gpushare") is None:
        print(f"error: gpushare is not installed in {sys.executable}: `python -m gpushare` in {holder} found only the "
              f"clone {holder / 'gpushare'}, the Pulumi project\nhint: pip install -e {holder / 'gpushare'}",
              file=sys.stderr)
        sys.exit(2)
    from gpushare.cli import console_main

    console_main()


if __spec__ is not None and __spec__.name == "gpushare.__main__":
    _run_installed_command()
else:
    from gpushare.components.program import program

    program()
