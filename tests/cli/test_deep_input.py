"""Input nested deeper than the parsers can recurse (a runaway generator, a hostile file) is a clear error naming the
file, like any other unreadable input: the YAML and JSON decoders raise RecursionError, which is no GpushareError."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpushare.cli import main
from tests.stack_files import write_stack

DEPTH = 50_000
DEV_STACK = str(Path(__file__).resolve().parents[2] / "stacks" / "Pulumi.dev.yaml")


@pytest.fixture
def deep_json(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * DEPTH + "]" * DEPTH)
    return path


def test_a_stack_file_nested_too_deeply(tmp_path, capsys):
    stack = write_stack(tmp_path, "config:\n  gpushare:cluster: " + "[" * DEPTH + "]" * DEPTH + "\n",
                        "Pulumi.deep.yaml")

    assert main(["plan", str(stack)]) == 2
    err = capsys.readouterr().err
    assert f"{stack}: 1 configuration error" in err
    assert "(file): nested too deeply to read (over" in err and "look for runaway brackets" in err


@pytest.mark.parametrize("command, expected", [
    (["plan", DEV_STACK, "--deployed"], "nested too deeply to be node pools"),
    (["compare", "{deep}"], "nested too deeply to be a plan"),
    (["report"], "nested too deeply to be a preview"),
], ids=["deployed-pools", "compare", "report"])
def test_a_json_input_nested_too_deeply(command, expected, deep_json, capsys):
    args = [arg.format(deep=deep_json) for arg in command] + [str(deep_json)]

    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {deep_json}: {expected} (over ")
    assert "Traceback" not in err


def test_a_project_file_nested_too_deeply(tmp_path, capsys):
    (tmp_path / "Pulumi.yaml").write_text("name: " + "[" * DEPTH + "]" * DEPTH + "\n")
    (tmp_path / "Pulumi.dev.yaml").write_text("config: {}\n")

    assert main(["plan", "dev", "--project", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'Pulumi.yaml'}: cannot be read: nested too deeply")
