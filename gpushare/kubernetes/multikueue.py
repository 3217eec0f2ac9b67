"""Dispatch across a fleet's clusters with Kueue MultiKueue (Kueue v0.19.2, `kueue.x-k8s.io/v1beta2`), compiled from
the member stacks: a tenant submits a Job to its LocalQueue on the manager cluster, and Kueue's MultiKueue
admission check sends it to a worker member whose own queue admits it.

What is made, and why so:
- On each worker, the tenant's usual queues, as its stack compiles them (`queues.queue_manifests`): a worker's
  ClusterQueue covers only the resources its pools there advertise, so a Job asking for a kind of device the
  tenant has no pool of in that member is never admitted there, and MultiKueue creates the Job only on the worker
  whose Kueue reserved quota for it (v0.19.2 `pkg/controller/admissionchecks/multikueue/workload.go`: the remote
  Job is created once a remote Workload has its quota reserved; the other workers' copies are removed).
- On the manager, per tenant: a ClusterQueue named after it (admitting only its namespace, as on one cluster)
  covering exactly the GPU resources its pools advertise in some worker, plus cpu and memory, on one flavor with no
  node labels (`gpushare-fleet`: the manager has none of the GPU nodes; the workers' flavors place the pods). Its
  quota per resource is what the tenant's queues on the workers can reach together (guarantee plus what each may
  borrow, `queue_guarantees.reach`), so the manager never refuses what some worker would admit; the workers judge
  free capacity. A resource no worker gives the tenant is not covered, so Kueue admits no such workload.
- Its AdmissionCheck (`controllerName: kueue.x-k8s.io/multikueue`, `apis/kueue/v1beta2/multikueue_types.go:37`
  MultiKueueControllerName) names its MultiKueueConfig, which lists exactly the workers where the tenant has a
  pool. One per tenant, not per kind: Kueue runs the MultiKueue check for a whole ClusterQueue only (a MultiKueue
  check restricted `onFlavors` makes the queue inactive, `clusterqueue_types.go:43`
  MultiKueueAdmissionCheckAppliedPerFlavor), and the tenant keeps the one LocalQueue its policy lets it name
  (`kueue_admission.local_queue_names`). A worker in the list without the kind asked for holds a copy of the
  Workload that it never admits, and gets no Job.
- A LocalQueue `<tenant>` (the same name on every worker: the remote Workload names it) and the tenant's
  WorkloadPriorityClass (a Job may name it; the workers have the same one).
- A MultiKueueCluster per worker, reading its kubeconfig from a Secret in Kueue's namespace on the manager (key
  `kubeconfig`, `multikueue_types.go:24` MultiKueueConfigSecretKey; `locationType: Secret`). This module names the
  Secret only and never takes kubeconfig text: the deployment fills it from the worker cluster's Pulumi output as a
  secret, so the credential is never in the plan or in plain state. Kueue refuses a kubeconfig with file paths
  (`certificate-authority`, `tokenFile`) or `insecure-skip-tls-verify` (`multikueuecluster.go` validateKubeconfig):
  it must carry `certificate-authority-data` and a token or client certificate inline.
- The manager's Kueue Configuration (`manager_configuration`): `multiKueue` with Kueue's defaults written out
  (`apis/config/v1beta2/defaults.go:47-50`: gcInterval 1m, origin `multikueue`, workerLostTimeout 15m) and the
  `batch/job` integration, whose MultiKueue adapter copies a Job to the worker (`pkg/controller/jobs/job/
  job_multikueue_adapter.go`). Kueue's Job webhook on the manager sets such a Job's `spec.managedBy` to
  `kueue.x-k8s.io/multikueue` (`jobframework/defaults.go` ApplyDefaultForManagedBy), so the manager's own Job
  controller leaves it alone; the MultiKueue feature gate is on by default since v0.9 (`pkg/features`).

The manager dispatches only: a worker is every other member. A manager stack with queues of its own would name the
same ClusterQueues and LocalQueues, and is refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpushare.errors import ConfigError, ConfigProblem
from gpushare.kubernetes.kueue_admission import KUEUE_NAMESPACE
from gpushare.kubernetes.queues import (
    KUEUE_API,
    cpu_memory_quota,
    local_queue,
    manager_config_yaml,
    priority_class,
    queue_manifests,
)
from gpushare.kubernetes.tenants import MANAGED_BY, NAME_LABEL
from gpushare.model.keys import QUEUES_KEY, TENANTS_KEY
from gpushare.model.stack import StackConfig, Tenant
from gpushare.sharing.pool_facts import PoolFactsByName, given_or_derived
from gpushare.sharing.queue_guarantees import cohort_of, flavor_quotas, reach

MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
"""`MultiKueueControllerName`, kueue v0.19.2 `apis/kueue/v1beta2/multikueue_types.go:37`."""
KUBECONFIG_KEY = "kubeconfig"
"""`MultiKueueConfigSecretKey`, `multikueue_types.go:24`: the Secret's key Kueue reads."""
FLEET_FLAVOR = "gpushare-fleet"
"""The manager's one flavor: no node labels (it has no GPU nodes); the workers' flavors place the pods."""
MULTIKUEUE_SETTINGS = {"gcInterval": "1m0s", "origin": "multikueue", "workerLostTimeout": "15m0s"}
"""Kueue's defaults (`apis/config/v1beta2/defaults.go:47-50`), written out so the Configuration says them: the
garbage collector removes, every minute, remote objects of this origin whose manager object is gone; a Workload
whose worker is lost keeps its check Ready for 15 minutes before it is dispatched again."""
MULTIKUEUE_INTEGRATIONS = ("batch/job",)
"""The integration with a MultiKueue adapter that gpushare's tenants use (`job_multikueue_adapter.go`). Pods queue
one by one on a single cluster (`queues.KUEUE_INTEGRATIONS`), but across clusters only Jobs are dispatched."""


