"""The fleet stack's Pulumi program: the fleet file named by config `gpushare:fleetFile` (relative to the project
directory), validated with its members, and its Fleet Manager part registered as a `GpuFleet`. It reads no member
stack's outputs: each member cluster's ID comes from its stack file (name and resource group, fixed once the
cluster exists), so the fleet plans offline and a StackReference could add nothing the file does not state."""

from __future__ import annotations

from pathlib import Path

import pulumi

from gpushare.components.gpu_fleet import GpuFleet, GpuFleetArgs
from gpushare.errors import GpushareError
from gpushare.plan.fleet_plan import FleetPlan, build_fleet_plan
from gpushare.stackfile.fleet_config import load_fleet

FLEET_FILE_KEY = "fleetFile"


def fleet_plan(path: Path) -> FleetPlan:
    """The fleet's plan, or `pulumi.RunError` with every problem in the fleet file and its members."""
    try:
        return build_fleet_plan(load_fleet(path))
    except GpushareError as exc:
        raise pulumi.RunError(str(exc)) from None


def fleet_program() -> GpuFleet:
    """Register the fleet named by `gpushare:fleetFile` and export its IDs and each member's update role."""
    plan = fleet_plan(Path(pulumi.Config("gpushare").require(FLEET_FILE_KEY)))
    fleet = GpuFleet("fleet", GpuFleetArgs(plan=plan.manager))
    pulumi.export("fleetId", fleet.fleet_id)
    pulumi.export("updateStrategyId", fleet.update_strategy_id)
    pulumi.export("members", {m.member.stack: {"group": m.member.group, "stage": m.stage, "region": m.region}
                              for m in plan.members})
    return fleet
