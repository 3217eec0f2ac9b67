"""Tenants: a namespace per team, bound to its GPU pools at admission, with GPU quotas and Guaranteed QoS.

Everything is plain Kubernetes (no controller to run). Per tenant: a Namespace, a ResourceQuota on the GPU
resources its pools advertise, a LimitRange whose container defaults make requests equal limits, `edit`
RoleBindings for its Entra ID groups, and a ValidatingAdmissionPolicy (`admissionregistration.k8s.io/v1`, GA in
Kubernetes 1.30) with its binding. One more policy covers every other namespace: pods there that could run on a GPU
node may use only the pools no tenant lists, except the workloads of `gpushare:platform` namespaces on their pools.
`kube-system` and the GPU Operator's namespace are exempt. Who is judged, the device rules and UPDATE: see "the
admission policy" below. The suite judges these policies with the API server's own ValidatingAdmissionPolicy plugin
(`tools/vapcheck`).

Admission order decides what the policy sees (kubernetes/website `access-authn-authz/admission-controllers.md`,
"mutating then validating"; `pkg/apis/core/v1/defaults.go` `SetDefaults_Pod`; `plugin/pkg/admission/limitranger`):
1. decoding defaults a Pod container's missing requests from its limits (Pods only, not pod templates);
2. the LimitRanger mutating plugin fills a Pod container's missing limits with the LimitRange `default` and
   missing requests with `defaultRequest` (Pods only);
3. validating admission policies see the result, including any sidecar a mutating webhook injected (a service
   mesh's proxy), which needs NVIDIA_VISIBLE_DEVICES=void like any container without a GPU request.
A workload's pod template gets neither, so the policy judges a template by the Pod it will create: it applies
steps 1 and 2 itself (with the LimitRange's values) before checking Guaranteed QoS. A template that sets only a
GPU limit therefore yields Guaranteed pods and is admitted.

CEL features used are all in Kubernetes' base environment at 1.30 for new expressions (compatibility version
1.28/1.29, `k8s.io/apiserver/pkg/cel/environment/base.go`): optional types and `quantity()` (1.28), the strings
extension's `join` (cel-go `ext/strings.go`, every version). `quantity()` compares "1" with "1000m" and "1Gi"
with "1073741824" by value: the API server canonicalises quantities per format, so their strings may differ.
Cost: each expression walks the containers once per resource; the runtime limits are 1,000,000 per expression
and 10,000,000 per binding (`k8s.io/apiserver/pkg/apis/cel` `PerCallLimit`, `RuntimeCELCostBudget`), far above
any real pod. An evaluation error is a rejection (`failurePolicy: Fail`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from gpushare.kubernetes import kueue_admission
from gpushare.kubernetes.tenant_objects import TenantObjects
from gpushare.model.stack import (
    CUDA_CHECK_IMAGE,
    GPU_TAINT,
    POOL_LABEL,
    TENANT_LABEL,
    StackConfig,
    Tenant,
    tenant_taint,
)
from gpushare.sharing.operator_values import toleration
from gpushare.sharing.pool_facts import PoolFacts, stack_pool_facts
from gpushare.stackfile.namespaces import EXEMPT_NAMESPACES

MANAGED_BY = {"app.kubernetes.io/managed-by": "gpushare"}
GPU_RESOURCE_PREFIX = "nvidia.com/"
NAME_LABEL = "kubernetes.io/metadata.name"
"""Set by the API server on every namespace and immutable: selecting on it cannot be escaped by relabelling."""
EDIT_CLUSTER_ROLE = "edit"
POD_SECURITY_LABEL = "pod-security.kubernetes.io/enforce"
SHARED_POLICY_NAME = "gpushare-shared-gpu-pools"
NODE_SHARE_FOR_PODS = Fraction(3, 4)
"""Share of a node's vCPUs and memory counted for GPU pods; the rest is left to the OS, kubelet and DaemonSets."""
DEFAULT_CONTAINER_CAP = (1000, 4096)
"""Most CPU (millicores) and memory (MiB) the namespace default gives a container that states none."""
SNIPPET_CONTAINER = "cuda"
GUARDED_WORKLOADS = (("apps", ("deployments", "statefulsets", "daemonsets", "replicasets")),
                     ("batch", ("jobs", "cronjobs")))
"""Workloads whose pod templates are judged too, so `kubectl apply` fails at once instead of in a controller."""


# --- pools, resources and sizes ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class PoolOffer:
    """What one of a tenant's pools offers its pods."""

    pool: str
    resource: str
    per_node: int
    max_nodes: int
    max_total: int
    """The most units of `resource` the pool advertises, at its autoscale maximum (or fixed count)."""
    dedicated: bool
    """Only this tenant lists the pool: its nodes carry the tenant's taint."""


def pool_offers(stack: StackConfig, tenant: Tenant) -> list[PoolOffer]:
    offers = []
    for name in tenant.pools:
        facts = stack_pool_facts(stack)[name]
        capacity = facts.capacity
        offers.append(PoolOffer(pool=name, resource=capacity.resource, per_node=capacity.per_node,
                                max_nodes=facts.pool.max_nodes, max_total=capacity.total(facts.pool.max_nodes),
                                dedicated=facts.dedicated_tenant == tenant.name))
    return offers


def shared_pools(stack: StackConfig) -> list[str]:
    """Pools no tenant lists: the only ones GPU pods outside tenant namespaces may use."""
    listed = {name for tenant in stack.tenants for name in tenant.pools}
    return [pool.name for pool in stack.pools if pool.name not in listed]


def _cpu(millicores: int) -> str:
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def _memory(mebibytes: int) -> str:
    return f"{mebibytes // 1024}Gi" if mebibytes % 1024 == 0 else f"{mebibytes}Mi"


def _share_per_device(facts: PoolFacts) -> tuple[int, int]:
    """(CPU millicores, memory MiB) for one advertised device when every device on a node has a pod: a fair share
    of `NODE_SHARE_FOR_PODS` of the node, rounded down to 100m and 256Mi."""
    pool, per_node = facts.pool, facts.capacity.per_node
    cpu = int(pool.vm_size.vcpus * 1000 * NODE_SHARE_FOR_PODS / per_node) // 100 * 100
    if pool.vm_size.memory_gib is None:
        # A size the stack describes: its node memory is not known offline, so no share is derived from it and
        # the namespace default stays at the cap (pods state their own memory).
        return max(cpu, 100), DEFAULT_CONTAINER_CAP[1]
    memory = int(pool.vm_size.memory_gib * 1024 * NODE_SHARE_FOR_PODS / per_node) // 256 * 256
    return max(cpu, 100), max(memory, 256)


def pool_share(stack: StackConfig, pool_name: str) -> dict[str, str]:
    """CPU and memory one pod per advertised device can have on this pool: what the pod snippet asks for."""
    cpu, memory = _share_per_device(stack_pool_facts(stack)[pool_name])
    return {"cpu": _cpu(cpu), "memory": _memory(memory)}


