"""GPU showback from real metrics: the PromQL that joins dcgm-exporter's and kube-state-metrics' series with the
plan's mapping of node -> pool -> slice -> tenant -> price, as Prometheus recording rules and alerts (one group per
stack), and as the instant expressions `gpushare usage` integrates over a window (`gpushare.showback.usage`).

Sources (names as the exporters write them):
- dcgm-exporter (NVIDIA/dcgm-exporter etc/default-counters.csv, at d5e5f51 / 4.5.3-4.8.2): DCGM_FI_PROF_GR_ENGINE_ACTIVE
  ("Ratio of time the graphics engine is active", 0-1, reported per GPU and per MIG instance) and
  DCGM_FI_DEV_GPU_UTIL ("GPU utilization (in %)", whole GPUs only); DCGM_FI_DEV_FB_USED ("Framebuffer memory used
  (in MiB)", per GPU and per MIG instance; in default-counters.csv and the operator's dcp-metrics-included.csv), whose
  peak against a MIG slice's memory decides `gpushare usage`'s MIG-profile advice. Labels (internal/pkg/rendermetrics/
  render_metrics.go): gpu, UUID, device, modelName, and on a MIG instance GPU_I_PROFILE and GPU_I_ID; with the
  Kubernetes mapping on (the GPU Operator's default) pod, namespace, container. The node's name is the scrape's
  `node` label, which the PodMonitor gpushare generates copies from __meta_kubernetes_pod_node_name: the exporter's
  own host label was renamed from Hostname to hostname (dcgm-exporter #655), so the rules depend on neither.
- kube-state-metrics (internal/store/pod.go, node.go, utils.go toResourceUnitValue):
  kube_pod_container_resource_requests and kube_node_status_allocatable with resource = the resource name
  sanitised to a label name (nvidia.com/mig-1g.5gb -> nvidia_com_mig_1g_5gb) and unit="integer" for extended
  resources; kube_pod_status_phase;
  kube_node_labels{label_gpushare_io_pool}, which kube-state-metrics exposes only when started with
  --metric-labels-allowlist=nodes=[gpushare.io/pool] (docs/showback.md).

Units. A *slice* is what a pool advertises (a MIG instance, one time-slicing or MPS replica, a whole GPU); a *device*
is what DCGM measures (a GPU, or a MIG instance). A pool with sharing has `replicas` slices per device. Allocated
slices are the GPU requests of running pods; used devices are the sum of the devices' graphics-engine activity.
A time-sliced or MPS device runs several pods that DCGM cannot tell apart (dcgm-exporter#307: one pod gets the
labels; #587: with --kubernetes-virtual-gpus each gets the device's whole value), so on such a pool a namespace's
use is *attributed by allocation*: each node's measured activity is split among its pods in proportion to the slices
each holds. On a MIG or whole-GPU pool each device runs one pod, and its pod/namespace labels attribute it directly.
Idle device-hours are devices x hours minus used device-hours; their cost is idle device-hours x the node's
hourly price / devices per node (the plan's list prices).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from gpushare.model.catalog import MigProfile
from gpushare.model.metrics import Metrics, duration_seconds
from gpushare.model.stack import GpuPool, SharingStrategy, StackConfig
from gpushare.sharing.capacity import pool_capacity
from gpushare.sharing.pool_facts import PoolFactsByName, given_or_derived
from gpushare.showback.chargeback import pool_guarantees

GROUP_INTERVAL = "5m"
"""How often the group is evaluated: dcgm-exporter and kube-state-metrics are scraped every 30-60 s, and an hour's
showback needs no finer grain; the joins cost one evaluation per interval."""
POOL_LABEL = "label_gpushare_io_pool"
"""kube_node_labels' label for the gpushare.io/pool node label (kube-state-metrics sanitises the key)."""
GR_ENGINE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
FB_USED = "DCGM_FI_DEV_FB_USED"
SATURATED_ALLOCATION = 0.95
EVALUATED = "gpushare:showback_rules:evaluated"
RECORDED = {
    "allocatable": "gpushare:pool_slices_allocatable:sum",
    "allocated": "gpushare:pool_slices_allocated:sum",
    "namespaceAllocated": "gpushare:namespace_slices_allocated:sum",
    "used": "gpushare:pool_devices_used:sum",
    "namespaceUsed": "gpushare:namespace_devices_used:sum",
    "pending": "gpushare:pool_pods_pending:count",
    "framebuffer": "gpushare:pool_framebuffer_used:max",
}
"""The recorded series `gpushare usage` reads where the group has run over its whole window."""


