"""A small cluster's GPU metrics for the showback tests, in dcgm-exporter's and kube-state-metrics' real names
(dcgm-exporter etc/default-counters.csv and render_metrics.go; kube-state-metrics internal/store/pod.go, node.go),
with the figures the rules must derive from it computed here, by hand, apart from gpushare's code.

The stack is tests/fixtures/showback/Pulumi.showback.yaml: a100mig (1 node, 8 x A100 as MIG 3g.20gb, 16 slices),
t4ts (T4s time-sliced x4, 2 nodes here), t4mps (1 T4, MPS x4); tenants vision, research, nlp, and a namespace
`batch` of no tenant on t4ts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

STACK_FILE = Path(__file__).resolve().parents[1] / "fixtures" / "showback" / "Pulumi.showback.yaml"
NODE_HOURLY = {"a100mig": 27.197, "t4ts": 0.526, "t4mps": 0.752}
"""List prices per node-hour for the cost (a saved price answer would give the same; these are the test's)."""
DEVICES_PER_NODE = {"a100mig": 16, "t4ts": 1, "t4mps": 1}
REPLICAS = {"a100mig": 1, "t4ts": 4, "t4mps": 4}


@dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    node: str
    resource: str
    """As kube-state-metrics writes it (nvidia_com_gpu_shared)."""
    slices: int
    phase: str = "Running"


@dataclass(frozen=True)
class Device:
    node: str
    gpu: int
    mig_instance: int | None
    activity: float
    """DCGM_FI_PROF_GR_ENGINE_ACTIVE (0-1); None: only DCGM_FI_DEV_GPU_UTIL is exported."""
    gpu_util_only: bool = False
    pods: tuple[tuple[str, str], ...] = ()
    """(namespace, pod) labels dcgm-exporter puts on the device's series: a copy per pod (--kubernetes-virtual-gpus)."""
    framebuffer: float | None = None
    """DCGM_FI_DEV_FB_USED (MiB), with DCGM_FI_DEV_FB_FREE the rest of the device's `FRAMEBUFFER`; None: neither is
    exported."""


@dataclass(frozen=True)
class Scenario:
    nodes: dict[str, str]
    """node -> pool."""
    allocatable: dict[str, tuple[str, int]]
    """node -> (resource, slices)."""
    pods: tuple[Pod, ...]
    devices: tuple[Device, ...]
    tenants: dict[str, str] = field(default_factory=lambda: {"vision": "vision", "research": "research",
                                                               "nlp": "nlp"})


A100 = "aks-a100mig-12345678-vmss000000"
FRAMEBUFFER = {"3g.20gb": 19968}
"""The framebuffer (MiB) a MIG instance reports, used + free (an A100-SXM4-40GB's 3g.20gb)."""
T4TS_0, T4TS_1 = "aks-t4ts-12345678-vmss000000", "aks-t4ts-12345678-vmss000001"
T4MPS = "aks-t4mps-12345678-vmss000000"

SCENARIO = Scenario(
    nodes={A100: "a100mig", T4TS_0: "t4ts", T4TS_1: "t4ts", T4MPS: "t4mps"},
    allocatable={A100: ("nvidia_com_gpu", 16), T4TS_0: ("nvidia_com_gpu_shared", 4),
                 T4TS_1: ("nvidia_com_gpu_shared", 4), T4MPS: ("nvidia_com_gpu_shared", 4)},
    pods=(
        *(Pod("vision", f"train-{i}", A100, "nvidia_com_gpu", 1) for i in range(4)),
        Pod("vision", "done-0", A100, "nvidia_com_gpu", 1, phase="Succeeded"),  # finished: holds nothing
        Pod("research", "notebook-0", T4TS_0, "nvidia_com_gpu_shared", 1),
        Pod("research", "notebook-1", T4TS_0, "nvidia_com_gpu_shared", 2),
        Pod("batch", "job-0", T4TS_0, "nvidia_com_gpu_shared", 1),
        *(Pod("nlp", f"serve-{i}", T4MPS, "nvidia_com_gpu_shared", 1) for i in range(4)),
        Pod("nlp", "serve-4", "", "nvidia_com_gpu_shared", 1, phase="Pending"),
    ),
    devices=(
        # vision's four pods each run on a MIG instance, 90% busy, their framebuffer nearly full (19,000 of 19,968
        # MiB); the other 12 instances idle, no pod, no memory in use.
        *(Device(A100, gpu, instance, 0.9 if gpu < 2 else 0.0,
                 pods=((("vision", f"train-{2 * gpu + instance - 1}"),) if gpu < 2 else ()),
                 framebuffer=19000.0 if gpu < 2 else 0.0)
          for gpu in range(8) for instance in (1, 2)),
        # One T4 time-sliced among research's and batch's pods: dcgm-exporter repeats its value for each pod.
        Device(T4TS_0, 0, None, 0.5, pods=(("research", "notebook-0"), ("batch", "job-0"))),
        Device(T4TS_1, 0, None, 0.1, gpu_util_only=True),
        Device(T4MPS, 0, None, 0.8),
    ),
)


def expected(scenario: Scenario = SCENARIO) -> dict[str, dict]:
    """What the rules must record, per pool and per namespace, worked out from the scenario directly."""
    pools = sorted(set(scenario.nodes.values()))
    allocatable = {p: sum(n for node, (_, n) in scenario.allocatable.items() if scenario.nodes[node] == p)
                   for p in pools}
    running = [pod for pod in scenario.pods if pod.phase == "Running"]
    allocated = {p: sum(pod.slices for pod in running if scenario.nodes[pod.node] == p) for p in pools}
    ns_allocated: dict[tuple[str, str], int] = {}
    for pod in running:
        key = (scenario.nodes[pod.node], pod.namespace)
        ns_allocated[key] = ns_allocated.get(key, 0) + pod.slices
    used = {p: sum(d.activity for d in scenario.devices if scenario.nodes[d.node] == p) for p in pools}
    ns_used: dict[tuple[str, str], float] = {}
    for device in scenario.devices:
        pool = scenario.nodes[device.node]
        if REPLICAS[pool] == 1:  # measured: the device's pod labels
            for namespace, _ in device.pods[:1]:
                ns_used[(pool, namespace)] = ns_used.get((pool, namespace), 0.0) + device.activity
        else:  # attributed by allocation: the node's activity split by the slices each namespace holds there
            on_node = [pod for pod in running if pod.node == device.node]
            total = sum(pod.slices for pod in on_node)
            for pod in on_node:
                key = (pool, pod.namespace)
                ns_used[key] = ns_used.get(key, 0.0) + device.activity * pod.slices / total
    instance_hourly = {p: NODE_HOURLY[p] / DEVICES_PER_NODE[p] for p in pools}
    idle_cost = {p: max(allocatable[p] / REPLICAS[p] - used[p], 0) * instance_hourly[p] for p in pools}
    ns_idle_cost = {key: max(n / REPLICAS[key[0]] - ns_used.get(key, 0.0), 0) * instance_hourly[key[0]]
                    for key, n in ns_allocated.items()}
    pending = sum(1 for pod in scenario.pods if pod.phase == "Pending")
    framebuffer = {p: max(d.framebuffer for d in scenario.devices if scenario.nodes[d.node] == p
                          and d.framebuffer is not None) for p in pools
                   if any(scenario.nodes[d.node] == p and d.framebuffer is not None for d in scenario.devices)}
    return {"framebuffer": framebuffer, "allocatable": allocatable, "allocated": allocated, "ns_allocated": ns_allocated, "used": used,
            "ns_used": ns_used, "utilisation": {p: used[p] / (allocatable[p] / REPLICAS[p]) for p in pools},
            "idle_cost": idle_cost, "ns_idle_cost": ns_idle_cost, "pending": pending,
            "instance_hourly": instance_hourly}


def series(scenario: Scenario = SCENARIO) -> list[tuple[str, dict[str, str], float]]:
    """Every input series as (metric, labels, value): what the exporters would expose for the scenario."""
    out: list[tuple[str, dict[str, str], float]] = []
    ksm = {"job": "kube-state-metrics", "instance": "10.0.0.5:8080"}
    for node, pool in scenario.nodes.items():
        out.append(("kube_node_labels", {**ksm, "node": node, "label_gpushare_io_pool": pool,
                                          "label_agentpool": pool}, 1))
        resource, slices = scenario.allocatable[node]
        out.append(("kube_node_status_allocatable", {**ksm, "node": node, "resource": resource,
                                                      "unit": "integer"}, slices))
        out.append(("kube_node_status_allocatable", {**ksm, "node": node, "resource": "cpu", "unit": "core"}, 4))
    for pod in scenario.pods:
        out.append(("kube_pod_container_resource_requests",
                    {**ksm, "namespace": pod.namespace, "pod": pod.name, "uid": f"uid-{pod.name}",
                     "container": "main", "node": pod.node, "resource": pod.resource, "unit": "integer"},
                    pod.slices))
        for phase in ("Pending", "Running", "Succeeded", "Failed", "Unknown"):
            out.append(("kube_pod_status_phase", {**ksm, "namespace": pod.namespace, "pod": pod.name,
                                                   "uid": f"uid-{pod.name}", "phase": phase},
                        1 if phase == pod.phase else 0))
    for device in scenario.devices:
        labels = {"job": "gpu-operator/nvidia-dcgm-exporter", "instance": f"{device.node}:9400",
                  "node": device.node, "gpu": str(device.gpu), "UUID": f"GPU-{device.node[-6:]}-{device.gpu}",
                  "device": f"nvidia{device.gpu}", "modelName": "NVIDIA A100-SXM4-40GB" if device.mig_instance
                  else "Tesla T4", "pci_bus_id": f"00000001:00:{device.gpu:02d}.0"}
        if device.mig_instance is not None:
            labels |= {"GPU_I_PROFILE": "3g.20gb", "GPU_I_ID": str(device.mig_instance)}
        copies = [{"namespace": ns, "pod": pod, "container": "main"} for ns, pod in device.pods] or [{}]
        for copy in copies:
            if device.gpu_util_only:
                out.append(("DCGM_FI_DEV_GPU_UTIL", {**labels, **copy}, round(device.activity * 100)))
            else:
                out.append(("DCGM_FI_PROF_GR_ENGINE_ACTIVE", {**labels, **copy}, device.activity))
                if device.mig_instance is None:
                    out.append(("DCGM_FI_DEV_GPU_UTIL", {**labels, **copy}, round(device.activity * 100)))
            if device.framebuffer is not None:
                total = FRAMEBUFFER[labels["GPU_I_PROFILE"]]
                out.append(("DCGM_FI_DEV_FB_USED", {**labels, **copy}, device.framebuffer))
                out.append(("DCGM_FI_DEV_FB_FREE", {**labels, **copy}, total - device.framebuffer))
    return out


def selector(metric: str, labels: dict[str, str]) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return f"{metric}{{{inner}}}"


def price_cost() -> dict:
    """A `cost` object as `plan --prices` writes it, for the pools' node prices (only what the rules read)."""
    return {"currency": "USD", "priceDate": "2026-12-01",
            "pools": [{"name": name, "nodeHourly": price} for name, price in NODE_HOURLY.items()]}