def container_defaults(stack: StackConfig, tenant: Tenant) -> dict[str, str]:
    """The namespace's LimitRange default (= defaultRequest) for CPU and memory. It applies to every container in
    the namespace, GPU or not, so it is the smaller of `DEFAULT_CONTAINER_CAP` and the smallest fair share across
    the tenant's pools (a pod that states none fits on every node of each of them)."""
    facts = stack_pool_facts(stack)
    shares = [_share_per_device(facts[name]) for name in tenant.pools]
    cpu = min([cpu for cpu, _ in shares] + [DEFAULT_CONTAINER_CAP[0]])
    memory = min([memory for _, memory in shares] + [DEFAULT_CONTAINER_CAP[1]])
    return {"cpu": _cpu(cpu), "memory": _memory(memory)}


def quota_key(resource: str) -> str:
    """ResourceQuota key for an extended resource: only `requests.` is allowed (no overcommit, no limits.)."""
    return f"requests.{resource}"


@dataclass(frozen=True)
class PoolPromise:
    """How a pool several tenants list is promised: each tenant's quota of the pool's resource, at most the pool."""

    pool: str
    resource: str
    capacity: int
    """The most units the pool advertises, at its autoscale maximum (or fixed count)."""
    max_nodes: int
    quotas: tuple[tuple[str, int | None], ...]
    """(tenant, quota of `resource`) per listing tenant; None when the tenant has no quota on it."""

    @property
    def promised(self) -> int:
        """What the quotas promise on this pool: each counts up to the pool's capacity (a tenant's other pools
        may serve the rest of it)."""
        return sum(min(units, self.capacity) for _, units in self.quotas if units is not None)

    @property
    def exceeds(self) -> bool:
        return self.promised > self.capacity


def pool_promises(stack: StackConfig) -> list[PoolPromise]:
    """One per pool that two or more tenants list, in the stack's pool order."""
    promises = []
    for facts in stack_pool_facts(stack).values():
        pool = facts.pool
        listing = [tenant for tenant in stack.tenants if pool.name in tenant.pools]
        if len(listing) < 2:
            continue
        capacity = facts.capacity
        promises.append(PoolPromise(
            pool=pool.name, resource=capacity.resource, capacity=capacity.total(pool.max_nodes),
            max_nodes=pool.max_nodes,
            quotas=tuple((tenant.name, dict(tenant.quota).get(capacity.resource)) for tenant in listing)))
    return promises


def promise_plan(stack: StackConfig) -> list[dict[str, Any]]:
    """The `poolPromises` list of `plan --json`."""
    return [{"pool": p.pool, "resource": p.resource, "capacity": p.capacity, "maxNodes": p.max_nodes,
             "quotas": dict(p.quotas), "promised": p.promised, "exceeds": p.exceeds}
            for p in pool_promises(stack)]


def _promise_warning(promise: PoolPromise) -> str:
    quotas = ", ".join(f"{tenant} {units if units is not None else 'no quota'}" for tenant, units in promise.quotas)
    over = [tenant for tenant, units in promise.quotas if units is not None]
    return (f"pool {promise.pool}: the quotas of tenants {', '.join(over)} promise {promise.promised} "
            f"{promise.resource} but the pool advertises at most {promise.capacity} ({promise.max_nodes} node(s)); "
            f"{quotas}: once the others use theirs a tenant cannot use its quota; lower the quotas or raise the "
            f"pool's max")


def pod_security_warnings(stack: StackConfig) -> list[str]:
    """The namespaces the shared policy judges keep the Pod Security level their owners set, which gpushare cannot
    see offline: a privileged container there sees every GPU of its node."""
    if not stack.tenants:
        return []
    platform = "".join(f", {ns.name}" for ns in stack.platform)
    return [f"Pod Security: gpushare enforces baseline in the tenants' namespaces only; the namespaces the shared "
            f"policy judges (default{platform} and every add-on's) keep whatever level they have, and a privileged "
            f"container there sees every GPU of its node, past the device plugin and the policies; label each with "
            f"{POD_SECURITY_LABEL}=baseline (or restricted) unless it must run privileged pods, and keep write access "
            f"to those to admins"]


def tenant_warnings(stack: StackConfig) -> list[str]:
    """A quota above what the tenant's pools can ever advertise (at autoscale max) never binds; quotas that promise
    more of a shared pool than it has; namespaces left with no GPU pool: say so."""
    warnings = []
    for tenant in stack.tenants:
        offers = pool_offers(stack, tenant)
        for resource, units in tenant.quota:
            serving = [offer for offer in offers if offer.resource == resource]
            most = sum(offer.max_total for offer in serving)
            if units > most:
                where = ", ".join(f"{o.pool}: {o.max_total} at {o.max_nodes} node(s)" for o in serving)
                warnings.append(f"tenant {tenant.name}: quota {resource}: {units} is more than its pools can ever "
                                f"advertise ({most}; {where}), so it never binds; lower it or raise the pools' max")
    warnings += [_promise_warning(promise) for promise in pool_promises(stack) if promise.exceeds]
    if stack.tenants and not shared_pools(stack):
        tenants = ", ".join(tenant.name for tenant in stack.tenants)
        warnings.append(f"every GPU pool is listed by a tenant, so every namespace but the tenants' ({tenants}) and "
                        f"{', '.join(EXEMPT_NAMESPACES)} has no GPU pool: GPU pods there are refused; leave a pool "
                        f"out of every tenant's pools to give them one")
    return warnings