def metric_resource(resource: str) -> str:
    """A Kubernetes resource name as kube-state-metrics writes it in `resource` (promutil.SanitizeLabelName)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", resource)


@dataclass(frozen=True)
class MigOption:
    """One MIG profile the pool's GPU offers, laid out as AKS lays it (`catalog.MigProfile`, `sharing.capacity`)."""

    profile: MigProfile
    slice: str
    """`2g.10gb`."""
    resource: str
    """What its pods request under the stack's MIG strategy."""
    per_node: int
    compute_slices: int
    """Of the GPU's 7."""

    @property
    def memory_mib(self) -> int:
        """The slice's memory as its name gives it (`10gb` -> 10,240 MiB; the instance reports a little less)."""
        return int(self.slice.split(".")[1].removesuffix("gb")) * 1024


@dataclass(frozen=True)
class ShowbackPool:
    """What the rules need of one pool, from the plan."""

    name: str
    resource: str
    """The resource its pods request (`nvidia.com/mig-1g.5gb`, `nvidia.com/gpu.shared`)."""
    slice: str
    """The slice as people name it: a MIG profile (`3g.20gb`), `time-slicing x4`, `mps x4`, `whole GPU`."""
    sharing: str
    """mig, time-slicing, mps or none."""
    replicas: int
    """Slices per device (1 without time-slicing or MPS)."""
    mig: bool
    devices_per_node: int
    per_node: int
    """Slices per node."""
    node_hourly: float | None
    """The node's list price per hour (None: no price sheet, or no meter)."""
    mig_profile: MigProfile | None = None
    mig_options: tuple[MigOption, ...] = ()
    """Every profile of the pool's GPU (the current one among them), for a MIG pool."""

    @property
    def shared(self) -> bool:
        return self.replicas > 1

    @property
    def ksm_resource(self) -> str:
        return metric_resource(self.resource)

    @property
    def instance_hourly(self) -> float | None:
        """The price of one physical GPU or MIG instance an hour, which replicas share (`cost.slice_hourly` is one
        replica's)."""
        return None if self.node_hourly is None else self.node_hourly / self.devices_per_node


def showback_pools(stack: StackConfig, cost: Mapping[str, Any] | None = None, facts: PoolFactsByName | None = None
                   ) -> tuple[ShowbackPool, ...]:
    """Each pool's showback facts; prices from the plan's `cost` object (`gpushare.showback.cost.stack_cost`)."""
    prices = {p["name"]: p["nodeHourly"] for p in (cost or {}).get("pools", [])}
    pools = []
    for name, pool_facts in given_or_derived(stack, facts).items():
        pool, capacity = pool_facts.pool, pool_facts.capacity
        sharing = pool.sharing.strategy if pool.sharing else None
        replicas = pool.sharing.replicas if pool.sharing else 1
        if sharing is SharingStrategy.TIME_SLICING:
            label = f"time-slicing x{replicas}"
        elif sharing is SharingStrategy.MPS:
            label = f"mps x{replicas}"
        else:
            label = "whole GPU"
        slice_ = f"{capacity.slice} {label}" if capacity.slice and sharing else (capacity.slice or label)
        options = tuple(_mig_option(dataclasses.replace(pool, mig=profile), stack)
                        for profile in pool.vm_size.gpu.mig_slices) if pool.mig else ()
        pools.append(ShowbackPool(
            name=name, resource=capacity.resource, slice=slice_,
            sharing=sharing.value if sharing else ("mig" if pool.mig else "none"), replicas=replicas,
            mig=pool.mig is not None, devices_per_node=capacity.devices_per_node, per_node=capacity.per_node,
            node_hourly=prices.get(name), mig_profile=pool.mig, mig_options=options))
    return tuple(pools)


