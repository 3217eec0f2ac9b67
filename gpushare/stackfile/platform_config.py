"""`gpushare:platform`: the namespaces of cluster add-ons whose workloads may reach GPU nodes past the pool binding."""

from __future__ import annotations

from typing import Any

from gpushare.model.keys import PLATFORM_KEY
from gpushare.model.stack import PlatformNamespace, Tenant
from gpushare.stackfile.checks import Checker, kind_of, pool_references, record_name_or_find_earlier, show
from gpushare.stackfile.declarations import ARRAY, OBJECT, STRING, Field, Section
from gpushare.stackfile.namespaces import EXEMPT_NAMESPACES, NAMESPACE_RE

NAMESPACE_MISSING = "the add-on's namespace, e.g. calico-system"
PLATFORM_NAMESPACE = Section((
    Field("name", STRING, "The namespace (a DNS-1123 label); not a tenant's, kube-system or gpu-operator (those two "
                          "are never judged).",
          required=True, pattern=NAMESPACE_RE, examples=("calico-system",),
          missing=NAMESPACE_MISSING),
    Field("pools", ARRAY, "The GPU pools its workloads may reach, tolerating every taint and setting device "
                          "variables; its pods must then select them (nodeSelector or a required nodeAffinity term "
                          "on gpushare.io/pool).",
          default_text="every pool", min_items=1, unique=True,
          items=Field("pool", STRING, "A pool's name.", examples=("t4ts",))),
), model=PlatformNamespace)
PLATFORM = Section((
    Field("namespaces", ARRAY, "Namespaces whose workloads (DaemonSets, Deployments and the pods their controllers "
                               "create) are trusted like kube-system's on their pools: CNI, node agents, GPU "
                               "monitoring.",
          default=(), unique=True, items=Field("namespace", OBJECT, "A platform namespace.",
                                                section=PLATFORM_NAMESPACE)),
))
PLATFORM_FIELD = Field(PLATFORM_KEY, OBJECT, "Cluster add-ons the tenant policies let onto GPU nodes.",
                       default_text="none", section=PLATFORM)
PLATFORM_KEYS = PLATFORM.keys


def _parse_pools(c: Checker, value: Any, path: str, pool_names: list[str]) -> tuple[str, ...] | None:
    if not isinstance(value, list) or not value:
        c.add(path, f"expected a list of at least one pool name, got {kind_of(value)} {show(value)}; leave the key "
                    f"out for every pool; pools: {', '.join(pool_names)}")
        return None
    pools, _ = pool_references(c, value, path, pool_names)
    return tuple(pools) if len(pools) == len(value) else None


def _namespace_name(c: Checker, value: Any, path: str, tenants: tuple[Tenant, ...]) -> str | None:
    if value is None:
        c.add(path, f"required: {NAMESPACE_MISSING}")
    elif not isinstance(value, str) or not NAMESPACE_RE.match(value):
        c.add(path, f"must be a Kubernetes namespace name (DNS-1123 label: 1-63 lowercase letters, digits "
                    f"or '-', starting and ending with a letter or digit), got {show(value)}")
    elif value in EXEMPT_NAMESPACES:
        c.add(path, f"{value!r} is never judged by the tenant policies (exempt: "
                    f"{', '.join(EXEMPT_NAMESPACES)}); remove the entry")
    elif value in {tenant.name for tenant in tenants}:
        c.add(path, f"{value!r} is a tenant's namespace, bound to that tenant's pools; a platform "
                    f"namespace must be another one (move the add-on to its own namespace)")
    else:
        return value
    return None


def _parse_namespace(c: Checker, value: Any, path: str, pool_names: list[str],
                     tenants: tuple[Tenant, ...]) -> PlatformNamespace | None:
    namespace = c.section_values(value, PLATFORM_NAMESPACE, path, rules={
        "name": lambda c, v, p: _namespace_name(c, v, p, tenants),
        "pools": lambda c, v, p: _parse_pools(c, v, p, pool_names),
    })
    if namespace is None or namespace.failed:
        return None
    return namespace.model()


def parse_platform(c: Checker, value: Any, raw_pools: Any,
                   tenants: tuple[Tenant, ...]) -> tuple[PlatformNamespace, ...]:
    raw = c.mapping(value, PLATFORM_KEY, PLATFORM_KEYS)
    if raw is None:
        return ()
    namespaces = raw.get("namespaces")
    if namespaces is None:
        return ()
    path = f"{PLATFORM_KEY}.namespaces"
    if not isinstance(namespaces, list):
        c.add(path, f"expected a list of namespaces, got {kind_of(namespaces)} {show(namespaces)}; e.g.\n"
                    f"      {PLATFORM_KEY}:\n        namespaces:\n          - {{name: calico-system}}")
        return ()
    pool_names = [p["name"] for p in raw_pools if isinstance(p, dict) and isinstance(p.get("name"), str)] \
        if isinstance(raw_pools, list) else []
    parsed = []
    seen: dict[str, int] = {}
    for i, item in enumerate(namespaces):
        item_path = f"{path}[{i}]"
        namespace = _parse_namespace(c, item, item_path, pool_names, tenants)
        if (earlier := record_name_or_find_earlier(seen, item, i)) is not None:
            c.add(f"{item_path}.name", f"namespace {item['name']!r} is already listed by {path}[{earlier}]")
            continue
        if namespace is not None:
            parsed.append(namespace)
    return tuple(parsed)
