"""Time `gpushare usage` over 7 days of a 1,000-GPU fleet held by a real Prometheus (Debian's 2.42, on loopback).

The fleet counts MIG instances as GPUs: 25 ND96asr_v4 nodes of 8 A100s as MIG 3g (16 instances each: 400), 300
time-sliced T4 nodes (x4) and 300 MPS T4 nodes (x4). Each device exports 6 dcgm-exporter counters every 5 minutes
for 7 days (1,000 x 6 x 2,016 = 12.1 million samples), beside kube-state-metrics' series for 1,975 pods and 625
nodes. The TSDB is built with `promtool tsdb create-blocks-from openmetrics` (tests/prometheus_server.py), then the
rules of the stack's group that `usage` reads (`gpushare rules`) are evaluated over the week through the server by
`promtool tsdb create-blocks-from rules`, as if the group had run all week. Printed: the TSDB's size on disk, and
`gpushare usage`'s wall time and the server's CPU time (medians of 3; on a shared machine judge by the CPU time)
with its query count; `--raw` also times one report from the raw series (subqueries), what a report costs before
the rules have run through its window.

Run: `python benchmarks/showback_benchmark.py [--keep DIR] [--raw]` (tens of minutes: building the TSDB and
backfilling the rules; a kept DIR is reused).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpushare.cli import main  # noqa: E402
from gpushare.showback.rules import EVALUATED, RECORDED, plain_group  # noqa: E402
from gpushare.stackfile.config import load_stack_file  # noqa: E402
from tests.prometheus_server import BLOCK_SECONDS, build_blocks, prometheus_server  # noqa: E402

STEP, STEPS = 300, 7 * 24 * 12
END = 1_795_996_800
START = END - (STEPS - 1) * STEP
COUNTERS = ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED",
            "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")
"""Six of dcgm-exporter's default counters (etc/default-counters.csv)."""
POOLS = {  # name: (vmSize, nodes, devices per node, slices per device, sharing keys)
    "a100mig": ("Standard_ND96asr_v4", 25, 16, 1, {"mig": "MIG3g"}),
    "t4ts": ("Standard_NC4as_T4_v3", 300, 1, 4, {"sharing": {"strategy": "time-slicing", "replicas": 4}}),
    "t4mps": ("Standard_NC8as_T4_v3", 300, 1, 4, {"sharing": {"strategy": "mps", "replicas": 4}}),
}
TENANTS = {"a100mig": "vision", "t4ts": "research", "t4mps": "nlp"}


def stack_file(path: Path) -> Path:
    config = {
        "azure-native:location": "westeurope",
        "gpushare:cluster": {"name": "showback-bench"},
        "gpushare:operator": {"migStrategy": "single"},
        "gpushare:pools": [{"name": name, "vmSize": size, "count": nodes, **keys}
                           for name, (size, nodes, _, _, keys) in POOLS.items()],
        "gpushare:tenants": [{"name": tenant, "pools": [pool]} for pool, tenant in TENANTS.items()],
        "gpushare:metrics": {"prometheus": "http://127.0.0.1:9090", "window": "7d"},
    }
    path.write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    return path


def _prefix(metric: str, labels: dict[str, str]) -> str:
    return metric + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "} "