def _mig_option(pool: GpuPool, stack: StackConfig) -> MigOption:
    assert pool.mig is not None
    capacity = pool_capacity(pool, stack.operator.mig_strategy)
    assert capacity.slice is not None
    return MigOption(pool.mig, capacity.slice, capacity.resource, capacity.per_node, pool.mig.compute_slices)


def tenant_namespaces(stack: StackConfig) -> dict[str, str]:
    """namespace -> tenant (a tenant's namespace has its name, `gpushare.kubernetes.tenants`)."""
    return {tenant.name: tenant.name for tenant in stack.tenants}


# --- instant expressions, one pool at a time -----------------------------------------------------------------------

def node_pool(pool: ShowbackPool) -> str:
    """The pool's nodes: one series per node, value 1, labels node and pool."""
    return (f'label_replace(max by (node, {POOL_LABEL}) (kube_node_labels{{{POOL_LABEL}="{pool.name}"}}), '
            f'"pool", "$1", "{POOL_LABEL}", "(.+)")')


def _on_pool(expr: str, pool: ShowbackPool) -> str:
    return f"{expr} * on (node) group_left (pool) {node_pool(pool)}"


def _requests(pool: ShowbackPool, phase: str, namespace: str | None = None) -> str:
    """The pool's resource requested by pods in `phase`, one series per container (deduplicated across
    kube-state-metrics replicas by the max)."""
    where = f', namespace="{namespace}"' if namespace else ""
    return (f'max by (namespace, pod, container, node) (kube_pod_container_resource_requests{{resource='
            f'"{pool.ksm_resource}", unit="integer"{where}}}) * on (namespace, pod) group_left () '
            f'(max by (namespace, pod) (kube_pod_status_phase{{phase="{phase}"}}) == 1)')


def allocatable_slices(pool: ShowbackPool) -> str:
    per_node = f'max by (node) (kube_node_status_allocatable{{resource="{pool.ksm_resource}", unit="integer"}})'
    return f"sum by (pool) ({_on_pool(per_node, pool)})"


def allocated_slices(pool: ShowbackPool, by: str = "pool") -> str:
    """Slices held by running pods on the pool's nodes, `by` pool or `pool, namespace`."""
    return f"sum by ({by}) ({_on_pool(_requests(pool, 'Running'), pool)})"


def pending_pods(pool: ShowbackPool) -> str:
    """Pods waiting for the pool's resource. A pending pod has no node yet: it is counted for every pool that
    advertises the resource it asks for (with tenants, each such pod selects its pool by gpushare.io/pool, which
    kube-state-metrics does not expose by default)."""
    pods = (f'sum by (namespace, pod) (kube_pod_container_resource_requests{{resource="{pool.ksm_resource}", '
            f'unit="integer"}}) * on (namespace, pod) group_left () '
            f'(max by (namespace, pod) (kube_pod_status_phase{{phase="Pending"}}) == 1)')
    return f'label_replace(count({pods}), "pool", "{pool.name}", "", "")'


def _device_activity(pool: ShowbackPool, by: str = "node, gpu", namespaced: bool = False) -> str:
    """Each device's graphics-engine activity (0-1), one series per device (`max` folds the copies dcgm-exporter
    emits for several pods of one time-sliced GPU). A MIG pool's devices are its MIG instances (GPU_I_ID set);
    a whole GPU falls back to DCGM_FI_DEV_GPU_UTIL / 100 where the profiling counter is absent (GPUs before Volta,
    or the profiling module off)."""
    ns = ', namespace!=""' if namespaced else ""
    if pool.mig:
        return f'max by ({by}, GPU_I_ID) ({GR_ENGINE}{{GPU_I_ID!=""{ns}}})'
    return (f'(max by ({by}) ({GR_ENGINE}{{GPU_I_ID=""{ns}}}) or max by ({by}) ({GPU_UTIL}{{GPU_I_ID=""{ns}}}) '
            f'/ 100)')


def used_devices(pool: ShowbackPool) -> str:
    """Busy device-equivalents of the pool: the sum of its devices' activity."""
    return f"sum by (pool) ({_on_pool(_device_activity(pool), pool)})"


