"""Stdout carries only the command's output, and a reader that stops early (`plan STACK | head -1`) ends the
command quietly: no BrokenPipeError traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpushare.cli import CLOSED_PIPE_EXIT

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

