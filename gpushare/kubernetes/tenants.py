"""Tenants: a namespace per team, bound to its GPU pools at admission, with GPU quotas and Guaranteed QoS.

Everything is plain Kubernetes (no controller to run). Per tenant: a Namespace, a ResourceQuota on the GPU
resources its pools advertise, a LimitRange whose container defaults make requests equal limits, `edit`
RoleBindings for its Entra ID groups (`gpushare.kubernetes.tenant_objects`), and a ValidatingAdmissionPolicy with its
binding (`gpushare.kubernetes.admission`). This module holds what they are derived from: each tenant's pool offers,
the fair share of a node per device, the namespace defaults, the quotas' promises on shared pools, the warnings
`plan` prints, and the pod snippet a team copies.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from gpushare.model.stack import (
    CUDA_CHECK_IMAGE,
    GPU_TAINT,
    POOL_LABEL,
    Allocation,
    DispatchedTenant,
    StackConfig,
    Tenant,
    tenant_taint,
)
from gpushare.sharing import dra
from gpushare.sharing.dra_quota import device_class_quota_key, is_device_class
from gpushare.sharing.operator_values import toleration
from gpushare.sharing.pool_facts import PoolFacts, PoolFactsByName, given_or_derived
from gpushare.stackfile.namespaces import EXEMPT_NAMESPACES

MANAGED_BY = {"app.kubernetes.io/managed-by": "gpushare"}
NAME_LABEL = "kubernetes.io/metadata.name"
"""Set by the API server on every namespace and immutable: selecting on it cannot be escaped by relabelling."""
EDIT_CLUSTER_ROLE = "edit"
POD_SECURITY_LABEL = "pod-security.kubernetes.io/enforce"
NODE_SHARE_FOR_PODS = Fraction(3, 4)
"""Share of a node's vCPUs and memory counted for GPU pods; the rest is left to the OS, kubelet and DaemonSets."""
DEFAULT_CONTAINER_CAP = (1000, 4096)
"""Most CPU (millicores) and memory (MiB) the namespace default gives a container that states none."""
SNIPPET_CONTAINER = "cuda"


# --- pools, resources and sizes ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class PoolOffer:
    """What one of a tenant's pools offers its pods."""

    pool: str
    resource: str
    per_node: int
    max_nodes: int
    max_total: int
    """The most units of `resource` the pool advertises, at its autoscale maximum (or fixed count)."""
    dedicated: bool
    """Only this tenant lists the pool: its nodes carry the tenant's taint."""


def pool_offers(stack: StackConfig, tenant: Tenant, facts: PoolFactsByName | None = None) -> list[PoolOffer]:
    """What each of the tenant's pools offers: on a DRA pool its DeviceClass, one unit a device (each claim of the
    tenant's template takes a device of its own, shared by that pod's containers), else the advertised resource."""
    by_pool = given_or_derived(stack, facts)
    offers = []
    for name in tenant.pools:
        pool_facts = by_pool[name]
        pool, capacity = pool_facts.pool, pool_facts.capacity
        if pool.allocation is Allocation.DRA:
            resource, per_node = dra.device_kind(pool).class_name, capacity.devices_per_node
        else:
            resource, per_node = capacity.resource, capacity.per_node
        offers.append(PoolOffer(pool=name, resource=resource, per_node=per_node, max_nodes=pool.max_nodes,
                                max_total=per_node * pool.max_nodes,
                                dedicated=pool_facts.dedicated_tenant == tenant.name))
    return offers


def shared_pools(stack: StackConfig) -> list[str]:
    """Pools no tenant lists: the only ones GPU pods outside tenant namespaces may use."""
    listed = {name for tenant in stack.tenants for name in tenant.pools}
    return [pool.name for pool in stack.pools if pool.name not in listed]


def _cpu(millicores: int) -> str:
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def _memory(mebibytes: int) -> str:
    return f"{mebibytes // 1024}Gi" if mebibytes % 1024 == 0 else f"{mebibytes}Mi"


def _share_per_device(facts: PoolFacts) -> tuple[int, int]:
    """(CPU millicores, memory MiB) for one advertised device when every device on a node has a pod: a fair share
    of `NODE_SHARE_FOR_PODS` of the node, rounded down to 100m and 256Mi."""
    pool, per_node = facts.pool, facts.capacity.per_node
    cpu = int(pool.vm_size.vcpus * 1000 * NODE_SHARE_FOR_PODS / per_node) // 100 * 100
    if pool.vm_size.memory_gib is None:
        # A size the stack describes: its node memory is not known offline, so no share is derived from it and
        # the namespace default stays at the cap (pods state their own memory).
        return max(cpu, 100), DEFAULT_CONTAINER_CAP[1]
    memory = int(pool.vm_size.memory_gib * 1024 * NODE_SHARE_FOR_PODS / per_node) // 256 * 256
    return max(cpu, 100), max(memory, 256)


