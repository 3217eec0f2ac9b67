"""`gpushare fleet plan`'s document and text: per region and member cluster the pools, the capacity per kind of
device, each tenant's promises, the cost, and the fleet's update order. The document's keys are in docs/fleets.md."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpushare.kubernetes.tenant_objects import tenant_plan
from gpushare.plan.fleet_plan import FleetPlan, MemberPlan
from gpushare.sharing.capacity import device_unit
from gpushare.showback.cost import money_span

FLEET_PLAN_KIND = "gpushare-fleet-plan"
FLEET_PLAN_VERSION = 1
"""Bumped when a key changes meaning or goes; new keys may appear within a version."""


def _pools(member: MemberPlan) -> list[dict[str, Any]]:
    return [{"name": name, "vmSize": pool.facts.pool.vm_size.name, "resource": pool.facts.capacity.resource,
             "device": device_unit(pool.facts.pool, pool.facts.capacity),
             "perNode": pool.facts.capacity.per_node, "minNodes": pool.facts.pool.min_nodes,
             "maxNodes": pool.facts.pool.max_nodes,
             "minTotal": pool.facts.capacity.total(pool.facts.pool.min_nodes),
             "maxTotal": pool.facts.capacity.total(pool.facts.pool.max_nodes)}
            for name, pool in member.plan.pools.items()]


def _capacity(pools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per kind of device (a whole GPU, a MIG slice, a time-sliced share of a GPU model) and the resource pods
    request for it, the units at the pools' least and most nodes: one resource name can be any of them."""
    capacity: dict[tuple[str, str], dict[str, Any]] = {}
    for pool in pools:
        entry = capacity.setdefault((pool["device"], pool["resource"]), {
            "device": pool["device"], "resource": pool["resource"], "minTotal": 0, "maxTotal": 0})
        entry["minTotal"] += pool["minTotal"]
        entry["maxTotal"] += pool["maxTotal"]
    return [capacity[key] for key in sorted(capacity)]


def _tenants(member: MemberPlan, fleet_wide: set[str]) -> list[dict[str, Any]]:
    """The plan's tenant entries, reduced to what the fleet view shows: pools, the most each may hold, quota and
    per-pool promises (held by Kueue where the member enables queues)."""
    return [{"name": entry["name"], "fleetWide": entry["name"] in fleet_wide, "pools": entry["pools"],
             "offers": [{"pool": o["pool"], "resource": o["resource"], "maxTotal": o["maxTotal"],
                         "dedicated": o["dedicated"]} for o in entry["offers"]],
             "quota": entry["quota"],
             "promises": [{"pool": p["pool"], "resource": p["resource"], "units": p["units"],
                           "enforcedBy": p["enforcedBy"]} for p in entry["promises"]]}
            for entry in tenant_plan(member.plan.stack, member.plan.pool_facts)]