# --- the admission policy ---------------------------------------------------------------------------------------
#
# Who is judged. A pod is judged when it could run on a GPU pool's node: it requests an `nvidia.com/` resource,
# tolerates the GPU taint or a tenant taint (a toleration with no key and `operator: Exists` tolerates every taint),
# selects `gpushare.io/pool` by nodeSelector or by a nodeAffinity term, or sets `spec.nodeName` (a pod created with a
# node name skips the scheduler, so NoSchedule taints never stop it; the kubelet still refuses one whose nodeSelector
# does not match its node, `pkg/kubelet/lifecycle/predicate.go` GeneralPredicates). Every GPU pool carries the GPU
# taint (`model.pool_node_taints`), so a pod that does none of these cannot reach a GPU node and is not judged.
#
# Devices. AKS makes nvidia-container-runtime containerd's default runtime on every N-series node
# (Azure/AgentBaker `pkg/agent/baker.go`, containerd templates: `{{- if IsNSeriesSKU }} default_runtime_name =
# "nvidia-container-runtime"`), so every container there, GPU or not, passes the NVIDIA toolkit's hook. The toolkit
# gives a container the devices its environment names in NVIDIA_VISIBLE_DEVICES (and NVIDIA_MIG_CONFIG_DEVICES,
# NVIDIA_MIG_MONITOR_DEVICES, NVIDIA_IMEX_CHANNELS: NVIDIA/nvidia-container-toolkit `internal/config/image/
# envvars.go`, read in `cuda_image.go` and `cmd/nvidia-container-runtime-hook/container_config.go`), for
# unprivileged containers too unless `accept-nvidia-visible-devices-envvar-when-unprivileged` is false, and its
# default is true (`api/config/v1/config.go` GetDefault); a legacy CUDA image without the variable gets "all".
# Only "void" (or an empty or unset variable on a current image) gives none; "none" gives the driver but no device.
# With the device plugin's `deviceListStrategy: envvar` (the default; NVIDIA/k8s-device-plugin
# `internal/plugin/server.go`) the plugin's Allocate response sets NVIDIA_VISIBLE_DEVICES, and the kubelet puts the
# container's own environment after it (`pkg/kubelet/kubelet_pods.go` GenerateRunContainerOptions: the device
# manager's `opts.Envs`, then `opts.Envs = append(opts.Envs, envs...)` of makeEnvironmentVariables, where `env`
# overrides `envFrom`), so what a pod spec says wins. Hence: no container may set a device variable in `env` to
# anything but void/none; a GPU container's `envFrom` needs a prefix that cannot spell one; and every container
# without a GPU request in a judged pod sets NVIDIA_VISIBLE_DEVICES=void itself, which beats its image's value
# (every nvidia/cuda image sets `all`). A mutating policy could add it, but MutatingAdmissionPolicy is not GA on
# every version 1.30-1.37, so this is a validating rule whose message is the fix.
#
# UPDATE. Workloads are judged on UPDATE only when their pod template changes, and Pods only when their spec does
# (`matchConditions`): scaling (the Deployment controller's `scaleReplicaSet`, HPA, `kubectl scale`), label and
# finalizer updates, and every update of an object being deleted pass, so a policy that tightens never stalls a
# rollout, scaling or a foreground delete. A Pod's spec can change after creation: an update may add tolerations
# (`ValidatePodUpdate`: "spec.tolerations (only additions to existing tolerations)"), and a pod with scheduling gates
# may gain nodeSelector and affinity terms (KEP-3838). Judging Pods at CREATE only would let a pod created pending
# with no GPU toleration be patched onto another tenant's nodes. `spec.nodeName` counts at CREATE only: on a bound
# pod the scheduler set it (the pods/binding subresource, not matched), and a pod update cannot change it.
#
# Field paths in messages (`spec.tolerations[2]`, `spec.containers[1].env[0]`) come from `indexOf`, Kubernetes'
# lists library (`k8s.io/apiserver/pkg/cel/library/lists.go`, in the base environment since 1.0 of its versions).

def _cel_string(text: str) -> str:
    """A CEL string literal (CEL accepts JSON's double-quoted escapes)."""
    return json.dumps(text)


def _cel_list(items: list[str] | tuple[str, ...]) -> str:
    return "[" + ", ".join(_cel_string(item) for item in items) + "]"


DEVICE_ENV_VARS = ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_MIG_CONFIG_DEVICES", "NVIDIA_MIG_MONITOR_DEVICES",
                   "NVIDIA_IMEX_CHANNELS")
"""The variables the NVIDIA container toolkit reads to choose a container's devices (see above)."""
GATED_DEVICE_ENV_VARS = ("NVIDIA_MOFED", "NVIDIA_NVSWITCH", "NVIDIA_GDS", "NVIDIA_GDRCOPY")
"""Optional devices the toolkit adds to a container that already has GPUs, when the variable is exactly `enabled`,
in its legacy and csv modes: /dev/infiniband/uverbs* and rdma_cm, /dev/nvidia-nvswitch*, /dev/nvidia-fs*,
/dev/gdrdrv (NVIDIA/nvidia-container-toolkit v1.20.0 `internal/modifier/gated.go` newFeatureGatedModifier and
`internal/modifier/cdi.go` gatedDevices; `internal/modifier/mode.go` supportedModifierTypes runs the feature-gated
modifier in every mode but cdi). No device plugin allocates them."""
GATE_ON = "enabled"
VISIBLE_DEVICES = DEVICE_ENV_VARS[0]
NO_DEVICES = ("void", "none")
"""Values of a device variable that give no device."""
CDI_ANNOTATION_DOMAIN = "cdi.k8s.io/"
"""CDI device requests by annotation: the toolkit prefers them over every other device list
(`internal/config/image/cuda_image.go` VisibleDevices; its default prefix is `cdi.k8s.io/`, `api/config/v1/
config.go`), and the device plugin's cdi-annotations strategy writes them under `<prefix>cdi.k8s.io/`."""
NVIDIA_RUNTIME_CLASS_PREFIX = "nvidia"
"""The runtime classes of NVIDIA's runtime: the operator's `nvidia`, `nvidia-cdi`, `nvidia-legacy` and AKS's
`nvidia-container-runtime`. A GPU pod never needs one: on AKS's driver that runtime is already the default, and with
the operator's driver the device plugin hands devices by CDI, which containerd applies itself; naming one runs a pod
through the runtime that reads the image's NVIDIA_VISIBLE_DEVICES."""
CONTROLLER_USERS = (
    "system:kube-controller-manager",
    *(f"system:serviceaccount:kube-system:{controller}-controller"
      for controller in ("daemon-set", "replicaset", "statefulset", "job")),
)
"""Who creates a workload's pods: each controller's own service account when kube-controller-manager runs with
`--use-service-account-credentials` (kubeadm's default since kubernetes/kubernetes#41759; AKS's predecessor
acs-engine set it with RBAC, Azure/acs-engine#2066), otherwise the controller manager's own identity. AKS does not
document which it runs, so both are accepted. Only the control plane can authenticate as either."""
AGENT_POOL_LABELS = ("kubernetes.azure.com/agentpool", "agentpool")
"""The labels AKS puts on every node with its agent pool's name: a pod that selects a pool gpushare does not manage
by one of them cannot land on a gpushare pool."""
POOLS_ANNOTATION = "gpushare.io/pools"
"""On each policy: the pools it lets its namespaces use, comma-separated (what `report` reads back)."""
TENANT_TAINT_KEY = TENANT_LABEL
GPU_TAINT_KEY = GPU_TAINT.split("=")[0].split(":")[0]

POD_SPEC_EXPRESSION = (
    "request.kind.kind == 'Pod' ? dyn(object.spec)"
    " : request.kind.kind == 'CronJob' ? dyn(object.spec).jobTemplate.spec.template.spec"
    " : dyn(object.spec).template.spec"
)
"""The pod spec judged: the Pod's own, or the template of the Pods a workload creates (`dyn`: one expression
serves every matched kind without type-check warnings for fields another kind lacks)."""
CONTAINERS_EXPRESSION = "variables.podSpec.containers + variables.podSpec.?initContainers.orValue([])"
def _gpu_resources(macro: str, sign: str) -> list[str]:
    """`macro` (exists, filter) over container `c`'s `nvidia.com/` limits, then requests, whose quantity's sign is
    `sign` (`> 0`, `== 0`)."""
    return [f"c.?resources.?{part}.orValue({{}}).{macro}(r, r.startsWith('{GPU_RESOURCE_PREFIX}') && "
            f"sign(quantity(c.resources.{part}[r])) {sign})" for part in ("limits", "requests")]


