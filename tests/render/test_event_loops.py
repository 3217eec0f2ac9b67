"""The mock engine closes every event loop a run opens: one left open is closed by its `__del__` at interpreter exit,
sometimes after its self-pipe socket is gone, and prints a traceback on stderr (seen under `plan STACK | head -1`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_plan_leaves_no_event_loop_open_for_the_interpreters_exit():
    code = (
        "import asyncio, contextlib, gc, io, sys\n"
        "from gpushare.cli import main\n"
        "for _ in range(2):\n"  # a second run in the same process works on loops of its own
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        assert main(['plan', 'prod', '--json']) == 0\n"
        "gc.collect()\n"
        "loops = [o for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop)]\n"
        "print(len(loops), sum(not loop.is_closed() for loop in loops))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    made, still_open = map(int, result.stdout.split())
    assert still_open == 0, f"{still_open} of {made} event loops left open"
    assert "Exception ignored" not in result.stderr
