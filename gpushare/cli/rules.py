"""`rules STACK [--prices [FILE]] [--format file|prometheusrule]`: print the stack's GPU showback recording rules
and alerts (`gpushare.showback.rules`): a Prometheus rule file (`promtool check rules`, `rule_files:`), or a
monitoring.coreos.com/v1 PrometheusRule object for the Prometheus Operator. Offline; with `--prices` the group adds
idle cost at the plan's list prices."""

from __future__ import annotations

import argparse

import yaml

from gpushare.azure.prices import PricesError
from gpushare.cli.price_options import add_price_options, price_sheet
from gpushare.cli.stack_argument import add_stack_arguments, read_stack_argument
from gpushare.errors import ConfigError, ConfigProblem
from gpushare.model.keys import METRICS_KEY
from gpushare.model.stack import StackConfig
from gpushare.sharing.pool_facts import PoolFactsByName, derive_pool_facts
from gpushare.showback.cost import priced_vm_sizes, stack_cost
from gpushare.showback.deployed_cost import deployed_cost
from gpushare.showback.rules import prometheus_rule, rule_file
from gpushare.stackfile.config import parse_stack_file

RULE_FILE, PROMETHEUS_RULE = "file", "prometheusrule"


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "rules", help="print the stack's GPU showback recording rules and alerts (Prometheus rule file)",
        description="Generate the stack's showback rule group from its plan: allocated and used GPU slices and "
                    "devices per pool, slice, tenant and namespace, idle cost (with --prices), and alerts.",
    )
    add_stack_arguments(parser)
    parser.add_argument("--format", choices=(RULE_FILE, PROMETHEUS_RULE), default=RULE_FILE,
                        help="a Prometheus rule file (default), or a PrometheusRule object (Prometheus Operator)")
    parser.add_argument("--namespace", default=None,
                        help="the PrometheusRule's namespace (default: gpushare:metrics.namespace, monitoring)")
    add_price_options(parser)
    parser.set_defaults(run=run)


def require_metrics(stack: StackConfig) -> None:
    if stack.metrics is None:
        raise ConfigError(stack.source, [ConfigProblem(
            METRICS_KEY, "required for showback: the Prometheus the GPU metrics go to; add e.g. "
                         f"{METRICS_KEY}: {{prometheus: managed}} (or the URL of your Prometheus)")])


def plan_cost(args: argparse.Namespace, stack: StackConfig, facts: PoolFactsByName) -> dict | None:
    """The plan's `cost` object at `--prices`; without it at the stack's `gpushare:metrics.prices`, as the program
    deploys the rules; else None. Raises PricesError when prices cannot be had."""
    if args.prices is None:
        return deployed_cost(stack, facts)
    sheet = price_sheet(args, stack.location, priced_vm_sizes(stack))
    return stack_cost(stack, sheet, facts=facts) if sheet else None


def run(args: argparse.Namespace) -> int:
    stack = parse_stack_file(read_stack_argument(args))
    require_metrics(stack)
    assert stack.metrics is not None
    facts = derive_pool_facts(stack)
    try:
        cost = plan_cost(args, stack, facts)
    except PricesError as exc:
        raise type(exc)(f"prices: {exc}; run without --prices for the rules without cost", exc.hint) from None
    if args.format == RULE_FILE:
        print(rule_file(stack, stack.metrics, cost, facts), end="")
        return 0
    document = prometheus_rule(stack, stack.metrics, args.namespace or stack.metrics.namespace, cost, facts)
    print(yaml.safe_dump(document, sort_keys=False, width=10_000), end="")
    return 0