_REQUESTS_GPU = f"({' || '.join(_gpu_resources('exists', '> 0'))})"
"""Container `c` asks for a positive quantity of a GPU resource. Zero is no request: the kubelet's device manager
allocates nothing for it and sets no device variable, so the image's own NVIDIA_VISIBLE_DEVICES would reach the
runtime (`_ZERO_GPU` refuses it)."""
_ZERO_GPU = " + ".join(_gpu_resources("filter", "== 0"))
GPU_POD_EXPRESSION = f"variables.containers.exists(c, {_REQUESTS_GPU})"
POOL_EXPRESSION = f"variables.podSpec.?nodeSelector[?'{POOL_LABEL}'].orValue('')"
TOLERATIONS_EXPRESSION = "variables.podSpec.?tolerations.orValue([])"
GPU_TOLERATIONS_EXPRESSION = (
    "variables.tolerations.filter(t, (t.?key.orValue('') == '' && t.?operator.orValue('') == 'Exists') || "
    f"t.?key.orValue('') in {_cel_list([GPU_TAINT_KEY, TENANT_TAINT_KEY])})"
)
"""Tolerations that let a pod onto a GPU pool's nodes: of the GPU taint, a tenant taint, or of every taint."""
NODE_NAME_EXPRESSION = ("request.kind.kind == 'Pod' && request.operation == 'UPDATE' ? '' : "
                        "variables.podSpec.?nodeName.orValue('')")
_NODE_AFFINITY = "variables.podSpec.?affinity.?nodeAffinity"
SELECTS_POOL_EXPRESSION = (
    f"variables.pool != '' || "
    f"{_NODE_AFFINITY}.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([]).exists(t, "
    f"t.?matchExpressions.orValue([]).exists(e, e.key == '{POOL_LABEL}')) || "
    f"{_NODE_AFFINITY}.?preferredDuringSchedulingIgnoredDuringExecution.orValue([]).exists(p, "
    f"p.preference.?matchExpressions.orValue([]).exists(e, e.key == '{POOL_LABEL}'))"
)
REACHES_GPU_NODES = "(size(variables.gpuTolerations) > 0 || variables.selectsPool || variables.nodeName != '')"
AGENT_POOLS_EXPRESSION = ("[" + ", ".join(f"variables.podSpec.?nodeSelector[?'{label}'].orValue('')"
                                           for label in AGENT_POOL_LABELS) + "].filter(v, v != '')")


def _aimed_elsewhere_expression(managed: list[str]) -> str:
    """The pod selects, by AKS's agent pool label, only a pool gpushare does not manage, and no gpushare pool: it
    can run only there, so the pool binding does not apply (the device rules still do)."""
    return (f"variables.pool == '' && size(variables.agentPools) > 0 && "
            f"variables.agentPools.all(v, !(v in {_cel_list(managed)}))")


REACH_EXPRESSION = (
    "variables.gpuPod ? 'a container requests a GPU'"
    " : size(variables.gpuTolerations) > 0 ? 'spec.tolerations[' + "
    "string(variables.tolerations.indexOf(variables.gpuTolerations[0])) + '] tolerates ' + "
    "(variables.gpuTolerations[0].?key.orValue('') == '' ? 'every taint' : variables.gpuTolerations[0].key)"
    " : variables.nodeName != '' ? 'spec.nodeName is set'"
    f" : variables.pool != '' ? 'spec.nodeSelector selects {POOL_LABEL}'"
    f" : 'spec.affinity.nodeAffinity selects {POOL_LABEL}'"
)
"""Why a judged pod could run on a GPU node, naming the field."""


def _per_container(condition: str, detail: str) -> str:
    """`spec.<field>[i]` + detail for every container, init container and ephemeral container meeting `condition`
    (on `c`). When a debug container is added (`variables.debug`) only ephemeral containers are judged: the pod's
    own were judged when it was created."""
    parts = []
    for field in ("containers", "initContainers", "ephemeralContainers"):
        part = (f"variables.podSpec.?{field}.orValue([]).filter(c, {condition}).map(c, 'spec.{field}[' + "
                f"string(variables.podSpec.{field}.indexOf(c)) + ']' + {detail})")
        parts.append(part if field == "ephemeralContainers" else f"(variables.debug ? [] : {part})")
    return " + ".join(parts)


_BAD_DEVICE_ENV = (f"(e.name in {_cel_list(DEVICE_ENV_VARS)} && "
                   f"(has(e.valueFrom) || !(e.?value.orValue('') in {_cel_list(NO_DEVICES)}))) || "
                   f"(e.name in {_cel_list(GATED_DEVICE_ENV_VARS)} && "
                   f"(has(e.valueFrom) || e.?value.orValue('') == '{GATE_ON}'))")
DEVICE_ENV_EXPRESSION = _per_container(
    f"c.?env.orValue([]).exists(e, {_BAD_DEVICE_ENV})",
    f"c.env.filter(e, {_BAD_DEVICE_ENV}).map(e, '.env[' + string(c.env.indexOf(e)) + '] sets ' + e.name + "
    "(has(e.valueFrom) ? ' from valueFrom' : '=' + e.?value.orValue('')))[0]",
)
"""Containers whose `env` sets a device variable to anything but void/none, or an optional-device variable to
`enabled` (or from valueFrom, whose value admission cannot see), first such entry each."""
_UNSAFE_ENV_FROM = (f"{_cel_list(DEVICE_ENV_VARS + GATED_DEVICE_ENV_VARS)}"
                    ".exists(v, v.startsWith(f.?prefix.orValue('')))")
