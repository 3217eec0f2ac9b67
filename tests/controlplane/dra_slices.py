"""ResourceSlices as NVIDIA's DRA driver (sigs.k8s.io/dra-driver-nvidia-gpu v0.5.0, the version gpushare pins) publishes
them for one node of a DRA pool, without DynamicMIG, for the fake nodes of the control-plane tier and the kube stub.

Every name below is the driver's, from its source at v0.5.0 (Go module cache), or from the library it publishes
through (k8s.io/dynamic-resource-allocation v0.37.0-rc.0, its go.mod's pin):

- one slice per node, its pool named after the node: `cmd/gpu-kubelet-plugin/driver.go` L470-507 `publishResources`
  (`Pools: {config.flags.nodeName: {Slices: [one slice of every allocatable device]}}`);
- published by the kubelet plugin helper with the Node as owner (`kubeletplugin/draplugin.go` L1191-1196) through the
  ResourceSlice controller, which names a slice `<index as 5 hex digits>-<driver>-<owner>-` + a random suffix
  (`resourceslice/resourceslicecontroller.go` L924-935, L76 `resourceSliceIndexMinLength = 5`, L1196
  `encodeIndex`), sets `spec.driver`, `spec.nodeName` and `spec.pool` {name, generation, resourceSliceCount}
  (L821-827, L937-941);
- a whole GPU is `gpu-<minor>` (`cmd/gpu-kubelet-plugin/deviceinfo.go` L122-124) with the attributes of
  `GpuInfo.Attributes` (L168-198: type "gpu", uuid, productName, brand, architecture, cudaComputeCapability,
  driverVersion, cudaDriverVersion, and the standard `resource.kubernetes.io/pciBusID`) and its `memory` capacity in
  bytes (`partitions.go` L34-43 `fullGpuCapacity`);
- on a GPU with MIG enabled, only its MIG devices (`nvlib.go` L317-335), each
  `gpu-<minor>-mig-<profile without dots>-<profile id>-<placement start>` (`mig.go` L111-114 `ToCanonicalName`),
  with `CommonAttributesMig` (mig.go L139-179: type "mig", parentUUID, profile, and the parent's productName, brand,
  architecture, versions and PCI bus ID) plus its own uuid (`deviceinfo.go` L251-257), and the capacities of
  `CommonCapacitiesMig` (mig.go L118-135: multiprocessors, copyEngines, decoders, encoders, jpegEngines, ofaEngines,
  memory in bytes) plus one `memorySlice<i>` per memory slice it spans (`deviceinfo.go` L265-271).

What NVML reports (UUIDs, PCI addresses, versions, engine counts) is made up here; the names are not. Memory is the
catalog's size (NVML's total is a little less).
"""

from __future__ import annotations

from typing import Any

from gpushare.model.stack import GpuPool, StackConfig
from gpushare.sharing import dra

MIG_PROFILE_IDS = {"1g": 19, "2g": 14, "3g": 9, "4g": 5, "7g": 0}
"""GPU-instance profile IDs of AKS's MIG layouts, and their placements (AgentBaker mig-partition.sh: MIG3g builds
`9,9`; shared reference aks-gpu.md section 1)."""
MIG_PLACEMENTS = {"1g": (0, 1, 2, 3, 4, 5, 6), "2g": (0, 2, 4), "3g": (0, 4), "4g": (0,), "7g": (0,)}
MIG_MEMORY_SLICES = {"1g": 1, "2g": 2, "3g": 4, "4g": 4, "7g": 8}
"""How many of the GPU's 8 memory slices a GPU instance of each size spans (its placement's size)."""
MIG_ENGINES = {"1g": (16, 1, 1, 0, 1, 0), "2g": (32, 2, 2, 0, 2, 0), "3g": (60, 3, 3, 0, 3, 0),
               "4g": (64, 4, 4, 0, 4, 0), "7g": (132, 7, 7, 0, 7, 1)}
