"""The plan a reviewer reads: per-pool capacity, the resources the program registers, and warnings.

`plan_document` is the `plan --json` object (keys are only ever added); `render_text` is the table view of it.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable, Sequence
from typing import Any

import yaml

from gpushare.azure.deployed import DeployedPool, unlisted_nodes
from gpushare.azure.guard.messages import offline_warnings
from gpushare.azure.guard.guard_report import GuardReport
from gpushare.azure.prices import HOW_TO_PRICE
from gpushare.kubernetes.admission.policies import SHARED_POLICY_NAME
from gpushare.kubernetes.multikueue import fleet_dispatch_plan
from gpushare.kubernetes.queues import queue_plan
from gpushare.kubernetes.tenant_objects import platform_plan, tenant_plan
from gpushare.kubernetes.tenants import promise_plan, shared_pools
from gpushare.model.stack import SPOT_MARKET_PRICE, Allocation, Network, StackConfig, SupportPlan
from gpushare.plan.stack_plan import StackPlan
from gpushare.review.cluster_facts import created_cluster_sources, existing_cluster_facts, shown_subnet
from gpushare.review.dra_report import dra_document, dra_lines
from gpushare.showback.cost import cost_lines
from gpushare.review.queue_changes import queue_plan_lines
from gpushare.sharing.operator_values import CONFIG_MAP_NAME, NAMESPACE
from gpushare.sharing.pool_facts import PoolFacts
from gpushare.sharing.upgrades import upgrade_summary
from gpushare.sharing.autoscaler_readiness import (
    MAX_TOTAL_UNREADY_PERCENTAGE,
    OK_TOTAL_UNREADY_COUNT,
    other_nodes,
    unready_pools,
)

POOL_COLUMNS = (
    ("POOL", "name"), ("VM SIZE", "vmSize"), ("GPU", "gpuSummary"), ("MIG SLICE", "slice"), ("SHARING", "sharingSummary"),
    ("RESOURCE", "resource"), ("PER NODE", "perNode"), ("NODES", "nodes"), ("TOTAL", "total"), ("ZONES", "zoneList"),
)


def pool_row(facts: PoolFacts, stack: StackConfig, deployed: Sequence[DeployedPool] | None = None) -> dict[str, Any]:
    """`deployed`: an existing cluster's pools as read, which tell the subnet a pool without `subnetId` joins."""
    pool, capacity = facts.pool, facts.capacity
    subnet, subnet_source = shown_subnet(stack, pool, deployed)
    return {
        **({"subnetId": subnet, "subnetSource": subnet_source} if subnet else {}),
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
        # None on a Spot pool, which takes neither.
        "upgrade": {"maxSurge": upgrade.max_surge if (upgrade := pool.upgrade_settings) else None,
                    "maxUnavailable": upgrade.max_unavailable if upgrade else None,
                    "summary": upgrade_summary(pool, capacity)},
        "describedBy": "stack" if pool.vm_size.described_by_stack else "catalog",
        "labels": dict(pool.labels),
        "taints": list(facts.tolerated_taints),
        "osDisk": {"sizeGb": pool.os_disk.size_gb, "type": pool.os_disk.type.value if pool.os_disk.type else None},
        "maxPods": pool.max_pods,
        "tags": dict(pool.tags),
        "spot": ({"maxPrice": pool.spot.max_price, "eviction": pool.spot.eviction.value} if pool.spot else None),
        # Added by issue 42, only on a DRA pool (the top-level `dra` key details it).
        **({"allocation": pool.allocation.value} if pool.allocation is Allocation.DRA else {}),
    }


