"""Tenants: a namespace per team, bound to its GPU pools at admission, with GPU quotas and Guaranteed QoS.

Everything is plain Kubernetes (no controller to run). Per tenant: a Namespace, a ResourceQuota on the GPU
resources its pools advertise, a LimitRange whose container defaults make requests equal limits, `edit`
RoleBindings for its Entra ID groups, and a ValidatingAdmissionPolicy (`admissionregistration.k8s.io/v1`, GA in
Kubernetes 1.30) with its binding. One more policy covers every other namespace: GPU pods there may use only the
pools no tenant lists. `kube-system` and the GPU Operator's namespace are exempt.

Admission order decides what the policy sees (kubernetes/website `access-authn-authz/admission-controllers.md`,
"mutating then validating"; `pkg/apis/core/v1/defaults.go` `SetDefaults_Pod`; `plugin/pkg/admission/limitranger`):
1. decoding defaults a Pod container's missing requests from its limits (Pods only, not pod templates);
2. the LimitRanger mutating plugin fills a Pod container's missing limits with the LimitRange `default` and
   missing requests with `defaultRequest` (Pods only);
3. validating admission policies see the result.
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
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from gpushare.sharing.operator_values import NAMESPACE as OPERATOR_NAMESPACE
from gpushare.sharing.operator_values import toleration
from gpushare.sharing.pool_facts import PoolFacts, stack_pool_facts
from gpushare.stackfile.model import (
    CUDA_CHECK_IMAGE,
    GPU_TAINT,
    POOL_LABEL,
    TENANT_LABEL,
    StackConfig,
    Tenant,
    tenant_taint,
)

MANAGED_BY = {"app.kubernetes.io/managed-by": "gpushare"}
MIN_KUBERNETES_VERSION = (1, 30)
"""ValidatingAdmissionPolicy is GA (`admissionregistration.k8s.io/v1`) from Kubernetes 1.30."""
NAMESPACE_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
"""A DNS-1123 label, as Kubernetes requires of namespace names."""
EXEMPT_NAMESPACES = ("kube-system", OPERATOR_NAMESPACE)
"""Never judged by the pool policies: cluster add-ons and the GPU Operator schedule their own pods."""
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


def namespace_problem(name: str) -> str | None:
    """Why `name` cannot be a tenant's namespace, or None."""
    if not NAMESPACE_RE.match(name):
        return (f"must be a Kubernetes namespace name (DNS-1123 label: 1-63 lowercase letters, digits or '-', "
                f"starting and ending with a letter or digit), got {name!r}")
    if name == "default" or name.startswith("kube-") or name == OPERATOR_NAMESPACE:
        return (f"{name!r} is reserved (default, kube-*, and the GPU Operator's namespace {OPERATOR_NAMESPACE}); "
                f"choose the team's name")
    return None


def _version_tuple(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def kubernetes_version_problem(version: str | None) -> str | None:
    """Why the cluster's version cannot run tenants' admission policies, or None (AKS's default is newer)."""
    if version is not None and _version_tuple(version) < MIN_KUBERNETES_VERSION:
        minimum = ".".join(map(str, MIN_KUBERNETES_VERSION))
        return (f"tenants need Kubernetes {minimum} or newer (ValidatingAdmissionPolicy v1), got {version!r}; "
                f"set kubernetesVersion to \"{minimum}\" or later")
    return None


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


def tenant_warnings(stack: StackConfig) -> list[str]:
    """A quota above what the tenant's pools can ever advertise (at autoscale max) never binds: say so."""
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
    return warnings


# --- the admission policy ---------------------------------------------------------------------------------------

def _cel_string(text: str) -> str:
    """A CEL string literal (CEL accepts JSON's double-quoted escapes)."""
    return json.dumps(text)


def _cel_list(items: list[str]) -> str:
    return "[" + ", ".join(_cel_string(item) for item in items) + "]"


POD_SPEC_EXPRESSION = (
    "request.kind.kind == 'Pod' ? dyn(object.spec)"
    " : request.kind.kind == 'CronJob' ? dyn(object.spec).jobTemplate.spec.template.spec"
    " : dyn(object.spec).template.spec"
)
"""The pod spec judged: the Pod's own, or the template of the Pods a workload creates (`dyn`: one expression
serves every matched kind without type-check warnings for fields another kind lacks)."""
CONTAINERS_EXPRESSION = "variables.podSpec.containers + variables.podSpec.?initContainers.orValue([])"
GPU_POD_EXPRESSION = (
    "variables.containers.exists(c, "
    f"c.?resources.?limits.orValue({{}}).exists(r, r.startsWith('{GPU_RESOURCE_PREFIX}')) || "
    f"c.?resources.?requests.orValue({{}}).exists(r, r.startsWith('{GPU_RESOURCE_PREFIX}')))"
)
POOL_EXPRESSION = f"variables.podSpec.?nodeSelector[?'{POOL_LABEL}'].orValue('')"
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


def _defaults_expression(defaults: dict[str, str]) -> str:
    template = "{" + ", ".join(f"{_cel_string(k)}: {_cel_string(v)}" for k, v in sorted(defaults.items())) + "}"
    return f"request.kind.kind == 'Pod' ? {{}} : {template}"


def _match_constraints() -> dict[str, Any]:
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]
    rules += [{"apiGroups": [group], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
               "resources": list(resources)} for group, resources in GUARDED_WORKLOADS]
    return {"resourceRules": rules}


def pool_message(namespace: str, pools: list[str]) -> str:
    return f"GPU pods in namespace {namespace} must set nodeSelector {POOL_LABEL} to one of: {', '.join(pools)}"