def framebuffer_used(pool: ShowbackPool) -> str:
    """The most framebuffer (MiB) any one of the pool's devices (its MIG instances, or GPUs) has in use."""
    mig = 'GPU_I_ID!=""' if pool.mig else 'GPU_I_ID=""'
    return f"max by (pool) ({_on_pool(f'max by (node, gpu, GPU_I_ID) ({FB_USED}{{{mig}}})', pool)})"


def namespace_used_devices(pool: ShowbackPool) -> str:
    """Busy device-equivalents per namespace: measured per device on an unshared pool; on a time-sliced or MPS
    pool, each node's activity split by the slices each namespace holds there (attributed by allocation)."""
    if not pool.shared:
        return (f"sum by (pool, namespace) "
                f"({_on_pool(_device_activity(pool, 'node, gpu, namespace', namespaced=True), pool)})")
    running = _requests(pool, "Running")
    share = f"(sum by (node, namespace) ({running}) / on (node) group_left () sum by (node) ({running}))"
    node_activity = f"sum by (node, pool) ({_on_pool(_device_activity(pool), pool)})"
    return f"sum by (pool, namespace) ({share} * on (node) group_left (pool) {node_activity})"


# --- the rule group ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Rule:
    body: dict[str, Any]
    comment: str = ""


def _record(name: str, expr: str, labels: Mapping[str, str], comment: str = "") -> Rule:
    return Rule({"record": name, "expr": expr, "labels": dict(labels)}, comment)


def _pool_labels(pool: ShowbackPool) -> dict[str, str]:
    return {"resource": pool.resource, "slice": pool.slice, "sharing": pool.sharing}


def _or_zero(series: str, like: str) -> str:
    """`series`, or 0 with `like`'s labels where it is absent (no DCGM series yet, no pod running)."""
    return f"({series} or {like} * 0)"


def _pool_rules(pool: ShowbackPool) -> list[Rule]:
    labels = _pool_labels(pool)
    sel = f'{{pool="{pool.name}"}}'
    rules = [
        _record(RECORDED["allocatable"], allocatable_slices(pool), labels,
                f"pool {pool.name}: {pool.resource} ({pool.slice}) its nodes advertise"),
        _record(RECORDED["allocated"], allocated_slices(pool), labels,
                "slices held by running pods"),
        _record(RECORDED["namespaceAllocated"], allocated_slices(pool, "pool, namespace"), labels),
        _record(RECORDED["used"], used_devices(pool), labels,
                "busy device-equivalents: the sum of DCGM_FI_PROF_GR_ENGINE_ACTIVE over the pool's "
                + ("MIG instances" if pool.mig else "GPUs")),
        _record(RECORDED["namespaceUsed"], namespace_used_devices(pool), labels,
                "time-sliced/MPS: attributed by allocation (each node's activity split by the slices each "
                "namespace holds there; DCGM cannot tell the pods of one shared GPU apart)" if pool.shared
                else "measured per device from dcgm-exporter's pod/namespace labels"),
        _record(RECORDED["pending"], pending_pods(pool), labels,
                "pods waiting for the pool's resource"),
        _record(RECORDED["framebuffer"], framebuffer_used(pool), labels,
                "the most framebuffer (MiB, DCGM_FI_DEV_FB_USED) one of its "
                + ("MIG instances" if pool.mig else "GPUs") + " uses"),
        _record("gpushare:pool_utilisation:ratio",
                f"{_or_zero(f'gpushare:pool_devices_used:sum{sel}', f'gpushare:pool_slices_allocatable:sum{sel}')}"
                f" / (gpushare:pool_slices_allocatable:sum{sel} / {pool.replicas} > 0)", labels,
                "busy share of the pool's devices"),
    ]
    if pool.instance_hourly is not None:
        price = round(pool.instance_hourly, 6)
        used = _or_zero(f"gpushare:pool_devices_used:sum{sel}", f"gpushare:pool_slices_allocatable:sum{sel}")
        ns_used = _or_zero(f"gpushare:namespace_devices_used:sum{sel}",
                           f"gpushare:namespace_slices_allocated:sum{sel}")
        rules += [
            _record("gpushare:pool_device_price:hourly", f"vector({price})", {**labels, "pool": pool.name},
                    "list price per device-hour: the node's hourly price / devices per node"),
            _record("gpushare:pool_idle_cost:hourly",
                    f"clamp_min(gpushare:pool_slices_allocatable:sum{sel} / {pool.replicas} - {used}, 0) * {price}",
                    labels, "what the pool's idle device-hours cost per hour"),
            _record("gpushare:namespace_idle_cost:hourly",
                    f"clamp_min(gpushare:namespace_slices_allocated:sum{sel} / {pool.replicas} - {ns_used}, 0)"
                    f" * {price}", labels, "what a namespace's held but idle device-hours cost per hour"),
        ]
    return rules