UNSAFE_ENV_FROM_EXPRESSION = _per_container(
    f"{_REQUESTS_GPU} && c.?envFrom.orValue([]).exists(f, {_UNSAFE_ENV_FROM})",
    f"c.envFrom.filter(f, {_UNSAFE_ENV_FROM}).map(f, '.envFrom[' + string(c.envFrom.indexOf(f)) + ']')[0]",
)
"""GPU containers with an `envFrom` whose keys could name a device variable (no prefix, or one that spells part
of one): a ConfigMap key NVIDIA_VISIBLE_DEVICES would override the device plugin's value."""
NO_VOID_EXPRESSION = _per_container(
    f"!{_REQUESTS_GPU} && !c.?env.orValue([]).exists(e, e.name == '{VISIBLE_DEVICES}' && !has(e.valueFrom) && "
    f"e.?value.orValue('') in {_cel_list(NO_DEVICES)})",
    "' (' + c.name + ')'",
)
"""Containers without a GPU request that do not set NVIDIA_VISIBLE_DEVICES=void themselves."""
ZERO_GPU_EXPRESSION = _per_container(f"size({_ZERO_GPU}) > 0", f"' asks for 0 ' + ({_ZERO_GPU})[0]")
"""Containers that ask for 0 of an `nvidia.com/` resource, naming the first (a negative quantity never reaches
admission: object validation refuses it first)."""
POD_METADATA_EXPRESSION = (
    "request.kind.kind == 'Pod' ? object.metadata"
    " : request.kind.kind == 'CronJob' ? dyn(object.spec).jobTemplate.spec.template.?metadata.orValue({})"
    " : dyn(object.spec).template.?metadata.orValue({})"
)
CDI_ANNOTATIONS_EXPRESSION = (
    f"variables.podMetadata.?annotations.orValue({{}}).filter(k, k.startsWith('{CDI_ANNOTATION_DOMAIN}') || "
    f"k.contains('.{CDI_ANNOTATION_DOMAIN}'))"
)
"""Annotations that request CDI devices (`cdi.k8s.io/...`, `<prefix>.cdi.k8s.io/...`)."""
RUNTIME_CLASS_EXPRESSION = "variables.podSpec.?runtimeClassName.orValue('')"
NOT_GUARANTEED_EXPRESSION = (
    "variables.containers.filter(c, !['cpu', 'memory'].all(r, "
    "c.?resources.?limits[?r].or(variables.defaults[?r]).hasValue() && "
    "quantity(c.?resources.?requests[?r].or(c.?resources.?limits[?r]).or(variables.defaults[?r]).value())"
    ".compareTo(quantity(c.?resources.?limits[?r].or(variables.defaults[?r]).value())) == 0"
    ")).map(c, c.name)"
)
"""Names of containers whose CPU or memory request differs from its limit, or that has none. A Pod arrives
defaulted (requests from limits, then the LimitRange); for a template the same defaults are applied here."""
KIND_PREFIX_EXPRESSION = "(request.kind.kind == 'Pod' ? '' : request.kind.kind + ' pod template: ')"
# The request's optional fields are read with optional syntax: the plugin builds `request` from
# admissionv1.AdmissionRequest through the unstructured converter, and `subResource`, `namespace`, `name`,
# `userInfo.username` and `userInfo.groups` are `omitempty` there (k8s.io/api admission/v1 types.go,
# authentication/v1 types.go), so an empty one is no key at all and a plain read fails the request
# ("no such key"), which `failurePolicy: Fail` turns into a denial of every pod.
NAMESPACE_EXPRESSION = "request.?namespace.orValue('')"
USERNAME_EXPRESSION = "request.userInfo.?username.orValue('')"
DEBUG_EXPRESSION = "request.kind.kind == 'Pod' && request.?subResource.orValue('') == 'ephemeralcontainers'"
"""A debug container being added (`kubectl debug`: the pods/ephemeralcontainers subresource). Its environment is
judged like any container's; the rest of the pod was judged when it was created or last changed."""
SUBJECT_EXPRESSION = "(variables.gpuPod ? 'GPU pods' : 'Pods that can run on GPU nodes (' + variables.reach + ')')"
MATCH_CONDITIONS = [
    {"name": "not-being-deleted", "expression": "!has(object.metadata.deletionTimestamp)"},
    {"name": "pod-spec-changed", "expression": (
        "request.operation != 'UPDATE' || (request.kind.kind == 'Pod' ? dyn(object.spec) != dyn(oldObject.spec) : "
        "request.kind.kind == 'CronJob' ? "
        "dyn(object.spec).jobTemplate.spec.template != dyn(oldObject.spec).jobTemplate.spec.template : "
        "dyn(object.spec).template != dyn(oldObject.spec).template)")},
]
"""An UPDATE is judged only when what steers pods changes: a Pod's spec (tolerations added, scheduling terms set on
a gated pod, a debug container), a workload's pod template."""


def _defaults_expression(defaults: dict[str, str]) -> str:
    template = "{" + ", ".join(f"{_cel_string(k)}: {_cel_string(v)}" for k, v in sorted(defaults.items())) + "}"
    return f"request.kind.kind == 'Pod' ? {{}} : {template}"


DEBUG_CONTAINER_RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
                        "resources": ["pods/ephemeralcontainers"]}


def _match_constraints(debug_only: bool = False) -> dict[str, Any]:
    if debug_only:
        return {"resourceRules": [dict(DEBUG_CONTAINER_RULE)]}
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]},
             dict(DEBUG_CONTAINER_RULE)]
    rules += [{"apiGroups": [group], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
               "resources": list(resources)} for group, resources in GUARDED_WORKLOADS]
    return {"resourceRules": rules}


def pool_message(namespace: str, pools: list[str]) -> str:
    return f"GPU pods in namespace {namespace} must set nodeSelector {POOL_LABEL} to one of: {', '.join(pools)}"


def _pool_validation(message: str, namespace_expression: str, tail: str, pools: list[str],
                     unless: str = "") -> dict[str, str]:
    got = "(variables.pool == '' ? '' : '; got ' + variables.pool)"
    return {
        "expression": (f"variables.debug || !variables.judged || variables.aimedElsewhere || "
                       f"{unless + ' || ' if unless else ''}variables.pool in {_cel_list(pools)}"),
        "message": message,
        "messageExpression": (f"{KIND_PREFIX_EXPRESSION} + {SUBJECT_EXPRESSION} + ' in namespace ' + "
                              f"{namespace_expression} + {_cel_string(tail)} + {got}"),
    }


def _list_validation(variable: str, message: str, tail: str, unless: str = "") -> dict[str, str]:
    """Refused while `variables.<variable>` (field paths) is not empty, unless `unless` holds; the message names the
    first, then `tail`."""
    return {
        "expression": f"{unless + ' || ' if unless else ''}size(variables.{variable}) == 0",
        "message": message,
        "messageExpression": f"{KIND_PREFIX_EXPRESSION} + variables.{variable}[0] + {_cel_string(tail)}",
    }