def in_dependency_order(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Resources in an order that is the same on every run (the engine registers them concurrently): each after
    what it waits for (dependsOn, provider), Azure before Kubernetes, then by name."""
    names = {r["name"] for r in resources}
    waits_for = {r["name"]: {d for d in [*r["dependsOn"], r.get("provider")] if d in names} for r in resources}
    by_name = {r["name"]: r for r in resources}

    def rank(name: str) -> tuple[bool, str]:
        return (not by_name[name]["type"].startswith("azure-native:"), name)

    waited_by: dict[str, list[str]] = {name: [] for name in names}
    for name, deps in waits_for.items():
        for dep in deps:
            waited_by[dep].append(name)
    ready = [rank(name) for name, deps in waits_for.items() if not deps]
    heapq.heapify(ready)
    ordered = []
    while ready:
        _, name = heapq.heappop(ready)
        ordered.append(by_name[name])
        for other in waited_by[name]:  # only those that wait for it: linear in the resources, not quadratic
            deps = waits_for[other]
            deps.discard(name)
            if not deps:
                heapq.heappush(ready, rank(other))
    return ordered


def cluster_settings(stack: StackConfig) -> dict[str, Any]:
    """The hardened cluster's stack settings, as `plan --json` shows them under `cluster`."""
    cluster = stack.cluster
    window = cluster.upgrades.window
    api_server: dict[str, Any] = {"authorizedIpRanges": list(cluster.api_server.authorized_ip_ranges)}
    if cluster.api_server.private:
        api_server.update(private=True, privateDnsZone=cluster.api_server.private_dns_zone or "system")
    settings: dict[str, Any] = {
        "tier": cluster.tier.value,
        # `grantDeployer` (kept for readers of earlier plans): whether the program grants any deploy identity.
        "access": {"adminGroups": list(cluster.access.admin_groups), "grantDeployer": bool(cluster.access.deployers),
                   "deployers": [{"objectId": d.object_id, "type": d.kind.value} for d in cluster.access.deployers],
                   "kubernetesCredential": cluster.access.kubernetes_credential.value},
        "upgrades": {"channel": cluster.upgrades.channel.value, "nodeOs": cluster.upgrades.node_os.value,
                     "window": {"day": window.day.value, "start": window.start, "hours": window.hours}},
        "apiServer": api_server,
    }
    # Keys added by issue 18, present only when set, so plans of stacks without them are unchanged.
    if cluster.support_plan is not SupportPlan.KUBERNETES_OFFICIAL:
        settings["supportPlan"] = cluster.support_plan.value
    if cluster.existing:
        settings["existing"] = True
    elif cluster.resource_group_exists:
        settings["resourceGroupExists"] = True
    network = cluster.network
    if network != Network():
        settings["network"] = {"subnetId": network.subnet_id, "serviceCidr": network.service_cidr,
                               "dnsServiceIp": network.dns_service_ip, "outboundType": network.outbound_type.value}
    return settings


EXISTING_CLUSTER_LINE = ("  existing cluster: gpushare adds its GPU pools, the GPU Operator and the tenants, and never "
                         "changes or deletes the cluster or its resource group; its tier, upgrades, network and access "
                         "are read, not written (`preflight` reports each one below gpushare's baseline)")
PRIVATE_CLUSTER_LINE = ("  private API server: previews, deploys and `verify` need a runner inside the cluster's "
                        "network or one peered with it (GitHub-hosted runners cannot reach it; map the stack to a "
                        "self-hosted runner's label in the repository variable GPUSHARE_RUNNERS, which both workflows "
                        "read)")
PRIVATE_DNS_LINES = {
    # aks-docs private-clusters.md: AKS makes a private DNS zone for the private FQDN, which resolves only in the
    # VNets linked to it; with privateDnsZone none there is no zone, and the public FQDN's A record holds the
    # private address.
    "system": ("  its kubeconfig names the private FQDN, which resolves only in VNets linked to the private DNS zone "
               "AKS makes in the node resource group: link a peered runner's VNet to it (`az network private-dns "
               "link vnet create`), or forward the runner's DNS to a resolver in the cluster's VNet"),
    "none": ("  privateDnsZone none: no private zone; the API server's public FQDN resolves to its private address, "
             "so a runner in a peered VNet needs only the route to it"),
}


def autoscaler_plan(stack: StackConfig, deployed: Iterable[DeployedPool] | None = None) -> dict[str, Any]:
    """What the cluster autoscaler makes of the pools (`gpushare.sharing.autoscaler_readiness`): whether it runs
    (a pool autoscales), the pools whose nodes it would count unready, and its cluster-wide threshold at worst.
    `nodesThen` counts the nodes gpushare knows: an existing cluster's own pools only when read (`otherNodes`)."""
    found = unready_pools(stack.pools, stack.operator.mig_strategy,
                          other_nodes(stack.cluster, unlisted_nodes(stack, deployed)))
    return {
        "runs": bool(found.autoscaled), "autoscaledPools": list(found.autoscaled),
        "unreadyPools": [pool.name for pool in found.pools],
        "unreadyNodesAtMost": found.unready_nodes, "nodesThen": found.total_nodes, "healthy": found.healthy,
        "otherNodes": found.other_nodes,
        "okTotalUnreadyCount": OK_TOTAL_UNREADY_COUNT, "maxTotalUnreadyPercentage": MAX_TOTAL_UNREADY_PERCENTAGE,
    }


def plan_document(plan: StackPlan, resources: list[dict[str, Any]], warnings: list[str],
                  guard: GuardReport | None = None, cost: dict[str, Any] | None = None,
                  unpriced: str | None = None) -> dict[str, Any]:
    """The report of `plan` (the CLI's, built once) and of the resources the program registered. `guard` is None when
    no deployed pools were compared (an offline plan without `--deployed`); `unpriced`: why `--prices` gave no cost
    (the prices could not be read, or the file was refused)."""
    stack, operator, facts = plan.stack, plan.operator, plan.pool_facts
    deployed = guard.deployed if guard else None
    cluster = {
        "name": stack.cluster.name,
        "resourceGroup": stack.cluster.resource_group,
        "kubernetesVersion": stack.cluster.kubernetes_version,
        "systemPool": {"vmSize": stack.cluster.system_pool.vm_size, "count": stack.cluster.system_pool.count},
        **cluster_settings(stack),
    }
    # An existing cluster's settings are its owners': what was read, null and `unknown` otherwise (same keys).
    cluster.update(existing_cluster_facts(stack, deployed) if stack.cluster.existing
                   else {"sources": created_cluster_sources()})
    return {
        "stack": stack.stack,
        "stackFile": stack.source,
        "location": stack.location,
        # The provider settings gpushare's Azure reads follow; a Pulumi secret is shown as the engine prints one.
        "azure": {"subscriptionId": "[secret]" if stack.azure.subscription_secret else stack.azure.subscription_id,
                  "environment": stack.azure.environment.value},
        "cluster": cluster,
        "operator": {
            "chartVersion": stack.operator.chart_version,
            "driver": stack.operator.driver.value,
            "migStrategy": stack.operator.mig_strategy.value,
            "namespace": NAMESPACE,
            "configMap": CONFIG_MAP_NAME,
            "configHash": operator.config_hash,
            "summary": list(operator.summary),
            "repository": stack.operator.repository,
            "chart": operator.chart,
            "values": stack.operator.values,
            "changedValues": list(operator.changed_values),
        },
        "devicePluginConfigs": [{"key": c.key, "pool": c.pool, "config": c.text} for c in operator.configs],
        "pools": [pool_row(pool, stack, deployed) for pool in facts.values()],
        "autoscaler": autoscaler_plan(stack, deployed),
        "resources": in_dependency_order(resources),
        "warnings": [*warnings, *(guard.warnings if guard else offline_warnings(stack))],
        "guard": guard.to_json() if guard else None,
        "tenants": tenant_plan(stack, facts),
        "sharedPools": shared_pools(stack) if stack.tenants else [pool.name for pool in stack.pools],
        "poolPromises": promise_plan(stack, facts),
        "platformNamespaces": platform_plan(stack),
        "queues": queue_plan(stack, facts, list(plan.queues.manifests) if plan.queues else []),
        "cost": cost,
        "costUnpriced": unpriced,
        # Added by issue 42, only with DRA pools, so plans of stacks without them are unchanged.
        **({"dra": dra} if (dra := dra_document(plan)) else {}),
        # Added by issue 43, only on a fleet's dispatch manager, so other stacks' plans are unchanged.
        **({"fleetDispatch": dispatched} if (dispatched := fleet_dispatch_plan(stack)) else {}),
    }


def _range(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows)]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [headers, *rows]]


