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
- The tenant's namespace, its groups' `edit` RoleBindings (`tenant_objects`, as on one cluster) and a ResourceQuota
  of no pods at all: on the manager a tenant submits Jobs, which Kueue's webhook hands to MultiKueue
  (`spec.managedBy`), so the manager's job controller makes no pod of them; a pod of its own there would run on the
  manager's nodes, outside its pools and past its policy, and is refused.
- The tenant's admission policy, once per worker it is dispatched to, as that worker's stack builds it
  (`manager_policy`): a Job naming another tenant's LocalQueue or WorkloadPriorityClass is refused on the manager
  (MultiKueue copies the Workload, priority included, to the workers, whose Kueue admits and preempts by it before
  the worker's policy sees the Job), and so is one that a worker's policy would refuse in MultiKueue's copy. On the
  workers the tenant's own policy judges that copy (created as `WORKER_IDENTITY`) like a Job the tenant submits
  there: no rule exempts MultiKueue's identity.
- A MultiKueueCluster per worker, reading its kubeconfig from a Secret in Kueue's namespace on the manager (key
  `kubeconfig`, `multikueue_types.go:24` MultiKueueConfigSecretKey; `locationType: Secret`). This module names the
  Secret only and never takes kubeconfig text: `components/fleet_dispatch.py` fills it from the worker's Pulumi
  outputs as a secret, so the credential is never in the plan or in plain state. Kueue refuses a kubeconfig with
  file paths (`certificate-authority`, `tokenFile`) or `insecure-skip-tls-verify` (`multikueuecluster.go`
  validateKubeconfig): it carries `certificate-authority-data` and a token inline.
- On each worker, besides its queues, the identity the manager acts as (`worker_access_objects`): a ServiceAccount
  in Kueue's namespace bound to a ClusterRole with what MultiKueue does there (Kueue's own
  `hack/multikueue/create-multikueue-kubeconfig.sh`: Jobs and Workloads, and their status).
- The manager's Kueue Configuration (`manager_configuration`): `multiKueue` with Kueue's defaults written out
  (`apis/config/v1beta2/defaults.go:47-50`: gcInterval 1m, origin `multikueue`, workerLostTimeout 15m) and the
  `batch/job` integration, whose MultiKueue adapter copies a Job to the worker (`pkg/controller/jobs/job/
  job_multikueue_adapter.go`). Kueue's Job webhook on the manager sets such a Job's `spec.managedBy` to
  `kueue.x-k8s.io/multikueue` (`jobframework/defaults.go` ApplyDefaultForManagedBy), so the manager's own Job
  controller leaves it alone; the MultiKueue feature gate is on by default since v0.9 (`pkg/features`).

Who is dispatched, to which workers, and what is left out and why: `gpushare.sharing.dispatch_choice`
(`choose_dispatch`), which the manager member's own stack reads too (its shared policy leaves the dispatched
tenants' namespaces to the policies made here, `StackConfig.fleet_manager`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpushare.errors import ConfigError, ConfigProblem
from gpushare.kubernetes.admission.policies import tenant_policy
from gpushare.kubernetes.kueue_admission import KUEUE_NAMESPACE
from gpushare.kubernetes.queues import (
    KUEUE_API,
    cpu_memory_quota,
    local_queue,
    manager_config_yaml,
    priority_class,
    queue_manifests,
)
from gpushare.kubernetes.tenant_objects import namespace_object, role_binding_objects
from gpushare.kubernetes.tenants import MANAGED_BY, NAME_LABEL, tenant_policy_name
from gpushare.model.stack import TENANT_LABEL, DispatchedTenant, StackConfig, Tenant
from gpushare.sharing.dispatch_choice import choose_dispatch
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