def _pool_validation(message: str, message_expression_head: str, pools: list[str]) -> dict[str, str]:
    got = "(variables.pool == '' ? '' : '; got ' + variables.pool)"
    return {
        "expression": f"!variables.gpuPod || variables.pool in {_cel_list(pools)}",
        "message": message,
        "messageExpression": f"{KIND_PREFIX_EXPRESSION} + {message_expression_head} + {got}",
    }


def _policy(name: str, variables: list[tuple[str, str]], validations: list[dict[str, str]],
            labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": {**MANAGED_BY, **labels}},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": _match_constraints(),
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


def _common_variables() -> list[tuple[str, str]]:
    return [("podSpec", POD_SPEC_EXPRESSION), ("containers", CONTAINERS_EXPRESSION),
            ("gpuPod", GPU_POD_EXPRESSION), ("pool", POOL_EXPRESSION)]


def tenant_policy_name(tenant: Tenant) -> str:
    return f"gpushare-tenant-{tenant.name}"


def guaranteed_message(tenant: Tenant, defaults: dict[str, str]) -> str:
    return (f"GPU pods in namespace {tenant.name} must be Guaranteed QoS: give every container CPU and memory "
            f"requests equal to its limits, or set neither to take the namespace defaults "
            f"(cpu {defaults['cpu']}, memory {defaults['memory']})")


def tenant_policy(stack: StackConfig, tenant: Tenant) -> list[dict[str, Any]]:
    """The tenant's ValidatingAdmissionPolicy and its binding to the tenant's namespace."""
    name = tenant_policy_name(tenant)
    labels = {TENANT_LABEL: tenant.name}
    pools = list(tenant.pools)
    message = pool_message(tenant.name, pools)
    variables = _common_variables()
    validations = [_pool_validation(message, _cel_string(message), pools)]
    if tenant.guaranteed:
        defaults = container_defaults(stack, tenant)
        variables += [("defaults", _defaults_expression(defaults)), ("notGuaranteed", NOT_GUARANTEED_EXPRESSION)]
        qos = guaranteed_message(tenant, defaults)
        validations.append({
            "expression": "!variables.gpuPod || size(variables.notGuaranteed) == 0",
            "message": qos,
            "messageExpression": f"{KIND_PREFIX_EXPRESSION} + {_cel_string(qos + '; not Guaranteed: ')} + "
                                 f"variables.notGuaranteed.join(', ')",
        })
    return [_policy(name, variables, validations, labels), _binding(name, "In", [tenant.name], labels)]


def shared_pool_policy(stack: StackConfig) -> list[dict[str, Any]]:
    """The policy for every namespace that is neither a tenant's nor exempt; none while there are no tenants."""
    if not stack.tenants:
        return []
    pools = shared_pools(stack)
    owners = "; ".join(f"{t.name}: {', '.join(t.pools)}" for t in stack.tenants)
    if pools:
        message = (f"GPU pods outside tenant namespaces must set nodeSelector {POOL_LABEL} to one of: "
                   f"{', '.join(pools)} (the pools no tenant lists)")
        tail = f" must set nodeSelector {POOL_LABEL} to one of: {', '.join(pools)} (the pools no tenant lists)"
        head = f"'GPU pods in namespace ' + request.namespace + {_cel_string(tail)}"
        validation = _pool_validation(message, head, pools)
    else:
        message = (f"GPU pods are allowed only in tenant namespaces: every GPU pool belongs to a tenant ({owners})")
        validation = {
            "expression": "!variables.gpuPod",
            "message": message,
            "messageExpression": (f"{KIND_PREFIX_EXPRESSION} + 'GPU pods in namespace ' + request.namespace + "
                                  f"{_cel_string(f' are not allowed: every GPU pool belongs to a tenant ({owners})')}"),
        }
    excluded = sorted({*EXEMPT_NAMESPACES, *(t.name for t in stack.tenants)})
    return [_policy(SHARED_POLICY_NAME, _common_variables(), [validation], {}),
            _binding(SHARED_POLICY_NAME, "NotIn", excluded, {})]


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


def tenant_objects(stack: StackConfig, tenant: Tenant) -> list[dict[str, Any]]:
    """One tenant's objects: Namespace first, then what lives in it, then its policy and binding."""
    quota = quota_object(tenant)
    return [namespace_object(tenant), *([quota] if quota else []), limit_range_object(stack, tenant),
            *role_binding_objects(tenant), *tenant_policy(stack, tenant)]


def tenant_manifests(stack: StackConfig) -> list[dict[str, Any]]:
    """Every Kubernetes object the tenants need, as plain manifests (what `verify` looks for in a cluster)."""
    return [obj for tenant in stack.tenants for obj in tenant_objects(stack, tenant)] + shared_pool_policy(stack)


# --- what a team copies ---------------------------------------------------------------------------------------------

def pod_spec(stack: StackConfig, tenant: Tenant) -> dict[str, Any]:
    """A complete Pod spec the tenant's policy admits: one GPU unit of its first pool with that pool's fair share
    of CPU and memory (requests = limits: Guaranteed QoS), the pool's nodeSelector, and the tolerations its pools
    need (the GPU taint; the tenant's taint where a pool is dedicated to it)."""
    first = pool_offers(stack, tenant)[0]
    share = pool_share(stack, first.pool)
    tolerations = [toleration(GPU_TAINT)]
    if any(offer.dedicated for offer in pool_offers(stack, tenant)):
        tolerations.append(toleration(tenant_taint(tenant.name)))
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
