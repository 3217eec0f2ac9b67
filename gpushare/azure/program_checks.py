"""The guard and preflight as the Pulumi program runs them, before any resource registers: the guard on one
agent-pool read, then preflight on the same read, with one credential, in the provider's subscription. Their notes
and warnings go to the run's log as they come, so a refusal that follows still shows them."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Protocol

from gpushare.azure.arm import AzureReads, SharedCredential, arm_target
from gpushare.azure.guard.cluster import check_stack_for_program
from gpushare.azure.guard.guard_report import GuardReport, raise_for_violations
from gpushare.azure.preflight.preflight_report import Verdict, findings, raise_for_failures
from gpushare.azure.preflight.preflight_runs import check_for_program
from gpushare.model.stack import PreflightMode, StackConfig
from gpushare.sharing.pool_facts import PoolFactsByName


class RunLog(Protocol):
    """`pulumi.log`, as far as these checks write to it."""

    def info(self, msg: str) -> None: ...

    def warn(self, msg: str) -> None: ...


def check_azure_for_program(stack: StackConfig, environ: Mapping[str, str], subscription: Callable[[], str],
                            facts: PoolFactsByName, log: RunLog) -> GuardReport | None:
    """The guard's report (None when `plan` renders offline). `subscription`: the provider's subscription, asked only
    when Azure is read. Raises GpushareError on a violation, an unreadable Azure under `strict`, or a failed strict
    preflight."""
    with SharedCredential(stack.azure.environment, environ) as credential:
        azure = functools.cache(lambda: AzureReads(arm_target(stack, environ, subscription()), credential))
        report = _guard(stack, environ, azure, facts, log)
        _preflight(stack, environ, azure, report, log)
        return report


def _guard(stack: StackConfig, environ: Mapping[str, str], azure: Callable[[], AzureReads], facts: PoolFactsByName,
           log: RunLog) -> GuardReport | None:
    """Stop here, before any GPU pool registers, if the stack would delete or replace a live GPU pool or change
    a setting AKS fixed when it created the cluster. The report's deployed pools (the run's one agent-pool read)
    give each pool's live node count."""
    report = check_stack_for_program(stack, environ, azure, facts)
    if report is None:
        return None
    log.info(f"guard ({report.source}): {report.headline}")
    for note in report.notes:
        log.info(note)
    for warning in report.warnings:
        log.warn(warning)
    raise_for_violations(report)
    return report


def _preflight(stack: StackConfig, environ: Mapping[str, str], azure: Callable[[], AzureReads],
               guard_report: GuardReport | None, log: RunLog) -> None:
    """Stop here too (`gpushare:preflight: strict`) if a size, zone, quota or version would fail at apply."""
    report = check_for_program(stack, environ, azure, guard_report)
    if report is None:
        return
    for warning in report.warnings:
        log.warn(warning)
    for caveat in findings(report, Verdict.WARN):
        log.warn(f"preflight: {caveat}")
    if stack.preflight is PreflightMode.STRICT:
        raise_for_failures(report)
    for finding in findings(report):
        log.warn(f"preflight (gpushare:preflight is warn): {finding}")