def kubeconfig_secret(worker: str) -> str:
    """The Secret in Kueue's namespace on the manager holding the worker's kubeconfig (filled from the worker's
    Pulumi output as a secret, never from the plan)."""
    return f"gpushare-fleet-{worker}-kubeconfig"


def check_name(tenant: str) -> str:
    """The tenant's AdmissionCheck and MultiKueueConfig on the manager."""
    return f"gpushare-fleet-{tenant}"


@dataclass(frozen=True)
class FleetDispatch:
    """The MultiKueue objects of a fleet: on the manager, and on each worker (member name -> objects)."""

    manager: str
    manager_objects: list[dict[str, Any]]
    worker_objects: dict[str, list[dict[str, Any]]]
    kubeconfig_secrets: dict[str, str]
    """worker -> the Secret name (in `secret_namespace` on the manager) the deployment fills with its kubeconfig."""
    tenant_workers: dict[str, list[str]]
    """tenant -> the workers its MultiKueueConfig lists."""
    secret_namespace: str = KUEUE_NAMESPACE
    """Kueue's own namespace: a MultiKueueCluster's Secret is read there (`multikueuecluster.go`
    getKubeConfigFromSecret, `configNamespace`)."""


def dispatch(manager: str, members: Mapping[str, StackConfig],
             facts: Mapping[str, PoolFactsByName] | None = None) -> FleetDispatch:
    """The fleet's MultiKueue objects. `members`: member name -> its stack, the manager among them; `facts`: member
    name -> the pool facts its plan derived (`StackPlan.pool_facts`), derived here for a member without them.
    Raises ConfigError (naming the member's stack file) for a layout MultiKueue cannot dispatch in."""
    facts = {name: given_or_derived(stack, (facts or {}).get(name)) for name, stack in members.items()}
    _check(manager, members)
    workers = [name for name in members if name != manager]
    tenants: dict[str, Tenant] = {}
    where: dict[str, list[str]] = {}
    for worker in workers:
        for tenant in members[worker].tenants:
            if tenant.pools:
                tenants.setdefault(tenant.name, tenant)
                where.setdefault(tenant.name, []).append(worker)
    objects: list[dict[str, Any]] = [
        {"apiVersion": KUEUE_API, "kind": "ResourceFlavor",
         "metadata": {"name": FLEET_FLAVOR, "labels": dict(MANAGED_BY)}, "spec": {}},
        *(_cluster(worker) for worker in workers)]
    for name, tenant in tenants.items():
        objects += [_config(name, where[name]), _check_object(name), priority_class(tenant),
                    _manager_queue(tenant, {w: (members[w], facts[w]) for w in where[name]}), local_queue(tenant)]
    return FleetDispatch(
        manager=manager, manager_objects=objects,
        worker_objects={w: queue_manifests(members[w], facts[w]) for w in workers},
        kubeconfig_secrets={w: kubeconfig_secret(w) for w in workers}, tenant_workers=where)


