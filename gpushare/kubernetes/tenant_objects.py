"""Each tenant's Kubernetes objects: by role (`TenantObjects`, so a reader such as the `GpuTenant` component or a test
takes the quota or the policy by name instead of working it out from `kind`, list position or `subjects[0]`), as
plain manifests (what `plan` shows and `verify` looks for), and the tenant entries of `plan --json`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpushare.kubernetes.admission.policies import exempt_debug_policy, shared_pool_policy, tenant_policy
from gpushare.kubernetes.tenants import (
    EDIT_CLUSTER_ROLE,
    MANAGED_BY,
    POD_SECURITY_LABEL,
    container_defaults,
    pod_spec,
    pod_specs,
    pool_offers,
    quota_key,
    tenant_policy_name,
)
from gpushare.kubernetes.kueue_admission import QUEUE_NAME_LABEL, local_queue_names
from gpushare.model.stack import TENANT_LABEL, StackConfig, Tenant, tenant_taint
from gpushare.sharing.capacity import device_unit
from gpushare.sharing.pool_facts import PoolFactsByName, given_or_derived
from gpushare.sharing.queue_guarantees import flavor_quotas

Manifest = dict[str, Any]


@dataclass(frozen=True)
class TenantObjects:
    namespace: Manifest
    """The Namespace (Pod Security `baseline`); everything else but the policy lives in it."""
    quota: Manifest | None
    """The ResourceQuota on the GPU resources of the tenant's pools; None without `quota`."""
    limit_range: Manifest
    """The LimitRange whose container defaults make requests equal limits (the policy judges templates by it)."""
    edit_bindings: Mapping[str, Manifest]
    """The `edit` RoleBinding of each of the tenant's Entra ID groups, by group object ID, in the stack's order."""
    policy: Manifest
    """The ValidatingAdmissionPolicy binding the namespace's GPU pods to the tenant's pools."""
    policy_binding: Manifest
    """The ValidatingAdmissionPolicyBinding of `policy` to the namespace."""

    def in_namespace(self) -> list[Manifest]:
        """What lives in the namespace: the quota (if any), the LimitRange, the RoleBindings."""
        return [*([self.quota] if self.quota else []), self.limit_range, *self.edit_bindings.values()]

    def manifests(self) -> list[Manifest]:
        """Namespace first, then what lives in it, then the policy and its binding."""
        return [self.namespace, *self.in_namespace(), self.policy, self.policy_binding]


# --- the namespace and what lives in it --------------------------------------------------------------------------

def _metadata(name: str, tenant: Tenant, namespaced: bool = True) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": {**MANAGED_BY, TENANT_LABEL: tenant.name}}
    if namespaced:
        metadata["namespace"] = tenant.name
    return metadata


def namespace_object(tenant: Tenant) -> dict[str, Any]:
    metadata = _metadata(tenant.name, tenant, namespaced=False)
    # Pod Security `baseline` refuses privileged containers and host mounts: a privileged container sees every GPU
    # on its node, past MIG and the device plugin, which would undo the pool binding (GPU pods need neither).
    metadata["labels"][POD_SECURITY_LABEL] = "baseline"
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def quota_object(tenant: Tenant) -> dict[str, Any] | None:
    if not tenant.quota:
        return None
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": _metadata("gpushare-gpu-quota", tenant),
            "spec": {"hard": {quota_key(resource): str(units) for resource, units in tenant.quota}}}


def limit_range_object(stack: StackConfig, tenant: Tenant, facts: PoolFactsByName | None = None) -> dict[str, Any]:
    defaults = container_defaults(stack, tenant, facts)
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": _metadata("gpushare-container-defaults", tenant),
            "spec": {"limits": [{"type": "Container", "default": defaults, "defaultRequest": dict(defaults)}]}}


def role_binding_objects(tenant: Tenant) -> list[dict[str, Any]]:
    return [{
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _metadata(f"gpushare-edit-{group}", tenant),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": EDIT_CLUSTER_ROLE},
        # AKS with Entra ID puts group object IDs in the token's groups claim.
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
    } for group in tenant.groups]


def tenant_objects_by_role(stack: StackConfig, tenant: Tenant, facts: PoolFactsByName | None = None) -> TenantObjects:
    """One tenant's objects, each under its role's name."""
    policy, policy_binding = tenant_policy(stack, tenant, facts)
    return TenantObjects(
        namespace=namespace_object(tenant), quota=quota_object(tenant), limit_range=limit_range_object(stack, tenant, facts),
        edit_bindings=dict(zip(tenant.groups, role_binding_objects(tenant), strict=True)),
        policy=policy, policy_binding=policy_binding)


