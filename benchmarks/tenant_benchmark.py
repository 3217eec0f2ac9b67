"""Time `python -m gpushare plan` on generated stacks of 10 GPU pools and 0 to 1,000 tenants: the time a plan takes
grows linearly with the tenants, and this shows it.

Each plan runs as its own process, as a user runs it (the text plan `plan STACK` prints, the pod snippet of every
tenant included). Prints medians of a few runs of wall time and of the child's CPU time (user + system, from
`os.wait4`), the CPU each tenant adds over the stack without tenants (linear growth keeps it flat from row to row),
and the plan's peak resident memory. On a shared machine wall time follows the neighbours' load: judge by CPU time.
Run with `.venv/bin/python -m benchmarks.tenant_benchmark`.
"""

from __future__ import annotations

import argparse
import compileall
import sys
import tempfile
from pathlib import Path

import yaml

from benchmarks.plan_benchmark import ROOT, measure, medians, stack_with

POOLS = 10


def stack_with_tenants(tenants: int) -> dict:
    """POOLS pools, and `tenants` tenants each on one of them, round robin (so every pool is shared)."""
    stack = stack_with(POOLS)
    stack["config"]["gpushare:tenants"] = [{"name": f"team{t}", "pools": [f"p{t % POOLS}"]} for t in range(tenants)]
    return stack


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, nargs="+", default=[0, 250, 500, 1000])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for package in ("gpushare", "benchmarks"):  # as an installed package is (plan_benchmark.py says why)
        compileall.compile_dir(ROOT / package, quiet=1)
    print(f"{'tenants':>7}  {'plan s':>6}  {'cpu s':>5}  {'cpu ms/tenant':>13}  {'peak MiB':>8}")
    base_cpu = None
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.tenants:
            path = Path(tmp) / f"Pulumi.tenants{size}.yaml"
            path.write_text(yaml.safe_dump(stack_with_tenants(size), sort_keys=False))
            runs = [measure([sys.executable, "-m", "gpushare", "plan", str(path)]) for _ in range(args.runs)]
            wall, cpu = medians(runs)
            base_cpu = cpu if base_cpu is None else base_cpu
            per_tenant = f"{(cpu - base_cpu) / size * 1000:>13.1f}" if size else f"{'-':>13}"
            peak = max(r.peak_kib for r in runs) / 1024
            print(f"{size:>7}  {wall:>6.2f}  {cpu:>5.2f}  {per_tenant}  {peak:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