def _device_validations(judged_pods: str, exempt: str = "") -> dict[str, dict[str, str]]:
    """The device rules by the variable each reads; `exempt`: a CEL condition under which the env, envFrom and CDI
    rules pass (platform workloads). The void and runtime-class rules need no such clause: they pass for pods that are
    not `variables.judged`, and the policy that has an exemption leaves it out of `judged`."""
    no_devices = "/".join(NO_DEVICES)
    env = ("containers must not set NVIDIA device variables (" + ", ".join(DEVICE_ENV_VARS) +
           f") in env to anything but {no_devices}, nor " + ", ".join(GATED_DEVICE_ENV_VARS) +
           f" to {GATE_ON}: the NVIDIA container toolkit would give the container the GPUs or devices they name, "
           "past the device plugin; remove the variable (the device plugin sets it for the GPUs a container "
           "requests) or set it to void")
    env_from = ("GPU containers' envFrom must have a prefix that cannot spell an NVIDIA device variable: a key "
                f"{VISIBLE_DEVICES} would override the GPUs the device plugin allocated; set envFrom[].prefix "
                "(e.g. APP_) or list the keys in env")
    void = (f"containers that request no GPU in {judged_pods} must set env {VISIBLE_DEVICES}=void: on AKS GPU nodes "
            "the NVIDIA runtime is containerd's default and gives a container the GPUs its image's "
            f"{VISIBLE_DEVICES} names (nvidia/cuda images set all); add "
            f"{{name: {VISIBLE_DEVICES}, value: void}} to its env")
    zero = (f"containers must not ask for 0 of a {GPU_RESOURCE_PREFIX} resource: the device plugin allocates "
            f"nothing for it, so the image's own {VISIBLE_DEVICES} (all, in nvidia/cuda images) would reach the "
            "NVIDIA runtime; ask for 1 or more, or remove the resource")
    cdi = (f"pods must not carry {CDI_ANNOTATION_DOMAIN} annotations: the NVIDIA toolkit and containerd give a "
           "container the CDI devices they name before any other device list, past the device plugin; remove the "
           "annotation (the device plugin requests a GPU container's devices itself)")
    runtime = (f"{judged_pods} must not set spec.runtimeClassName to an NVIDIA runtime class: GPU pods get their "
               "devices from the device plugin without one, and with one the NVIDIA runtime would read the image's "
               f"{VISIBLE_DEVICES}; remove spec.runtimeClassName")
    unless = " || ".join(part for part in (exempt, "variables.debug") if part)
    return {
        "zeroGpu": _list_validation("zeroGpu", zero, " (" + zero + ")"),
        "deviceEnv": _list_validation("deviceEnv", env, " (" + env + ")", exempt),
        "unsafeEnvFrom": _list_validation("unsafeEnvFrom", env_from, " has no safe prefix (" + env_from + ")", exempt),
        "noVoid": _list_validation("noVoid", void, ": " + void, "!variables.judged"),
        "cdiAnnotations": {"expression": f"{unless} || size(variables.cdiAnnotations) == 0", "message": cdi,
         "messageExpression": (f"{KIND_PREFIX_EXPRESSION} + 'metadata.annotations[' + variables.cdiAnnotations[0] + "
                               f"'] is set: ' + {_cel_string(cdi)}")},
        "runtimeClass": {"expression": ("variables.debug || !variables.judged || variables.aimedElsewhere || "
                        f"!variables.runtimeClass.startsWith('{NVIDIA_RUNTIME_CLASS_PREFIX}')"),
         "message": runtime,
         "messageExpression": (f"{KIND_PREFIX_EXPRESSION} + 'spec.runtimeClassName is ' + variables.runtimeClass + "
                               f"': ' + {_cel_string(runtime)}")},
    }


def _policy(name: str, variables: list[tuple[str, str]], validations: list[dict[str, str]],
            labels: dict[str, str], pools: list[str], debug_only: bool = False,
            match_conditions: list[dict[str, str]] = MATCH_CONDITIONS) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": {**MANAGED_BY, **labels},
                     "annotations": {POOLS_ANNOTATION: ",".join(pools)}},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": _match_constraints(debug_only),
            "matchConditions": [dict(condition) for condition in match_conditions],
            "variables": [{"name": var, "expression": expression} for var, expression in variables],
            "validations": validations,
        },
    }


def _binding(policy_name: str, operator: str, namespaces: list[str], labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": policy_name, "labels": {**MANAGED_BY, **labels}},
        "spec": {
            "policyName": policy_name,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchExpressions": [
                {"key": NAME_LABEL, "operator": operator, "values": namespaces}]}},
        },
    }


def _common_variables(stack: StackConfig, judged: str,
                      before_judged: tuple[tuple[str, str], ...] = ()) -> list[tuple[str, str]]:
    """The variables both policies read, in dependency order (a variable may read only those before it)."""
    managed = [pool.name for pool in stack.pools]
    return [("podSpec", POD_SPEC_EXPRESSION), ("podMetadata", POD_METADATA_EXPRESSION), ("debug", DEBUG_EXPRESSION),
            ("containers", CONTAINERS_EXPRESSION), ("gpuPod", GPU_POD_EXPRESSION), ("pool", POOL_EXPRESSION),
            ("agentPools", AGENT_POOLS_EXPRESSION), ("aimedElsewhere", _aimed_elsewhere_expression(managed)),
            ("tolerations", TOLERATIONS_EXPRESSION), ("gpuTolerations", GPU_TOLERATIONS_EXPRESSION),
            ("nodeName", NODE_NAME_EXPRESSION), ("selectsPool", SELECTS_POOL_EXPRESSION), *before_judged,
            ("judged", judged), ("reach", REACH_EXPRESSION), ("deviceEnv", DEVICE_ENV_EXPRESSION),
            ("unsafeEnvFrom", UNSAFE_ENV_FROM_EXPRESSION), ("noVoid", NO_VOID_EXPRESSION),
            ("zeroGpu", ZERO_GPU_EXPRESSION), ("cdiAnnotations", CDI_ANNOTATIONS_EXPRESSION),
            ("runtimeClass", RUNTIME_CLASS_EXPRESSION)]


def tenant_policy_name(tenant: Tenant) -> str:
    return f"gpushare-tenant-{tenant.name}"


def guaranteed_message(tenant: Tenant, defaults: dict[str, str]) -> str:
    return (f"GPU pods in namespace {tenant.name} must be Guaranteed QoS: give every container CPU and memory "
            f"requests equal to its limits, or set neither to take the namespace defaults "
            f"(cpu {defaults['cpu']}, memory {defaults['memory']})")


def _foreign_tolerations_expression(tenant: Tenant) -> str:
    """Tolerations of every taint, or of a tenant taint other than exactly this tenant's, as field paths."""
    bad = (f"(t.?key.orValue('') == '' && t.?operator.orValue('') == 'Exists') || "
           f"(t.?key.orValue('') == '{TENANT_TAINT_KEY}' && (t.?operator.orValue('Equal') == 'Exists' || "
           f"t.?value.orValue('') != {_cel_string(tenant.name)}))")
    return (f"variables.tolerations.filter(t, {bad}).map(t, 'spec.tolerations[' + "
            f"string(variables.tolerations.indexOf(t)) + ']' + (t.?key.orValue('') == '' ? ' tolerates every taint' "
            f": t.?operator.orValue('Equal') == 'Exists' ? ' tolerates {TENANT_TAINT_KEY} with any value' "
            f": ' tolerates {TENANT_TAINT_KEY}=' + t.?value.orValue('')))")