CHARGEBACK = {
    "nominal": "gpushare:namespace_slices_nominal:max",
    "guaranteed": "gpushare:namespace_slices_guaranteed:sum",
    "borrowed": "gpushare:namespace_slices_borrowed:sum",
    "unused": "gpushare:namespace_slices_guaranteed_unused:sum",
    "lentRatio": "gpushare:pool_guarantees_lent:ratio",
    "lent": "gpushare:namespace_slices_lent:sum",
    "charged": "gpushare:namespace_slices_charged:sum",
    "poolCost": "gpushare:pool_cost:hourly",
    "namespaceCost": "gpushare:namespace_cost:hourly",
    "unallocatedCost": "gpushare:pool_unallocated_cost:hourly",
}
"""The chargeback's series (`gpushare.showback.chargeback`, docs/cost.md): per namespace on each pool, what it is
charged for; per pool its cost, which the namespaces' costs and the unallocated cost add up to."""


def _chargeback_rules(pool: ShowbackPool, guarantees: Mapping[str, int]) -> list[Rule]:
    """`chargeback.split_pool_cost` at every evaluation: each tenant's guarantee (scaled to the pool's allocatable
    slices when they promise more), what each namespace holds beyond its guarantee (borrowed), each tenant's unused
    guarantee credited in proportion to what was borrowed (lent), and the slice-hour price on each; the pool's
    unallocated cost is the rest of the pool's cost, so the parts sum to it."""
    labels = _pool_labels(pool)
    sel = f'{{pool="{pool.name}"}}'
    allocatable = f"gpushare:pool_slices_allocatable:sum{sel}"
    held = f"gpushare:namespace_slices_allocated:sum{sel}"
    nominal, guaranteed = f"{CHARGEBACK['nominal']}{sel}", f"{CHARGEBACK['guaranteed']}{sel}"
    borrowed, unused = f"{CHARGEBACK['borrowed']}{sel}", f"{CHARGEBACK['unused']}{sel}"
    every_guarantee = f"({guaranteed} or {held} * 0)"  # 0 for a namespace of no tenant
    every_holding = f"({held} or {guaranteed} * 0)"  # 0 for a tenant with no pod running there
    rules = [_record(CHARGEBACK["nominal"], f"vector({units})", {**labels, "pool": pool.name, "namespace": tenant},
                     f"tenant {tenant}'s guarantee on pool {pool.name} (its nominal quota there; the whole pool when "
                     f"dedicated to it)")
             for tenant, units in guarantees.items() if units]
    rules += [
        _record(CHARGEBACK["guaranteed"],
                f"{nominal} * on (pool) group_left () clamp_max({allocatable} / on (pool) sum by (pool) ({nominal}), "
                f"1)", labels, "the guarantees, scaled down to the slices the pool has when they promise more"),
        _record(CHARGEBACK["borrowed"], f"clamp_min({every_holding} - {every_guarantee}, 0)", labels,
                "held beyond the namespace's guarantee: charged to it"),
        _record(CHARGEBACK["unused"], f"clamp_min({every_guarantee} - {every_holding}, 0)", labels,
                "a guarantee its tenant leaves unused, which others may borrow"),
        _record(CHARGEBACK["lentRatio"],
                f"clamp_max(sum by (pool) ({borrowed}) / (sum by (pool) ({unused}) > 0), 1) or sum by (pool) "
                f"({unused}) * 0", labels,
                "the share of the unused guarantees that was borrowed (the rest of what was borrowed came from "
                "slices nobody is guaranteed)"),
        _record(CHARGEBACK["lent"],
                f"{unused} * on (pool) group_left () {CHARGEBACK['lentRatio']}{sel}", labels,
                "of a tenant's unused guarantee, what others borrowed: credited to it"),
        _record(CHARGEBACK["charged"],
                f"{every_guarantee} + {borrowed} - {CHARGEBACK['lent']}{sel}", labels,
                "what the namespace is charged for: its guarantee, plus what it borrowed, less what it lent"),
    ]
    if pool.instance_hourly is None:
        return rules
    price = round(pool.instance_hourly / pool.replicas, 6)
    charged = f"{CHARGEBACK['charged']}{sel}"
    return rules + [
        _record(CHARGEBACK["poolCost"], f"{allocatable} * {price}", labels,
                "the pool's cost: its allocatable slices at the slice-hour price (node price / slices per node)"),
        _record(CHARGEBACK["namespaceCost"], f"{charged} * {price}", labels, "the namespace's chargeback"),
        _record(CHARGEBACK["unallocatedCost"],
                f"(clamp_min({allocatable} - on (pool) group_left () sum by (pool) ({charged}), 0) or {allocatable}) * "
                f"{price}", labels,
                "slices nobody is guaranteed and nobody holds: with the namespaces' costs, the pool's cost"),
    ]


