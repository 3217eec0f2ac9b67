"""Time `python -m gpushare plan --json` on generated stacks of 1, 10 and 50 GPU pools (with 0, 2 and 10 tenants),
beside the time to register the very same resources bare.

Each plan runs as its own process, as a user runs it (imports, validation, the program under mocks, JSON out). The
bare figure is a fresh process registering the plan's recorded resources as generic resources under the same mock
engine (benchmarks/bare_registration.py), in a process that ends as the command's does (collector off, no
teardown); plan/bare is what gpushare adds on top of the registrations themselves.
Prints medians of a few runs of wall time and of the child's CPU time (user + system, from `os.wait4`), the ratios,
and the plan's peak resident memory. On a shared machine wall time follows the neighbours' load: judge by CPU time.
The typed figure declares the same resources through the providers' typed SDK classes (`register --typed`:
pulumi_azure_native's and pulumi_kubernetes's, the recorded inputs as their keyword arguments): no Python program
that declares these resources with those SDKs can be faster. plan/typed is what gpushare's own code adds, typed/bare
what the SDK classes cost before gpushare runs a line. Run with `make bench`.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Run:
    wall: float
    """Seconds from start to exit."""
    cpu: float
    """The child's user + system CPU seconds."""
    peak_kib: int


def measure(command: list[str]) -> Run:
    """One process, timed as a whole."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed: {proc.stderr.read().decode()}")
    return Run(elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)


def medians(runs: list[Run]) -> tuple[float, float]:
    return statistics.median(r.wall for r in runs), statistics.median(r.cpu for r in runs)


def bare_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "benchmarks.bare_registration", *args]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    # Every measured process reads gpushare's modules from __pycache__, as from an installed package (`pip install`
    # byte-compiles it). With PYTHONDONTWRITEBYTECODE set, as on this machine, each run would otherwise compile
    # the 65 modules a plan imports again: 0.14 s of every plan, a cost no user's second run pays.
    for package in ("gpushare", "benchmarks"):
        compileall.compile_dir(ROOT / package, quiet=1)
    print(f"{'pools':>5}  {'plan s':>6}  {'cpu s':>5}  {'bare s':>6}  {'cpu s':>5}  {'typed s':>7}  {'cpu s':>5}  "
          f"{'plan/bare':>9}  {'cpu':>4}  {'plan/typed':>10}  {'cpu':>4}  {'typed/bare':>10}  {'cpu':>4}  "
          f"{'peak MiB':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            path = Path(tmp) / f"Pulumi.bench{size}.yaml"
            path.write_text(yaml.safe_dump(stack_with(size), sort_keys=False))
            recording = Path(tmp) / f"bench{size}.recording.json"
            measure(bare_command("record", str(path), str(recording)))
            plans, bares, typeds = [], [], []
            for _ in range(args.runs):  # interleaved, so a neighbour's burst weighs on all alike
                plans.append(measure([sys.executable, "-m", "gpushare", "plan", str(path), "--json"]))
                bares.append(measure(bare_command("register", str(recording))))
                typeds.append(measure(bare_command("register", str(recording), "--typed")))
            plan_wall, plan_cpu = medians(plans)
            bare_wall, bare_cpu = medians(bares)
            typed_wall, typed_cpu = medians(typeds)
            peak = max(r.peak_kib for r in plans) / 1024
            print(f"{size:>5}  {plan_wall:>6.2f}  {plan_cpu:>5.2f}  {bare_wall:>6.2f}  {bare_cpu:>5.2f}  "
                  f"{typed_wall:>7.2f}  {typed_cpu:>5.2f}  {plan_wall / bare_wall:>9.2f}  {plan_cpu / bare_cpu:>4.2f}  "
                  f"{plan_wall / typed_wall:>10.2f}  {plan_cpu / typed_cpu:>4.2f}  {typed_wall / bare_wall:>10.2f}  "
                  f"{typed_cpu / bare_cpu:>4.2f}  {peak:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
