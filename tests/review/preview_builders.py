"""`pulumi preview --json` documents in the shape Pulumi prints (`display.PreviewDigest`; reference pulumi.md §6),
for gpushare's resources with the inputs the program registers (wire names, as `plan --json` shows them).

Each fixture is a function returning a fresh document. Resource states are `apitype.ResourceV3`; the ConfigMap and
the release appear as `same` steps where the workflow's `--show-sames` would show them.
"""

from __future__ import annotations

import copy
from collections import Counter

STACK = "prod"
PROJECT = "gpushare"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
AGENT_POOL = "azure-native:containerservice:AgentPool"
POOL_COMPONENT = "gpushare:pool:GpuNodePool"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
RELEASE = "kubernetes:helm.sh/v3:Release"
OPERATOR_COMPONENT = "gpushare:operator:GpuOperator"
ROOT = f"urn:pulumi:{STACK}::{PROJECT}::pulumi:pulumi:Stack::{PROJECT}-{STACK}"


def urn(type_: str, name: str, parent: str | None = None) -> str:
    return f"urn:pulumi:{STACK}::{PROJECT}::{parent + '$' if parent else ''}{type_}::{name}"


def state(type_: str, name: str, inputs: dict, *, parent: str | None = None, protect: bool = False,
          created: bool = True, retain_on_delete: bool = False) -> dict:
    return {
        "urn": urn(type_, name, parent),
        "custom": True,
        "id": f"/subscriptions/0000/resourceGroups/rg/{name}" if created else "",
        "type": type_,
        "inputs": copy.deepcopy(inputs),
        "outputs": copy.deepcopy(inputs) if created else {},
        "parent": ROOT,
        "provider": f"urn:pulumi:{STACK}::{PROJECT}::pulumi:providers:azure-native::default_3_29_0::1111",
        "protect": protect,
        # As the real engine writes it (tests/engine): the key only when set.
        **({"retainOnDelete": True} if retain_on_delete else {}),
    }


def step(op: str, type_: str, name: str, old: dict | None = None, new: dict | None = None, *,
         parent: str | None = None, detailed: dict | None = None, replace_reasons: list[str] | None = None,
         diff_reasons: list[str] | None = None, protect: bool = False, retain_on_delete: bool = False) -> dict:
    doc = {"op": op, "urn": urn(type_, name, parent),
           "provider": f"urn:pulumi:{STACK}::{PROJECT}::pulumi:providers:azure-native::default_3_29_0::1111"}
    if old is not None:
        doc["oldState"] = state(type_, name, old, parent=parent, protect=protect, retain_on_delete=retain_on_delete)
    if new is not None:
        doc["newState"] = state(type_, name, new, parent=parent, protect=protect, created=op not in ("create",),
                                retain_on_delete=retain_on_delete)
    if diff_reasons is not None or detailed is not None or op in ("update", "replace"):
        doc["diffReasons"] = diff_reasons if diff_reasons is not None else list(detailed or replace_reasons or [])
    if replace_reasons is not None:
        doc["replaceReasons"] = replace_reasons
    doc["detailedDiff"] = detailed
    return doc


def preview(steps: list[dict], *, diagnostics: list[dict] | None = None, hidden_same: int = 0) -> dict:
    counts = Counter(s["op"] for s in steps if s["op"] != "read")  # the real changeSummary counts no read
    counts["same"] += hidden_same + 1  # the root stack
    return {
        "config": {"azure-native:location": "westeurope"},
        "steps": [{"op": "same", "urn": ROOT, "provider": "",
                   "oldState": {"urn": ROOT, "custom": False, "type": "pulumi:pulumi:Stack"},
                   "newState": {"urn": ROOT, "custom": False, "type": "pulumi:pulumi:Stack"}}, *steps],
        "diagnostics": diagnostics or [],
        "duration": 4_200_000_000,
        "changeSummary": dict(counts),
        "maybeCorrupt": False,
    }


# --- gpushare's resources ---------------------------------------------------------------------------------