def _cluster_line(cluster: dict[str, Any]) -> str:
    upgrades, window = cluster["upgrades"], cluster["upgrades"]["window"]
    ranges = len(cluster["apiServer"]["authorizedIpRanges"])
    admins = len(cluster["access"]["adminGroups"])
    api_server = f"{ranges} CIDR{'s' if ranges != 1 else ''}" if ranges else "any address"
    return (f"  tier {cluster['tier']}; Entra ID + Azure RBAC, no local accounts; upgrades {upgrades['channel']}, "
            f"node OS {upgrades['nodeOs']}, {window['day']} {window['start']} UTC for {window['hours']} h; "
            f"API server from {api_server}; {admins} admin group{'s' if admins != 1 else ''}"
            f"{_deployers(cluster['access'])}")


def _existing_system_line(cluster: dict[str, Any]) -> str:
    """An existing cluster's system pools as read, or that they were not: never gpushare's default."""
    pools = cluster.get("systemPools")
    if pools is None:
        return ("  its system pools, tier and upgrades: not read offline (`plan --deployed FILE` shows the pools, "
                "`preflight` reads the rest)")
    shown = " + ".join(f"{p['count'] if p['count'] is not None else '?'} x {p['vmSize']}" for p in pools) or "none"
    version = f", Kubernetes {cluster['kubernetesVersion']}" if cluster.get("kubernetesVersion") else ""
    return f"  its system pools (as deployed): {shown}{version}; tier and upgrades not read offline"


