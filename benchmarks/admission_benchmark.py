"""The admission overhead of the tenant policies on a real API server: pod creates per second in a tenant's namespace
with the policies bound and without, in one run of the control-plane tier (tests/controlplane/controlplane.py) at
30 tenants.

The stack: 30 tenants over 10 GPU pools (each tenant on one pool; pools shared by three tenants, so no tenant is
guaranteed a pool and none has a GPU quota: N pods fit). Every object the tenants need is applied once (namespaces,
LimitRanges, RoleBindings, the ValidatingAdmissionPolicies), then each round times N creates of the tenant's own
plan pod (`gpushare.kubernetes.tenants.pod_spec`), one at a time, as a member of the tenant's group:
- without: no binding of any gpushare policy exists (the policies do, compiled);
- with: every binding (30 tenants', the shared-pool one, the debug-container one), enforced: a probe pod is refused.
Rounds alternate without/with so that a neighbour's load falls on both. Pods are deleted after each timing (no node
exists: none is ever bound, and each is gone at once). Prints per round and the medians: pods/s and the API
server's CPU time per create (kube-apiserver's user + system time over the creates, from /proc), without and with,
and the ratios with/without. On a shared machine wall time follows the neighbours' load: judge by the CPU ratio.

Needs Go (the tier's binaries are built on first use, minutes). Run with `make bench-admission` or
`python benchmarks/admission_benchmark.py [--pods N] [--rounds R]`.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpushare.kubernetes.tenant_objects import tenant_manifests  # noqa: E402
from gpushare.kubernetes.tenants import pod_spec  # noqa: E402
from gpushare.stackfile.config import parse_config  # noqa: E402
from tests.controlplane.controlplane import (  # noqa: E402
    CONTROLLERS,
    ControlPlane,
    group_user,
    refused_by_a_policy,
    resource_path,
    start_control_plane,
    stop_control_plane,
    unavailable_reason,
)

TENANTS = 30
POOLS = 10
POOL_SHAPES = [
    {"vmSize": "Standard_NC4as_T4_v3", "sharing": {"strategy": "time-slicing", "replicas": 4}},
    {"vmSize": "Standard_NC40ads_H100_v5", "mig": "MIG1g"},
    {"vmSize": "Standard_NC24ads_A100_v4"},
]


def bench_stack():
    pools = [{"name": f"p{i}", **POOL_SHAPES[i % len(POOL_SHAPES)], "count": 1} for i in range(POOLS)]
    tenants = [{"name": f"team{t}", "pools": [f"p{t % POOLS}"], "guaranteed": False,
                "groups": [f"00000000-0000-4000-8000-{t:012d}"]} for t in range(TENANTS)]
    raw = {"azure-native:location": "westeurope", "gpushare:cluster": {"name": "bench"},
           "gpushare:pools": pools, "gpushare:tenants": tenants}
    return parse_config(raw, source="benchmarks/admission_benchmark.py", stack="bench")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux: /proc/PID/stat fields 14 and 15, in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_creates(plane: ControlPlane, namespace: str, user: str, spec: dict, count: int,
                  prefix: str) -> tuple[float, float]:
    """(wall seconds, kube-apiserver CPU seconds) for `count` pod creates, one after another; deletes them
    afterwards (not timed)."""
    path = resource_path("v1", "Pod", namespace)
    apiserver = next(p.popen.pid for p in plane.processes if p.name == "kube-apiserver")
    cpu, start = cpu_seconds(apiserver), time.perf_counter()
    for i in range(count):
        plane.request("POST", path, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{prefix}-{i}"},
                                     "spec": spec}, user)
    elapsed, cpu = time.perf_counter() - start, cpu_seconds(apiserver) - cpu
    plane.request("DELETE", path)  # the collection: unbound pods go at once
    plane.wait_for("the pods deleted", lambda: not plane.list("v1", "Pod", namespace), timeout=60)
    return elapsed, cpu


def set_bindings(plane: ControlPlane, bindings: list[dict], bound: bool, namespace: str) -> None:
    base = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
    for binding in bindings:
        if bound:
            plane.create(binding)
        else:
            plane.request("DELETE", f"{base}/{binding['metadata']['name']}")
    plane.wait_for(f"the policies {'bound' if bound else 'unbound'} in {namespace}",
                   lambda: refused_by_a_policy(plane, namespace) is bound, timeout=60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=300, help="pod creates per timing (default 300)")
    parser.add_argument("--rounds", type=int, default=5, help="without/with rounds (default 5)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so `finally` stops the control plane
    reason = unavailable_reason()
    if reason:
        print(f"admission benchmark: {reason}", file=sys.stderr)
        return 3

    stack = bench_stack()
    manifests = tenant_manifests(stack)
    tenant = stack.tenants[0]
    user = group_user(tenant.groups[0])
    spec = pod_spec(stack, tenant)
    print(f"starting the control plane ({TENANTS} tenants, {len(manifests)} objects)", file=sys.stderr)
    # Without the policies' type-checking controller: it spends seconds of CPU on each new policy (about a minute
    # each on 2 busy cores), which would fall on whichever timing it overlaps; admission does not need it.
    controllers = tuple(c for c in CONTROLLERS if c != "validatingadmissionpolicy-status-controller")
    plane = start_control_plane({group_user(t.groups[0]): list(t.groups) for t in stack.tenants}, controllers)
    try:
        for obj in manifests:
            if obj["kind"] != "ValidatingAdmissionPolicyBinding":
                plane.create(obj)
        plane.wait_for(f"the default ServiceAccount of {tenant.name}",
                       lambda: plane.get("v1", "ServiceAccount", "default", tenant.name))
        bindings = [m for m in manifests if m["kind"] == "ValidatingAdmissionPolicyBinding"]
        timed_creates(plane, tenant.name, user, spec, 30, "warm")  # connections, caches, the first compile
        rounds = []
        for r in range(args.rounds):
            without = timed_creates(plane, tenant.name, user, spec, args.pods, f"r{r}-without")
            set_bindings(plane, bindings, True, tenant.name)
            with_ = timed_creates(plane, tenant.name, user, spec, args.pods, f"r{r}-with")
            set_bindings(plane, bindings, False, tenant.name)
            rounds.append((without, with_))
            print(f"round {r + 1}: {summary(without, with_, args.pods)}", flush=True)
    finally:
        stop_control_plane(plane)
    median = [tuple(statistics.median(r[phase][i] for r in rounds) for i in (0, 1)) for phase in (0, 1)]
    ratios = [statistics.median(r[1][i] / r[0][i] for r in rounds) for i in (0, 1)]
    print(f"{TENANTS} tenants, {len(bindings)} bindings, {args.pods} creates x {args.rounds} rounds (medians): "
          f"{summary(*median, args.pods)}; median of the rounds' ratios: wall {ratios[0]:.2f}, API server CPU "
          f"{ratios[1]:.2f}; load average {os.getloadavg()[0]:.1f}")
    return 0


def summary(without: tuple[float, float], with_: tuple[float, float], pods: int) -> str:
    """Pods/s and API server CPU per create, without and with the policies bound, and the ratios with/without."""
    return (f"without the policies bound {pods / without[0]:.0f} pods/s, {1000 * without[1] / pods:.2f} ms API "
            f"server CPU each; with {pods / with_[0]:.0f} pods/s, {1000 * with_[1] / pods:.2f} ms; with/without: "
            f"wall {with_[0] / without[0]:.2f}, API server CPU {with_[1] / without[1]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
