"""`role-assignment` (one read per assignment the program creates, `gpushare.azure.role_assignments`): the principal
does not already hold the role at that very scope under another name, which makes `pulumi up` fail with
`RoleAssignmentExists` (a deployer granted Cluster Admin by hand, the cluster's identity Network Contributor on its
subnet when the VNet was built)."""

from __future__ import annotations

from collections.abc import Mapping

from gpushare.azure.deployed_cluster import DeployedCluster
from gpushare.azure.preflight.preflight_report import Check, Verdict
from gpushare.azure.role_assignments import FoundAssignment, collisions, planned_assignments
from gpushare.model.stack import StackConfig


def role_assignment_checks(stack: StackConfig, subscription_id: str, cluster: DeployedCluster | None,
                           assignments: Mapping[tuple[str, str], tuple[FoundAssignment, ...]]) -> list[Check]:
    """Per assignment the program creates: fails when Azure has the same principal, role and scope under another
    name (ARM refuses a second: `RoleAssignmentExists`)."""
    checks = []
    for planned in planned_assignments(stack, subscription_id, cluster):
        subject = f"{planned.subject} on {'/'.join(planned.scope.split('/')[-2:])}"
        found, ours = collisions(planned, assignments)
        if found is None:
            checks.append(Check("role-assignment", subject, Verdict.PASS,
                                f"{planned.role_name} on {planned.scope}: none yet, `pulumi up` creates it"))
        elif ours:
            checks.append(Check("role-assignment", subject, Verdict.PASS,
                                f"{planned.role_name} on {planned.scope} exists under gpushare's name {found.name} "
                                "(from an earlier `up`; a second stack listing the same principal on this scope "
                                "could not create it again: list it in one stack)"))
        else:
            checks.append(Check(
                "role-assignment", subject, Verdict.FAIL,
                f"{planned.principal_id} already holds {planned.role_name} on {planned.scope} through role assignment "
                f"{found.name}, made outside gpushare: creating gpushare's ({planned.name}) fails with "
                "RoleAssignmentExists (Azure keeps one per principal, role and scope)",
                planned.fix.replace("{id}", found.id)))
    return checks
