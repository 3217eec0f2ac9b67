"""What every reading command shows when a remote answer is faulty (tests/cli/test_*_read_faults.py): exit 4, one
`error:` naming the read, nothing on stdout, no traceback. The commands run in a child process, bounded by
`CHILD_TIMEOUT` (far past the short deadline each test sets), so a hang fails the test instead of stalling the suite."""

from __future__ import annotations

import subprocess

CHILD_TIMEOUT = 60


def one_read_error(result: subprocess.CompletedProcess, prefix: str | tuple[str, ...], *fragments: str) -> str:
    """The command's stderr, after asserting it is one exit-4 error whose first line starts with `prefix` (one of
    them, for a tuple) and holds every fragment."""
    assert result.returncode == 4, result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.startswith(prefix), result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr
    return result.stderr
