"""Stack files for tests: the minimal stack new tests start from, writing one, and running a command on it.

A test that needs a stack file starts from `MINIMAL_STACK_YAML` (append keys under its pool, or config keys at two
spaces' indent) or from its `config:` mapping (`minimal_config`), writes it with `write_stack`, and runs `plan` (or any command, with
`run_cli`) to get the exit code, stdout and stderr the user would see.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

T4 = "Standard_NC4as_T4_v3"

MINIMAL_STACK_YAML = f"""\
config:
  azure-native:location: westeurope
  gpushare:cluster:
    name: gpushare-test
  gpushare:pools:
    - name: t4
      vmSize: {T4}
"""
"""The smallest valid stack file; tests append to it to break one thing (its last line is the pool's, so an
appended `      key: value` line is a key of the pool, `  gpushare:key: ...` a config key)."""


def minimal_config() -> dict[str, Any]:
    """`MINIMAL_STACK_YAML`'s `config:` mapping, a fresh copy each call (tests change it freely)."""
    return yaml.safe_load(MINIMAL_STACK_YAML)["config"]


def write_stack(tmp_path: Path, stack: str | dict[str, Any] = MINIMAL_STACK_YAML,
                name: str = "Pulumi.test.yaml") -> Path:
    """`stack` written to `tmp_path/name`: a stack file's text, or a `config:` mapping (dumped as YAML). The file's
    name gives the stack's (`Pulumi.<stack>.yaml`)."""
    path = tmp_path / name
    text = stack if isinstance(stack, str) else yaml.safe_dump({"config": stack}, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path


def run_cli(capsys: Any, *argv: str) -> tuple[int, str, str]:
    """`gpushare ARGV` in-process: its exit code, stdout and stderr (read from pytest's `capsys`)."""
    from gpushare.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def plan(capsys: Any, stack: Path | str, *args: str) -> tuple[int, str, str]:
    """`gpushare plan STACK ARGS`: its exit code, stdout and stderr."""
    return run_cli(capsys, "plan", str(stack), *args)
