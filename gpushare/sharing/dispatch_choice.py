"""Which of a fleet's tenants Kueue MultiKueue dispatches from the manager member, and to which workers: the one
computation the fleet plan's dispatch (`gpushare.kubernetes.multikueue.dispatch`, which compiles the objects) and the
manager member's own stack (`gpushare.stackfile.fleet_membership`, whose shared admission policy leaves those
tenants' namespaces to the fleet's dispatch policies) both read, so the two can never disagree.

Open world: what cannot be dispatched is left out and said (`DispatchChoice.left_out`), never refused, since each
member still runs its own tenants as before.
- A worker is every member but the manager whose queues are on (MultiKueue hands Workloads to a worker's
  LocalQueues). A member without queues is left out.
- A tenant is dispatched when it has pools on some worker and none on the manager: a tenant with pools on the
  manager has its own ClusterQueue and LocalQueue `<tenant>` there (its Jobs run on the manager's pools), and
  MultiKueue cannot offer a Workload to the cluster it runs on.
- A tenant whose `queue.priority` differs between its workers is left out: its Jobs carry one priority class.
- Nothing is dispatched while the manager runs no Kueue (its queues off)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpushare.model.keys import QUEUES_KEY
from gpushare.model.stack import StackConfig, Tenant


@dataclass(frozen=True)
class DispatchChoice:
    manager: str
    workers: tuple[str, ...]
    """Every member but the manager whose queues are on, in member order (some may get no tenant)."""
    tenants: Mapping[str, Tenant]
    """Each dispatched tenant (as the first worker listing it declares it), in the order the workers list them."""
    tenant_workers: Mapping[str, list[str]]
    """tenant -> the workers where it has pools, in member order (its MultiKueueConfig's clusters)."""
    left_out: tuple[str, ...]
    """Why a member or tenant is not part of the dispatch, one sentence each."""


def choose_dispatch(manager: str, members: Mapping[str, StackConfig]) -> DispatchChoice:
    """Who is dispatched from `manager` to which of `members` (member name -> its stack, the manager among them, in
    the fleet's order)."""
    left_out: list[str] = []
    own = members[manager]
    if not own.queues.enabled:
        left_out.append(f"nothing is dispatched: the manager {manager} runs no Kueue (set {QUEUES_KEY}.enabled: true "
                        f"in {own.source})")
    workers = []
    for name, stack in members.items():
        if name == manager:
            continue
        if not stack.queues.enabled:
            if any(t.pools for t in stack.tenants):
                left_out.append(f"member {name} gets no dispatched jobs: it has no queues, and MultiKueue hands jobs "
                                f"to a worker's LocalQueues (set {QUEUES_KEY}.enabled: true in {stack.source})")
            continue
        workers.append(name)
    on_manager = {t.name for t in own.tenants if t.pools}
    tenants: dict[str, Tenant] = {}
    where: dict[str, list[str]] = {}
    for worker in workers:
        for tenant in members[worker].tenants:
            if tenant.pools:
                tenants.setdefault(tenant.name, tenant)
                where.setdefault(tenant.name, []).append(worker)
    for name in list(tenants):
        priorities = {members[w].source: next(t for t in members[w].tenants if t.name == name).queue.priority
                      for w in where[name]}
        if name in on_manager:
            left_out.append(f"tenant {name} is not dispatched: it has pools on the manager {manager}, where its Jobs "
                            f"queue on {manager}'s own ClusterQueue {name} (MultiKueue cannot offer a Job to the "
                            f"cluster it runs on)")
        elif len(set(priorities.values())) > 1:
            left_out.append(f"tenant {name} is not dispatched: its queue.priority differs between its workers ("
                            + ", ".join(f"{p} in {source}" for source, p in priorities.items())
                            + "), and its Jobs carry one WorkloadPriorityClass; write the same priority in each")
        else:
            continue
        del tenants[name], where[name]
    if not own.queues.enabled:
        tenants, where = {}, {}
    return DispatchChoice(manager=manager, workers=tuple(workers), tenants=tenants, tenant_workers=where,
                          left_out=tuple(left_out))
