"""The checks of each DRA pool's nodes: one ResourceSlice of NVIDIA's DRA driver per node with the pool's devices, and
the GPU Operator's device plugin absent.

How the driver publishes (sigs.k8s.io/dra-driver-nvidia-gpu v0.5.0, `cmd/gpu-kubelet-plugin/driver.go`
`publishResources`): one slice per node, its pool named after the node and its `spec.nodeName` the node, holding every
allocatable device: each whole GPU (`type: gpu`), or on a GPU with MIG enabled its MIG devices only (`type: mig`, with
`profile` and the parent GPU's `parentUUID`; `nvlib.go`, `mig.go` `CommonAttributesMig`). A newer generation of a
pool replaces the older slices (k8s.io/dynamic-resource-allocation `resourceslice` controller): the newest counts.
The operator keeps its device plugin off a node labelled `nvidia.com/gpu.deploy.device-plugin=false`
(docs/dra-pools.md); a device plugin there would hand the same GPUs out a second time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpushare.kubernetes.verify.api_json import (
    ClusterSnapshot,
    describe_resources,
    node_ready,
    nvidia_resources,
    object_labels,
    object_name,
    ready_since,
)
from gpushare.kubernetes.verify.expectations import DEVICE_PLUGIN_DS, NODE_SETTLE, DraPoolExpectation
from gpushare.kubernetes.verify.findings import Finding, Verdict, verdict_of
from gpushare.model.stack import DEVICE_PLUGIN_DEPLOY_LABEL
from gpushare.sharing import dra
from gpushare.sharing.operator_values import NAMESPACE

DRIVER_PODS = f"kubectl get pods -n {dra.NAMESPACE} -o wide"
MIG_FIX = ("the MIG profile is fixed when AKS creates a pool: set the pool's `mig` to the profile it was created with, "
           "or recreate the pool (`recreate: true` for one run)")


@dataclass(frozen=True)
class DraNodeResult:
    name: str
    ready: bool
    slices: int
    """The driver's ResourceSlices of the node (its pool's newest generation)."""
    devices: str
    """What they publish, as `DraPoolExpectation.describe` says it ("-" without a slice)."""


@dataclass(frozen=True)
class DraPoolResult:
    expectation: DraPoolExpectation
    nodes: list[DraNodeResult]
    findings: list[Finding]

    @property
    def verdict(self) -> Verdict:
        return verdict_of(self.findings)

    def to_json(self) -> dict:
        e = self.expectation
        return {
            "pool": e.pool, "allocation": "dra", "driver": dra.DRIVER_NAME, "deviceClass": e.device_class,
            "expected": {"type": e.device_type, "profile": e.mig_profile, "gpusPerNode": e.gpus_per_node,
                         "devicesPerGpu": e.devices_per_gpu},
            "nodesReady": sum(1 for n in self.nodes if n.ready), "nodesTotal": len(self.nodes),
            "nodes": [{"name": n.name, "ready": n.ready, "slices": n.slices, "devices": n.devices}
                      for n in self.nodes],
            "verdict": self.verdict.value,
            "findings": [f.to_json() for f in self.findings],
        }


def _attribute(device: Mapping, name: str) -> str | None:
    """A device's string attribute, named bare (the driver's own domain) or qualified with it."""
    attributes = device.get("attributes") or {}
    value = attributes.get(name) or attributes.get(f"{dra.DRIVER_NAME}/{name}") or {}
    return value.get("string")


def node_slices(slices: list[Mapping], node: str) -> list[Mapping]:
    """The driver's slices of `node`, of its pools' newest generation."""
    mine = [s for s in slices if (s.get("spec") or {}).get("nodeName") == node
            and (s.get("spec") or {}).get("driver") == dra.DRIVER_NAME]
    newest: dict[str, int] = {}
    for s in mine:
        pool = s["spec"].get("pool") or {}
        newest[pool.get("name", "")] = max(newest.get(pool.get("name", ""), 0), int(pool.get("generation", 0)))
    return [s for s in mine if int((s["spec"].get("pool") or {}).get("generation", 0))
            == newest[(s["spec"].get("pool") or {}).get("name", "")]]


@dataclass(frozen=True)
class _Devices:
    gpus: int
    """Whole GPUs published (`type: gpu`)."""
    mig: dict[str, dict[str, int]]
    """MIG profile -> parent GPU -> devices."""
    other: int

    @property
    def describe(self) -> str:
        parts = [f"{self.gpus} whole GPU(s)"] if self.gpus else []
        for profile, parents in self.mig.items():
            counts = sorted(set(parents.values()))
            each = "/".join(map(str, counts))
            parts.append(f"{each} x mig {profile} on each of {len(parents)} GPU(s)")
        if self.other:
            parts.append(f"{self.other} other device(s)")
        return "; ".join(parts) or "no device"


def _devices(slices: list[Mapping]) -> _Devices:
    gpus, other = 0, 0
    mig: dict[str, dict[str, int]] = {}
    for s in slices:
        for device in (s.get("spec") or {}).get("devices") or []:
            kind = _attribute(device, "type")
            if kind == "gpu":
                gpus += 1
            elif kind == "mig":
                parents = mig.setdefault(_attribute(device, "profile") or "?", {})
                parent = _attribute(device, "parentUUID") or "?"
                parents[parent] = parents.get(parent, 0) + 1
            else:
                other += 1
    return _Devices(gpus, mig, other)


def _devices_finding(name: str, expect: DraPoolExpectation, found: _Devices, where: str) -> Finding | None:
    if expect.mig_profile:
        if found.mig == {expect.mig_profile: found.mig.get(expect.mig_profile, {})} and not found.gpus \
                and not found.other and len(found.mig[expect.mig_profile]) == expect.gpus_per_node \
                and set(found.mig[expect.mig_profile].values()) == {expect.devices_per_gpu}:
            return None
    elif found.gpus == expect.gpus_per_node and not found.mig and not found.other:
        return None
    problem = f"node {name}'s ResourceSlice publishes {found.describe}, expected {expect.describe}"
    if expect.mig_profile and found.gpus and not found.mig:
        cause, fix = ("MIG is not enabled on the node's GPUs (AKS partitions them when it creates a MIG pool)",
                      "check the pool's gpuInstanceProfile with `az aks nodepool show`; recreate the pool if it has "
                      "none")
    elif expect.mig_profile and found.mig and expect.mig_profile not in found.mig:
        cause = (f"the GPUs are partitioned as {', '.join(found.mig)}, the pool's profile gives {expect.mig_profile}: "
                 "the node pool's gpuInstanceProfile differs from the stack")
        fix = MIG_FIX
    elif not expect.mig_profile and found.mig:
        cause, fix = ("MIG is enabled on the node's GPUs, and the pool has no `mig`",
                      "set the pool's `mig` to the profile AKS created it with, or recreate the pool without one")
    else:
        cause = ("the driver publishes fewer or other devices than the VM size has: a GPU it cannot use (driver not "
                 "loaded, a GPU lost from the bus) or a MIG layout changed on the node")
        fix = f"`{DRIVER_PODS}`, then the log of the node's kubelet plugin pod; `nvidia-smi -L` on the node"
    return Finding(where, problem, cause, fix)


def _check_node(node: Mapping, expect: DraPoolExpectation, snapshot: ClusterSnapshot,
                plugin_pods: Mapping[str, Mapping]) -> tuple[DraNodeResult, list[Finding]]:
    name, where = object_name(node), f"pool {expect.pool}"
    findings = []
    label = object_labels(node).get(DEVICE_PLUGIN_DEPLOY_LABEL)
    advertised = nvidia_resources(node)
    if label != "false" or name in plugin_pods or advertised:
        seen = [f"{DEVICE_PLUGIN_DEPLOY_LABEL}={label or '<missing>'}"]
        if name in plugin_pods:
            seen.append(f"{DEVICE_PLUGIN_DS} pod {object_name(plugin_pods[name])} runs there")
        if advertised:
            seen.append(f"it advertises {describe_resources(advertised)}")
        findings.append(Finding(
            where, f"node {name} is a DRA node with the device plugin on it ({'; '.join(seen)})",
            "the GPU Operator runs its device plugin where the node's label is not `false`: it hands out the GPUs "
            "the DRA driver publishes a second time",
            f"run `pulumi up` (the pool's node labels set {DEVICE_PLUGIN_DEPLOY_LABEL}=false); "
            f"`kubectl get node {name} -L {DEVICE_PLUGIN_DEPLOY_LABEL}`, and `kubectl get pods -n {NAMESPACE} "
            f"-o wide` shows the plugin gone",
        ))
    slices = node_slices(snapshot.resource_slices or [], name)
    found = _devices(slices)
    if not slices:
        since = ready_since(node)
        findings.append(Finding(
            where, f"node {name} has no ResourceSlice of the DRA driver {dra.DRIVER_NAME}",
            "the driver's kubelet plugin does not run on the node, or has not published its GPUs yet"
            if snapshot.resource_slices is not None else "the cluster serves no resource.k8s.io/v1 (Kubernetes 1.34+)",
            f"`{DRIVER_PODS}` shows the node's kubelet plugin pod; `helm status {dra.RELEASE_NAME} -n "
            f"{dra.NAMESPACE}`",
            pending=snapshot.resource_slices is not None and (since is None or snapshot.now - since < NODE_SETTLE),
        ))
    elif len(slices) > 1:
        findings.append(Finding(
            where, f"node {name} has {len(slices)} ResourceSlices of {dra.DRIVER_NAME}, expected one",
            "the driver publishes one slice per node (without DynamicMIG): another publisher uses its name, or the "
            "DynamicMIG gate is on, which gpushare does not deploy",
            f"`kubectl get resourceslices --field-selector spec.nodeName={name} -o yaml`; "
            f"`helm get values {dra.RELEASE_NAME} -n {dra.NAMESPACE}`",
        ))
    if len(slices) == 1 and (finding := _devices_finding(name, expect, found, where)):
        findings.append(finding)
    return DraNodeResult(name, True, len(slices), found.describe if slices else "-"), findings


def check_dra_pool(expect: DraPoolExpectation, nodes: list[Mapping], snapshot: ClusterSnapshot,
                   pods: Mapping[tuple[str, str], Mapping]) -> DraPoolResult:
    """`pods`: (app, node) -> the operator's pod there (`verify_report.evaluate`)."""
    where = f"pool {expect.pool}"
    findings = []
    if len(nodes) < expect.min_nodes:
        findings.append(Finding(
            where, f"{len(nodes)} of {expect.min_nodes} nodes so far", "the pool is still scaling",
            "wait (`--wait SECONDS`); `az aks nodepool show` shows the pool's provisioning state", pending=True,
        ))
    plugin_pods = {node: pod for (app, node), pod in pods.items() if app == DEVICE_PLUGIN_DS}
    results = []
    for node in nodes:
        if not node_ready(node):
            results.append(DraNodeResult(object_name(node), False, 0, "-"))
            findings.append(Finding(
                where, f"node {object_name(node)} is NotReady", "the node is joining or unhealthy",
                f"wait (`--wait SECONDS`); if it stays NotReady: `kubectl describe node {object_name(node)}`",
                pending=True,
            ))
            continue
        result, found = _check_node(node, expect, snapshot, plugin_pods)
        results.append(result)
        findings += found
    return DraPoolResult(expect, results, findings)
