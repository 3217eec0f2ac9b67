"""The Go tools `make test` builds: it says which it will build and what that takes before it starts
(`tools/go_builds.py`, from docs/testing.md's table), never building to find out, and every build shares Go's
caches with the others."""

from __future__ import annotations

import importlib.util
import os
import shutil
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.go_tools import unavailable_reason

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("go_builds", ROOT / "tools" / "go_builds.py")
go_builds = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(go_builds)

BUILDS = sorted(p.parent.name for p in ROOT.glob("tools/*/build"))
MAKEFILE_TOOLS = re.search(r"^GO_TOOLS := (.*)$", (ROOT / "Makefile").read_text(), re.M)[1].split()


def announce(*tools: str, cache: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools" / "go_builds.py"), *tools], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "GPUSHARE_CACHE": str(cache), **env})


def test_make_test_builds_every_go_tool_and_the_page_has_figures_for_each():
    assert sorted(MAKEFILE_TOOLS) == BUILDS
    assert sorted(go_builds.figures()) == BUILDS
    assert MAKEFILE_TOOLS[-1] == "re2check" and MAKEFILE_TOOLS.index("pulumi") > MAKEFILE_TOOLS.index("controlplane")


def test_make_test_announces_the_builds_before_building_them():
    dry = subprocess.run(["make", "--dry-run", "--no-print-directory", "test"], cwd=ROOT, capture_output=True,
                         text=True, env={k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS")})
    lines = dry.stdout.splitlines()
    announced = next(i for i, line in enumerate(lines) if "tools/go_builds.py" in line)
    built = next(i for i, line in enumerate(lines) if "tools/$tool/build" in line)
    assert announced < built, dry.stdout


@pytest.mark.parametrize("build", BUILDS)
def test_every_build_shares_gos_caches_and_compile_flags(build):
    """A tool with its own GOPATH, GOCACHE or GOMODCACHE would download and compile again what the others have;
    other compile flags would make every package's cache entry its own."""
    script = (ROOT / "tools" / build / "build").read_text()
    assert not re.search(r"\b(GOPATH|GOCACHE|GOMODCACHE)=", script), build
    assert "CGO_ENABLED=0" in script and "-trimpath" in script, build


def test_the_announcement_names_each_tool_to_build_with_its_figures_and_builds_nothing(tmp_path):
    if reason := unavailable_reason(ROOT / "tools" / "re2check" / "build", "the build announcement"):
        pytest.skip(reason)
    start = time.monotonic()
    done = announce("nodeselect", "pulumi", "re2check", cache=tmp_path)
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert time.monotonic() - start < 60
    assert "building 3 of 3 Go tools first" in done.stderr
    assert "  pulumi: about 20 min, 276 MiB\n" in done.stderr
    assert "in all about 22.1 min" in done.stderr, done.stderr
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and p.name != ".lock"], "the dry run built something"

    subprocess.run([str(ROOT / "tools" / "re2check" / "build")], check=True, capture_output=True, timeout=300,
                   env={**os.environ, "GPUSHARE_CACHE": str(tmp_path)})
    after = announce("nodeselect", "re2check", cache=tmp_path)
    assert "building 1 of 2 Go tools first" in after.stderr and "re2check" not in after.stderr, after.stderr
    built = announce("re2check", cache=tmp_path)
    assert built.stderr == f"make test: the Go tools are built (cached under {tmp_path})\n"


def test_without_go_the_announcement_says_the_tiers_skip(tmp_path):
    done = announce("nodeselect", cache=tmp_path, GO=str(tmp_path / "no-go"))
    assert done.returncode == 0
    assert done.stderr.startswith("make test: no Go tools are built (nodeselect: Go is not installed"), done.stderr


def test_a_tool_without_figures_is_named():
    done = announce("nosuchtool", cache=Path("/nonexistent"))
    assert done.returncode == 2 and "no figures for nosuchtool in docs/testing.md" in done.stderr


def test_a_module_the_proxy_refuses_is_said_to_skip(monkeypatch):
    """autoscalercheck's exit 5 (its module not served): named apart from the builds, since nothing is built."""
    monkeypatch.delenv("GPUSHARE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/var/cache/me")
    assert go_builds.announcement(["a", "autoscalercheck"], [], ["autoscalercheck"], {}) == (
        "make test: the Go tools are built (cached under /var/cache/me/gpushare); not served by the Go module proxy, "
        "so its tests skip: autoscalercheck\n")


def test_a_build_in_progress_is_announced_as_to_build_without_waiting_for_it(tmp_path):
    """Another process holds the tool's build lock: the dry run neither waits nor passes the lock."""
    if reason := unavailable_reason(ROOT / "tools" / "re2check" / "build", "the build announcement"):
        pytest.skip(reason)
    if not shutil.which("flock"):
        pytest.skip("flock is not installed: the build scripts take no lock")
    # The key folder the script uses: found by building once into another cache.
    subprocess.run([str(ROOT / "tools" / "re2check" / "build")], check=True, capture_output=True, timeout=300,
                   env={**os.environ, "GPUSHARE_CACHE": str(tmp_path / "probe")})
    (key,) = [p.name for p in (tmp_path / "probe" / "re2check").iterdir()]
    held = tmp_path / "cache" / "re2check" / key
    held.mkdir(parents=True)
    with subprocess.Popen(["flock", str(held / ".lock"), "sleep", "60"]) as holder:
        try:
            time.sleep(0.5)
            start = time.monotonic()
            done = announce("re2check", cache=tmp_path / "cache")
            assert time.monotonic() - start < 30
            assert "building 1 of 1 Go tools first" in done.stderr, done.stderr
        finally:
            holder.kill()
