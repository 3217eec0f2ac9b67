"""`usage STACK [--prometheus URL] [--window 7d] [--at TIME] [--prices [FILE]] [--json|--markdown]`: per pool, slice,
tenant and namespace, what was held and used over the window, what idled and what it cost, and the stack edit each
pool's figures call for (`gpushare.showback.usage`). Reads the Prometheus HTTP API: a URL, or a managed
stack's Azure Monitor workspace signed in with azure-identity (`gpushare.azure.monitor_workspace`,
`gpushare.kubernetes.workspace_prometheus`); exit 4 when it cannot."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime

from gpushare.azure.arm import SharedCredential, arm_target
from gpushare.azure.monitor_workspace import (
    PROMETHEUS_SCOPES,
    WORKSPACE_ENDPOINT_RE,
    Workspace,
    read_query_endpoint,
)
from gpushare.azure.prices import PricesError, PricesFileError
from gpushare.azure.remote_read import ReadDeadline
from gpushare.cli.price_options import add_price_options
from gpushare.cli.read_deadline import read_deadline
from gpushare.cli.rules import plan_cost, require_metrics
from gpushare.cli.stack_argument import add_stack_arguments, read_stack_argument
from gpushare.errors import ConfigError, ConfigProblem
from gpushare.kubernetes.prometheus_api import PrometheusReader
from gpushare.kubernetes.workspace_prometheus import WorkspacePrometheusReader
from gpushare.model.metrics import DURATION_RE, duration_seconds
from gpushare.model.stack import StackConfig
from gpushare.sharing.pool_facts import derive_pool_facts
from gpushare.showback.rules import showback_pools
from gpushare.showback.usage import read_usage, render_markdown, render_text, usage_document
from gpushare.stackfile.config import parse_stack_file
from gpushare.stackfile.metrics_config import MAX_WINDOW, MIN_WINDOW, PROMETHEUS_RE


def _window(text: str) -> str:
    if not DURATION_RE.match(text) or not MIN_WINDOW <= duration_seconds(text) <= MAX_WINDOW:
        raise argparse.ArgumentTypeError(f"{text!r}: a Prometheus duration from 1h to 90d, such as 24h or 7d")
    return text


def _time(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: Unix seconds or RFC 3339 (2026-12-01T00:00:00Z)") from None


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "usage", help="report GPU allocation, use, idle cost and stack edits per pool and tenant (Prometheus)",
        description="Read the stack's GPU metrics from Prometheus over a window, aggregated by the server, and "
                    "report per pool, slice, tenant and namespace: held and used device-hours, idle device-hours "
                    "and their list-price cost, and per pool the stack edit with its capacity and cost delta.",
    )
    add_stack_arguments(parser)
    parser.add_argument("--prometheus", metavar="URL",
                        help="the Prometheus API's base URL (default: gpushare:metrics.prometheus when a URL; on a "
                             "managed stack the query endpoint of gpushare:metrics.workspaceId, signed in with "
                             "azure-identity, as is a *.prometheus.monitor.azure.com URL)")
    parser.add_argument("--window", type=_window, help="how far back (default: gpushare:metrics.window)")
    parser.add_argument("--at", type=_time, help="the window's end, Unix seconds or RFC 3339 (default: now)")
    parser.add_argument("--raw-series", action="store_true",
                        help="fold the raw series even where the rule group recorded the window (slow at scale)")
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help="print one JSON object")
    shape.add_argument("--markdown", action="store_true", help="print Markdown (a PR comment)")
    add_price_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    stack = parse_stack_file(read_stack_argument(args))
    require_metrics(stack)
    metrics = stack.metrics
    assert metrics is not None
    url = args.prometheus or (None if metrics.managed else metrics.prometheus)
    if url is not None and (not PROMETHEUS_RE.match(url) or url == "managed"):
        raise ConfigError("--prometheus", [ConfigProblem(
            "--prometheus", f"not an http(s) URL: {url!r}: pass a Prometheus base URL, or leave it out on a "
                            "managed stack to query its workspace (gpushare:metrics.workspaceId)")])
    facts = derive_pool_facts(stack)
    try:
        cost = plan_cost(args, stack, facts)
    except PricesFileError:
        raise
    except PricesError as exc:
        print(f"warning: prices: {exc}; the report has no cost", file=sys.stderr)
        cost = None
    pools = showback_pools(stack, cost, facts)
    window = args.window or metrics.window
    at = args.at if args.at is not None else time.time()
    with SharedCredential(stack.azure.environment, os.environ) as credential:
        reader = prometheus_reader(stack, url, credential, read_deadline(args))
        source, samples = read_usage(reader, stack.stack, pools, window, at, raw=args.raw_series)
    document = usage_document(stack, pools, samples, window, at, len(reader.queries),
                              cost["currency"] if cost else None, metrics.idle_below, source, facts)
    if args.json:
        print(json.dumps(document, indent=2))
    elif args.markdown:
        print(render_markdown(document))
    else:
        print(render_text(document))
    return 0


def prometheus_reader(stack: StackConfig, url: str | None, credential: SharedCredential,
                      deadline: ReadDeadline) -> PrometheusReader:
    """`url` read as is; a workspace's query endpoint (given, or with no URL on a managed stack the one its
    `workspaceId` reports, one ARM GET) read signed in with the run's Azure credential."""
    scope = PROMETHEUS_SCOPES[stack.azure.environment]
    if url is None:
        assert stack.metrics is not None and stack.metrics.workspace_id is not None
        workspace_id = stack.metrics.workspace_id
        target = arm_target(stack, os.environ, Workspace.from_id(workspace_id).subscription_id)
        url = read_query_endpoint(workspace_id, credential=credential, deadline=deadline, **target.client_kwargs())
        print(f"querying Azure Monitor workspace {workspace_id} at {url}", file=sys.stderr)
        return WorkspacePrometheusReader(url, deadline=deadline, credential=credential, scope=scope)
    if WORKSPACE_ENDPOINT_RE.match(url):
        return WorkspacePrometheusReader(url, deadline=deadline, credential=credential, scope=scope)
    return PrometheusReader(url, deadline=deadline)
