"""Whether a run is likely to outlast the Kubernetes token the program fetches when it starts.

The default credential (`cluster.access.kubernetesCredential: token`) is one Entra access token, valid 60-90
minutes (Entra's default access-token lifetime is randomised in that range: learn.microsoft.com/entra/
identity-platform/configurable-token-lifetimes). The engine runs deletes after every create and update, so the
deletes of removed tenant objects come last, after the slow steps: GPU pools are created one after another (AKS
refuses concurrent agent-pool operations), and a new GPU node takes about 10-11 minutes to be ready (Microsoft Q&A
learn.microsoft.com/answers/a/12767836, A100 pools) before its pool's operation completes; up to 15 minutes before
it reports its GPUs (cluster-autoscaler `utils/gpu/gpu.go`). So at ~15 minutes a pool, a run creating more than
`MAX_POOL_CREATES` pools, plus the cluster and the operator, approaches the token's lower bound of 60 minutes; a
replaced pool (delete, then create) or a reimaged one (every node, `maxUnavailable` at a time) can too.
"""

from __future__ import annotations

from gpushare.azure.guard.guard_report import GuardReport
from gpushare.model.stack import KubernetesCredential, StackConfig

MAX_POOL_CREATES = 3
"""Pools a run may create before `plan` warns: 4 x ~15 minutes reaches the token's 60-minute lower bound."""
CREDENTIAL_KEY = "gpushare:cluster.access.kubernetesCredential"


def long_run_reasons(stack: StackConfig, report: GuardReport | None) -> list[str]:
    """What makes this run long. Without a read of the deployed pools (offline, or no cluster yet) every pool
    counts as created."""
    deployed = {pool.name: pool for pool in (report.deployed if report and report.deployed is not None else ())}
    reasons = []
    created = [pool.name for pool in stack.pools if pool.name not in deployed]
    if len(created) > MAX_POOL_CREATES:
        known = "" if report and report.deployed is not None else " (no deployed pools read: all counted as new)"
        reasons.append(f"creates {len(created)} GPU pools one after another{known}")
    recreated = list(report.recreated) if report else []
    if recreated:
        reasons.append(f"replaces {', '.join(recreated)} (delete, then create)")
    reimaged = [pool.name for pool in stack.pools if pool.name in deployed and deployed[pool.name].os_sku
                and deployed[pool.name].os_sku.lower() != pool.os_sku.value.lower() and pool.name not in recreated]
    if reimaged:
        reasons.append(f"reimages every node of {', '.join(reimaged)} (osSku change)")
    return reasons


def long_run_warning(stack: StackConfig, report: GuardReport | None) -> str | None:
    """For the token credential only: a run this long may end with 401s from the Kubernetes API."""
    if stack.cluster.access.kubernetes_credential is not KubernetesCredential.TOKEN:
        return None
    reasons = long_run_reasons(stack, report)
    if not reasons:
        return None
    return (f"this run {'; '.join(reasons)}: it may outlast the Kubernetes token the program fetches when it starts "
            f"(60-90 minutes), and the deletes that run last (removed tenant objects) would then fail with 401; "
            f"set {CREDENTIAL_KEY}: kubelogin-workloadidentity (on GitHub Actions: the job's OIDC token) or "
            f"kubelogin-azurecli (an az session that can refresh) so kubelogin renews it "
            f"(docs/security.md \"Long runs\")")

