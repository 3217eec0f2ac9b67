"""`gpushare:tenants`: teams, the pools their GPU pods may use, their quota and their edit groups."""

from __future__ import annotations

from typing import Any

from gpushare.model.keys import CLUSTER_KEY, POOLS_KEY, TENANTS_KEY
from gpushare.model.stack import (
    Allocation,
    Cluster,
    GpuPool,
    Operator,
    Tenant,
)
from gpushare.sharing.capacity import device_unit, pool_capacity
from gpushare.sharing.dra import device_kind
from gpushare.sharing.dra_quota import DEVICE_CLASS_QUOTA_SUFFIX, is_device_class
from gpushare.stackfile.checks import (
    GUID_RE,
    Checker,
    checked_later,
    did_you_mean,
    kind_of,
    pool_references,
    record_name_or_find_earlier,
    show,
)
from gpushare.stackfile.declarations import ARRAY, BOOLEAN, INTEGER, OBJECT, STRING, Field, Section
from gpushare.stackfile.kubernetes_version import kubernetes_version_problem
from gpushare.stackfile.namespaces import NAMESPACE_RE, namespace_problem
from gpushare.stackfile.queue_config import QUEUE_FIELD, parse_tenant_queue

QUOTA_UNITS = Field("units", INTEGER, "The most units of the resource requested at once in the namespace.",
                    minimum=1, why=" (a quota of 0 would forbid the tenant's GPU pods; drop the key for no limit)")
POOL_UNITS = Field("units", INTEGER, "Units of the pool's advertised resource guaranteed to the tenant there (its "
                                     "queue's nominalQuota on the pool's flavor); 0: it only borrows there.",
                   minimum=0)
QUOTA_POOLS = Field("pools", OBJECT, "Pool (one of the tenant's pools) -> units of what the pool advertises "
                                     "guaranteed to the tenant there, enforced per pool by Kueue (needs "
                                     "gpushare:queues.enabled); with it the tenant's GPU pods must go through its "
                                     "LocalQueues.",
                    default_text="no per-pool promise", values=POOL_UNITS)
QUOTA = Section((QUOTA_POOLS,), closed=False)
"""`quota:`'s one fixed key; its other keys are resource names (`QUOTA_UNITS`)."""
TENANT = Section((
    Field("name", STRING, "The team's namespace: a DNS-1123 label, unique, not default, kube-* or gpu-operator.",
          required=True, pattern=NAMESPACE_RE, examples=("vision",),
          missing="the team's namespace (a DNS-1123 label such as `vision`)"),
    Field("pools", ARRAY, "Pools from gpushare:pools its GPU pods may use; a pool only one tenant lists is "
                          "dedicated to it.",
          required=True, min_items=1, unique=True,
          items=Field("pool", STRING, "A pool's name.", examples=("a100mig",))),
    Field("quota", OBJECT, "Advertised resource (as plan shows it, e.g. nvidia.com/mig-1g.12gb, without requests.) "
                           "-> the most units requested at once (a ResourceQuota); a resource one of its pools "
                           "advertises, or for a pool with allocation dra its DeviceClass (e.g. "
                           "gpushare-t4-16gb) -> the most devices its claims ask for at once. `pools` states the "
                           "tenant's share per pool instead or as well.",
          default_text="no limit", section=QUOTA, values=QUOTA_UNITS),
    Field("groups", ARRAY, "Entra ID group object IDs given the edit ClusterRole in the namespace.",
          unique=True, items=Field("group", STRING, "An Entra ID group's object ID (a GUID).", pattern=GUID_RE,
                                    examples=("3f2504e0-4f89-41d3-9a0c-0305e82c3301",))),
    Field("guaranteed", BOOLEAN, "GPU pods must be Guaranteed QoS (CPU and memory requests equal to limits)."),
    QUEUE_FIELD,
), model=Tenant)
MAX_TENANTS = 1_000
"""The most tenants a stack holds. Kubernetes sets no such bound, but each tenant is a namespace with about five
objects and an admission policy of its own: `plan` (and `pulumi preview`) spend about 20 ms of CPU per tenant,
linearly (docs/benchmarks.md), so 1,000 tenants plan in about 20 s, and a stack file in a pull request (untrusted
input) cannot make CI run for minutes."""
TENANTS_FIELD = Field(TENANTS_KEY, ARRAY, "Teams sharing this cluster, each a namespace bound to its pools; needs "
                                          "Kubernetes 1.30 or newer.",
                      default=(), max_items=MAX_TENANTS, items=Field("tenant", OBJECT, "A team.", section=TENANT))
TENANT_KEYS = TENANT.keys


