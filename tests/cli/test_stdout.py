"""Stdout carries only the command's output, and a reader that stops early (`plan STACK | head -1`) ends the
command quietly: no BrokenPipeError traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpushare.cli import CLOSED_PIPE_EXIT
from gpushare.errors import OutputError

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args", [["plan", "prod"], ["plan", "prod", "--json"]], ids=["text", "json"])
def test_a_reader_that_closes_the_pipe_early_gets_no_traceback(args):
    # The read end is closed before the command writes anything, as `| head -1` does once it has its line: the
    # command's first write fails with EPIPE, every time (a reader that waits could take all the output).
    reader, writer = os.pipe()
    os.close(reader)
    try:
        result = subprocess.run([sys.executable, "-m", "gpushare", *args], cwd=REPO_ROOT, stdout=writer,
                                stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(writer)

    assert "Traceback" not in result.stderr
    assert "BrokenPipeError" not in result.stderr
    assert result.returncode == CLOSED_PIPE_EXIT == 0, result.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux): every write fails with ENOSPC")
@pytest.mark.parametrize("args", [["schema"], ["plan", "dev", "--json"]], ids=["schema", "plan"])
def test_output_that_cannot_be_written_is_an_error_not_a_traceback(args):
    # A full disk under `plan STACK --json > plan.json`: the file is incomplete, so the command must fail, and say so.
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "gpushare", *args], cwd=REPO_ROOT, stdout=full,
                                stderr=subprocess.PIPE, text=True, timeout=120)

    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr
    assert result.returncode == OutputError.exit_code == 5
    assert result.stderr.startswith("error: the output could not be written to stdout (No space left on device)")
    assert "hint: free space where stdout goes" in result.stderr
