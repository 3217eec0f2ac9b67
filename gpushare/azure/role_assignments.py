"""The role assignments a stack creates, and the ones Azure already has for the same principal, role and scope.

ARM keeps one assignment per (principal, role, scope): creating a second under another name fails with 409
`RoleAssignmentExists` (az docs, "Troubleshoot Azure RBAC": "The role assignment already exists"), and azure-native
GETs a resource before it creates one, so an assignment under gpushare's own name that this stack does not hold fails
with "cannot create already existing resource" (pulumi-azure-native, provider.go, `Create`). Either way `pulumi up`
stops after the cluster or its pools changed. Both happen to teams that already run clusters: a platform team granted
the CI identity Cluster Admin by hand, or the cluster's identity Network Contributor on its subnet when they built the
VNet. Preflight reads each planned assignment's scope for its principal, one ARM list call each, through the
azure-mgmt-containerservice client's pipeline (`deployed.get_json`, as `subnets` does: the same credential, retries and
endpoint; no azure-mgmt-authorization dependency for one GET).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpushare.azure import cluster_baseline as baseline
from gpushare.azure.deployed import get_json, read_cluster_resource
from gpushare.azure.deployed_cluster import DeployedCluster
from gpushare.errors import AzureReadError
from gpushare.model.stack import StackConfig, own_subnets
from gpushare.stackfile.network_config import vnet_id

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

AUTHORIZATION_API_VERSION = "2022-04-01"
READ_ROLE_HINT = ("listing role assignments needs 'Microsoft.Authorization/roleAssignments/read', which the built-in "
                  "Reader role has: az role assignment create --assignee <identity> --role Reader --scope <scope>")
ROLE_NAMES = {baseline.RBAC_CLUSTER_ADMIN_ROLE: "Azure Kubernetes Service RBAC Cluster Admin",
              baseline.NETWORK_CONTRIBUTOR_ROLE: "Network Contributor"}


@dataclass(frozen=True)
class PlannedAssignment:
    """One role assignment the program creates: what it grants and the ARM name gpushare gives it."""

    scope: str
    principal_id: str
    role: str
    """The role definition's GUID."""
    name: str
    """The assignment's ARM name (a GUID, `cluster_baseline.role_assignment_name`)."""
    subject: str
    """Who gets it, as the stack names them (`deployer <object id>`)."""
    fix: str
    """The way out when another assignment holds the grant; `{id}` stands for that assignment's ARM ID."""

    @property
    def role_name(self) -> str:
        return ROLE_NAMES.get(self.role, self.role)


@dataclass(frozen=True)
class FoundAssignment:
    id: str
    name: str
    scope: str
    role: str
    """The role definition's GUID (the last segment of `roleDefinitionId`)."""


def planned_assignments(stack: StackConfig, subscription_id: str,
                        cluster: DeployedCluster | None = None) -> list[PlannedAssignment]:
    """Every assignment the program creates that something else may already have granted, as gpushare's components
    name them: Cluster Admin for each deployer (at the resource group, on an existing cluster at the cluster), and
    once the cluster exists (`cluster` as read) Cluster Admin on it for each admin group of a cluster gpushare made
    and Network Contributor on each subnet of your own for its identity (a cluster about to be created has a new
    identity and no scope yet, which nothing can have granted anything on)."""
    c = stack.cluster
    cluster_id = baseline.cluster_scope(subscription_id, c.resource_group, c.name)
    deployer_scope = cluster_id if c.existing else baseline.resource_group_scope(subscription_id, c.resource_group)
    planned = [PlannedAssignment(deployer_scope, d.object_id, baseline.RBAC_CLUSTER_ADMIN_ROLE,
                                 baseline.role_assignment_name(deployer_scope, d.object_id), f"deployer {d.object_id}",
                                 _remove_or_delete(d.object_id, "deployers"))
               for d in c.access.deployers]
    if not c.existing and cluster is not None:  # nothing can be granted on a cluster that is not there yet
        planned += [PlannedAssignment(cluster_id, group, baseline.RBAC_CLUSTER_ADMIN_ROLE,
                                      baseline.role_assignment_name(cluster_id, group), f"admin group {group}",
                                      _remove_or_delete(group, "adminGroups"))
                    for group in c.access.admin_groups]
    if cluster is not None and cluster.identity_principal_id:
        planned += [PlannedAssignment(subnet, cluster.identity_principal_id, baseline.NETWORK_CONTRIBUTOR_ROLE,
                                      baseline.role_assignment_name(subnet, cluster_id,
                                                                    baseline.NETWORK_CONTRIBUTOR_ROLE),
                                      f"the cluster's identity {cluster.identity_principal_id}",
                                      _move_to_vnet(subnet, cluster.identity_principal_id))
                    for subnet in own_subnets(stack)]
    return planned