def pool_inputs(name: str, vm_size: str, *, mig: str | None = None, sharing: str = "none",
                count: int | None = None, autoscale: tuple[int, int] | None = None, config_key: str | None = None,
                zones: list[str] | None = None, mig_strategy: str = "single") -> dict:
    inputs = {
        "agentPoolName": name,
        "mode": "User",
        "nodeLabels": {
            "gpushare.io/pool": name,
            "gpushare.io/sharing": sharing,
            "nvidia.com/device-plugin.config": config_key or name,
        },
        "nodeTaints": ["nvidia.com/gpu=present:NoSchedule"],
        "osSKU": "Ubuntu",
        "osType": "Linux",
        "resourceGroupName": "gpushare-prod-rg",
        "resourceName": "gpushare-prod",
        "type": "VirtualMachineScaleSets",
        "vmSize": vm_size,
    }
    if mig:
        inputs["gpuInstanceProfile"] = mig
        inputs["nodeLabels"]["gpushare.io/mig-strategy"] = mig_strategy
    if zones:
        inputs["availabilityZones"] = zones
    if autoscale:
        inputs.update(enableAutoScaling=True, minCount=autoscale[0], maxCount=autoscale[1], count=autoscale[0])
    else:
        inputs["count"] = 1 if count is None else count
    return inputs


def plugin_config(mig_strategy: str = "single", sharing: str | None = None, resource: str = "nvidia.com/gpu",
                  replicas: int = 0, rename: bool = True) -> str:
    text = f"version: v1\nflags:\n  migStrategy: {mig_strategy}\n"
    if sharing:
        text += (f"sharing:\n  {sharing}:\n    renameByDefault: {'true' if rename else 'false'}\n"
                 f"    failRequestsGreaterThanOne: true\n    resources:\n    - name: {resource}\n"
                 f"      replicas: {replicas}\n")
    return text


def config_map_inputs(data: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "data": dict(data),
            "metadata": {"labels": {"app.kubernetes.io/managed-by": "gpushare"},
                         "name": "gpushare-device-plugin-config", "namespace": "gpu-operator"}}


def release_inputs(*, version: str = "v26.7.0", mig_strategy: str = "single") -> dict:
    return {
        "chart": "gpu-operator", "name": "gpu-operator", "namespace": "gpu-operator", "version": version,
        "repositoryOpts": {"repo": "https://helm.ngc.nvidia.com/nvidia"},
        "values": {
            "cdi": {"enabled": False},
            "devicePlugin": {"config": {"default": "default-whole-gpu", "name": "gpushare-device-plugin-config"}},
            "driver": {"enabled": False}, "mig": {"strategy": mig_strategy},
            "migManager": {"enabled": False}, "operator": {"runtimeClass": "nvidia-container-runtime"},
            "toolkit": {"enabled": False},
        },
    }


def pool_step(op: str, name: str, old: dict | None, new: dict | None, **kwargs) -> dict:
    return step(op, AGENT_POOL, f"{name}-agentpool", old, new, parent=POOL_COMPONENT, **kwargs)


def config_map_step(op: str, old: dict[str, str] | None, new: dict[str, str] | None, **kwargs) -> dict:
    return step(op, CONFIG_MAP, "gpu-operator-configmap", old and config_map_inputs(old),
                new and config_map_inputs(new), parent=OPERATOR_COMPONENT, **kwargs)


def release_step(op: str, old: dict | None, new: dict | None, **kwargs) -> dict:
    return step(op, RELEASE, "gpu-operator-release", old, new, parent=OPERATOR_COMPONENT, **kwargs)


# --- the fixtures -----------------------------------------------------------------------------------------

DEFAULT_CONFIG = {"default-whole-gpu": plugin_config()}
MIXED_DEFAULT = {"default-whole-gpu": plugin_config("mixed")}


