"""The project's `__main__.py` (what `pulumi up` runs) is the packaged program that `plan` and the tests run."""

import os
import runpy
from pathlib import Path
from unittest import mock

from gpushare.model.environment_variables import OFFLINE_ENV
from gpushare.render.mock_engine import Recording, run_program, run_pulumi
from gpushare.stackfile.config import encode_engine_config, read_stack_file
from gpushare.stackfile.project import resolve_stack_file

ROOT = Path(__file__).resolve().parents[2]


def registrations(recording: Recording) -> list[dict]:
    return sorted((r.to_json() for r in recording.resources), key=lambda r: (r["type"], r["name"]))


def test_root_program_registers_and_exports_what_the_packaged_program_does():
    config = encode_engine_config(read_stack_file(resolve_stack_file("prod")).config)
    with mock.patch.dict(os.environ, {OFFLINE_ENV: "1"}):
        root = run_pulumi(lambda: runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__"), stack="prod",
                          config=config, preview=True)
    packaged = run_program("prod", config)

    assert root.resources and registrations(root) == registrations(packaged)
    assert root.exports == packaged.exports and root.warnings == packaged.warnings