def _tenant_rules(stack: StackConfig, pools: tuple[ShowbackPool, ...]) -> list[Rule]:
    rules = []
    priced = any(p.instance_hourly is not None for p in pools)
    for tenant in stack.tenants:
        namespace = tenant.name
        labels = {"tenant": tenant.name}
        rules.append(_record("gpushare:tenant_devices_used:sum",
                             f'sum(gpushare:namespace_devices_used:sum{{namespace="{namespace}"}}) or vector(0)',
                             labels, f"tenant {tenant.name} (namespace {namespace})"))
        if priced:
            rules.append(_record("gpushare:tenant_idle_cost:hourly",
                                 f'sum(gpushare:namespace_idle_cost:hourly{{namespace="{namespace}"}}) or vector(0)',
                                 labels))
            rules.append(_record("gpushare:tenant_cost:hourly",
                                 f'sum({CHARGEBACK["namespaceCost"]}{{namespace="{namespace}"}}) or vector(0)',
                                 labels, "its chargeback over every pool"))
        for resource, units in tenant.quota:
            offering = [p for p in pools if p.resource == resource]
            if not offering:
                continue
            # The namespace's requests of the resource on any node: what its ResourceQuota counts.
            held = f"sum({_requests(offering[0], 'Running', namespace)}) or vector(0)"
            quota_labels = {**labels, "resource": resource}
            rules += [
                _record("gpushare:tenant_quota_slices:max", f"vector({units})", quota_labels,
                        f"tenant {tenant.name}'s ResourceQuota on {resource}"),
                _record("gpushare:tenant_slices_allocated:sum", held, quota_labels),
            ]
    return rules


