"""What `plan` shows of a stack's DRA pools (issue 42): each pool's devices (kind, MIG profile, parent GPU), its
DeviceClass, the sharing its claims carry (the driver's opaque config) and which tenants may claim it through which
ResourceClaimTemplate, with the driver's release; the `dra` key of `plan --json` (present only with DRA pools) and
its text view."""

from __future__ import annotations

from typing import Any

from gpushare.plan.stack_plan import StackPlan
from gpushare.sharing.dra import CHART_DEVICE_CLASSES


def dra_document(plan: StackPlan) -> dict[str, Any] | None:
    """The plan's DRA part as `plan --json` shows it; None without DRA pools."""
    if plan.dra is None:
        return None
    release = plan.dra.release
    selectors = {c["metadata"]["name"]: c["spec"]["selectors"][0]["cel"]["expression"] for c in plan.dra.device_classes}
    pools = []
    for name, dra_pool in plan.dra.pools.items():
        kind, capacity = dra_pool.kind, plan.pools[name].facts.capacity
        pools.append({
            "pool": name,
            "devices": {"kind": kind.device_type, "migProfile": kind.mig_slice, "parentGpu": kind.model.display_name,
                        "perNode": capacity.devices_per_node},
            "deviceClass": kind.class_name,
            "quotaResource": capacity.resource,
            "sharing": dra_pool.config,
            "claimTemplates": dict(dra_pool.templates),
        })
    return {
        "driver": {"chart": release.chart, "version": release.version, "namespace": release.namespace,
                   "release": release.name, "values": release.values},
        "deviceClasses": [{"name": name, "selector": cel} for name, cel in selectors.items()],
        "chartDeviceClasses": list(CHART_DEVICE_CLASSES),
        "pools": pools,
    }


def dra_lines(document: dict[str, Any] | None) -> list[str]:
    """The text view of `dra_document`."""
    if not document:
        return []
    driver = document["driver"]
    gates = ", ".join(gate for gate, on in driver["values"]["featureGates"].items() if on) or "none"
    lines = ["", f"DRA pools (NVIDIA DRA driver: chart {driver['chart']} {driver['version']}, release "
                 f"{driver['release']} in namespace {driver['namespace']}; feature gates: {gates}; nvidiaDriverRoot "
                 f"{driver['values']['nvidiaDriverRoot']}; the operator's device plugin kept off their nodes):"]
    for pool in document["pools"]:
        devices = pool["devices"]
        kind = (f"MIG {devices['migProfile']} device" if devices["kind"] == "mig" else "whole GPU")
        lines.append(f"  {pool['pool']}: {devices['perNode']} x {kind} per node (parent GPU {devices['parentGpu']}), "
                     f"DeviceClass {pool['deviceClass']}; quota counts {pool['quotaResource']}")
        lines.append(f"    sharing in each claim: {_sharing(pool['sharing'])}")
        claims = "; ".join(f"{tenant} -> ResourceClaimTemplate {tenant}/{template}"
                           for tenant, template in pool["claimTemplates"].items()) or "no tenant lists it"
        lines.append(f"    may claim it: {claims}")
    lines.append("  DeviceClasses:")
    lines += [f"    {c['name']}: {c['selector']}" for c in document["deviceClasses"]]
    lines.append(f"  the chart's own DeviceClasses {', '.join(document['chartDeviceClasses'])} select every device of "
                 f"the driver, on every DRA pool (docs/dra-pools.md)")
    return lines


def _sharing(config: dict[str, Any]) -> str:
    sharing = config.get("sharing")
    if not sharing:
        return f"none ({config['kind']}: the pod's containers share the device)"
    if sharing["strategy"] == "MPS":
        mps = sharing["mpsConfig"]
        return (f"MPS ({config['kind']}): each client gets {mps['defaultActiveThreadPercentage']}% of the device's "
                f"compute and {mps['defaultPinnedDeviceMemoryLimit']} of its memory")
    return f"time-slicing ({config['kind']}, interval {sharing['timeSlicingConfig']['interval']})"
