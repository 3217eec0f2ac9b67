"""`dashboard STACK [--prices [FILE]] [--format json|configmap] [--namespace NS]`: print the stack's Grafana
showback dashboard (`gpushare.showback.dashboard`, built with grafana-foundation-sdk): the dashboard JSON
(to import, e.g. into Azure Managed Grafana), or a ConfigMap the Grafana chart's dashboard sidecar loads."""

from __future__ import annotations

import argparse
import json

import yaml

from gpushare.azure.prices import PricesError
from gpushare.cli.price_options import add_price_options
from gpushare.cli.rules import plan_cost, require_metrics
from gpushare.cli.stack_argument import add_stack_arguments, read_stack_argument
from gpushare.sharing.pool_facts import derive_pool_facts
from gpushare.showback.dashboard import dashboard_config_map, dashboard_json
from gpushare.stackfile.config import parse_stack_file


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "dashboard", help="print the stack's Grafana showback dashboard (JSON, or a ConfigMap for the sidecar)",
        description="Build the stack's GPU showback dashboard (pools, slices, tenants, idle cost) from the "
                    "recorded series of `gpushare rules`.",
    )
    add_stack_arguments(parser)
    parser.add_argument("--format", choices=("json", "configmap"), default="json",
                        help="the dashboard JSON (default), or a ConfigMap labelled grafana_dashboard=1")
    parser.add_argument("--namespace", default=None,
                        help="the ConfigMap's namespace (default: gpushare:metrics.namespace, monitoring)")
    add_price_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    stack = parse_stack_file(read_stack_argument(args))
    require_metrics(stack)
    try:
        cost = plan_cost(args, stack, derive_pool_facts(stack))
    except PricesError as exc:
        raise type(exc)(f"prices: {exc}; run without --prices for the dashboard without cost", exc.hint) from None
    currency = cost["currency"] if cost else None
    if args.format == "json":
        print(json.dumps(dashboard_json(stack, currency), indent=2))
    else:
        assert stack.metrics is not None
        namespace = args.namespace or stack.metrics.namespace
        print(yaml.safe_dump(dashboard_config_map(stack, currency, namespace), sort_keys=False), end="")
    return 0