def _alerts(stack: StackConfig, pools: tuple[ShowbackPool, ...], metrics: Metrics) -> list[Rule]:
    window, idle = metrics.window, metrics.idle_below
    samples = int(0.9 * duration_seconds(window) / duration_seconds(GROUP_INTERVAL))
    alerts = []
    if any(t.quota for t in stack.tenants):
        alerts.append(Rule({
            "alert": "GpushareTenantQuotaUnused",
            "expr": (f"avg_over_time(gpushare:tenant_slices_allocated:sum[{window}]) / on (tenant, resource) "
                     f"gpushare:tenant_quota_slices:max * 100 < {idle} and on (tenant, resource) "
                     f"count_over_time(gpushare:tenant_slices_allocated:sum[{window}]) >= {samples}"),
            "for": "1h",
            "labels": {"severity": "info"},
            "annotations": {
                "summary": "Tenant {{ $labels.tenant }} holds quota on {{ $labels.resource }} it leaves unused",
                "description": (f"Over {window} tenant {{{{ $labels.tenant }}}}'s pods held on average "
                                f"{{{{ $value | humanize }}}}% of its {{{{ $labels.resource }}}} quota (below "
                                f"{idle}%): lower its quota in gpushare:tenants, or hand the slices to another "
                                f"tenant."),
            }}, f"fires once {window} of data is recorded (90% of the window's evaluations), not on a new tenant"))
    alerts.append(Rule({
        "alert": "GpusharePoolIdle",
        "expr": f"avg_over_time(gpushare:pool_utilisation:ratio[1h]) * 100 < {idle}",
        "for": "6h",
        "labels": {"severity": "info"},
        "annotations": {
            "summary": "GPU pool {{ $labels.pool }}'s slices idle",
            "description": (f"Pool {{{{ $labels.pool }}}} ({{{{ $labels.slice }}}}) has been below {idle}% busy "
                            f"for 6 hours ({{{{ $value | humanize }}}}% over the last hour): run gpushare usage "
                            f"for the stack edit."),
        }}, "device activity, not allocation: a slice held by an idle pod is idle"))
    alerts.append(Rule({
        "alert": "GpusharePoolSaturated",
        "expr": (f"gpushare:pool_slices_allocated:sum / gpushare:pool_slices_allocatable:sum >= "
                 f"{SATURATED_ALLOCATION} and on (pool) gpushare:pool_pods_pending:count > 0"),
        "for": "15m",
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": "GPU pool {{ $labels.pool }} is full and GPU pods are pending",
            "description": ("Pool {{ $labels.pool }} has allocated at least 95% of its {{ $labels.resource }} "
                            "for 15 minutes while pods asking for it wait: raise its autoscale.max or count, or "
                            "its sharing replicas."),
        }}))
    return alerts


def rule_group(stack: StackConfig, metrics: Metrics, cost: Mapping[str, Any] | None = None,
               facts: PoolFactsByName | None = None) -> dict[str, Any]:
    """The stack's one rule group, as a Prometheus rule file's group (also a PrometheusRule's spec.groups[0]);
    rules carry their comments in `Rule.comment` (`rule_file` writes them)."""
    pools = showback_pools(stack, cost, facts)
    rules = [_record(EVALUATED, "vector(1)", {"stack": stack.stack},
                     "1 at every evaluation: `gpushare usage` reads the recorded series only when this one covers "
                     "its window")]
    guarantees = pool_guarantees(stack, facts)
    rules += [rule for pool in pools for rule in [*_pool_rules(pool), *_chargeback_rules(pool, guarantees[pool.name])]]
    rules += _tenant_rules(stack, pools) + _alerts(stack, pools, metrics)
    return {"name": f"gpushare-{stack.stack}", "interval": GROUP_INTERVAL, "rules": rules}


HEADER = """\
# GPU showback for stack {stack}, generated by `gpushare rules` from the plan: do not edit, regenerate.
# Inputs: dcgm-exporter (DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_DEV_GPU_UTIL, DCGM_FI_DEV_FB_USED; labels gpu,
# GPU_I_ID, pod, namespace, and node from the scrape) and kube-state-metrics (kube_pod_container_resource_requests,
# kube_pod_status_phase, kube_node_status_allocatable, kube_node_labels with
# --metric-labels-allowlist=nodes=[gpushare.io/pool]).
# Slices are what a pool advertises; devices what DCGM measures (GPUs or MIG instances). Time-sliced and MPS pods
# are attributed by allocation: DCGM cannot tell the pods sharing one GPU apart, so each node's activity is split
# among its pods by the slices they hold. {prices}
"""


def rule_file(stack: StackConfig, metrics: Metrics, cost: Mapping[str, Any] | None = None,
              facts: PoolFactsByName | None = None) -> str:
    """A Prometheus rule file (`promtool check rules` reads it), with each rule's comment above it."""
    group = rule_group(stack, metrics, cost, facts)
    prices = (f"Prices: {cost['currency']} list prices of {cost['priceDate']} (no reservations or discounts)."
              if cost else "No prices (run with --prices): no cost rules.")
    lines = [HEADER.format(stack=stack.stack, prices=prices).rstrip(), "groups:",
             f"  - name: {group['name']}", f"    interval: {group['interval']}", "    rules:"]
    for rule in group["rules"]:
        if rule.comment:
            lines.append(f"      # {rule.comment}")
        dumped = yaml.safe_dump([rule.body], sort_keys=False, width=10_000, allow_unicode=True)
        lines += [f"      {line}" for line in dumped.rstrip().splitlines()]
    return "\n".join(lines) + "\n"