def _deployers(access: dict[str, Any]) -> str:
    count = len(access.get("deployers", []))
    return f", {count} deployer{'s' if count != 1 else ''} granted" if count else ""


def render_text(document: dict[str, Any]) -> str:
    op = document["operator"]
    cluster = document["cluster"]
    lines = [
        f"Stack {document['stack']} ({document['stackFile']}): cluster {cluster['name']} in {document['location']}, "
        f"resource group {cluster['resourceGroup']}",
        *([EXISTING_CLUSTER_LINE, _existing_system_line(cluster)] if cluster.get("existing")
          else [_cluster_line(cluster)]),
        *([PRIVATE_CLUSTER_LINE, PRIVATE_DNS_LINES.get(cluster["apiServer"].get("privateDnsZone"),
                                                       PRIVATE_DNS_LINES["system"])]
          if cluster["apiServer"].get("private") else []),
        "",
    ]
    rows = []
    for pool in document["pools"]:
        view = dict(pool)
        view["gpuSummary"] = (f"{pool['gpusPerNode']} x {pool['gpu'].removeprefix('NVIDIA ')}"
                              + (" (described by the stack, not the catalog)" if pool.get("describedBy") == "stack"
                                 else "") + (" Spot" if pool.get("spot") else ""))
        view["sharingSummary"] = f"{pool['sharing']} x{pool['replicas']}" if pool["sharing"] else "-"
        view["nodes"] = _range(pool["minNodes"], pool["maxNodes"])
        view["total"] = _range(pool["minTotal"], pool["maxTotal"])
        # No zones: AKS places the nodes in no particular zone (fixed at creation, like the zones themselves).
        view["zoneList"] = ",".join(pool.get("zones") or ()) or "none"
        rows.append(["-" if view[key] is None else str(view[key]) for _, key in POOL_COLUMNS])
    lines += _table([title for title, _ in POOL_COLUMNS], rows)
    lines += _pool_setting_lines(document["pools"])
    if document.get("cost"):
        lines += ["", *cost_lines(document["cost"])]
    else:
        why = document.get("costUnpriced")
        lines += ["", f"cost: not priced: {why}" if why else HOW_TO_PRICE]
    lines += ["", "Upgrades (node image, Kubernetes):"]
    lines += [f"  {pool['name']} {pool['upgrade']['summary']}" for pool in document["pools"]]
    lines += ["", "GPU Operator:"] + [f"  {line}" for line in op["summary"]]
    changed = op.get("changedValues") or []
    if changed:
        lines.append("  chart values that differ from the chart's defaults:")
        lines += [f"    {c['path']}: {json.dumps(c['value'])} (default "
                  f"{json.dumps(c['default']) if c['inChart'] else 'none'}; set by {c['setBy']})" for c in changed]
    lines += ["", f"Device-plugin configs (ConfigMap {op['namespace']}/{op['configMap']}; key = node label "
                  f"nvidia.com/device-plugin.config):"]
    for config in document["devicePluginConfigs"]:
        owner = f"pool {config['pool']}" if config["pool"] else "nodes without a pool label"
        lines.append(f"  {config['key']}  ({owner})")
        lines += [f"    {line}" for line in config["config"].rstrip().splitlines()]
    lines += dra_lines(document.get("dra"))
    lines += _tenant_lines(document)
    lines += _fleet_dispatch_lines(document.get("fleetDispatch"))
    lines += queue_plan_lines(document.get("queues"))
    lines += ["", f"Resources ({len(document['resources'])}):"]
    for resource in document["resources"]:
        marks = " [protected]" if resource["protect"] else ""
        after = [d for d in resource["dependsOn"] if d != resource.get("parent")]
        waits = f"  after: {', '.join(after)}" if after else ""
        if resource.get("provider"):
            waits += f"  via: {resource['provider']}"
        lines.append(f"  + {resource['type']}  {resource['name']}{marks}{waits}")
    lines += ["", *_guard_lines(document["guard"])]
    if document["warnings"]:
        lines += ["", "Warnings:"] + [f"  ! {warning}" for warning in document["warnings"]]
    return "\n".join(lines)