def tenant_objects(stack: StackConfig, tenant: Tenant) -> list[dict[str, Any]]:
    """One tenant's objects: Namespace first, then what lives in it, then its policy and binding."""
    return tenant_objects_by_role(stack, tenant).manifests()


def tenant_manifests(stack: StackConfig) -> list[dict[str, Any]]:
    """Every Kubernetes object the tenants need, as plain manifests (what `verify` looks for in a cluster)."""
    return ([obj for tenant in stack.tenants for obj in tenant_objects(stack, tenant)] + shared_pool_policy(stack) +
            exempt_debug_policy(stack))


def tenant_plan(stack: StackConfig, facts: PoolFactsByName | None = None) -> list[dict[str, Any]]:
    """The `tenants` list of `plan --json`."""
    facts = given_or_derived(stack, facts)
    return [{
        "name": tenant.name,
        "namespace": tenant.name,
        "pools": list(tenant.pools),
        "offers": [{"pool": o.pool, "resource": o.resource, "perNode": o.per_node, "maxNodes": o.max_nodes,
                    "maxTotal": o.max_total, "dedicated": o.dedicated,
                    "taint": tenant_taint(tenant.name) if o.dedicated else None}
                   for o in pool_offers(stack, tenant, facts)],
        "quota": dict(tenant.quota),
        "groups": list(tenant.groups),
        "guaranteed": tenant.guaranteed,
        "containerDefaults": container_defaults(stack, tenant, facts),
        "policy": tenant_policy_name(tenant),
        "podSpec": pod_spec(stack, tenant, facts),
        "podSpecs": pod_specs(stack, tenant, facts),
        "podLabels": pod_labels(tenant),
        "poolQuota": dict(tenant.pool_quota),
        "promises": tenant_promises(stack, tenant, facts),
        "enforcement": enforcement(stack, tenant),
    } for tenant in stack.tenants]


def pod_labels(tenant: Tenant) -> dict[str, str]:
    """The labels the plan's pod needs besides its spec: with per-pool quotas, its LocalQueue (the policy refuses a
    GPU pod outside the tenant's queues; Kueue's pod webhook gates a labelled one until it is admitted)."""
    return {QUEUE_NAME_LABEL: local_queue_names(tenant)[0]} if tenant.pool_quota else {}


def tenant_promises(stack: StackConfig, tenant: Tenant, facts: PoolFactsByName | None = None) -> list[dict[str, Any]]:
    """Per pool, what the tenant's queue guarantees it there in the pool's own units (which MIG slice, or a share of
    which GPU), and what holds it; none without queues (the ResourceQuota caps a resource name, not a pool)."""
    if not stack.queues.enabled:
        return []
    facts = given_or_derived(stack, facts)
    return [{"pool": q.pool, "resource": q.resource, "units": q.nominal,
             "unit": device_unit(facts[q.pool].pool, facts[q.pool].capacity),
             "stated": q.pool in dict(tenant.pool_quota), "dedicated": q.dedicated,
             "enforcedBy": f"Kueue ClusterQueue {tenant.name}, nominalQuota on flavor {q.pool}"}
            for q in flavor_quotas(stack, tenant, facts)]


def enforcement(stack: StackConfig, tenant: Tenant) -> dict[str, Any]:
    """Which layer holds which of the tenant's promises, and what no layer holds."""
    queued = bool(tenant.pool_quota)
    if not stack.queues.enabled:
        unenforced = "no guarantee on any pool: its GPU pods run first come, first served within its quota"
    elif queued:
        unenforced = None
    else:
        unenforced = (f"a GPU pod outside its LocalQueue ({local_queue_names(tenant)[0]}) uses no guarantee and is "
                      f"held only by its quota and the pool binding; state quota.pools to require the queue")
    return {
        "quota": "ResourceQuota: the most of each resource name requested at once, on every pool" if tenant.quota
        else None,
        "pools": f"admission policy {tenant_policy_name(tenant)}: its GPU pods only on its pools",
        "perPool": f"Kueue: ClusterQueue {tenant.name}'s nominalQuota per pool's flavor" if stack.queues.enabled
        else None,
        "gpuPodsQueued": queued,
        "unenforced": unenforced,
    }


def platform_plan(stack: StackConfig) -> list[dict[str, Any]]:
    """The `platformNamespaces` list of `plan --json`: each namespace and the pools it may reach (null: every
    pool)."""
    return [{"name": ns.name, "pools": list(ns.pools) if ns.pools is not None else None} for ns in stack.platform]