def _remove_or_delete(principal_id: str, key: str) -> str:
    return (f"remove {principal_id} from gpushare:cluster.access.{key} (it has the access), or delete that "
            "assignment so gpushare owns the grant: az role assignment delete --ids {id}")


def _move_to_vnet(subnet_id: str, principal_id: str) -> str:
    # Deleting the grant first would leave the cluster's identity unable to join nodes to the subnet until `up`
    # creates gpushare's: a grant on the VNet first keeps it (inherited, it does not collide with gpushare's).
    return (f"grant it on the VNet first, then delete the subnet's: az role assignment create --assignee-object-id "
            f"{principal_id} --assignee-principal-type ServicePrincipal --role \"Network Contributor\" "
            f"--scope {vnet_id(subnet_id)} && az role assignment delete --ids {{id}}")


def read_assignments(subscription_id: str, planned: Iterable[PlannedAssignment], *,
                     credential: TokenCredential | None = None, base_url: str | None = None,
                     **client_kwargs: object) -> dict[tuple[str, str], tuple[FoundAssignment, ...]]:
    """Per distinct (scope, principal), lower-cased: the principal's assignments at exactly that scope. A scope that
    does not exist yet (a resource group or cluster gpushare creates) has none. One GET per pair."""
    found: dict[tuple[str, str], tuple[FoundAssignment, ...]] = {}
    for p in planned:
        key = (p.scope.lower(), p.principal_id.lower())
        if key in found:
            continue
        what = f"could not list the role assignments of {p.principal_id} on {p.scope}"
        # `principalId eq` returns the principal's assignments at, above and below the scope (ARM's roleAssignments
        # list); only those at the very scope collide, and those are kept.
        document = read_cluster_resource(
            what, subscription_id,
            lambda client, p=p: get_json(client, f"{p.scope}/providers/Microsoft.Authorization/roleAssignments",
                                         {"api-version": AUTHORIZATION_API_VERSION,
                                          "$filter": f"principalId eq '{p.principal_id}'"}),
            READ_ROLE_HINT, credential=credential, base_url=base_url, client_kwargs=client_kwargs)
        found[key] = tuple(a for a in _parse(what, document) if a.scope.lower() == key[0]) if document else ()
    return found


def _parse(what: str, document: object) -> list[FoundAssignment]:
    items = document.get("value") if isinstance(document, dict) else None
    if not isinstance(items, list):
        raise AzureReadError(f"{what}: Azure answered without a `value` list")
    found = []
    for item in items:
        properties = item.get("properties") if isinstance(item, dict) else None
        if not isinstance(properties, dict) or not all(isinstance(properties.get(k), str)
                                                       for k in ("scope", "roleDefinitionId")):
            raise AzureReadError(f"{what}: Azure answered with a role assignment without its scope and role")
        found.append(FoundAssignment(str(item.get("id", "")), str(item.get("name", "")), properties["scope"],
                                     properties["roleDefinitionId"].rsplit("/", 1)[-1].lower()))
    return found


def collisions(planned: PlannedAssignment,
               found: dict[tuple[str, str], tuple[FoundAssignment, ...]]) -> tuple[FoundAssignment | None, bool]:
    """The assignment Azure already has for `planned`'s principal, role and scope, if any, and whether it carries
    gpushare's own name (this stack's from an earlier run, or another stack's on the same scope)."""
    for assignment in found.get((planned.scope.lower(), planned.principal_id.lower()), ()):
        if assignment.role == planned.role.lower():
            return assignment, assignment.name.lower() == planned.name.lower()
    return None, False