def _parse_tenant_quota(c: Checker, value: Any, path: str,
                        advertised: dict[str, list[str]]) -> tuple[tuple[str, int], ...]:
    """`advertised`: resource -> the tenant's pools advertising it (empty when a pool reference failed)."""
    if not isinstance(value, dict):
        c.add(path, f"expected a mapping of advertised resource to units, e.g. {{nvidia.com/gpu: 4, "
                    f"pools: {{a100mig: 2}}}}, got {kind_of(value)} {show(value)}")
        return ()
    offered = ", ".join(f"{resource} ({', '.join(pools)})" for resource, pools in sorted(advertised.items()))
    quota = []
    for key, units in value.items():
        key_path = f"{path}.{key}"
        resource = str(key)
        if resource == QUOTA_POOLS.name:
            continue
        if resource.startswith(("requests.", "limits.")):
            c.add(key_path, f"write the resource name only, got {resource!r}; write "
                            f"{resource.split('.', 1)[1]!r} (gpushare adds the quota's requests. prefix)")
            continue
        if resource.endswith(DEVICE_CLASS_QUOTA_SUFFIX):
            c.add(key_path, f"write the DeviceClass name only, got {resource!r}; write "
                            f"{resource.removesuffix(DEVICE_CLASS_QUOTA_SUFFIX)!r} (gpushare adds the quota's "
                            f"{DEVICE_CLASS_QUOTA_SUFFIX} suffix)")
            continue
        if advertised and resource not in advertised:
            dra_note = (" (a pool with allocation dra: its DeviceClass, counted in devices)"
                        if any(is_device_class(name) for name in advertised) else "")
            c.add(key_path, f"none of this tenant's pools advertises {resource}"
                            f"{did_you_mean(resource, list(advertised))}; they advertise{dra_note}: {offered}")
            continue
        if c.check(QUOTA_UNITS, units, key_path) is not None:
            quota.append((resource, units))
    return tuple(quota)


def _parse_pool_quota(c: Checker, value: Any, path: str, tenant_pools: tuple[str, ...], pool_names: list[str],
                      capacity: dict[str, tuple[int, str, str]]) -> tuple[tuple[str, int], ...]:
    """`quota.pools`: each a pool of the stack the tenant lists, at most what it holds at its max. `capacity`: the
    tenant's pools' (units at max, resource, how) (empty when its pools could not be read: then only names and
    numbers are judged)."""
    if not isinstance(value, dict):
        example = ", ".join(f"{name}: 1" for name in tenant_pools[:2]) or "a100mig: 2"
        c.add(path, f"expected a mapping of the tenant's pools to units, e.g. {{{example}}}, got {kind_of(value)} "
                    f"{show(value)}")
        return ()
    parsed = []
    for key, units in value.items():
        key_path, pool = f"{path}.{key}", str(key)
        if pool not in pool_names:
            c.add(key_path, f"no pool {pool!r} in {POOLS_KEY}{did_you_mean(pool, pool_names)}; the tenant's pools: "
                            f"{', '.join(tenant_pools)}")
            continue
        if tenant_pools and pool not in tenant_pools:
            c.add(key_path, f"pool {pool} is not one of this tenant's pools ({', '.join(tenant_pools)}): its pods "
                            f"may not run there; add {pool} to its pools or remove it here")
            continue
        if c.check(POOL_UNITS, units, key_path) is None:
            continue
        if pool in capacity and units > capacity[pool][0]:
            most, resource, how = capacity[pool]
            c.add(key_path, f"{units} is more than pool {pool} can ever hold: {most} {resource} ({how}); lower it "
                            f"to at most {most} or raise the pool's count or autoscale max")
            continue
        parsed.append((pool, units))
    return tuple(parsed)


def _tenant_name(c: Checker, value: Any, path: str) -> str | None:
    if not isinstance(value, str):
        c.add(path, f"expected a namespace name, got {kind_of(value)} {show(value)}")
        return None
    if problem := namespace_problem(value):
        c.add(path, problem)
        return None
    return value


def _tenant_pools(c: Checker, value: Any, path: str, pool_names: list[str]) -> tuple[str, ...] | None:
    """The pools it lists, or None when one is no known pool (or the list is none)."""
    if value is None:
        c.add(path, f"required: the GPU pools its pods may use, from: {', '.join(pool_names)}")
        return None
    if not isinstance(value, list) or not value:
        c.add(path, f"expected a list of at least one pool name, got {kind_of(value)} {show(value)}; pools: "
                    f"{', '.join(pool_names)}")
        return None
    pools, known = pool_references(c, value, path, pool_names)
    return tuple(pools) if known and pools else None


