"""Says, before `make test` builds them, which Go tools it will build and what that takes (stderr only).

    python tools/go_builds.py TOOL...

Each `tools/<tool>/build` is asked whether its binary is cached by running it with a stand-in `go` that answers
`go version` and `go env` with the real Go (so the cache key is the real one) and fails anything that would
download or build, and a `flock -n` that never waits for a build in progress (nor passes its lock): the script
prints its cached path and exits 0, or stops at the lock or at its first download or build. The figures per tool
are the table in docs/testing.md ("The Go tools `make test` builds"), so the page and the message cannot drift
apart. Stdlib only: it runs before anything else.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTING = ROOT / "docs" / "testing.md"
TABLE_START, TABLE_END = "<!-- go-builds:start -->", "<!-- go-builds:end -->"
ROW = re.compile(r"^\| `(?P<tool>[\w-]+)` \| (?P<minutes>\d+(?:\.\d+)?) \| (?P<mib>\d+) \|")
GO_MISSING = 3
STAND_IN_GO = """#!/bin/sh
# `go version` and `go env` from the real Go; `go mod download MODULE@VERSION` too (autoscalercheck asks the module
# proxy before its cache); anything else would download or build.
case "$1" in
  version|env) exec "$GPUSHARE_REAL_GO" "$@" ;;
  mod) case "$*" in *@*) exec "$GPUSHARE_REAL_GO" "$@" ;; esac ;;
esac
exit 97
"""


def figures() -> dict[str, tuple[float, int]]:
    """docs/testing.md's table: tool -> (minutes to build on an idle 2-core machine, MiB of binaries)."""
    text = TESTING.read_text()
    table = text[text.index(TABLE_START):text.index(TABLE_END)]
    return {m["tool"]: (float(m["minutes"]), int(m["mib"]))
            for m in map(ROW.match, table.splitlines()) if m}


def cache_root() -> str:
    """Where the build scripts cache the tools (their own rule: GPUSHARE_CACHE, else XDG_CACHE_HOME/gpushare)."""
    if os.environ.get("GPUSHARE_CACHE"):
        return os.environ["GPUSHARE_CACHE"]
    if os.environ.get("XDG_CACHE_HOME"):
        return f"{os.environ['XDG_CACHE_HOME']}/gpushare"
    return "~/.cache/gpushare"


def real_go() -> str | None:
    go = os.environ.get("GO") or shutil.which("go")
    if not go and os.access("/usr/local/go/bin/go", os.X_OK):
        go = "/usr/local/go/bin/go"
    return go


NOT_SERVED = 5
"""A build script's exit status when the module proxy does not serve its module (autoscalercheck)."""


def dry_run(tool: str, stand_ins: Path, go: str) -> int:
    """`tools/<tool>/build` with the stand-ins: 0 when its binary is cached, NOT_SERVED, or another status when it
    would build."""
    env = {**os.environ, "GO": str(stand_ins / "go"), "GPUSHARE_REAL_GO": go,
           "GPUSHARE_REAL_FLOCK": shutil.which("flock") or "flock",
           "PATH": f"{stand_ins}{os.pathsep}{os.environ.get('PATH', '')}"}
    try:
        done = subprocess.run([str(ROOT / "tools" / tool / "build")], env=env, capture_output=True, text=True,
                              timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return 1
    return done.returncode


STAND_IN_FLOCK = """#!/bin/sh
# Never wait for a build in progress, and never go past its lock: a held lock means not built yet.
exec "$GPUSHARE_REAL_FLOCK" -n "$@"
"""


def stand_ins(folder: Path) -> Path:
    """`go`, and `flock` where the real one exists (without it the build scripts take no lock)."""
    for name, text in (("go", STAND_IN_GO), ("flock", STAND_IN_FLOCK if shutil.which("flock") else None)):
        if text:
            path = folder / name
            path.write_text(text)
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return folder


def announcement(tools: list[str], to_build: list[str], not_served: list[str],
                 table: dict[str, tuple[float, int]]) -> str:
    skipped = (f"; not served by the Go module proxy, so its tests skip: {', '.join(not_served)}"
               if not_served else "")
    if not to_build:
        return f"make test: the Go tools are built (cached under {cache_root()}){skipped}\n"
    minutes = sum(table[t][0] for t in to_build)
    mib = sum(table[t][1] for t in to_build)
    lines = [f"make test: building {len(to_build)} of {len(tools)} Go tools first, one at a time (figures for an "
             "idle 2-core machine, from docs/testing.md; a busy one takes longer):"]
    lines += [f"  {t}: about {table[t][0]:g} min, {table[t][1]} MiB" for t in to_build]
    lines.append(f"  in all about {minutes:g} min and {mib} MiB under {cache_root()}, and Go's build and module "
                 "caches grow by several GB; later runs reuse them" + skipped)
    return "\n".join(lines) + "\n"


def main(tools: list[str]) -> int:
    table = figures()
    unknown = [t for t in tools if t not in table]
    if unknown:
        print(f"go_builds: no figures for {', '.join(unknown)} in docs/testing.md", file=sys.stderr)
        return 2
    go = real_go()
    check = subprocess.run([str(ROOT / "tools" / tools[0] / "build"), "--check"], capture_output=True, text=True)
    if not go or check.returncode == GO_MISSING:
        reason = (check.stderr.strip().splitlines() or ["Go is not installed"])[-1]
        sys.stderr.write(f"make test: no Go tools are built ({reason}); their tests skip, naming why\n")
        return 0
    with tempfile.TemporaryDirectory(prefix="gpushare-go-builds-") as folder:
        ins = stand_ins(Path(folder))
        status = {t: dry_run(t, ins, go) for t in tools}
    sys.stderr.write(announcement(tools, [t for t, s in status.items() if s not in (0, NOT_SERVED)],
                                  [t for t, s in status.items() if s == NOT_SERVED], table))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