def _pool_settings(pool: dict[str, Any]) -> list[str]:
    """What the stack sets on a pool beyond the table's columns, each only when set (AKS's default otherwise)."""
    parts = []
    if pool.get("labels"):
        parts.append("labels " + ", ".join(f"{k}={v}" for k, v in pool["labels"].items()))
    if len(pool.get("taints") or []) > 1:  # more than the GPU taint every pool carries
        parts.append("taints " + ", ".join(pool["taints"]))
    disk = pool.get("osDisk") or {}
    if disk.get("sizeGb") or disk.get("type"):
        parts.append("OS disk " + " ".join(str(v) for v in (f"{disk['sizeGb']} GB" if disk.get("sizeGb") else None,
                                                            disk.get("type")) if v))
    if pool.get("maxPods") is not None:
        parts.append(f"maxPods {pool['maxPods']}")
    if pool.get("tags"):
        parts.append("tags " + ", ".join(f"{k}={v}" for k, v in pool["tags"].items()))
    if spot := pool.get("spot"):
        cap = ("up to the on-demand price" if spot["maxPrice"] == SPOT_MARKET_PRICE
               else f"at most ${spot['maxPrice']}/node-hour")
        parts.append(f"Spot {cap}, evicted nodes {spot['eviction']}")
    if pool.get("subnetId"):
        parts.append(f"subnet {pool['subnetId']}" + (" (as deployed)" if pool.get("subnetSource") == "deployed"
                                                      else " (not read offline)" if pool.get("subnetSource")
                                                      == "unknown" else ""))
    return parts


def _pool_setting_lines(pools: list[dict[str, Any]]) -> list[str]:
    lines = [f"  {pool['name']}: {'; '.join(parts)}" for pool in pools if (parts := _pool_settings(pool))]
    return ["", "Pool settings (those set; AKS's defaults otherwise):", *lines] if lines else []


SNIPPET_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
"""libyaml's emitter (in PyYAML's wheels): a tenant's pod snippet in a tenth of the pure-Python dumper's time."""


def _tenant_lines(document: dict[str, Any]) -> list[str]:
    tenants = document.get("tenants") or []
    if not tenants:
        return []
    shared = ", ".join(document["sharedPools"]) or "none (GPU pods are allowed only in tenant namespaces)"
    lines = ["", f"Tenants (GPU pods in other namespaces may use: {shared}; kube-system and {NAMESPACE} exempt):"]
    for tenant in tenants:
        qos = "Guaranteed QoS required" if tenant["guaranteed"] else "any QoS"
        defaults = tenant["containerDefaults"]
        lines.append(f"  {tenant['name']}: namespace {tenant['namespace']}, policy {tenant['policy']}, {qos}, "
                     f"container defaults cpu {defaults['cpu']} memory {defaults['memory']}, "
                     f"edit groups: {', '.join(tenant['groups']) or 'none'}")
        for offer in tenant["offers"]:
            dedicated = f", dedicated (taint {offer['taint']})" if offer["dedicated"] else ", shared with other tenants"
            lines.append(f"    pool {offer['pool']}: {offer['resource']}, {offer['perNode']} per node, "
                         f"at most {offer['maxTotal']} ({offer['maxNodes']} node(s)){dedicated}")
        quota = ", ".join(f"{resource}={units}" for resource, units in tenant["quota"].items()) or "none"
        lines.append(f"    quota (requests): {quota}")
        lines += _promise_per_pool_lines(tenant)
        lines += _pod_snippet_lines(tenant)
    return lines + _promise_lines(document) + _platform_lines(document)