def pool_share(stack: StackConfig, pool_name: str, facts: PoolFactsByName | None = None) -> dict[str, str]:
    """CPU and memory one pod per advertised device can have on this pool: what the pod snippet asks for."""
    cpu, memory = _share_per_device(given_or_derived(stack, facts)[pool_name])
    return {"cpu": _cpu(cpu), "memory": _memory(memory)}


def container_defaults(stack: StackConfig, tenant: Tenant, facts: PoolFactsByName | None = None) -> dict[str, str]:
    """The namespace's LimitRange default (= defaultRequest) for CPU and memory. It applies to every container in
    the namespace, GPU or not, so it is the smaller of `DEFAULT_CONTAINER_CAP` and the smallest fair share across
    the tenant's pools (a pod that states none fits on every node of each of them)."""
    by_pool = given_or_derived(stack, facts)
    shares = [_share_per_device(by_pool[name]) for name in tenant.pools]
    cpu = min([cpu for cpu, _ in shares] + [DEFAULT_CONTAINER_CAP[0]])
    memory = min([memory for _, memory in shares] + [DEFAULT_CONTAINER_CAP[1]])
    return {"cpu": _cpu(cpu), "memory": _memory(memory)}


def quota_key(resource: str) -> str:
    """ResourceQuota key of a quota entry: for an extended resource its `requests.` key (extended resources allow no
    overcommit, so no limits.); for a DRA pool's DeviceClass the count of its devices the namespace's claims ask for
    (`dra_quota.DEVICE_CLASS_QUOTA_SUFFIX`)."""
    return device_class_quota_key(resource) if is_device_class(resource) else f"requests.{resource}"


@dataclass(frozen=True)
class PoolPromise:
    """How a pool several tenants list is promised: each tenant's quota of the pool's resource, at most the pool."""

    pool: str
    resource: str
    capacity: int
    """The most units the pool advertises, at its autoscale maximum (or fixed count)."""
    max_nodes: int
    quotas: tuple[tuple[str, int | None], ...]
    """(tenant, quota of `resource`) per listing tenant; None when the tenant has no quota on it."""

    @property
    def promised(self) -> int:
        """What the quotas promise on this pool: each counts up to the pool's capacity (a tenant's other pools
        may serve the rest of it)."""
        return sum(min(units, self.capacity) for _, units in self.quotas if units is not None)

    @property
    def exceeds(self) -> bool:
        return self.promised > self.capacity


def pool_promises(stack: StackConfig, facts: PoolFactsByName | None = None) -> list[PoolPromise]:
    """One per pool that two or more tenants list, in the stack's pool order."""
    promises = []
    for pool_facts in given_or_derived(stack, facts).values():
        pool = pool_facts.pool
        listing = [tenant for tenant in stack.tenants if pool.name in tenant.pools]
        if len(listing) < 2:
            continue
        offer = pool_offers(stack, listing[0], facts)[listing[0].pools.index(pool.name)]
        promises.append(PoolPromise(
            pool=pool.name, resource=offer.resource, capacity=offer.max_total, max_nodes=pool.max_nodes,
            quotas=tuple((tenant.name, dict(tenant.quota).get(offer.resource)) for tenant in listing)))
    return promises


def promise_plan(stack: StackConfig, facts: PoolFactsByName | None = None) -> list[dict[str, Any]]:
    """The `poolPromises` list of `plan --json`."""
    return [{"pool": p.pool, "resource": p.resource, "capacity": p.capacity, "maxNodes": p.max_nodes,
             "quotas": dict(p.quotas), "promised": p.promised, "exceeds": p.exceeds}
            for p in pool_promises(stack, facts)]


def _promise_warning(promise: PoolPromise) -> str:
    quotas = ", ".join(f"{tenant} {units if units is not None else 'no quota'}" for tenant, units in promise.quotas)
    over = [tenant for tenant, units in promise.quotas if units is not None]
    return (f"pool {promise.pool}: the quotas of tenants {', '.join(over)} promise {promise.promised} "
            f"{promise.resource} but the pool advertises at most {promise.capacity} ({promise.max_nodes} node(s)); "
            f"{quotas}: once the others use theirs a tenant cannot use its quota; lower the quotas or raise the "
            f"pool's max")


def pod_security_warnings(stack: StackConfig) -> list[str]:
    """The namespaces the shared policy judges keep the Pod Security level their owners set, which gpushare cannot
    see offline: a privileged container there sees every GPU of its node."""
    if not stack.tenants:
        return []
    platform = "".join(f", {ns.name}" for ns in stack.platform)
    return [f"Pod Security: gpushare enforces baseline in the tenants' namespaces only; the namespaces the shared "
            f"policy judges (default{platform} and every add-on's) keep whatever level they have, and a privileged "
            f"container there sees every GPU of its node, past the device plugin and the policies; label each with "
            f"{POD_SECURITY_LABEL}=baseline (or restricted) unless it must run privileged pods, and keep write access "
            f"to those to admins"]