def _cost_summary(cost: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if cost is None:
        return None
    return {"currency": cost["currency"], "monthlyMin": cost["total"]["monthlyMin"],
            "monthlyMax": cost["total"]["monthlyMax"], "complete": cost["total"]["complete"],
            "unknown": cost["unknown"]}


def _sum_costs(costs: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The costs added up, when every one is priced in one currency; else None."""
    if not costs or any(c is None for c in costs) or len({c["currency"] for c in costs}) != 1:
        return None

    def total(key: str) -> float | None:
        values = [c[key] for c in costs]
        return None if any(v is None for v in values) else round(sum(values), 2)

    return {"currency": costs[0]["currency"], "monthlyMin": total("monthlyMin"), "monthlyMax": total("monthlyMax"),
            "complete": all(c["complete"] for c in costs)}


def fleet_document(fleet: FleetPlan, costs: Mapping[str, Mapping[str, Any] | None],
                   unpriced: Mapping[str, str]) -> dict[str, Any]:
    """The `fleet plan --json` document. `costs`: stack -> `stack_cost`'s object (None unpriced); `unpriced`:
    region -> why its prices could not be read."""
    config = fleet.config
    fleet_wide = {t.name for t in config.tenants}
    members = []
    for member in fleet.members:
        stack = member.plan.stack
        pools = _pools(member)
        members.append({
            "stack": member.member.stack, "member": member.member.name, "stackFile": stack.source,
            "region": member.region,
            "cluster": {"name": stack.cluster.name, "resourceGroup": stack.cluster.resource_group,
                        "existing": stack.cluster.existing},
            "canary": member.member.canary, "group": member.member.group, "stage": member.stage,
            "dispatch": "manager" if config.manager == member.member.stack else ("worker" if config.manager
                                                                               else None),
            "pools": pools, "capacity": _capacity(pools),
            "tenants": _tenants(member, fleet_wide),
            "cost": _cost_summary(costs.get(member.member.stack)),
            "warnings": list(member.plan.warnings),
        })
    regions = []
    for region in dict.fromkeys(m["region"] for m in members):
        here = [m for m in members if m["region"] == region]
        regions.append({"region": region, "members": [m["stack"] for m in here],
                        "capacity": _capacity([p for m in here for p in m["pools"]]),
                        "cost": _sum_costs([m["cost"] for m in here]), "unpriced": unpriced.get(region)})
    manager = fleet.manager
    auto = manager.auto_upgrade
    return {
        "kind": FLEET_PLAN_KIND, "version": FLEET_PLAN_VERSION,
        "fleet": {"name": config.name, "resourceGroup": config.resource_group, "location": config.location,
                  "file": config.source},
        "dispatch": _dispatch(fleet),
        "regions": regions,
        "members": members,
        "updates": {
            "strategy": manager.strategy_name,
            "stages": [{"name": stage.name, "afterStageWaitSeconds": stage.wait_seconds,
                        "groups": [{"name": group, "members": [m.member.stack for m in fleet.members
                                                               if m.member.group == group]}
                                   for group in stage.groups]}
                       for stage in manager.stages],
            "autoUpgrade": {"channel": auto.channel.value, "nodeImageSelection": auto.node_image_selection.value}
            if auto else None,
        },
        "cost": _sum_costs([m["cost"] for m in members]),
    }


def _dispatch(fleet: FleetPlan) -> dict[str, Any]:
    """Which tenant's Jobs may go to which member (Kueue MultiKueue from the manager), what is left out and why, and
    the Secrets on the manager that will hold the workers' kubeconfigs (names only: their content is a deployment's
    secret output, never the plan's)."""
    found = fleet.dispatch
    if found is None:
        return {"manager": None, "tenants": [], "leftOut": [], "kubeconfigSecrets": []}
    return {"manager": found.manager,
            "tenants": [{"name": name, "members": members, "resources": found.tenant_resources[name]}
                        for name, members in found.tenant_workers.items()],
            "leftOut": list(found.left_out),
            "kubeconfigSecrets": [{"member": member, "namespace": found.secret_namespace, "secret": secret}
                                  for member, secret in found.kubeconfig_secrets.items()]}


def _range(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"


def _cost_text(cost: Mapping[str, Any] | None, why: str | None) -> str:
    if cost is None:
        return f"cost: not priced ({why})" if why else "cost: not priced (add --prices)"
    span = money_span(cost["monthlyMin"], cost["monthlyMax"], cost["currency"])
    return f"cost: {span} a month at list prices" + ("" if cost["complete"] else " (incomplete: some prices unknown)")


def _member_lines(member: Mapping[str, Any], unpriced: str | None) -> list[str]:
    cluster = member["cluster"]
    role = ", ".join(filter(None, ["canary" if member["canary"] else None, f"group {member['group']}",
                                   f"stage {member['stage']}",
                                   f"dispatch {member['dispatch']}" if member["dispatch"] else None]))
    lines = [f"  member {member['stack']}: cluster {cluster['name']} in {cluster['resourceGroup']}"
             f"{' (existing)' if cluster['existing'] else ''}; {role}"]
    for pool in member["pools"]:
        lines.append(f"    pool {pool['name']}: {pool['vmSize']}, {_range(pool['minNodes'], pool['maxNodes'])} nodes x "
                     f"{pool['perNode']} {pool['resource']} = {_range(pool['minTotal'], pool['maxTotal'])} "
                     f"({pool['device']})")
    for tenant in member["tenants"]:
        offers = ", ".join(f"{o['pool']} up to {o['maxTotal']}" for o in tenant["offers"])
        promises = ", ".join(f"{p['units']} {p['resource']} on {p['pool']}" for p in tenant["promises"])
        lines.append(f"    tenant {tenant['name']}{' (fleet-wide)' if tenant['fleetWide'] else ''}: {offers}"
                     + (f"; promised {promises}" if promises else "; no per-pool promise (no queues)"))
    lines.append(f"    {_cost_text(member['cost'], unpriced)}")
    count = len(member["warnings"])
    if count:  # each in full in --json and in the member's own `gpushare plan`
        lines.append(f"    {count} warning{'s' if count != 1 else ''}: `gpushare plan {member['stackFile']}` shows "
                     f"{'them' if count != 1 else 'it'}")
    return lines


def render_fleet_text(document: Mapping[str, Any]) -> str:
    fleet = document["fleet"]
    manager = document["dispatch"]["manager"]
    lines = [f"Fleet {fleet['name']} ({fleet['file']}): Fleet Manager in {fleet['location']}, resource group "
             f"{fleet['resourceGroup']}; {len(document['members'])} members in {len(document['regions'])} regions; "
             + (f"dispatch from {manager}" if manager else "no dispatch manager")]
    members = {m["stack"]: m for m in document["members"]}
    for region in document["regions"]:
        capacity = "; ".join(f"{_range(c['minTotal'], c['maxTotal'])} x {c['device']} ({c['resource']})"
                             for c in region["capacity"])
        lines += ["", f"region {region['region']}: {capacity or 'no GPU pools'}"]
        for stack in region["members"]:
            lines += _member_lines(members[stack], region["unpriced"])
    if manager:
        dispatch = document["dispatch"]
        lines += ["", f"dispatch (Kueue MultiKueue from {manager}):"]
        for tenant in dispatch.get("tenants", []):
            lines.append(f"  tenant {tenant['name']}: jobs may go to {', '.join(tenant['members'])} "
                         f"({', '.join(tenant['resources'])})")
        if not dispatch.get("tenants"):
            lines.append("  no tenant is dispatched")
        lines += [f"  left out: {why}" for why in dispatch.get("leftOut", [])]
    updates = document["updates"]
    lines += ["", f"update order (Fleet update strategy {updates['strategy']}):"]
    for number, stage in enumerate(updates["stages"], 1):
        groups = "; ".join(f"group {g['name']} ({', '.join(g['members'])})" for g in stage["groups"])
        wait = f", then wait {stage['afterStageWaitSeconds']} s" if stage["afterStageWaitSeconds"] else ""
        lines.append(f"  {number}. stage {stage['name']}: {groups}{wait}")
    auto = updates["autoUpgrade"]
    lines.append(f"auto-upgrade: channel {auto['channel']}, node image {auto['nodeImageSelection']}"
                 + (" (node image only: refreshes the GPU driver AKS ships in it)" if auto["channel"] == "NodeImage"
                    else "") if auto else "auto-upgrade: none (update runs are started by hand)")
    if document["cost"]:
        lines.append(f"fleet {_cost_text(document['cost'], None)}")
    return "\n".join(lines)