def fleet_families(rng: random.Random) -> dict[str, list[tuple[str, float | None, int]]]:
    """Each family's series as (the sample line's prefix, a constant value or None, the device's index)."""
    ksm = {"job": "kube-state-metrics", "instance": "10.0.0.5:8080"}
    families: dict[str, list[tuple[str, float | None, int]]] = {}

    def add(metric: str, labels: dict[str, str], value: float | None, device: int = -1) -> None:
        families.setdefault(metric, []).append((_prefix(metric, labels), value, device))

    device_index = 0
    for pool, (_, nodes, devices, slices, keys) in POOLS.items():
        resource = "nvidia_com_gpu" if "mig" in keys else "nvidia_com_gpu_shared"
        for n in range(nodes):
            node = f"aks-{pool}-12345678-vmss{n:06d}"
            add("kube_node_labels", {**ksm, "node": node, "label_gpushare_io_pool": pool}, 1)
            add("kube_node_status_allocatable", {**ksm, "node": node, "resource": resource, "unit": "integer"},
                devices * slices)
            held = 7 if "mig" in keys else 3
            for p in range(held):
                pod = {"namespace": TENANTS[pool], "pod": f"{pool}-{n}-{p}", "uid": f"u-{pool}-{n}-{p}"}
                add("kube_pod_container_resource_requests",
                    {**ksm, **pod, "container": "main", "node": node, "resource": resource, "unit": "integer"}, 1)
                add("kube_pod_status_phase", {**ksm, **pod, "phase": "Running"}, 1)
            for d in range(devices):
                gpu, instance = (d // 2, d % 2 + 1) if "mig" in keys else (d, None)
                labels = {"job": "nvidia-dcgm-exporter", "instance": f"{node}:9400", "node": node, "gpu": str(gpu),
                          "UUID": f"GPU-{pool}-{n}-{gpu}", "device": f"nvidia{gpu}",
                          "modelName": "NVIDIA A100-SXM4-40GB" if instance else "Tesla T4"}
                if instance:
                    labels |= {"GPU_I_PROFILE": "3g.20gb", "GPU_I_ID": str(instance)}
                for counter in COUNTERS:
                    add(counter, labels, None, device_index)
                device_index += 1
    return families


def _activity(bases: list[float], device: int, step: int) -> float:
    """A device's busy share at a step: its own level, with a cheap deterministic wobble."""
    wobble = ((step * 2654435761 + device * 40503) % 1000) / 2500
    return min(1.0, bases[device] * (0.8 + wobble))


def block_sources(work: Path, families: dict[str, list[tuple[str, float | None, int]]], bases: list[float]):
    """One OpenMetrics file per 2-hour block, written as promtool needs it (yielded one at a time, so the week's
    text never sits on disk whole)."""
    first = START - START % BLOCK_SECONDS
    for window in range(first, END + 1, BLOCK_SECONDS):
        steps = [k for k in range(max(0, (window - START) // STEP), STEPS) if START + k * STEP < window + BLOCK_SECONDS
                 and START + k * STEP >= window]
        path = work / f"block-{window}.om"
        with path.open("w") as out:
            for metric, members in families.items():
                out.write(f"# TYPE {metric} gauge\n")
                scale = 100 if metric == "DCGM_FI_DEV_GPU_UTIL" else 1
                for prefix, value, device in members:
                    if value is not None:
                        text = f"{value:g}"
                        out.writelines(f"{prefix}{text} {START + k * STEP}\n" for k in steps)
                    else:
                        out.writelines(f"{prefix}{_activity(bases, device, k) * scale:.3g} {START + k * STEP}\n"
                                       for k in steps)
            out.write("# EOF\n")
        yield path


def disk_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def cpu_seconds(pid: int) -> float:
    """A process's user + system CPU time so far (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_usage(stack: Path, url: str, server: subprocess.Popen, *extra: str) -> tuple[float, float, dict]:
    """One report: wall seconds, the server's CPU seconds for it, the report."""
    out, err = io.StringIO(), io.StringIO()
    cpu = cpu_seconds(server.pid)
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["usage", str(stack), "--prometheus", url, "--at", str(END), "--json", *extra])
    elapsed = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"gpushare usage exited {code}: {err.getvalue()}")
    return elapsed, cpu_seconds(server.pid) - cpu, json.loads(out.getvalue())


def backfill_rules(promtool: str, stack: Path, url: str, work: Path, data: Path) -> float:
    """The stack's rule group evaluated over the week by `promtool tsdb create-blocks-from rules` through the
    server, as if it had run there all week; its blocks moved into `data`. Returns the seconds it took."""
    # Only the series `usage` reads: the backfill writes a block per rule and 2 hours, each rule's week being
    # evaluated through the server's range API, so the alerts' and cost rules' inputs would only add minutes.
    config = load_stack_file(stack)
    group = plain_group(config, config.metrics)
    read = {*RECORDED.values(), EVALUATED}
    group["rules"] = [rule for rule in group["rules"] if rule.get("record") in read]
    rules = work / "rules.yml"
    rules.write_text(yaml.safe_dump({"groups": [group]}, sort_keys=False, width=10_000))
    start = time.perf_counter()
    result = subprocess.run([promtool, "tsdb", "create-blocks-from", "rules", f"--start={START - STEP}",
                             f"--end={END + STEP}", f"--url={url}", f"--output-dir={work / 'rules-data'}",
                             str(rules)], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"create-blocks-from rules failed: {result.stdout}{result.stderr}")
    for block in (work / "rules-data").iterdir():
        shutil.move(str(block), data / block.name)
    return time.perf_counter() - start


def settle(data: Path, quiet_polls: int = 3, every: float = 20.0) -> int:
    """Wait while the server compacts (the backfill writes a block per rule and 2 hours: thousands of small
    overlapping blocks, which Prometheus merges in the background); returns the blocks left."""
    counts: list[int] = []
    while len(counts) < quiet_polls or len(set(counts[-quiet_polls:])) > 1:
        counts.append(sum(1 for p in data.iterdir() if (p / "meta.json").is_file()))
        time.sleep(every)
    return counts[-1]


def report(label: str, runs: list[tuple[float, float, dict]]) -> None:
    wall = statistics.median(r[0] for r in runs)
    cpu = statistics.median(r[1] for r in runs)
    document = runs[-1][2]
    print(f"gpushare usage --window 7d from {document['source']} series: {wall:.2f} s wall, {cpu:.2f} s of "
          f"Prometheus CPU (medians of {len(runs)}), {document['queries']} queries")


def main_benchmark() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build the TSDB here and keep it (reused when present)")
    parser.add_argument("--raw", action="store_true",
                        help="also time the report from the raw series (subqueries; minutes at this scale)")
    args = parser.parse_args()
    promtool, prometheus = shutil.which("promtool"), shutil.which("prometheus")
    if not promtool or not prometheus:
        raise SystemExit("needs Debian's prometheus package (apt-get install -y --no-install-recommends prometheus)")
    work = args.keep or Path(tempfile.mkdtemp(prefix="gpushare-showback-"))
    work.mkdir(parents=True, exist_ok=True)
    data = work / "data"
    stack = stack_file(work / "Pulumi.showback-bench.yaml")
    long_queries = ("--query.timeout=30m",)
    try:
        if not data.exists():
            start = time.perf_counter()
            rng = random.Random(33)
            families = fleet_families(rng)
            bases = [rng.random() for _ in range(sum(n * d for _, n, d, _, _ in POOLS.values()))]
            build_blocks(promtool, block_sources(work, families, bases), data)
            count = sum(len(members) for members in families.values()) * STEPS
            print(f"built {count:,} samples into {data} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
        dcgm = sum(nodes * devices for _, nodes, devices, _, _ in POOLS.values()) * len(COUNTERS) * STEPS
        print(f"fleet: {sum(n * d for _, n, d, _, _ in POOLS.values())} GPUs (MIG instances counted), "
              f"{len(COUNTERS)} counters, 5-minute samples, 7 days: {dcgm:,} DCGM samples; raw TSDB on disk: "
              f"{disk_bytes(data) / 2**20:,.0f} MiB")
        marker = work / "rules-backfilled"
        if args.raw or not marker.exists():
            started: list[subprocess.Popen] = []
            with prometheus_server(prometheus, data, work, long_queries, started) as url:
                if args.raw:
                    report("raw", [run_usage(stack, url, started[0], "--raw-series")])
                if not marker.exists():
                    seconds = backfill_rules(promtool, stack, url, work, data)
                    marker.write_text(f"{seconds:.0f}\n")
                    print(f"rule group backfilled over the week in {seconds:.0f} s", file=sys.stderr)
        started = []
        with prometheus_server(prometheus, data, work, long_queries, started) as url:
            print(f"compacted to {settle(data)} blocks", file=sys.stderr)
            report("recorded", [run_usage(stack, url, started[0]) for _ in range(3)])
        print(f"TSDB on disk with the recorded series: {disk_bytes(data) / 2**20:,.0f} MiB; load average "
              f"{os.getloadavg()[0]:.1f}")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main_benchmark()