def mig_profile_replace() -> dict:
    """A100 pool (8 GPUs, MIG strategy mixed) from MIG1g to MIG3g; `recreate: true` lifted its protection."""
    data = {**MIXED_DEFAULT, "a100mig-3c1f9e07": plugin_config("mixed")}
    old = pool_inputs("a100mig", "Standard_ND96asr_v4", mig="MIG1g", autoscale=(1, 2),
                      config_key="a100mig-3c1f9e07", mig_strategy="mixed")
    new = pool_inputs("a100mig", "Standard_ND96asr_v4", mig="MIG3g", autoscale=(1, 2),
                      config_key="a100mig-3c1f9e07", mig_strategy="mixed")
    release = release_inputs(mig_strategy="mixed")
    return preview([
        pool_step("replace", "a100mig", old, new, replace_reasons=["gpuInstanceProfile"]),
        config_map_step("same", data, data),
        release_step("same", release, release),
    ], hidden_same=6)


def pool_delete() -> dict:
    """The stack drops pool t4batch (4 x T4 per node, time-slicing x8, 0-4 nodes)."""
    config = plugin_config(sharing="timeSlicing", replicas=8, rename=False)
    old_data = {**DEFAULT_CONFIG, "t4batch-77e0d2a1": config}
    old = pool_inputs("t4batch", "Standard_NC64as_T4_v3", sharing="time-slicing-8", autoscale=(0, 4),
                      config_key="t4batch-77e0d2a1")
    return preview([
        pool_step("delete", "t4batch", old, None),
        config_map_step("update", old_data, DEFAULT_CONFIG, detailed={"data.t4batch-77e0d2a1": {"kind": "delete"}}),
    ], hidden_same=6)


def time_slicing_replicas() -> dict:
    """Pool t4ts (1 x T4, autoscale 1-3: a renamed resource cannot scale from 0) from 4 to 8 time-slicing replicas. The config keys are content-addressed
    (`<pool>-<hash8>`), so the pool's node label follows the new key: an in-place update, no replace."""
    old_key, new_key = "t4ts-1a2b3c4d", "t4ts-5e6f7a8b"
    old_config = plugin_config(sharing="timeSlicing", replicas=4)
    new_config = plugin_config(sharing="timeSlicing", replicas=8)
    old = pool_inputs("t4ts", "Standard_NC4as_T4_v3", sharing="time-slicing-4", autoscale=(1, 3), config_key=old_key)
    new = pool_inputs("t4ts", "Standard_NC4as_T4_v3", sharing="time-slicing-8", autoscale=(1, 3), config_key=new_key)
    return preview([
        pool_step("update", "t4ts", old, new, protect=True, detailed={
            'nodeLabels["gpushare.io/sharing"]': {"kind": "update", "inputDiff": True},
            'nodeLabels["nvidia.com/device-plugin.config"]': {"kind": "update", "inputDiff": True}}),
        config_map_step("update", {**DEFAULT_CONFIG, old_key: old_config}, {**DEFAULT_CONFIG, new_key: new_config},
                        detailed={f"data.{old_key}": {"kind": "delete"}, f"data.{new_key}": {"kind": "add"}}),
        release_step("same", release_inputs(), release_inputs()),
    ], hidden_same=5)


def autoscale_max() -> dict:
    """Pool t4ts's autoscale maximum from 3 to 6 nodes; run without --show-sames, so the ConfigMap is hidden."""
    old = pool_inputs("t4ts", "Standard_NC4as_T4_v3", sharing="time-slicing-4", autoscale=(1, 3))
    new = pool_inputs("t4ts", "Standard_NC4as_T4_v3", sharing="time-slicing-4", autoscale=(1, 6))
    return preview([pool_step("update", "t4ts", old, new, protect=True, detailed={"maxCount": {"kind": "update"}})],
                   hidden_same=8)


