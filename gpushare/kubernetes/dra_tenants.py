"""Tenants on DRA pools: which DeviceClasses, ResourceClaimTemplates and opaque configs a namespace may claim. What the
admission policies (`gpushare.kubernetes.admission`) read; the objects themselves are `gpushare.sharing.dra`'s."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpushare.model.stack import GpuPool, StackConfig, Tenant
from gpushare.sharing import dra


def _dra(stack: StackConfig, names: Iterable[str]) -> list[GpuPool]:
    by_name = {pool.name: pool for pool in dra.dra_pools(stack)}
    return [by_name[name] for name in names if name in by_name]


def classes_of(pools: Iterable[GpuPool]) -> list[str]:
    """The gpushare DeviceClasses of `pools`, each once, in order (pools of one kind share a class)."""
    return list(dict.fromkeys(dra.device_kind(pool).class_name for pool in pools))


def tenant_dra_pools(stack: StackConfig, tenant: Tenant) -> list[GpuPool]:
    return _dra(stack, tenant.pools)


def tenant_classes(stack: StackConfig, tenant: Tenant) -> list[str]:
    """The classes the tenant's claims may name: its DRA pools'."""
    return classes_of(tenant_dra_pools(stack, tenant))


def tenant_only_classes(stack: StackConfig) -> list[str]:
    """Classes whose devices only tenants' pools have: claims outside tenant namespaces may not name them (a class
    a pool no tenant lists shares stays open there; the pod's node decides the pool)."""
    listed = {name for tenant in stack.tenants for name in tenant.pools}
    pools = dra.dra_pools(stack)
    unlisted = set(classes_of(pool for pool in pools if pool.name not in listed))
    return [name for name in classes_of(pool for pool in pools if pool.name in listed) if name not in unlisted]


def tenant_templates(stack: StackConfig, tenant: Tenant) -> list[str]:
    """The ResourceClaimTemplates gpushare renders in the tenant's namespace: one per DRA pool, named after it."""
    return [pool.name for pool in tenant_dra_pools(stack, tenant)]


def tenant_configs(stack: StackConfig, tenant: Tenant) -> list[dict[str, Any]]:
    """The opaque configs the tenant's claims may carry: its DRA pools' (`dra.opaque_config`), as a claim's
    `config[].opaque` holds them."""
    configs: list[dict[str, Any]] = []
    for pool in tenant_dra_pools(stack, tenant):
        opaque = {"driver": dra.DRIVER_NAME, "parameters": dra.opaque_config(pool)}
        if opaque not in configs:
            configs.append(opaque)
    return configs
