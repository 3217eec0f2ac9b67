"""A real Prometheus (Debian's 2.42) on loopback over a TSDB built from OpenMetrics text by `promtool tsdb
create-blocks-from openmetrics`: what `gpushare usage` is tested and benchmarked against."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path

READY_SECONDS = 120


BLOCK_SECONDS = 2 * 3600
"""promtool's backfill block length (2 h, tsdb.DefaultBlockDuration), its windows aligned to multiples of it."""


def create_blocks(promtool: str, series: Iterable[tuple[str, dict[str, str], Iterable[tuple[int, float]]]],
                  work: Path, data_dir: Path, parallel: int = 2) -> int:
    """Build `data_dir`'s blocks from (metric, labels, [(unix seconds, value)]) with `promtool tsdb
    create-blocks-from openmetrics`, one OpenMetrics file per 2-hour block: promtool 2.42 reads its whole input
    again for each block it writes (cmd/promtool/backfill.go), so one file for a week would be read 84 times.
    Samples stream to one part file per block and family, joined per block at the end, so each block's file holds
    its families' series together, as OpenMetrics requires. Returns the samples written."""
    parts_dir = work / "openmetrics-parts"
    parts_dir.mkdir(parents=True, exist_ok=True)
    parts: dict[tuple[int, str], object] = {}
    families: list[str] = []
    count = 0
    for metric, labels, samples in series:
        if metric not in families:
            families.append(metric)
        inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        prefix = f"{metric}{{{inner}}} "
        for at, value in samples:
            key = (at - at % BLOCK_SECONDS, metric)
            part = parts.get(key)
            if part is None:
                part = parts[key] = (parts_dir / f"{key[0]}-{families.index(metric)}").open("w")
            part.write(f"{prefix}{value:g} {at}\n")
            count += 1
    for part in parts.values():
        part.close()

    def block_files() -> Iterator[Path]:
        for window in sorted({w for w, _ in parts}):
            path = work / f"block-{window}.om"
            with path.open("w") as out:
                for index, metric in enumerate(families):
                    part_path = parts_dir / f"{window}-{index}"
                    if part_path.exists():
                        out.write(f"# TYPE {metric} gauge\n")
                        with part_path.open() as part_file:
                            shutil.copyfileobj(part_file, out)
                        part_path.unlink()
                out.write("# EOF\n")
            yield path

    build_blocks(promtool, block_files(), data_dir, parallel)
    return count


def build_blocks(promtool: str, sources: Iterable[Path], data_dir: Path, parallel: int = 2) -> None:
    """Run `promtool tsdb create-blocks-from openmetrics` on each OpenMetrics file as `sources` yields it (at most
    `parallel` at once), deleting each file once its block is written: the text of a week never sits on disk whole."""
    running: list[tuple[Path, subprocess.Popen]] = []

    def finish(source: Path, process: subprocess.Popen) -> None:
        out, _ = process.communicate(timeout=1800)
        if process.returncode != 0:
            raise RuntimeError(f"promtool create-blocks-from openmetrics {source.name} failed:\n{out}")
        source.unlink()

    for source in sources:
        if len(running) >= parallel:
            finish(*running.pop(0))
        running.append((source, subprocess.Popen(
            [promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet", str(source), str(data_dir)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    for source, process in running:
        finish(source, process)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def prometheus_server(prometheus: str, data_dir: Path, work: Path, extra_args: tuple[str, ...] = (),
                      started: list | None = None) -> Iterator[str]:
    """Prometheus serving `data_dir` on 127.0.0.1 (no scrape targets, retention long enough for any block):
    yields its base URL; stopped on exit. `started` receives the process (the benchmark reads its CPU time)."""
    config = work / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1h\nscrape_configs: []\n")
    port = _free_port()
    log = (work / "prometheus.log").open("w")
    process = subprocess.Popen(
        [prometheus, f"--config.file={config}", f"--storage.tsdb.path={data_dir}",
         f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=100y",
         "--query.max-samples=200000000", "--log.level=warn", *extra_args],
        stdout=log, stderr=subprocess.STDOUT)
    if started is not None:
        started.append(process)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_SECONDS
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"prometheus exited {process.returncode}: {(work / 'prometheus.log').read_text()}")
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("prometheus did not become ready")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