WORKER_IDENTITY = "gpushare-multikueue"
"""The ServiceAccount (in Kueue's namespace on each worker) and ClusterRole the manager's Kueue acts as there."""
WORKER_RULES = [
    {"apiGroups": ["batch"], "resources": ["jobs"],
     "verbs": ["create", "delete", "get", "list", "watch", "update", "patch"]},
    {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"],
     "verbs": ["create", "delete", "get", "list", "watch", "update", "patch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
]
"""What MultiKueue does on a worker for Jobs: Kueue v0.19.2 `hack/multikueue/create-multikueue-kubeconfig.sh`'s
ClusterRole, its batch/v1 Jobs and Workloads rules (the other frameworks' rules dropped: only Jobs are dispatched)."""


@dataclass(frozen=True)
class FleetDispatchPlan:
    """The MultiKueue objects of a fleet: on the manager, and on each worker (member name -> objects)."""

    manager: str
    manager_objects: list[dict[str, Any]]
    """The tenants' namespaces, RoleBindings and quotas, then Kueue's objects (a LocalQueue after its namespace);
    empty when nothing is dispatched."""
    worker_objects: dict[str, list[dict[str, Any]]]
    """worker -> its queues (as its own stack compiles them, `queue_manifests`)."""
    kubeconfig_secrets: dict[str, str]
    """worker -> the Secret name (in `secret_namespace` on the manager) the deployment fills with its kubeconfig."""
    tenant_workers: dict[str, list[str]]
    """tenant -> the workers its MultiKueueConfig lists, in member order."""
    tenant_resources: dict[str, list[str]]
    """tenant -> the GPU resources its ClusterQueue on the manager covers (what some worker gives it)."""
    left_out: list[str]
    """Why a member or tenant is not part of the dispatch, one sentence each."""
    secret_namespace: str = KUEUE_NAMESPACE
    """Kueue's own namespace: a MultiKueueCluster's Secret is read there (`multikueuecluster.go`
    getKubeConfigFromSecret, `configNamespace`)."""

    @property
    def workers(self) -> list[str]:
        """The workers some tenant is dispatched to (each has a MultiKueueCluster)."""
        return list(self.kubeconfig_secrets)


def dispatch(manager: str, members: Mapping[str, StackConfig],
             facts: Mapping[str, PoolFactsByName] | None = None) -> FleetDispatchPlan:
    """The fleet's MultiKueue objects. `members`: member name -> its stack, the manager among them, in the fleet's
    order; `facts`: member name -> the pool facts its plan derived (`StackPlan.pool_facts`), derived here for a
    member without them. What cannot be dispatched is left out and said (`FleetDispatchPlan.left_out`)."""
    if manager not in members:
        raise ConfigError("the fleet", [ConfigProblem("manager", f"{manager!r} is not one of the members "
                                                                 f"({', '.join(members)})")])
    facts = {name: given_or_derived(stack, (facts or {}).get(name)) for name, stack in members.items()}
    chosen = choose_dispatch(manager, members)
    workers, tenants, where = chosen.workers, chosen.tenants, {t: list(ws) for t, ws in chosen.tenant_workers.items()}
    used = [w for w in workers if any(w in ws for ws in where.values())]
    objects: list[dict[str, Any]] = []
    for tenant in tenants.values():
        # Its policies before its namespace: the manager member's shared policy leaves the namespace to them
        # (`StackConfig.fleet_manager`), so it never exists unjudged; its quota before its RoleBindings, so the
        # tenant never holds `edit` there while a pod of its own could run.
        for worker in where[tenant.name]:
            objects += manager_policy(members[worker], tenant.name, worker, facts[worker])
        objects += [namespace_object(tenant), _no_pods(tenant), *role_binding_objects(tenant)]
    resources: dict[str, list[str]] = {}
    if tenants:
        objects += [{"apiVersion": KUEUE_API, "kind": "ResourceFlavor",
                     "metadata": {"name": FLEET_FLAVOR, "labels": dict(MANAGED_BY)}, "spec": {}},
                    *(_cluster(worker) for worker in used)]
    for name, tenant in tenants.items():
        queue = _manager_queue(tenant, {w: (members[w], facts[w]) for w in where[name]})
        resources[name] = [r for r in queue["spec"]["resourceGroups"][0]["coveredResources"]
                           if r not in ("cpu", "memory")]
        objects += [_config(name, where[name]), _check_object(name), priority_class(tenant), queue,
                    local_queue(tenant)]
    return FleetDispatchPlan(
        manager=manager, manager_objects=objects,
        worker_objects={w: queue_manifests(members[w], facts[w]) for w in workers},
        kubeconfig_secrets={w: kubeconfig_secret(w) for w in used}, tenant_workers=where,
        tenant_resources=resources, left_out=list(chosen.left_out))


def manager_policy_name(tenant: Tenant | DispatchedTenant, worker: str) -> str:
    """The tenant's policy on the manager as `worker` judges it: its usual name and the worker's (a tenant's name
    is a namespace's, without dots, so no two pairs share one); never the usual name alone, which is the manager
    member's own policy once the tenant has pools there."""
    return f"{tenant_policy_name(tenant)}.{worker}"


NO_PODS_QUOTA = "gpushare-fleet-no-pods"
"""The ResourceQuota (`pods: 0`) in each dispatched tenant's namespace on the manager."""


def fleet_dispatch_plan(stack: StackConfig) -> dict[str, Any] | None:
    """The `fleetDispatch` entry of a manager member's `plan --json`: the namespaces of the tenants its fleet
    dispatches from its cluster, which its shared policy leaves to the fleet stack's (`FleetDispatch`) policies and
    quota; None for a stack that is no fleet's dispatch manager."""
    role = stack.fleet_manager
    if role is None:
        return None
    return {"fleet": role.fleet, "namespaces": [{
        "name": tenant.name, "workers": list(tenant.workers),
        "policies": [manager_policy_name(tenant, w) for w in tenant.workers],
        "quota": NO_PODS_QUOTA} for tenant in role.tenants]}


def manager_policy(worker_stack: StackConfig, tenant: str, worker: str,
                   facts: PoolFactsByName | None = None) -> list[dict[str, Any]]:
    """The tenant's admission policy on the manager, built from `worker`'s stack as that worker builds it
    (`tenant_policy`), and its binding to the tenant's namespace there: its Jobs may name only its LocalQueue and
    its WorkloadPriorityClass, only Kueue unsuspends them, and their templates meet every rule the worker holds
    its pods to (devices, tolerations, priority, Guaranteed QoS with the worker's defaults, DRA claims). One per
    worker in the tenant's MultiKueueConfig: any of them may get the Job, and MultiKueue creates its copy there
    only after that worker's Kueue reserved quota for it, so a copy the worker's policy refuses would hold that
    quota and never run; on the manager it is refused at once, saying why. The pool rule is left out
    (`dispatched`): the workers' Kueue gives the copy its pool."""
    member_tenant = next(t for t in worker_stack.tenants if t.name == tenant)
    return tenant_policy(worker_stack, member_tenant, facts, name=manager_policy_name(member_tenant, worker),
                         dispatched=True)


def _no_pods(tenant: Tenant) -> dict[str, Any]:
    """No pod of the tenant runs on the manager: its Jobs there are MultiKueue's, which makes no pod of them."""
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": NO_PODS_QUOTA, "namespace": tenant.name,
                         "labels": {**MANAGED_BY, TENANT_LABEL: tenant.name}},
            "spec": {"hard": {"pods": "0"}}}