def first_deployment() -> dict:
    """Everything created: names of the cluster are known only after apply."""
    config = plugin_config(sharing="mps", replicas=4)
    pool = pool_inputs("t4mps", "Standard_NC8as_T4_v3", sharing="mps-4", count=2, config_key="t4mps-9b04c1aa")
    pool["resourceName"] = UNKNOWN
    return {**preview([
        step("create", "azure-native:resources:ResourceGroup", "cluster-rg", None,
             {"resourceGroupName": "gpushare-prod-rg", "location": "westeurope"}),
        step("create", "azure-native:containerservice:ManagedCluster", "cluster-aks", None,
             {"resourceName": "gpushare-prod", "resourceGroupName": "gpushare-prod-rg"}),
        pool_step("create", "t4mps", None, pool),
        config_map_step("create", None, {**DEFAULT_CONFIG, "t4mps-9b04c1aa": config}),
        release_step("create", None, release_inputs()),
    ]), "changeSummary": {"create": 5}}


GUARD_MESSAGE = (
    "gpushare guard: stacks/Pulumi.prod.yaml would delete a live GPU pool\n"
    "  gpuInstanceProfile: applying this would delete pool a100mig and every pod running on it, then recreate it\n"
    "  fix: keep gpushare:pools[0].mig at MIG1g, or add a new pool and retire the old one"
)


def guard_error() -> dict:
    """The guard stopped the program before any pool registered: an error diagnostic, only the root step."""
    doc = preview([], diagnostics=[
        {"urn": ROOT, "prefix": "error: ", "message": f"{GUARD_MESSAGE}\n", "severity": "error"},
        {"urn": ROOT, "prefix": "warning: ", "message": "pool t4ts: time-slicing gives 4 pods per GPU with no "
                                                        "memory or fault isolation", "severity": "warning"},
    ])
    doc["changeSummary"] = {"same": 1}
    return doc


def large(steps: int = 3_000) -> dict:
    """A big stack: one GPU pool replaced among `steps` updated Kubernetes objects."""
    old = pool_inputs("h100mig", "Standard_NC40ads_H100_v5", mig="MIG3g", count=2, zones=["1", "2"],
                      config_key="h100mig-5d2e8f10")
    new = pool_inputs("h100mig", "Standard_NC40ads_H100_v5", mig="MIG3g", count=2, zones=["1", "2", "3"],
                      config_key="h100mig-5d2e8f10")
    filler = [
        step("update", CONFIG_MAP, f"team-{i:04d}-settings",
             config_map_inputs({"setting": "old"}), config_map_inputs({"setting": "new"}),
             detailed={"data.setting": {"kind": "update", "inputDiff": True}})
        for i in range(steps - 1)
    ]
    return preview([*filler, pool_step("replace", "h100mig", old, new, replace_reasons=["availabilityZones"])])


def non_gpu() -> dict:
    """A stack of storage only: no AgentPool, no release."""
    return preview([
        step("update", "azure-native:storage:StorageAccount", "logs", {"accountName": "logs", "kind": "StorageV2"},
             {"accountName": "logs", "kind": "StorageV2", "minimumTlsVersion": "TLS1_2"},
             detailed={"minimumTlsVersion": {"kind": "add", "inputDiff": True}}),
        step("create", "azure-native:storage:BlobContainer", "archive", None, {"containerName": "archive"}),
    ], hidden_same=3)


def readme_example() -> dict:
    """docs/ci.md's example comment: a MIG replace and a time-slicing change in one preview (without
    --show-sames for the release, so the MIG pool's strategy comes from its gpushare.io/mig-strategy label)."""
    replace, slicing = mig_profile_replace(), time_slicing_replicas()
    pools = [s for s in replace["steps"] if s["urn"].endswith("a100mig-agentpool")]
    doc = preview([*pools, *slicing["steps"][1:3]], hidden_same=6)
    doc["diagnostics"] = [{"urn": ROOT, "prefix": "warning: ", "severity": "warning",
                           "message": "pool a100mig: MIG3g builds 2 x 3g.20gb per GPU, leaving 1/7 of each GPU's "
                                      "compute idle; MIG7g uses the whole GPU, MIG1g all of its compute but "
                                      "7 x 5 = 35 of its 40 GB of memory"}]
    return doc


# --- tenants ---------------------------------------------------------------------------------------------

NAMESPACE = "kubernetes:core/v1:Namespace"
QUOTA = "kubernetes:core/v1:ResourceQuota"
POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
TENANT_COMPONENT = "gpushare:tenant:GpuTenant"