"""(multiprocessors, copyEngines, decoders, encoders, jpegEngines, ofaEngines) of an H100's GPU instances (NVIDIA's
MIG user guide); made up for other models: nothing gpushare selects on reads them."""
ARCHITECTURES = {(7, 5): "Turing", (8, 0): "Ampere", (8, 6): "Ampere", (8, 9): "Ada Lovelace", (9, 0): "Hopper",
                 (10, 0): "Blackwell"}
"""go-nvlib's `GetArchitectureAsString` names by compute capability (nvlib.go L509)."""
SLICE_INDEX_DIGITS = 5


def driver_devices(pool: GpuPool, node_index: int = 0) -> list[dict[str, Any]]:
    """The devices the GPU kubelet plugin publishes for one node of `pool` (the module's docstring)."""
    model = pool.vm_size.gpu
    common = {"productName": {"string": model.display_name}, "brand": {"string": "Nvidia"},
              "architecture": {"string": ARCHITECTURES.get(model.compute_capability, "Unknown")},
              "cudaComputeCapability": {"version": "{}.{}.0".format(*model.compute_capability)},
              "driverVersion": {"version": "580.105.8"}, "cudaDriverVersion": {"version": "13.0.0"}}
    devices = []
    for minor in range(pool.vm_size.gpus):
        parent = f"GPU-{pool.name}-{node_index}-{minor}"
        pci = {"resource.kubernetes.io/pciBusID": {"string": f"0001:00:{minor:02x}.0"}}
        if not pool.mig:
            devices.append({"name": f"gpu-{minor}", "attributes": {
                **common, "type": {"string": "gpu"}, "uuid": {"string": parent}, **pci},
                "capacity": {"memory": {"value": f"{model.memory_gb}Gi"}}})
            continue
        profile = pool.vm_size.mig_slice(pool.mig)
        size = profile.split(".")[0]
        engines = dict(zip(("multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines"),
                           MIG_ENGINES[size]))
        for placement in MIG_PLACEMENTS[size]:
            capacity = {name: {"value": str(count)} for name, count in engines.items()}
            capacity["memory"] = {"value": f"{model.mig_memory_gb(pool.mig)}Gi"}
            capacity.update({f"memorySlice{i}": {"value": "1"}
                             for i in range(placement, placement + MIG_MEMORY_SLICES[size])})
            devices.append({
                "name": f"gpu-{minor}-mig-{profile.replace('.', '')}-{MIG_PROFILE_IDS[size]}-{placement}",
                "attributes": {**common, "type": {"string": "mig"}, "profile": {"string": profile},
                               "parentUUID": {"string": parent}, **pci,
                               "uuid": {"string": f"MIG-{pool.name}-{node_index}-{minor}-{placement}"}},
                "capacity": capacity})
    return devices


def resource_slice(node: dict[str, Any], pool: GpuPool, node_index: int = 0) -> dict[str, Any]:
    """The one ResourceSlice of `node` (a Node object, for its name and uid) as the driver's kubelet plugin
    publishes it (the module's docstring)."""
    name = node["metadata"]["name"]
    return {"apiVersion": dra.RESOURCE_API_VERSION, "kind": "ResourceSlice",
            "metadata": {"generateName": f"{0:0{SLICE_INDEX_DIGITS}x}-{dra.DRIVER_NAME}-{name}-",
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name,
                                              "uid": node["metadata"]["uid"], "controller": True}]},
            "spec": {"driver": dra.DRIVER_NAME, "nodeName": name,
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                     "devices": driver_devices(pool, node_index)}}


def publish_slices(plane, stack: StackConfig, nodes: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    """Creates each DRA pool node's slice on the control plane `plane`; node name -> the created slice."""
    created = {}
    for pool in dra.dra_pools(stack):
        for index, name in enumerate(nodes[pool.name]):
            node = plane.get("v1", "Node", name)
            created[name] = plane.create(resource_slice(node, pool, index))
    return created
