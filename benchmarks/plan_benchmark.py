"""Time `python -m gpushare plan --json` on generated stacks of 1, 10 and 50 GPU pools (with 0, 2 and 10 tenants).

Each plan runs as its own process, as a user runs it (imports, validation, the program under mocks, JSON out).
Prints the median wall time of a few runs and the child's peak resident memory. Run with `make bench`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent

# One pool of each mode, cycled to fill a stack.
POOL_SHAPES = [
    {"vmSize": "Standard_ND96asr_v4", "mig": "MIG1g"},
    {"vmSize": "Standard_NC40ads_H100_v5", "mig": "MIG3g", "sharing": {"strategy": "time-slicing", "replicas": 2}},
    {"vmSize": "Standard_NC4as_T4_v3", "sharing": {"strategy": "time-slicing", "replicas": 4},
     "autoscale": {"min": 1, "max": 3}},
    {"vmSize": "Standard_NC8as_T4_v3", "sharing": {"strategy": "mps", "replicas": 4}},
    {"vmSize": "Standard_ND96isr_H100_v5", "zones": ["1", "2"]},
]


POOLS_PER_TENANT = 5


def stack_with(pools: int) -> dict:
    """`pools` GPU pools, and a tenant for each full block of POOLS_PER_TENANT pools (its dedicated pools)."""
    names = [f"p{i}" for i in range(pools)]
    return {"config": {
        "azure-native:location": "westeurope",
        "gpushare:cluster": {"name": f"bench{pools}"},
        "gpushare:pools": [{"name": name, **POOL_SHAPES[i % len(POOL_SHAPES)]} for i, name in enumerate(names)],
        "gpushare:tenants": [{"name": f"team{t}", "pools": names[t * POOLS_PER_TENANT:(t + 1) * POOLS_PER_TENANT]}
                             for t in range(pools // POOLS_PER_TENANT)],
    }}


def measure(stack_file: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one plan process."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "gpushare", "plan", str(stack_file), "--json"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"plan failed on {stack_file}: {proc.stderr.read().decode()}")
    return elapsed, usage.ru_maxrss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{'pools':>5}  {'median s':>8}  {'min s':>6}  {'peak MiB':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            path = Path(tmp) / f"Pulumi.bench{size}.yaml"
            path.write_text(yaml.safe_dump(stack_with(size), sort_keys=False))
            results = [measure(path) for _ in range(args.runs)]
            times = [t for t, _ in results]
            peak = max(rss for _, rss in results) / 1024
            print(f"{size:>5}  {statistics.median(times):>8.2f}  {min(times):>6.2f}  {peak:>8.1f}")


if __name__ == "__main__":
    main()
