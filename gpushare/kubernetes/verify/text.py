"""verify's text output: a line per pool, the operator's DaemonSets, the autoscaler, the tenants, the smoke pods, then
every finding with its cause and fix."""

from __future__ import annotations

from collections.abc import Iterable

from gpushare.kubernetes.verify.api_json import describe_resources
from gpushare.kubernetes.verify.autoscaler import AutoscalerView
from gpushare.kubernetes.verify.verify_report import VerifyReport
from gpushare.kubernetes.verify.smoke import SmokeResult
from gpushare.sharing.dra import DRIVER_NAME as DRA_DRIVER
from gpushare.sharing.operator_values import NAMESPACE
from gpushare.sharing.autoscaler_readiness import MAX_TOTAL_UNREADY_PERCENTAGE, OK_TOTAL_UNREADY_COUNT


def render_text(report: VerifyReport, smoke: Iterable[SmokeResult] = ()) -> str:
    """Per pool a line (nodes ready/total, expected vs found per node, verdict), the operator's DaemonSets, the smoke
    pods' output, then every finding with its cause and fix."""
    lines = []
    for pool in report.pools:
        e = pool.expectation
        ready = sum(1 for n in pool.nodes if n.ready)
        groups: dict[str, list[str]] = {}
        for n in pool.nodes:
            if n.ready:
                groups.setdefault(describe_resources(n.found), []).append(n.name)
        found = "; ".join(f"{desc} on {', '.join(names) if len(names) <= 3 else f'{len(names)} nodes'}"
                          for desc, names in groups.items()) or "-"
        lines.append(
            f"pool {e.pool}: nodes {ready}/{len(pool.nodes)} ready, expected {e.resource}: {e.per_node} per node, "
            f"found {found} -> {pool.verdict.value.upper()}"
        )
    for dra_pool in report.dra_pools:
        e = dra_pool.expectation
        ready = [n for n in dra_pool.nodes if n.ready]
        groups = {}
        for n in ready:
            groups.setdefault(n.devices, []).append(n.name)
        found = "; ".join(f"{desc} on {', '.join(names) if len(names) <= 3 else f'{len(names)} nodes'}"
                          for desc, names in groups.items()) or "-"
        lines.append(
            f"pool {e.pool} (DRA): nodes {len(ready)}/{len(dra_pool.nodes)} ready, expected one ResourceSlice of "
            f"{DRA_DRIVER} per node with {e.describe}, no device plugin, found {found} "
            f"-> {dra_pool.verdict.value.upper()}"
        )
    ds = ", ".join(f"{name} {state}" for name, state in report.daemon_sets.items())
    lines.append(f"operator ({NAMESPACE}) DaemonSets ready/desired: {ds}")
    if report.autoscaler:
        lines.append(_autoscaler_line(report.autoscaler))
    if report.tenant_objects:
        checked = report.tenant_objects - len(report.skipped)
        state = f"{len(report.tenants)} missing or changed" if report.tenants else "all as rendered"
        state = f"{state} of {checked} checked, {len(report.skipped)} skipped" if report.skipped else state
        lines.append(f"tenants: {report.tenant_objects} objects (namespaces, quotas, policies, bindings), {state}")
        for skipped in report.skipped:
            lines.append(f"  skipped {skipped.object}: may not read it (403); needs {skipped.needs}")
    for result in smoke:
        if result.phase == "Skipped":
            lines.append(f"smoke {result.pool}: skipped ({result.detail})")
            continue
        where = f" on {result.node}" if result.node else ""
        lines.append(f"smoke {result.pool}: {result.phase}{where} -> {'PASS' if result.passed else 'MISMATCH'}")
        lines += [f"  | {line}" for line in result.log.splitlines()]
    findings = report.findings
    if findings:
        lines.append("")
    for finding in findings:
        tag = "pending" if finding.pending else "mismatch"
        lines.append(f"{tag}: {finding.where}: {finding.problem}")
        lines.append(f"  cause: {finding.cause}")
        lines.append(f"  fix:   {finding.fix}")
    lines.append("")
    lines.append(f"verdict: {report.verdict.value.upper()}")
    return "\n".join(lines)


def _autoscaler_line(view: AutoscalerView) -> str:
    gpu = (f"{len(view.gpu_unready)} GPU node(s) without nvidia.com/gpu it counts unready "
           f"({', '.join(view.gpu_unready)})" if view.gpu_unready else "every GPU node advertises nvidia.com/gpu")
    if view.runs:
        state = "acting" if view.healthy else "STOPPED"
    else:
        state = "no pool of the stack autoscales; this is what it would see"
    return (f"cluster autoscaler: {gpu}; {len(view.unready)} of {view.total} nodes unready, it stops above "
            f"{OK_TOTAL_UNREADY_COUNT} and {MAX_TOTAL_UNREADY_PERCENTAGE:g}% -> {state}")
