"""`verify STACK [--json] [--kubeconfig FILE] [--context NAME] [--wait SECONDS] [--smoke]`: check on the live
cluster that every GPU pool offers what `plan` promised. Read-only, except `--smoke`'s namespace and pods.

Exit 0 when everything passes (pending pools and nodes are not failures), 1 on a mismatch, 4 when the cluster cannot
be reached or refuses the credentials.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import sys
import time
from pathlib import Path

from gpushare.cli.stack_argument import add_stack_arguments, read_stack_argument
from gpushare.kubernetes.tenant_objects import tenant_manifests
from gpushare.kubernetes.verify.expectations import dra_pool_expectations, pool_expectations
from gpushare.kubernetes.verify.findings import Verdict
from gpushare.kubernetes.verify.verify_report import VerifyReport, evaluate
from gpushare.kubernetes.verify.smoke import SmokeResult, smoke_skips, smoke_targets
from gpushare.kubernetes.verify.tenant_drift import manifest_findings, skipped_checks
from gpushare.kubernetes.verify.text import render_text
from gpushare.stackfile.config import parse_stack_file

DEFAULT_POLL_INTERVAL = 10.0
DEFAULT_SMOKE_TIMEOUT = 600.0
"""Long enough for an autoscaled pool to add a node from 0 and pull the CUDA image."""


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "verify", help="check on the live cluster that every pool advertises what the plan promised",
        description="Compare each pool's nodes (allocatable GPU resources, device-plugin config label, GPU Operator "
                    "labels) and the operator's pods with the plan. Read-only unless --smoke.",
    )
    add_stack_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument("--kubeconfig", metavar="FILE", type=Path,
                        help="kubeconfig to use (default: KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context (default: its current context)")
    parser.add_argument("--wait", metavar="SECONDS", type=float, default=0.0,
                        help="poll until everything passes or SECONDS run out (progress on stderr)")
    parser.add_argument("--poll-interval", metavar="SECONDS", type=float, default=DEFAULT_POLL_INTERVAL,
                        help=f"seconds between polls with --wait and --smoke (default {DEFAULT_POLL_INTERVAL:.0f})")
    parser.add_argument("--smoke", action="store_true",
                        help="also run one short pod per pool (nvidia-smi -L) in a namespace created and deleted "
                             "for the run, and show its output")
    parser.add_argument("--smoke-timeout", metavar="SECONDS", type=float, default=DEFAULT_SMOKE_TIMEOUT,
                        help=f"how long smoke pods may take (default {DEFAULT_SMOKE_TIMEOUT:.0f})")
    parser.set_defaults(run=run)


def _progress(message: str) -> None:
    print(f"verify: {message}", file=sys.stderr, flush=True)


def _summary(report: VerifyReport) -> str:
    pending = sum(1 for f in report.findings if f.pending and not f.idle)
    mismatches = sum(1 for f in report.findings if not f.pending)
    return f"{mismatches} mismatch(es), {pending} pending"


def wait(seconds: float) -> None:
    """A pause between polls, which first collects the garbage in cycles: a command runs with the collector off
    (`gpushare.cli.run_as_command`), and `--wait` or `--smoke` may poll for minutes."""
    gc.collect()
    time.sleep(seconds)


def run(args: argparse.Namespace) -> int:
    stack = parse_stack_file(read_stack_argument(args))
    expectations = pool_expectations(stack)
    dra_expectations = dra_pool_expectations(stack)
    manifests = tenant_manifests(stack)

    # Imported here: `plan` and the tests of other commands need no Kubernetes client.
    from gpushare.kubernetes.cluster_read import api_client, read_objects, read_snapshot, run_smoke
    from gpushare.kubernetes.queue_status import (
        cluster_queue_names,
        queue_statuses,
        read_cluster_queues,
        render_queue_lines,
    )

    api, context = api_client(args.kubeconfig, args.context)
    deadline = time.monotonic() + args.wait
    while True:
        report = evaluate(expectations, read_snapshot(api, dra=bool(dra_expectations)), dra_expectations)
        if manifests:
            live = read_objects(api, manifests)
            report = dataclasses.replace(report, tenant_objects=len(manifests),
                                         tenants=manifest_findings("tenants", manifests, live),
                                         skipped=skipped_checks("tenants", manifests, live))
        remaining = deadline - time.monotonic()
        if report.settled or remaining <= 0:
            break
        _progress(f"{_summary(report)}; polling again in {min(args.poll_interval, remaining):.0f}s "
                  f"({remaining:.0f}s left)")
        wait(min(args.poll_interval, remaining))

    smoke: list[SmokeResult] = []
    if args.smoke:
        smoke = run_smoke(api, smoke_targets(stack, expectations), args.smoke_timeout, args.poll_interval, _progress,
                          skip=smoke_skips(stack), sleep=wait)
        report = dataclasses.replace(report, extra=[f for r in smoke if (f := r.finding()) is not None])

    # Kueue's queues (`gpushare:queues`): each tenant's ClusterQueue status; a queue missing or inactive fails.
    queues = queue_statuses(stack, read_cluster_queues(api, cluster_queue_names(stack))) \
        if stack.queues.enabled else []
    header = f"stack {stack.stack}, cluster context {context} ({api.configuration.host})"
    if args.json:
        document = {"stack": stack.stack, "context": context, "server": api.configuration.host, **report.to_json()}
        if args.smoke:
            document["smoke"] = [r.to_json() for r in smoke]
        if stack.queues.enabled:
            document["queues"] = [q.to_json() for q in queues]
        print(json.dumps(document, indent=2))
    else:
        print(header)
        print(render_text(report, smoke))
        for line in render_queue_lines(queues) + [q.problem for q in queues if q.problem]:
            print(line)
    if report.verdict is Verdict.PENDING:
        _progress("pending is not a failure; `--wait SECONDS` polls until it settles")
    return max(report.exit_code, 1 if any(q.problem for q in queues) else 0)
