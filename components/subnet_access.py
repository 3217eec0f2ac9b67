""""Network Contributor" for the cluster's identity on the subnets of your own network that its pools use.

AKS joins nodes to a subnet it does not own, and for Services of type LoadBalancer and the routes of
`userDefinedRouting` it writes to that subnet and its VNet with the cluster's identity (AKS docs
configure-azure-cni.md / kubernetes-service-principal.md: "Network Contributor" on the subnet, or a custom role with
`Microsoft.Network/virtualNetworks/subnets/join/action` and `.../subnets/read`). With a system-assigned identity the
principal exists only once AKS has created the cluster, so the assignment follows it; the deploy identity needs
`Microsoft.Authorization/roleAssignments/write` on each subnet (Owner, User Access Administrator or Role Based Access
Control Administrator there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
from pulumi_azure_native import authorization

from gpushare.azure import cluster_baseline as baseline


@dataclass(frozen=True)
class SubnetAccessArgs:
    subnet_ids: Sequence[str]
    """Required. Each distinct subnet ARM ID the cluster's pools use."""
    principal_id: pulumi.Input[str]
    """Required. The cluster identity's object ID."""
    cluster_id: pulumi.Input[str]
    """Required. The cluster's ARM ID: with the subnet, it names the assignment (a GUID, stable across runs)."""


class SubnetAccess(pulumi.ComponentResource):
    """One Network Contributor assignment per subnet."""

    def __init__(self, name: str, args: SubnetAccessArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:cluster:SubnetAccess", name, None, opts)
        # Annotated here, not in the class body, for the reason AksCluster gives.
        self.assignments: list[authorization.RoleAssignment] = [
            authorization.RoleAssignment(
                f"{name}-{_short_name(subnet)}",
                role_assignment_name=pulumi.Output.from_input(args.cluster_id).apply(
                    lambda cluster_id, subnet=subnet: baseline.role_assignment_name(
                        subnet, cluster_id, baseline.NETWORK_CONTRIBUTOR_ROLE)),
                scope=subnet,
                principal_id=args.principal_id,
                principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
                # The role's definition in the subnet's own subscription (a hub VNet may live in another one), and
                # from stack values only: the same assignment whoever runs the program.
                role_definition_id=baseline.role_definition_id(baseline.subscription_of(subnet),
                                                               baseline.NETWORK_CONTRIBUTOR_ROLE),
                description="gpushare: the AKS cluster's identity joins nodes to this subnet",
                opts=pulumi.ResourceOptions(parent=self),
            )
            for subnet in args.subnet_ids
        ]
        self.by_subnet: dict[str, authorization.RoleAssignment] = dict(zip(args.subnet_ids, self.assignments))
        """Each subnet's assignment: the pools that join it wait for it."""
        self.register_outputs({})


def _short_name(subnet_id: str) -> str:
    """`<vnet>-<subnet>`: unique within one cluster's subnets."""
    parts = subnet_id.split("/")
    return f"{parts[-3]}-{parts[-1]}".lower()