def _parse_tenant(c: Checker, value: Any, path: str, pool_names: list[str],
                  pools: tuple[GpuPool, ...], operator: Operator) -> Tenant | None:
    tenant = c.section_values(value, TENANT, path, rules={
        "name": _tenant_name, "pools": lambda c, v, p: _tenant_pools(c, v, p, pool_names),
        "quota": checked_later, "groups": _parse_groups, "queue": checked_later,
    }, missing={"pools": f"the GPU pools its pods may use, from: {', '.join(pool_names)}"})
    if tenant is None:
        return None
    by_name = {pool.name: pool for pool in pools}
    advertised: dict[str, list[str]] = {}
    at_max: dict[str, int] = {}
    per_pool: dict[str, tuple[int, str, str]] = {}
    tenant_pools = tenant["pools"] or ()
    if all(p in by_name for p in tenant_pools):
        for pool_name in tenant_pools:
            pool = by_name[pool_name]
            capacity = pool_capacity(pool, operator.mig_strategy)
            # A DRA pool's pods claim devices of its DeviceClass: its quota counts them per class.
            resource, units = ((device_kind(pool).class_name, capacity.devices_per_node * pool.max_nodes)
                               if pool.allocation is Allocation.DRA else
                               (capacity.resource, capacity.total(pool.max_nodes)))
            advertised.setdefault(resource, []).append(pool_name)
            at_max[resource] = at_max.get(resource, 0) + units
            per_pool[pool_name] = (capacity.total(pool.max_nodes), capacity.resource,
                                   f"each a {device_unit(pool, capacity)}; {capacity.per_node} per node x "
                                   f"{pool.max_nodes} node(s) at its max")
    pool_quota: tuple[tuple[str, int], ...] = ()
    if "quota" in tenant.given:
        raw_quota = tenant["quota"]
        tenant["quota"] = _parse_tenant_quota(c, raw_quota, f"{path}.quota", advertised)
        # Left empty (`pools:`) it is left out, as every key the validator reads (the schema allows null alike).
        if isinstance(raw_quota, dict) and raw_quota.get(QUOTA_POOLS.name) not in (None, {}):
            pool_quota = _parse_pool_quota(c, raw_quota[QUOTA_POOLS.name], f"{path}.quota.{QUOTA_POOLS.name}",
                                           tuple(tenant_pools), pool_names, per_pool)
    if "queue" in tenant.given:
        tenant["queue"] = parse_tenant_queue(c, tenant["queue"], f"{path}.queue", at_max)
    if tenant.incomplete:
        return None
    return tenant.model(pool_quota=pool_quota)


def _parse_groups(c: Checker, value: Any, path: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        c.add(path, f"expected a list of Entra ID group object IDs, got {kind_of(value)} {show(value)}")
        return ()
    groups = []
    for i, group in enumerate(value):
        if not isinstance(group, str) or not GUID_RE.match(group):
            c.add(f"{path}[{i}]", f"expected an Entra ID group object ID (a GUID such as "
                                  f"00000000-0000-0000-0000-000000000000), got {show(group)}; "
                                  f"`az ad group show --group NAME --query id -o tsv` prints it")
        elif group.lower() in groups:
            c.add(f"{path}[{i}]", f"group {group} is listed twice")
        else:
            groups.append(group.lower())
    return tuple(groups)


def _has_problem(c: Checker, raw_pools: Any, name: str) -> bool:
    indexes = [i for i, p in enumerate(raw_pools) if isinstance(p, dict) and p.get("name") == name] \
        if isinstance(raw_pools, list) else []
    prefixes = tuple(f"{POOLS_KEY}[{i}]" for i in indexes)
    return any(problem.path == prefix or problem.path.startswith((f"{prefix}.", f"{prefix}["))
               for problem in c.problems for prefix in prefixes)


def parse_tenants(c: Checker, value: Any, raw_pools: Any, pools: tuple[GpuPool, ...], operator: Operator,
                   cluster: Cluster | None) -> tuple[Tenant, ...]:
    example = "e.g.\n      gpushare:tenants:\n        - {name: vision, pools: [t4]}"
    if not isinstance(value, list):
        c.add(TENANTS_KEY, f"expected a list of tenants, got {kind_of(value)} {show(value)}; {example}")
        return ()
    if len(value) > MAX_TENANTS:
        c.add(TENANTS_KEY, f"{len(value)} tenants; at most {MAX_TENANTS:,} (each adds a namespace, its objects and "
                           "an admission policy, and the plan's time grows with them); split the tenants over "
                           "clusters, or give teams one tenant")
        return ()
    # Pool names as written, so a pool with its own problems is not reported again as unknown here.
    pool_names = [p["name"] for p in raw_pools if isinstance(p, dict) and isinstance(p.get("name"), str)] \
        if isinstance(raw_pools, list) else []
    # A pool with a problem of its own (`replicas: four`) was parsed without that setting, so what it advertises
    # is not what the user wrote: a quota is not judged against it (one mistake, one error).
    trusted = tuple(pool for pool in pools if not _has_problem(c, raw_pools, pool.name))
    tenants = []
    seen: dict[str, int] = {}
    for i, item in enumerate(value):
        path = f"{TENANTS_KEY}[{i}]"
        tenant = _parse_tenant(c, item, path, pool_names, trusted, operator)
        if (earlier := record_name_or_find_earlier(seen, item, i)) is not None:
            c.add(f"{path}.name", f"tenant {item['name']!r} is already defined by {TENANTS_KEY}[{earlier}]; "
                                  f"each namespace belongs to one tenant")
            continue
        if tenant is not None:
            tenants.append(tenant)
    if value and cluster is not None:
        problem = kubernetes_version_problem(cluster.kubernetes_version)
        if problem:
            c.add(f"{CLUSTER_KEY}.kubernetesVersion", problem)
    return tuple(tenants)