def tenant_policy(stack: StackConfig, tenant: Tenant) -> list[dict[str, Any]]:
    """The tenant's ValidatingAdmissionPolicy and its binding to the tenant's namespace."""
    name = tenant_policy_name(tenant)
    labels = {TENANT_LABEL: tenant.name}
    pools = list(tenant.pools)
    message = pool_message(tenant.name, pools)
    variables = _common_variables(stack, f"variables.gpuPod || {REACHES_GPU_NODES}")
    variables.append(("foreignTolerations", _foreign_tolerations_expression(tenant)))
    own = f"{GPU_TAINT_KEY} and {tenant_taint(tenant.name).split(':')[0]}"
    tolerations = (f"pods in namespace {tenant.name} may tolerate only {own} (key, operator Equal, value): "
                   f"another tenant's taint would let them onto that tenant's nodes; remove the toleration or "
                   f"name this tenant's taint")
    node_name = (f"pods in namespace {tenant.name} must not set spec.nodeName: a pod created with a node name skips "
                 f"the scheduler and the pools' taints; remove it and select the pool with nodeSelector "
                 f"{POOL_LABEL} (one of: {', '.join(pools)})")
    validations = [
        # No `variables.debug ||`: a debug container comes in an UPDATE, where `nodeName` is '' (NODE_NAME_EXPRESSION).
        {"expression": "variables.nodeName == ''", "message": node_name,
         "messageExpression": f"{KIND_PREFIX_EXPRESSION} + {_cel_string('spec.nodeName is set: ' + node_name)}"},
        _list_validation("foreignTolerations", tolerations, ": " + tolerations,
                         "variables.debug || variables.aimedElsewhere"),
        _pool_validation(message, _cel_string(tenant.name),
                         f" must set nodeSelector {POOL_LABEL} to one of: {', '.join(pools)}", pools,
                         kueue_admission.QUEUED_UNLESS if stack.queues.enabled else ""),
        *_device_validations(f"namespace {tenant.name}'s pods that can run on GPU nodes").values(),
    ]
    match_conditions = MATCH_CONDITIONS
    if stack.queues.enabled:
        # Kueue's queued Jobs (`gpushare.kubernetes.kueue_admission`): in before a pool is chosen, started by Kueue.
        variables += kueue_admission.queue_variables(tenant)
        validations += kueue_admission.queue_validations(tenant)
        match_conditions = [{**c, "expression": f"{c['expression']} || {kueue_admission.SUSPEND_CHANGED}"}
                            if c["name"] == "pod-spec-changed" else c for c in MATCH_CONDITIONS]
    if tenant.guaranteed:
        defaults = container_defaults(stack, tenant)
        variables += [("defaults", _defaults_expression(defaults)), ("notGuaranteed", NOT_GUARANTEED_EXPRESSION)]
        qos = guaranteed_message(tenant, defaults)
        validations.append({
            "expression": "variables.debug || !variables.gpuPod || size(variables.notGuaranteed) == 0",
            "message": qos,
            "messageExpression": f"{KIND_PREFIX_EXPRESSION} + {_cel_string(qos + '; not Guaranteed: ')} + "
                                 f"variables.notGuaranteed.join(', ')",
        })
    return [_policy(name, variables, validations, labels, pools, match_conditions=match_conditions),
            _binding(name, "In", [tenant.name], labels)]


ALL_POOLS = "*"
"""In the policy's map of platform namespaces: the namespace's workloads may reach every pool."""


def _platform_variables(stack: StackConfig) -> tuple[tuple[str, str], ...]:
    """`platform`: the request is a platform namespace's workload, or a pod its controller creates (never a debug
    container, never a pod a person creates directly); `platformPools`: the pools it may reach (`*`: all);
    `platformPlaced`: it can reach only those."""
    namespaces = "{" + ", ".join(
        f"{_cel_string(ns.name)}: {_cel_list(list(ns.pools) if ns.pools is not None else [ALL_POOLS])}"
        for ns in stack.platform) + "}"
    required_terms = f"{_NODE_AFFINITY}.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([])"
    return (
        ("platform", f"!variables.debug && {NAMESPACE_EXPRESSION} in {namespaces} && "
                     f"(request.kind.kind != 'Pod' || {USERNAME_EXPRESSION} in {_cel_list(CONTROLLER_USERS)})"),
        ("platformPools", f"variables.platform ? {namespaces}[{NAMESPACE_EXPRESSION}] : []"),
        ("platformPlaced", (
            f"'{ALL_POOLS}' in variables.platformPools || !(variables.gpuPod || {REACHES_GPU_NODES}) || "
            f"variables.pool in variables.platformPools || (size({required_terms}) > 0 && {required_terms}.all(t, "
            f"t.?matchExpressions.orValue([]).exists(e, e.key == '{POOL_LABEL}' && e.operator == 'In' && "
            f"e.?values.orValue([]).all(v, v in variables.platformPools))))")),
    )


def shared_pool_policy(stack: StackConfig) -> list[dict[str, Any]]:
    """The policy for every namespace that is neither a tenant's nor exempt; none while there are no tenants.

    Pods there that can reach a GPU node may use only the pools no tenant lists, and the device rules hold, except
    for the workloads of `gpushare:platform` namespaces (node agents, CNI, monitoring) on the pools each may use."""
    if not stack.tenants:
        return []
    pools = shared_pools(stack)
    owners = "; ".join(f"{t.name}: {', '.join(t.pools)}" for t in stack.tenants)
    judged = f"!variables.platform && (variables.gpuPod || {REACHES_GPU_NODES})"
    if pools:
        tail = f" must set nodeSelector {POOL_LABEL} to one of: {', '.join(pools)} (the pools no tenant lists)"
        validation = _pool_validation("GPU pods outside tenant namespaces" + tail, NAMESPACE_EXPRESSION, tail, pools)
    else:
        tail = f" are not allowed: every GPU pool belongs to a tenant ({owners})"
        validation = {
            "expression": "variables.debug || !variables.judged || variables.aimedElsewhere",
            "message": "GPU pods outside tenant namespaces" + tail,
            "messageExpression": (f"{KIND_PREFIX_EXPRESSION} + {SUBJECT_EXPRESSION} + ' in namespace ' + "
                                  f"{NAMESPACE_EXPRESSION} + {_cel_string(tail)}"),
        }
    placed = (f"workloads of platform namespaces (gpushare:platform.namespaces) may run only on the pools listed for "
              f"their namespace: select them with nodeSelector {POOL_LABEL}, or a required nodeAffinity term "
              f"{POOL_LABEL} In [...] of those pools, or list the pool for the namespace")
    validations = [
        {"expression": "!variables.platform || variables.platformPlaced", "message": placed,
         "messageExpression": (f"{KIND_PREFIX_EXPRESSION} + 'pods of platform namespace ' + {NAMESPACE_EXPRESSION} + "
                               f"' may run only on pools ' + variables.platformPools.join(', ') + ' (' + "
                               f"variables.reach + '): ' + {_cel_string(placed)}")},
        validation,
        *_device_validations("pods outside tenant namespaces that can run on GPU nodes", "variables.platform").values(),
    ]
    excluded = sorted({*EXEMPT_NAMESPACES, *(t.name for t in stack.tenants)})
    variables = _common_variables(stack, judged, _platform_variables(stack))
    return [_policy(SHARED_POLICY_NAME, variables, validations, {}, pools),
            _binding(SHARED_POLICY_NAME, "NotIn", excluded, {})]