def _tenant_metadata(tenant: str | None, name: str, **more) -> dict:
    labels = {"app.kubernetes.io/managed-by": "gpushare", **({"gpushare.io/tenant": tenant} if tenant else {})}
    return {"name": name, "labels": labels, **more}


def namespace_step(op: str, tenant: str) -> dict:
    inputs = {"apiVersion": "v1", "kind": "Namespace", "metadata": _tenant_metadata(tenant, tenant)}
    # GpuTenant registers the namespace with retainOnDelete.
    return step(op, NAMESPACE, f"tenant-{tenant}-namespace", inputs if op != "create" else None,
                inputs if op != "delete" else None, parent=TENANT_COMPONENT, retain_on_delete=True)


def stack_reference_read(name: str = "gpu-operator-previous-run") -> dict:
    """The real engine's step for GpuOperator's StackReference to its own stack (tests/engine): a `read`, which
    changeSummary does not count."""
    doc = step("read", "pulumi:pulumi:StackReference", name, None, {"name": f"organization/{PROJECT}/{STACK}"},
               parent=OPERATOR_COMPONENT)
    doc.pop("detailedDiff")
    return doc


def quota_step(op: str, tenant: str, old: dict | None, new: dict | None) -> dict:
    def inputs(hard: dict | None) -> dict | None:
        return hard and {"apiVersion": "v1", "kind": "ResourceQuota",
                         "metadata": _tenant_metadata(tenant, "gpushare-gpu-quota", namespace=tenant),
                         "spec": {"hard": {f"requests.{k}": str(v) for k, v in hard.items()}}}
    return step(op, QUOTA, f"tenant-{tenant}-quota", inputs(old), inputs(new), parent=TENANT_COMPONENT)


def policy_step(op: str, tenant: str | None, old_pools: list[str] | None, new_pools: list[str] | None) -> dict:
    """A tenant's policy (tenant set) or the shared pools' policy (tenant None), with its pools annotation."""
    name = f"gpushare-tenant-{tenant}" if tenant else "gpushare-shared-gpu-pools"

    def inputs(pools: list[str] | None) -> dict | None:
        if pools is None:
            return None
        annotations = {"gpushare.io/pools": ",".join(pools)}
        return {"apiVersion": "admissionregistration.k8s.io/v1",
                                           "kind": "ValidatingAdmissionPolicy",
                                           "metadata": _tenant_metadata(tenant, name, annotations=annotations)}
    return step(op, POLICY, f"tenant-{tenant}-policy" if tenant else "shared-gpu-pools-policy", inputs(old_pools),
                inputs(new_pools), parent=TENANT_COMPONENT if tenant else "gpushare:tenant:SharedGpuPools")


def tenant_change() -> dict:
    """vision gains t4batch (which becomes dedicated to it) and more quota, audio is added, nlp removed (its
    namespace retained), and the other namespaces lose t4batch, their last pool."""
    old = pool_inputs("t4batch", "Standard_NC64as_T4_v3", sharing="time-slicing-8", autoscale=(0, 4))
    new = copy.deepcopy(old)
    new["nodeTaints"].append("gpushare.io/tenant=vision:NoSchedule")
    return preview([
        pool_step("update", "t4batch", old, new, detailed={"nodeTaints[1]": {"kind": "add"}}),
        namespace_step("create", "audio"),
        policy_step("create", "audio", None, ["a100mig"]),
        namespace_step("delete", "nlp"),
        quota_step("delete", "nlp", {"nvidia.com/mig-1g.5gb": 56}, None),
        policy_step("delete", "nlp", ["a100mig"], None),
        quota_step("update", "vision", {"nvidia.com/mig-3g.47gb.shared": 4},
                   {"nvidia.com/mig-3g.47gb.shared": 6, "nvidia.com/gpu": 8}),
        policy_step("update", "vision", ["h100mig"], ["h100mig", "t4batch"]),
        policy_step("update", None, ["t4batch"], []),
        stack_reference_read(),
    ], hidden_same=8)