def _check(manager: str, members: Mapping[str, StackConfig]) -> None:
    """Every problem at once, each under its member's stack file: a manager that is no member or has queues of its
    own, a worker whose tenants have pools but no queues, a tenant whose priority differs between workers."""
    if manager not in members:
        raise ConfigError("the fleet", [ConfigProblem("manager", f"{manager!r} is not one of the members "
                                                                 f"({', '.join(members)})")])
    problems = []
    own = members[manager]
    if own.queues.enabled and own.tenants:
        problems.append(ConfigProblem(f"{own.source}: {QUEUES_KEY}", (
            f"member {manager} is the fleet's MultiKueue manager: its ClusterQueues and LocalQueues are the fleet's "
            f"(named after the tenants), so its own queues would collide with them; set {QUEUES_KEY}.enabled: false "
            f"there and give its tenants' pools to worker members")))
    priorities: dict[str, tuple[str, int]] = {}
    for name, stack in members.items():
        if name == manager:
            continue
        queued = [t.name for t in stack.tenants if t.pools]
        if queued and not stack.queues.enabled:
            problems.append(ConfigProblem(f"{stack.source}: {QUEUES_KEY}", (
                f"member {name} is a MultiKueue worker with tenants ({', '.join(queued)}) but no queues: the "
                f"manager dispatches to a worker's LocalQueues; set {QUEUES_KEY}.enabled: true")))
        for i, tenant in enumerate(stack.tenants):
            first = priorities.setdefault(tenant.name, (name, tenant.queue.priority))
            if first[1] != tenant.queue.priority:
                problems.append(ConfigProblem(f"{stack.source}: {TENANTS_KEY}[{i}].queue.priority", (
                    f"tenant {tenant.name} has priority {tenant.queue.priority} in member {name} but "
                    f"{first[1]} in member {first[0]}: its Jobs carry one WorkloadPriorityClass to every worker; "
                    f"write the same priority in both")))
    if problems:
        raise ConfigError("the fleet", problems)


def _cluster(worker: str) -> dict[str, Any]:
    return {"apiVersion": KUEUE_API, "kind": "MultiKueueCluster",
            "metadata": {"name": worker, "labels": dict(MANAGED_BY)},
            "spec": {"clusterSource": {"kubeConfig": {"location": kubeconfig_secret(worker),
                                                      "locationType": "Secret"}}}}


def _config(tenant: str, workers: list[str]) -> dict[str, Any]:
    """The workers where the tenant has a pool, in member order (the incremental dispatcher's preference order;
    the default all-at-once dispatcher offers the Workload to all of them)."""
    return {"apiVersion": KUEUE_API, "kind": "MultiKueueConfig",
            "metadata": {"name": check_name(tenant), "labels": dict(MANAGED_BY)}, "spec": {"clusters": workers}}


def _check_object(tenant: str) -> dict[str, Any]:
    return {"apiVersion": KUEUE_API, "kind": "AdmissionCheck",
            "metadata": {"name": check_name(tenant), "labels": dict(MANAGED_BY)},
            "spec": {"controllerName": MULTIKUEUE_CONTROLLER, "parameters": {
                "apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": check_name(tenant)}}}


def _manager_queue(tenant: Tenant, workers: Mapping[str, tuple[StackConfig, PoolFactsByName]]) -> dict[str, Any]:
    """The tenant's ClusterQueue on the manager: per GPU resource its pools advertise in some worker, what its
    queues there reach together; cpu and memory likewise. One resource group on `FLEET_FLAVOR`."""
    gpu: dict[str, int] = {}
    cpu = memory = 0
    for stack, facts in workers.values():
        member_tenant = next(t for t in stack.tenants if t.name == tenant.name)
        in_cohort = cohort_of(stack, member_tenant) is not None
        for quota in flavor_quotas(stack, member_tenant, facts):
            gpu[quota.resource] = gpu.get(quota.resource, 0) + reach(quota, in_cohort)
        more_cpu, more_memory = cpu_memory_quota(stack, member_tenant, facts)
        cpu, memory = cpu + more_cpu, memory + more_memory
    resources = [{"name": name, "nominalQuota": units} for name, units in gpu.items()]
    resources += [{"name": "cpu", "nominalQuota": str(cpu)}, {"name": "memory", "nominalQuota": f"{memory}Gi"}]
    return {"apiVersion": KUEUE_API, "kind": "ClusterQueue",
            "metadata": {"name": tenant.name, "labels": dict(MANAGED_BY)},
            "spec": {
                "namespaceSelector": {"matchLabels": {NAME_LABEL: tenant.name}},
                "queueingStrategy": "BestEffortFIFO",
                "resourceGroups": [{"coveredResources": [r["name"] for r in resources],
                                    "flavors": [{"name": FLEET_FLAVOR, "resources": resources}]}],
                "admissionChecksStrategy": {"admissionChecks": [{"name": check_name(tenant.name)}]}}}


def manager_configuration(manager_stack: StackConfig, tenants: list[str]) -> dict[str, Any]:
    """The manager's Kueue Configuration: the chart's default as one stack has it (`queues.manager_config_yaml`),
    with `multiKueue`, the integrations MultiKueue dispatches, and the Job webhook kept to the tenants'
    namespaces."""
    config = json.loads(manager_config_yaml(manager_stack))
    config["integrations"] = {"frameworks": list(MULTIKUEUE_INTEGRATIONS)}
    config["multiKueue"] = dict(MULTIKUEUE_SETTINGS)
    config["managedJobsNamespaceSelector"] = {"matchExpressions": [
        {"key": NAME_LABEL, "operator": "In", "values": tenants} if tenants
        else {"key": NAME_LABEL, "operator": "DoesNotExist"}]}
    return config