def _pod_snippet_lines(tenant: dict[str, Any]) -> list[str]:
    """A pod snippet per pool the tenant may use (`podSpecs`; a plan of an older gpushare has only the first pool's
    `podSpec`): a device-plugin pool's asks for its resource, a DRA pool's claims a device through the tenant's
    ResourceClaimTemplate of it."""
    specs = tenant.get("podSpecs") or {None: tenant["podSpec"]}
    labels = {"labels": tenant["podLabels"]} if tenant.get("podLabels") else {}
    lines = []
    for pool, spec in specs.items():
        resource = next((o["resource"] for o in tenant.get("offers") or () if o.get("pool") == pool), None)
        via = ("claims a device through ResourceClaimTemplate "
               f"{tenant['namespace']}/{spec['resourceClaims'][0]['resourceClaimTemplateName']}, "
               if spec.get("resourceClaims") else f"asks for 1 {resource}, " if resource else "")
        on = f" on pool {pool}" if pool is not None else ""
        lines.append(f"    pod snippet{on} ({via}admitted in this namespace):")
        name = "gpu-check" if pool is None else f"gpu-check-{pool}"
        snippet = yaml.dump({"apiVersion": "v1", "kind": "Pod",
                             "metadata": {"name": name, "namespace": tenant["namespace"], **labels},
                             "spec": spec}, Dumper=SNIPPET_DUMPER, sort_keys=False)
        lines += [f"      {line}" for line in snippet.rstrip().splitlines()]
    return lines


def _fleet_dispatch_lines(dispatched: dict[str, Any] | None) -> list[str]:
    """On a fleet's dispatch manager: the dispatched tenants' namespaces, judged by the fleet stack's policies."""
    if not dispatched:
        return []
    lines = ["", f"Dispatched from here by the fleet ({dispatched['fleet']}, Kueue MultiKueue): these namespaces are "
                 f"the fleet stack's, judged by its dispatch policies and a quota of no pods, not by "
                 f"{SHARED_POLICY_NAME}:"]
    lines += [f"  {ns['name']}: Jobs go to {', '.join(ns['workers'])}; policies {', '.join(ns['policies'])}, quota "
              f"{ns['quota']}" for ns in dispatched["namespaces"]]
    return lines


def _promise_per_pool_lines(tenant: dict[str, Any]) -> list[str]:
    """The tenant's guarantee per pool in the pool's units, and which layer holds what."""
    lines = []
    if tenant.get("promises"):
        shown = "; ".join(f"{p['pool']} {p['units']} x {p['unit']}" + ("" if p["units"] else " (borrows only)")
                          for p in tenant["promises"])
        lines.append(f"    guaranteed per pool (Kueue, ClusterQueue {tenant['name']}): {shown}")
    enforced = tenant.get("enforcement") or {}
    if enforced.get("gpuPodsQueued"):
        lines.append(f"    its GPU pods must go through its LocalQueue ({', '.join(tenant['podLabels'].values())})")
    if enforced.get("unenforced"):
        lines.append(f"    not enforced: {enforced['unenforced']}")
    return lines


def _platform_lines(document: dict[str, Any]) -> list[str]:
    platform = document.get("platformNamespaces") or []
    if not platform:
        return []
    reach = "; ".join(f"{ns['name']} on {'every pool' if ns['pools'] is None else ', '.join(ns['pools'])}"
                      for ns in platform)
    return [f"  Platform namespaces (their workloads may tolerate every taint and set device variables): {reach}"]


def _promise_lines(document: dict[str, Any]) -> list[str]:
    """Per pool several tenants list: tenant -> quota, their sum against what the pool advertises."""
    promises = document.get("poolPromises") or []
    if not promises:
        return []
    lines = ["  Pools several tenants list (quota of the pool's resource; each counts up to the pool):"]
    for promise in promises:
        quotas = ", ".join(f"{tenant} {units if units is not None else 'no quota'}"
                           for tenant, units in promise["quotas"].items())
        verdict = "MORE than the pool has" if promise["exceeds"] else "fits"
        lines.append(f"    {promise['pool']} ({promise['resource']}): {quotas}; promised {promise['promised']} of "
                     f"{promise['capacity']} at {promise['maxNodes']} node(s): {verdict}")
    return lines


def _guard_lines(guard: dict[str, Any] | None) -> list[str]:
    if guard is None:
        return ["Guard: not checked (offline). Pass --deployed FILE (az aks nodepool list ... -o json) to compare "
                "with the deployed pools; pulumi preview/up checks Azure itself."]
    lines = [f"Guard (deployed pools from {guard['source']}): {guard['headline']}"]
    lines += [f"  x {v['pool']}: {v['field']} {v['deployed']} -> {v['wanted']}" for v in guard["violations"]]
    lines += [f"  note: {note}" for note in guard["notes"]]
    return lines