def tenant_warnings(stack: StackConfig, facts: PoolFactsByName | None = None) -> list[str]:
    """A quota above what the tenant's pools can ever advertise (at autoscale max) never binds; quotas that promise
    more of a shared pool than it has (without queues); namespaces left with no GPU pool: say so."""
    facts = given_or_derived(stack, facts)
    warnings = []
    for tenant in stack.tenants:
        offers = pool_offers(stack, tenant, facts)
        for resource, units in tenant.quota:
            serving = [offer for offer in offers if offer.resource == resource]
            most = sum(offer.max_total for offer in serving)
            if units > most:
                where = ", ".join(f"{o.pool}: {o.max_total} at {o.max_nodes} node(s)" for o in serving)
                warnings.append(f"tenant {tenant.name}: quota {resource}: {units} is more than its pools can ever "
                                f"advertise ({most}; {where}), so it never binds; lower it or raise the pools' max")
    if not stack.queues.enabled:
        # With queues the promise on a pool is the queues' guarantee (`queues.queue_warnings` weighs it against the
        # pool); quotas are caps that may sum past a pool on purpose, where tenants borrow.
        warnings += [_promise_warning(promise) for promise in pool_promises(stack, facts) if promise.exceeds]
    if stack.tenants and not shared_pools(stack):
        tenants = ", ".join(tenant.name for tenant in stack.tenants)
        warnings.append(f"every GPU pool is listed by a tenant, so every namespace but the tenants' ({tenants}) and "
                        f"{', '.join(EXEMPT_NAMESPACES)} has no GPU pool: GPU pods there are refused; leave a pool "
                        f"out of every tenant's pools to give them one")
    return warnings


def tenant_policy_name(tenant: Tenant | DispatchedTenant) -> str:
    return f"gpushare-tenant-{tenant.name}"



# --- what a team copies ---------------------------------------------------------------------------------------------

def pod_spec(stack: StackConfig, tenant: Tenant, facts: PoolFactsByName | None = None,
             pool: str | None = None) -> dict[str, Any]:
    """A complete Pod spec the tenant's policy admits: one GPU unit of `pool` (its first pool when none is named)
    with that pool's fair share of CPU and memory (requests = limits: Guaranteed QoS), the pool's nodeSelector, and
    the tolerations its pools need (the GPU taint; the tenant's taint where a pool is dedicated to it; the pools' own
    and Spot taints). The tolerations are the tenant's, the same on each pool's snippet: a toleration only allows."""
    facts = given_or_derived(stack, facts)
    offers = pool_offers(stack, tenant, facts)
    offer = offers[0] if pool is None else next(o for o in offers if o.pool == pool)
    share = pool_share(stack, offer.pool, facts)
    tolerations = [toleration(GPU_TAINT)]
    if any(o.dedicated for o in offers):
        tolerations.append(toleration(tenant_taint(tenant.name)))
    # The pools' own taints and the Spot taint AKS adds: without them the pod fits none of those nodes.
    for name in tenant.pools:
        for taint in facts[name].tolerated_taints:
            if toleration(taint) not in tolerations and taint != tenant_taint(tenant.name):
                tolerations.append(toleration(taint))
    container: dict[str, Any] = {"name": SNIPPET_CONTAINER, "image": CUDA_CHECK_IMAGE, "command": ["nvidia-smi", "-L"],
                                 "resources": {"limits": {offer.resource: 1, **share}, "requests": dict(share)}}
    spec: dict[str, Any] = {"nodeSelector": {POOL_LABEL: offer.pool}, "tolerations": tolerations,
                            "restartPolicy": "Never", "containers": [container]}
    if facts[offer.pool].pool.allocation is Allocation.DRA:
        # The pool's device comes from the tenant's ResourceClaimTemplate of it (`dra.claim_template`), by CDI: the
        # container asks for no extended resource, so it sets NVIDIA_VISIBLE_DEVICES=void as every container that asks
        # for none on a GPU node must (the NVIDIA runtime would add the image's `all`, docs/tenants.md).
        spec["resourceClaims"] = [{"name": dra.CLAIM_REQUEST, "resourceClaimTemplateName": offer.pool}]
        container["resources"] = {"limits": dict(share), "requests": dict(share),
                                  "claims": [{"name": dra.CLAIM_REQUEST}]}
        container["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]
    return spec


def pod_specs(stack: StackConfig, tenant: Tenant, facts: PoolFactsByName | None = None) -> dict[str, dict[str, Any]]:
    """Each of the tenant's pools -> `pod_spec` on it, in the tenant's order: a snippet for every pool it may use."""
    facts = given_or_derived(stack, facts)
    return {name: pod_spec(stack, tenant, facts, pool=name) for name in tenant.pools}
