"""`console_main` (the `gpushare` command, `python -m gpushare`) ends its process without the interpreter's
teardown: what a command wrote and what its atexit handlers do must survive that, and so must its exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from tests.stack_files import write_stack

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_command(script: str, tmp_path: Path) -> subprocess.CompletedProcess:
    # Block-buffered stdout, as for a user who pipes the JSON into a file (no PYTHONUNBUFFERED): whatever is still
    # in the buffer when the command returns must reach the file.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_buffered_output_and_atexit_handlers_survive_the_fast_exit(tmp_path):
    marker = tmp_path / "atexit-ran"
    result = run_command(f"""
        import atexit, sys
        atexit.register(lambda: open({str(marker)!r}, "w").write("ran"))
        sys.argv = ["gpushare", "plan", "dev", "--json"]
        from gpushare.cli import console_main
        console_main()
        """, tmp_path)

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["stack"] == "dev"
    assert marker.read_text() == "ran"


def test_the_exit_code_is_the_commands(tmp_path):
    stack = write_stack(tmp_path, "config:\n  gpushare:pools: [{name: a, vmSize: Standard_NC4as_T4_v3, count: -1}]\n",
                        "Pulumi.bad.yaml")
    result = run_command(f"""
        import sys
        sys.argv = ["gpushare", "plan", {str(stack)!r}]
        from gpushare.cli import console_main
        console_main()
        """, tmp_path)

    assert result.returncode == 2
    assert "gpushare:pools[0].count" in result.stderr and "Traceback" not in result.stderr


def test_a_thread_still_working_is_waited_for(tmp_path):
    marker = tmp_path / "thread-finished"
    result = run_command(f"""
        import sys, threading, time
        def work():
            time.sleep(0.5)
            open({str(marker)!r}, "w").write("done")
        threading.Thread(target=work).start()
        sys.argv = ["gpushare", "schema"]
        from gpushare.cli import console_main
        console_main()
        """, tmp_path)

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["$schema"].endswith("2020-12/schema")
    assert marker.read_text() == "done"



def test_a_command_runs_without_the_cyclic_collector(tmp_path):
    result = run_command("""
        import gc
        import gpushare.cli
        gpushare.cli.main = lambda: print("collector enabled:", gc.isenabled()) or 0
        gpushare.cli.console_main()
        """, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "collector enabled: False\n"
