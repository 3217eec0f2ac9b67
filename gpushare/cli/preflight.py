"""`preflight STACK [--json]`: check against Azure, before `pulumi up`, that the stack's VM sizes, zones, vCPU quota
and Kubernetes version can be had in its region, and that the role assignments it creates do not collide with ones
made by hand. Four ARM reads whatever the pool count; two more for an existing cluster (its settings and its
maintenance windows, against the baseline), one for a created cluster with subnets of your own or admin groups
(whether it exists yet, and its identity), one per subnet of your own and one per role assignment the program creates.

Exit codes: 0 every check passed, 1 a check failed, 2 invalid stack file or no subscription to read, 4 Azure could
not be read (unreachable, credentials refused, role missing, no answer within `--read-deadline`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path

from gpushare.azure.arm import AzureReads, SharedCredential, arm_target
from gpushare.azure.deployed import DeployedPool, read_live
from gpushare.azure.deployed_cluster import DeployedCluster, read_live_cluster, read_maintenance_schedules
from gpushare.azure.preflight.preflight_report import PreflightReport, raise_for_failures, render_text
from gpushare.azure.preflight.preflight_runs import PreflightReads, evaluate, read_for_preflight
from gpushare.azure.region_offers import RegionOffers
from gpushare.cli.read_deadline import add_read_deadline_option, read_deadline
from gpushare.cli.stack_argument import add_stack_arguments, read_stack_argument
from gpushare.model.stack import StackConfig, own_subnets
from gpushare.stackfile.config import parse_stack_file


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "preflight", help="check in Azure that the stack's GPUs can be had: sizes, zones, quota, Kubernetes version",
        description="Read the stack's region from Azure (VM sizes, vCPU quota, AKS versions, the cluster's pools) "
                    "and check the stack against it. Needs Reader on the subscription; exit 1 when a check fails.",
    )
    add_stack_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--kubeconfig", metavar="FILE", type=Path,
                        help="on an existing cluster, also read Kubernetes for a GPU Operator or NVIDIA device plugin "
                             "already installed (default: not read)")
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context for that read (implies the read)")
    add_read_deadline_option(parser)
    parser.set_defaults(run=run)


def _gpu_software_rows(stack, args: argparse.Namespace) -> list:
    """An existing cluster's GPU Operator or device plugins, read from Kubernetes when asked (`--kubeconfig`,
    `--context`); otherwise one row saying they were not looked for."""
    from gpushare.kubernetes.gpu_software import NOT_READ, gpu_software_checks

    if args.kubeconfig is None and args.context is None:
        return [NOT_READ]
    from gpushare.kubernetes.cluster_read import api_client, read_gpu_software

    api, _ = api_client(args.kubeconfig, args.context)
    with api:
        return gpu_software_checks(stack, read_gpu_software(api))


@dataclass(frozen=True)
class StackReads:
    """What preflight read for one stack."""

    deployed: list[DeployedPool] | None
    """The cluster's agent pools; None: no cluster yet."""
    found: DeployedCluster | None
    """The managed cluster, where read (an existing one, or a created one with subnets or admin groups)."""
    read: PreflightReads

    def evaluate(self, stack: StackConfig, subscription_id: str) -> PreflightReport:
        return evaluate(stack, self.read.offers, self.deployed, subscription_id, self.found, self.read.subnets,
                        cluster_found=self.found is not None if stack.cluster.existing else None,
                        assignments=self.read.assignments)


def read_stack(stack: StackConfig, reads: AzureReads, offers: RegionOffers | None = None) -> StackReads:
    """Every read preflight makes for `stack` (the region's three only without `offers`)."""
    subscription_id, cluster = reads.target.subscription_id, stack.cluster
    # The guard's own reader: the same one call `pulumi preview` makes.
    deployed = read_live(subscription_id, cluster.resource_group, cluster.name, **reads.read_kwargs())
    # An existing cluster's settings, for its baseline findings (the cluster guard's one read), and whether a
    # created one exists yet, with its identity, for the grants on it and on subnets of your own.
    found = (read_live_cluster(subscription_id, cluster.resource_group, cluster.name, **reads.read_kwargs())
             if cluster.existing or own_subnets(stack) or cluster.access.admin_groups else None)
    if found is not None and cluster.existing:  # and its maintenance windows, as the cluster guard reads them
        found = dataclasses.replace(found, maintenance_schedules=read_maintenance_schedules(
            subscription_id, cluster.resource_group, cluster.name, **reads.read_kwargs()))
    return StackReads(deployed, found, read_for_preflight(stack, reads, found, offers))


def run(args: argparse.Namespace) -> int:
    stack = parse_stack_file(read_stack_argument(args))
    target = arm_target(stack, os.environ)
    with SharedCredential(stack.azure.environment, os.environ) as credential:
        read = read_stack(stack, AzureReads(target, credential, read_deadline(args)))
    report = read.evaluate(stack, target.subscription_id)
    if stack.cluster.existing and read.found is not None:
        report = dataclasses.replace(report, checks=(*report.checks, *_gpu_software_rows(stack, args)))
    print(json.dumps(report.to_json(), indent=2) if args.json else render_text(report))
    raise_for_failures(report, details=False)
    return 0