def worker_access_objects() -> list[dict[str, Any]]:
    """On each worker: the ServiceAccount the manager's kubeconfig names, its ClusterRole and binding, and the
    Secret Kubernetes fills with the account's token and the cluster's CA (`kubernetes.io/service-account-token`),
    which the deployment reads, as a secret, into the kubeconfig on the manager."""
    meta = {"name": WORKER_IDENTITY, "labels": dict(MANAGED_BY)}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {**meta, "namespace": KUEUE_NAMESPACE}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": dict(meta),
         "rules": WORKER_RULES},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": dict(meta),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": WORKER_IDENTITY},
         "subjects": [{"kind": "ServiceAccount", "name": WORKER_IDENTITY, "namespace": KUEUE_NAMESPACE}]},
        {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
         "metadata": {**meta, "namespace": KUEUE_NAMESPACE,
                      "annotations": {"kubernetes.io/service-account.name": WORKER_IDENTITY}}},
    ]


def worker_kubeconfig(server: str, token_secret_data: Mapping[str, str]) -> str:
    """The kubeconfig the manager reads a worker with: its API server, and the CA and token from the worker's
    service-account token Secret (`data`, base64 as the API returns it), inline as Kueue requires."""
    token = base64.b64decode(token_secret_data.get("token") or "").decode()
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "worker",
        "clusters": [{"name": "worker", "cluster": {
            "server": server, "certificate-authority-data": token_secret_data.get("ca.crt") or ""}}],
        "users": [{"name": WORKER_IDENTITY, "user": {"token": token}}],
        "contexts": [{"name": "worker", "context": {"cluster": "worker", "user": WORKER_IDENTITY}}]})


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