EXEMPT_DEBUG_POLICY_NAME = "gpushare-debug-containers"


def exempt_debug_policy(stack: StackConfig) -> list[dict[str, Any]]:
    """The exempt namespaces (kube-system, the GPU Operator's) are judged for debug containers alone: a debug
    container added to one of their node agents' pods lands on a GPU node like any other, so it must not name
    devices and, where the pod can reach a GPU node, sets NVIDIA_VISIBLE_DEVICES=void. None while there are no
    tenants."""
    if not stack.tenants:
        return []
    judged = f"variables.gpuPod || {REACHES_GPU_NODES}"
    device = _device_validations("pods of kube-system and the GPU Operator's namespace that can run on GPU nodes")
    validations = [device["deviceEnv"], device["noVoid"]]
    return [_policy(EXEMPT_DEBUG_POLICY_NAME, _common_variables(stack, judged), validations, {}, [], debug_only=True),
            _binding(EXEMPT_DEBUG_POLICY_NAME, "In", list(EXEMPT_NAMESPACES), {})]


# --- the namespace and what lives in it --------------------------------------------------------------------------

def _metadata(name: str, tenant: Tenant, namespaced: bool = True) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": {**MANAGED_BY, TENANT_LABEL: tenant.name}}
    if namespaced:
        metadata["namespace"] = tenant.name
    return metadata


def namespace_object(tenant: Tenant) -> dict[str, Any]:
    metadata = _metadata(tenant.name, tenant, namespaced=False)
    # Pod Security `baseline` refuses privileged containers and host mounts: a privileged container sees every GPU
    # on its node, past MIG and the device plugin, which would undo the pool binding (GPU pods need neither).
    metadata["labels"][POD_SECURITY_LABEL] = "baseline"
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def quota_object(tenant: Tenant) -> dict[str, Any] | None:
    if not tenant.quota:
        return None
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": _metadata("gpushare-gpu-quota", tenant),
            "spec": {"hard": {quota_key(resource): str(units) for resource, units in tenant.quota}}}


def limit_range_object(stack: StackConfig, tenant: Tenant) -> dict[str, Any]:
    defaults = container_defaults(stack, tenant)
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": _metadata("gpushare-container-defaults", tenant),
            "spec": {"limits": [{"type": "Container", "default": defaults, "defaultRequest": dict(defaults)}]}}


def role_binding_objects(tenant: Tenant) -> list[dict[str, Any]]:
    return [{
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _metadata(f"gpushare-edit-{group}", tenant),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": EDIT_CLUSTER_ROLE},
        # AKS with Entra ID puts group object IDs in the token's groups claim.
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
    } for group in tenant.groups]


def tenant_objects_by_role(stack: StackConfig, tenant: Tenant) -> TenantObjects:
    """One tenant's objects, each under its role's name."""
    policy, policy_binding = tenant_policy(stack, tenant)
    return TenantObjects(
        namespace=namespace_object(tenant), quota=quota_object(tenant), limit_range=limit_range_object(stack, tenant),
        edit_bindings=dict(zip(tenant.groups, role_binding_objects(tenant), strict=True)),
        policy=policy, policy_binding=policy_binding)


def tenant_objects(stack: StackConfig, tenant: Tenant) -> list[dict[str, Any]]:
    """One tenant's objects: Namespace first, then what lives in it, then its policy and binding."""
    return tenant_objects_by_role(stack, tenant).manifests()


def tenant_manifests(stack: StackConfig) -> list[dict[str, Any]]:
    """Every Kubernetes object the tenants need, as plain manifests (what `verify` looks for in a cluster)."""
    return ([obj for tenant in stack.tenants for obj in tenant_objects(stack, tenant)] + shared_pool_policy(stack) +
            exempt_debug_policy(stack))


# --- what a team copies ---------------------------------------------------------------------------------------------

def pod_spec(stack: StackConfig, tenant: Tenant) -> dict[str, Any]:
    """A complete Pod spec the tenant's policy admits: one GPU unit of its first pool with that pool's fair share
    of CPU and memory (requests = limits: Guaranteed QoS), the pool's nodeSelector, and the tolerations its pools
    need (the GPU taint; the tenant's taint where a pool is dedicated to it; the pools' own and Spot taints)."""
    first = pool_offers(stack, tenant)[0]
    share = pool_share(stack, first.pool)
    tolerations = [toleration(GPU_TAINT)]
    if any(offer.dedicated for offer in pool_offers(stack, tenant)):
        tolerations.append(toleration(tenant_taint(tenant.name)))
    # The pools' own taints and the Spot taint AKS adds: without them the pod fits none of those nodes.
    facts = stack_pool_facts(stack)
    for name in tenant.pools:
        for taint in facts[name].tolerated_taints:
            if toleration(taint) not in tolerations and taint != tenant_taint(tenant.name):
                tolerations.append(toleration(taint))
    return {
        "nodeSelector": {POOL_LABEL: first.pool},
        "tolerations": tolerations,
        "restartPolicy": "Never",
        "containers": [{
            "name": SNIPPET_CONTAINER,
            "image": CUDA_CHECK_IMAGE,
            "command": ["nvidia-smi", "-L"],
            "resources": {"limits": {first.resource: 1, **share}, "requests": dict(share)},
        }],
    }


def tenant_plan(stack: StackConfig) -> list[dict[str, Any]]:
    """The `tenants` list of `plan --json`."""
    return [{
        "name": tenant.name,
        "namespace": tenant.name,
        "pools": list(tenant.pools),
        "offers": [{"pool": o.pool, "resource": o.resource, "perNode": o.per_node, "maxNodes": o.max_nodes,
                    "maxTotal": o.max_total, "dedicated": o.dedicated,
                    "taint": tenant_taint(tenant.name) if o.dedicated else None}
                   for o in pool_offers(stack, tenant)],
        "quota": dict(tenant.quota),
        "groups": list(tenant.groups),
        "guaranteed": tenant.guaranteed,
        "containerDefaults": container_defaults(stack, tenant),
        "policy": tenant_policy_name(tenant),
        "podSpec": pod_spec(stack, tenant),
    } for tenant in stack.tenants]


def platform_plan(stack: StackConfig) -> list[dict[str, Any]]:
    """The `platformNamespaces` list of `plan --json`: each namespace and the pools it may reach (null: every
    pool)."""
    return [{"name": ns.name, "pools": list(ns.pools) if ns.pools is not None else None} for ns in stack.platform]