def plain_group(stack: StackConfig, metrics: Metrics, cost: Mapping[str, Any] | None = None,
                facts: PoolFactsByName | None = None) -> dict[str, Any]:
    """The group as data (rules' bodies only): for a PrometheusRule object or an Azure rule group."""
    group = rule_group(stack, metrics, cost, facts)
    return {**group, "rules": [rule.body for rule in group["rules"]]}


PROMETHEUS_RULE_API = "monitoring.coreos.com/v1"


def prometheus_rule(stack: StackConfig, metrics: Metrics, namespace: str,
                    cost: Mapping[str, Any] | None = None, facts: PoolFactsByName | None = None) -> dict[str, Any]:
    """The group as a Prometheus Operator PrometheusRule object (what `gpushare rules --format prometheusrule` prints
    and the program deploys with `gpushare:metrics.operator`)."""
    group = plain_group(stack, metrics, cost, facts)
    return {"apiVersion": PROMETHEUS_RULE_API, "kind": "PrometheusRule",
            "metadata": {"name": group["name"], "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": "gpushare"}},
            "spec": {"groups": [group]}}


AZURE_SEVERITY = {"critical": 0, "error": 1, "warning": 2, "info": 3}
"""An alert's `severity` label as an Azure Monitor alert severity (0 critical ... 4 verbose: PrometheusRule.severity,
Microsoft.AlertsManagement 2023-03-01)."""


def iso_duration(duration: str) -> str:
    """A Prometheus duration as the ISO 8601 duration Azure's rule group takes for `interval` and `for`
    (5m -> PT5M, 6h -> PT6H, 7d -> P7D, 2w -> P14D)."""
    seconds = duration_seconds(duration)
    if seconds % 86400 == 0:
        return f"P{seconds // 86400}D"
    if seconds % 3600 == 0:
        return f"PT{seconds // 3600}H"
    return f"PT{seconds // 60}M"


def azure_rules(group: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`plain_group`'s rules in the shape of an Azure Monitor Prometheus rule group (Microsoft.AlertsManagement/
    prometheusRuleGroups 2023-03-01: `expression` for `expr`, an ISO 8601 `for`, an alert's numeric `severity`),
    keyed as the azure-native SDK's PrometheusRuleArgs takes them."""
    rules = []
    for body in group["rules"]:
        rule: dict[str, Any] = {"expression": body["expr"], "labels": dict(body.get("labels", {}))}
        if "record" in body:
            rule["record"] = body["record"]
        else:
            rule["alert"] = body["alert"]
            rule["annotations"] = dict(body.get("annotations", {}))
            if "for" in body:
                rule["for_"] = iso_duration(body["for"])
            if body["labels"].get("severity") in AZURE_SEVERITY:
                rule["severity"] = AZURE_SEVERITY[body["labels"]["severity"]]
        rules.append(rule)
    return rules


def deployment_warnings(stack: StackConfig) -> list[str]:
    """What the program leaves undeployed for a stack with `gpushare:metrics`: with a Prometheus URL and no
    `operator: true`, the rules and the scrape (the program cannot know how that Prometheus loads them)."""
    metrics = stack.metrics
    if metrics is None or metrics.managed or metrics.operator:
        return []
    return [f"gpushare:metrics: the showback rules and the dcgm-exporter PodMonitor were not deployed: "
            f"{metrics.prometheus} is not known to run under the Prometheus Operator. Load `gpushare rules "
            f"{stack.stack}` (a rule file) into its rule_files and scrape the gpu-operator namespace's "
            f"nvidia-dcgm-exporter pods (port metrics, honor_labels) with a `node` label; or, where the Prometheus "
            f"Operator runs, set gpushare:metrics.operator: true and the program deploys a PrometheusRule and a "
            f"PodMonitor"]
