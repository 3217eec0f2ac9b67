"""The plan a reviewer reads: per-pool capacity, the resources the program registers, and warnings.

`plan_document` is the `plan --json` object (keys are only ever added); `render_text` is the table view of it.
"""

from __future__ import annotations

from typing import Any

from gpushare.capacity import pool_capacity
from gpushare.model import GpuPool, StackConfig
from gpushare.operator_values import CONFIG_MAP_NAME, NAMESPACE, operator_plan

POOL_COLUMNS = (
    ("POOL", "name"), ("VM SIZE", "vmSize"), ("GPU", "gpuSummary"), ("MIG SLICE", "slice"), ("SHARING", "sharingSummary"),
    ("RESOURCE", "resource"), ("PER NODE", "perNode"), ("NODES", "nodes"), ("TOTAL", "total"),
)


def pool_row(pool: GpuPool, stack: StackConfig) -> dict[str, Any]:
    capacity = pool_capacity(pool, stack.operator.mig_strategy)
    return {
        "name": pool.name,
        "vmSize": pool.vm_size.name,
        "gpu": pool.vm_size.gpu.display_name,
        "gpusPerNode": pool.vm_size.gpus,
        "mig": pool.mig.value if pool.mig else None,
        "slice": capacity.slice,
        "sharing": pool.sharing.strategy.value if pool.sharing else None,
        "replicas": pool.sharing.replicas if pool.sharing else None,
        "resource": capacity.resource,
        "perNode": capacity.per_node,
        "minNodes": pool.min_nodes,
        "maxNodes": pool.max_nodes,
        "minTotal": capacity.total(pool.min_nodes),
        "maxTotal": capacity.total(pool.max_nodes),
        "usableShare": f"{capacity.usable_share.numerator}/{capacity.usable_share.denominator}",
        "zones": list(pool.zones),
        "protected": not pool.recreate,
    }


def plan_document(stack: StackConfig, resources: list[dict[str, Any]], warnings: list[str]) -> dict[str, Any]:
    operator = operator_plan(stack)
    return {
        "stack": stack.stack,
        "stackFile": stack.source,
        "location": stack.location,
        "cluster": {
            "name": stack.cluster.name,
            "resourceGroup": stack.cluster.resource_group,
            "kubernetesVersion": stack.cluster.kubernetes_version,
            "systemPool": {"vmSize": stack.cluster.system_pool.vm_size, "count": stack.cluster.system_pool.count},
        },
        "operator": {
            "chartVersion": stack.operator.chart_version,
            "driver": stack.operator.driver.value,
            "migStrategy": stack.operator.mig_strategy.value,
            "namespace": NAMESPACE,
            "configMap": CONFIG_MAP_NAME,
            "configHash": operator.config_hash,
            "summary": list(operator.summary),
        },
        "devicePluginConfigs": [{"key": c.key, "pool": c.pool, "config": c.text} for c in operator.configs],
        "pools": [pool_row(pool, stack) for pool in stack.pools],
        "resources": resources,
        "warnings": warnings,
    }


def _range(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows)]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [headers, *rows]]


def render_text(document: dict[str, Any]) -> str:
    op = document["operator"]
    cluster = document["cluster"]
    lines = [
        f"Stack {document['stack']} ({document['stackFile']}): cluster {cluster['name']} in {document['location']}, "
        f"resource group {cluster['resourceGroup']}",
        "",
    ]
    rows = []
    for pool in document["pools"]:
        view = dict(pool)
        view["gpuSummary"] = f"{pool['gpusPerNode']} x {pool['gpu'].removeprefix('NVIDIA ')}"
        view["sharingSummary"] = f"{pool['sharing']} x{pool['replicas']}" if pool["sharing"] else "-"
        view["nodes"] = _range(pool["minNodes"], pool["maxNodes"])
        view["total"] = _range(pool["minTotal"], pool["maxTotal"])
        rows.append(["-" if view[key] is None else str(view[key]) for _, key in POOL_COLUMNS])
    lines += _table([title for title, _ in POOL_COLUMNS], rows)
    lines += ["", "GPU Operator:"] + [f"  {line}" for line in op["summary"]]
    lines += ["", f"Device-plugin configs (ConfigMap {op['namespace']}/{op['configMap']}; key = node label "
                  f"nvidia.com/device-plugin.config):"]
    for config in document["devicePluginConfigs"]:
        owner = f"pool {config['pool']}" if config["pool"] else "nodes without a pool label"
        lines.append(f"  {config['key']}  ({owner})")
        lines += [f"    {line}" for line in config["config"].rstrip().splitlines()]
    lines += ["", f"Resources ({len(document['resources'])}):"]
    for resource in document["resources"]:
        marks = " [protected]" if resource["protect"] else ""
        after = [d for d in resource["dependsOn"] if d != resource.get("parent")]
        waits = f"  after: {', '.join(after)}" if after else ""
        if resource.get("provider"):
            waits += f"  via: {resource['provider']}"
        lines.append(f"  + {resource['type']}  {resource['name']}{marks}{waits}")
    if document["warnings"]:
        lines += ["", "Warnings:"] + [f"  ! {warning}" for warning in document["warnings"]]
    return "\n".join(lines)
