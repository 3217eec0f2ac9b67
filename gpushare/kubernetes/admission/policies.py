"""The ValidatingAdmissionPolicies (`admissionregistration.k8s.io/v1`, GA in Kubernetes 1.30) that bind tenants to
their pools, and their bindings: one per tenant; one for every other namespace (`shared`: pods there that could run on
a GPU node may use only the pools no tenant lists, except the workloads of `gpushare:platform` namespaces on their
pools); and one that judges debug containers in the exempt namespaces (`debug`). The CEL is in this package's YAML
files; this module picks each policy's entries and fills in the stack's data (names, pools, defaults). The suite
judges these policies with the API server's own ValidatingAdmissionPolicy plugin (`tools/vapcheck`).

Who is judged. A pod is judged when it could run on a GPU pool's node: it requests an `nvidia.com/` resource,
tolerates the GPU taint or a tenant taint (a toleration with no key and `operator: Exists` tolerates every taint;
only tolerations that pass NoSchedule taints count), selects `gpushare.io/pool` by nodeSelector or by a nodeAffinity
term, or sets `spec.nodeName` (a pod created with a node name skips the scheduler, so NoSchedule taints never stop
it; the kubelet still refuses one whose nodeSelector does not match its node, `pkg/kubelet/lifecycle/predicate.go`
GeneralPredicates, but only once bound, so outside tenant namespaces the node's pool, as its AKS name shows it, must
be one the pod may use). Every GPU pool carries the GPU
taint (`model.pool_node_taints`), so a pod that does none of these cannot reach a GPU node and is not judged.
`kube-system` and the GPU Operator's namespace are exempt but for debug containers.

Devices. AKS makes nvidia-container-runtime containerd's default runtime on every N-series node (Azure/AgentBaker
`pkg/agent/baker.go`, containerd templates: `{{- if IsNSeriesSKU }} default_runtime_name =
"nvidia-container-runtime"`), so every container there, GPU or not, passes the NVIDIA toolkit's hook, which gives a
container the devices its environment names, for unprivileged containers too unless
`accept-nvidia-visible-devices-envvar-when-unprivileged` is false, and its default is true (NVIDIA/
nvidia-container-toolkit `api/config/v1/config.go` GetDefault). With the device plugin's `deviceListStrategy: envvar`
(the default; NVIDIA/k8s-device-plugin `internal/plugin/server.go`) the plugin's Allocate response sets
NVIDIA_VISIBLE_DEVICES, and the kubelet puts the container's own environment after it (`pkg/kubelet/kubelet_pods.go`
GenerateRunContainerOptions: the device manager's `opts.Envs`, then `opts.Envs = append(opts.Envs, envs...)` of
makeEnvironmentVariables, where `env` overrides `envFrom`), so what a pod spec says wins. Hence the device rules
(validations.yaml): no container sets a device variable in `env` to anything but void/none; a GPU container's
`envFrom` has a prefix that cannot spell one; every container without a GPU request in a judged pod sets
NVIDIA_VISIBLE_DEVICES=void itself; no zero GPU requests, CDI annotations or NVIDIA runtime classes.

Admission order decides what the policy sees (kubernetes/website `access-authn-authz/admission-controllers.md`,
"mutating then validating"; `pkg/apis/core/v1/defaults.go` `SetDefaults_Pod`; `plugin/pkg/admission/limitranger`):
1. decoding defaults a Pod container's missing requests from its limits (Pods only, not pod templates);
2. the LimitRanger mutating plugin fills a Pod container's missing limits with the LimitRange `default` and missing
   requests with `defaultRequest` (Pods only);
3. validating admission policies see the result, including any sidecar a mutating webhook injected (a service mesh's
   proxy), which needs NVIDIA_VISIBLE_DEVICES=void like any container without a GPU request.
A workload's pod template gets neither, so the policy judges a template by the Pod it will create: it applies steps 1
and 2 itself (with the LimitRange's values) before checking Guaranteed QoS. A template that sets only a GPU limit
therefore yields Guaranteed pods and is admitted.

CEL features used are all in Kubernetes' base environment at 1.30 for new expressions (compatibility version
1.28/1.29, `k8s.io/apiserver/pkg/cel/environment/base.go`): optional types and `quantity()` (1.28), the strings
extension's `join` (cel-go `ext/strings.go`, every version), and `indexOf` for field paths in messages (Kubernetes'
lists library, `k8s.io/apiserver/pkg/cel/library/lists.go`). `quantity()` compares "1" with "1000m" and "1Gi" with
"1073741824" by value: the API server canonicalises quantities per format, so their strings may differ. Cost: each
expression walks the containers once per resource; the runtime limits are 1,000,000 per expression and 10,000,000 per
binding (`k8s.io/apiserver/pkg/apis/cel` `PerCallLimit`, `RuntimeCELCostBudget`), far above any real pod. An
evaluation error is a rejection (`failurePolicy: Fail`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Set
from typing import Any

from gpushare.kubernetes.admission.cel import fill, load
from gpushare.kubernetes.dra_tenants import tenant_classes, tenant_configs, tenant_only_classes, tenant_templates
from gpushare.kubernetes.kueue_admission import local_queue_names, priority_class_name
from gpushare.kubernetes.tenants import MANAGED_BY, NAME_LABEL, container_defaults, shared_pools, tenant_policy_name
from gpushare.model.stack import TENANT_LABEL, StackConfig, Tenant, tenant_taint
from gpushare.sharing import dra
from gpushare.sharing.pool_facts import PoolFactsByName
from gpushare.stackfile.namespaces import EXEMPT_NAMESPACES

SHARED_POLICY_NAME = "gpushare-shared-gpu-pools"
EXEMPT_DEBUG_POLICY_NAME = "gpushare-debug-containers"
POOLS_ANNOTATION = "gpushare.io/pools"
"""On each policy: the pools it lets its namespaces use, comma-separated (what `report` reads back)."""
ALL_POOLS = "*"
"""In the shared policy's map of platform namespaces: the namespace's workloads may reach every pool."""
POLICIES = ("tenant", "shared", "debug")
"""The policies' names in the YAML files' `in` lists."""
GUARDED_WORKLOADS = (("apps", ("deployments", "statefulsets", "daemonsets", "replicasets")),
                     ("batch", ("jobs", "cronjobs")))
"""Workloads whose pod templates are judged too, so `kubectl apply` fails at once instead of in a controller."""
DEBUG_CONTAINER_RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
                        "resources": ["pods/ephemeralcontainers"]}
CONTAINER_FIELDS = ("containers", "initContainers", "ephemeralContainers")
DRA_CLAIM_RULE = {"apiGroups": ["resource.k8s.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                  "resources": ["resourceclaims", "resourceclaimtemplates"]}
"""The DRA claim objects a namespace creates (`resourceclaims/status`, where the scheduler writes allocations, is
not matched); in stacks with DRA pools only. The resourceclaim controller's claims from a template are judged too:
they copy a template admitted here. With the default `matchPolicy: Equivalent` the API server also sends requests
in resource.k8s.io's other served versions (v1beta1, v1beta2) to the policy, converted to v1."""


def _cel_string(text: str) -> str:
    """A CEL string literal (CEL accepts JSON's double-quoted escapes)."""
    return json.dumps(text)


def _cel_list(items: list[str] | tuple[str, ...]) -> str:
    return "[" + ", ".join(_cel_string(item) for item in items) + "]"


def _cel_quoted(text: str) -> str:
    """A single-quoted CEL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _applies(entry: Mapping[str, Any], policy: str, flags: Set[str]) -> bool:
    """An entry of the YAML files is in `policy` (`in`), and the stack has (`if`) or lacks (`unless`) its feature."""
    return (policy in entry.get("in", POLICIES) and entry.get("if", "") in {*flags, ""}
            and entry.get("unless") not in flags)


def _per_container(rule: Mapping[str, str], data: Mapping[str, str]) -> str:
    """A `perContainer` variable: its condition and detail over every container field (fragments.yaml)."""
    condition, detail = fill(rule["condition"], data), fill(rule["detail"], data)
    each = {field: fill("${perContainerField}", {**data, "field": field, "condition": condition, "detail": detail})
            for field in CONTAINER_FIELDS}
    return fill("${perContainer}", {**data, **each})


def _with_cases(entry: Mapping[str, Any], expression: str, policy: str, flags: Set[str],
                data: Mapping[str, str]) -> str:
    """`expression` behind the entry's `cases` that apply, each as `when ? then : ...` (variables.yaml)."""
    for case in reversed(entry.get("cases", ())):
        if _applies(case, policy, flags):
            expression = fill(f"{case['when']} ? {case['then']} : {expression}", data)
    return expression


def _variables(policy: str, flags: Set[str], data: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"name": entry["name"],
             "expression": _with_cases(entry, _per_container(entry["perContainer"], data) if "perContainer" in entry
                                       else fill(entry["expression"], data), policy, flags, data)}
            for entry in load("variables.yaml") if _applies(entry, policy, flags)]


def _validations(policy: str, flags: Set[str], data: Mapping[str, str]) -> list[dict[str, str]]:
    rules = load("validations.yaml")
    data = {**data, **{key: fill(rules[key][policy], data, cel=False) for key in ("judgedPods", "claimants")}}
    validations = []
    for entry in rules["validations"]:
        if not _applies(entry, policy, flags):
            continue
        clauses = [clause if isinstance(clause, str) else clause["clause"] for clause in entry["allowWhen"]
                   if isinstance(clause, str) or _applies(clause, policy, flags)]
        message = fill(entry["message"], data, cel=False)
        validation = {"expression": fill(" || ".join(clauses), data), "message": message}
        if "messageExpression" in entry:
            validation["messageExpression"] = fill(entry["messageExpression"], {**data, "message": message})
        validations.append(validation)
    return validations


def _match_conditions(policy: str, flags: Set[str], data: Mapping[str, str]) -> list[dict[str, str]]:
    conditions = []
    for condition in load("match_conditions.yaml"):
        clauses = [condition["expression"], *(more["clause"] for more in condition.get("orWhen", ())
                                              if _applies(more, policy, flags))]
        expression = " || ".join(clauses)
        if any(_applies(case, policy, flags) for case in condition.get("cases", ())):
            expression = f"({expression})" if len(clauses) > 1 else expression
        conditions.append({"name": condition["name"],
                           "expression": _with_cases(condition, fill(expression, data), policy, flags, data)})
    return conditions


def _match_constraints(policy: str, flags: Set[str]) -> dict[str, Any]:
    if policy == "debug":
        return {"resourceRules": [dict(DEBUG_CONTAINER_RULE)]}
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]},
             dict(DEBUG_CONTAINER_RULE)]
    rules += [{"apiGroups": [group], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
               "resources": list(resources)} for group, resources in GUARDED_WORKLOADS]
    if "dra" in flags:
        rules.append(dict(DRA_CLAIM_RULE))
    return {"resourceRules": rules}


def _policy(name: str, policy: str, flags: Set[str], data: Mapping[str, str], labels: dict[str, str],
            pools: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": {**MANAGED_BY, **labels},
                     "annotations": {POOLS_ANNOTATION: ",".join(pools)}},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": _match_constraints(policy, flags),
            "matchConditions": _match_conditions(policy, flags, data),
            "variables": _variables(policy, flags, data),
            "validations": _validations(policy, flags, data),
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


def _stack_data(stack: StackConfig) -> dict[str, str]:
    return {"managedPools": _cel_list([pool.name for pool in stack.pools])}


def _dra_flags_and_data(stack: StackConfig) -> tuple[set[str], dict[str, str]]:
    """`dra` and its data where the stack has DRA pools (the policies then judge claims, validations.yaml)."""
    pools = [pool.name for pool in dra.dra_pools(stack)]
    if not pools:
        return set(), {}
    return {"dra"}, {"draPools": _cel_list(pools), "draPoolNames": ", ".join(pools)}


def _cel_value(value: Any) -> str:
    """A CEL literal of a JSON value (strings, integers, maps, lists): what an opaque config is compared with. Map
    values and list items are `dyn`: the API server's CEL allows only literals whose values share one type."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_cel_string(k)}: dyn({_cel_value(v)})" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(f"dyn({_cel_value(v)})" for v in value) + "]"
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TypeError(f"no CEL literal for {value!r} in an opaque config")
    return _cel_string(value) if isinstance(value, str) else str(value)


def _tenant_dra_data(stack: StackConfig, tenant: Tenant) -> dict[str, str]:
    classes, templates = tenant_classes(stack, tenant), tenant_templates(stack, tenant)
    return {"draClasses": _cel_list(classes), "draClassNames": ", ".join(classes) or "none",
            "draTemplates": _cel_list(templates), "draTemplateNames": ", ".join(templates) or "none",
            "draConfigs": _cel_value(tenant_configs(stack, tenant))}


def tenant_policy(stack: StackConfig, tenant: Tenant, facts: PoolFactsByName | None = None, *,
                  name: str | None = None, dispatched: bool = False) -> list[dict[str, Any]]:
    """The tenant's ValidatingAdmissionPolicy and its binding to the tenant's namespace.

    `dispatched`: the policy is for the tenant's namespace on a MultiKueue manager (`gpushare.kubernetes.multikueue`),
    built from a worker's stack (`stack`) so that a Job is refused there for what that worker's own policy would
    refuse in MultiKueue's copy of it. It leaves out the one rule that places pods, `pool` (validations.yaml): the
    manager runs no pod of the tenant's, its Kueue admits the Job on a flavor without node labels and unsuspends it
    with no pool, and the worker's Kueue gives the copy its pool. `name`: the policy's (and binding's) name, the
    tenant's usual one by default."""
    name = name or tenant_policy_name(tenant)
    labels = {TENANT_LABEL: tenant.name}
    pools = list(tenant.pools)
    data = {**_stack_data(stack), "tenant": tenant.name, "tenantTaint": tenant_taint(tenant.name).split(":")[0],
            "pools": _cel_list(pools), "poolNames": ", ".join(pools)}
    flags, dra_data = _dra_flags_and_data(stack)
    if flags:
        data |= dra_data | _tenant_dra_data(stack, tenant)
    if dispatched:
        flags.add("dispatched")
    if stack.queues.enabled:
        flags.add("queues")
        queues = local_queue_names(tenant)
        data |= {"localQueues": "[" + ", ".join(_cel_quoted(queue) for queue in queues) + "]",
                 "localQueueNames": ", ".join(queues), "priorityClassName": priority_class_name(tenant)}
        if tenant.pool_quota:
            flags.add("poolQuotas")
    if tenant.guaranteed:
        flags.add("guaranteed")
        defaults = container_defaults(stack, tenant, facts)
        data |= {"containerDefaults": "{" + ", ".join(f"{_cel_string(k)}: {_cel_string(v)}"
                                                      for k, v in sorted(defaults.items())) + "}",
                 "defaultCpu": defaults["cpu"], "defaultMemory": defaults["memory"]}
    return [_policy(name, "tenant", flags, data, labels, pools), _binding(name, "In", [tenant.name], labels)]


def shared_pool_policy(stack: StackConfig) -> list[dict[str, Any]]:
    """The policy for every namespace that is neither a tenant's nor exempt; none while there are no tenants.

    Pods there that can reach a GPU node may use only the pools no tenant lists, and the device rules hold, except
    for the workloads of `gpushare:platform` namespaces (node agents, CNI, monitoring) on the pools each may use.

    On a fleet's MultiKueue manager, the namespaces of the tenants dispatched from it are left out too
    (`fleet_dispatched_namespaces`): the fleet stack binds each its tenant's policies as its workers build them
    (`gpushare.kubernetes.multikueue.manager_policy`) and a quota of no pods, which judge its Jobs there; this
    policy would refuse every GPU Job of theirs (their pools are the workers', not here). Left out by name
    (`kubernetes.io/metadata.name`, which the API server sets on every namespace to its name), never by a label a
    namespace's writer could set, and only those names: a single-cluster stack has none."""
    if not stack.tenants:
        return []
    pools = shared_pools(stack)
    platform = "{" + ", ".join(
        f"{_cel_string(ns.name)}: {_cel_list(list(ns.pools) if ns.pools is not None else [ALL_POOLS])}"
        for ns in stack.platform) + "}"
    data = {**_stack_data(stack), "pools": _cel_list(pools), "poolNames": ", ".join(pools),
            "owners": "; ".join(f"{t.name}: {', '.join(t.pools)}" for t in stack.tenants),
            "platformNamespaces": platform}
    flags, dra_data = _dra_flags_and_data(stack)
    if flags:
        classes = tenant_only_classes(stack)
        data |= dra_data | {"tenantClasses": _cel_list(classes), "tenantClassNames": ", ".join(classes) or "none"}
    if pools:
        flags.add("sharedPools")
    excluded = sorted({*EXEMPT_NAMESPACES, *(t.name for t in stack.tenants), *fleet_dispatched_namespaces(stack)})
    return [_policy(SHARED_POLICY_NAME, "shared", flags, data, {}, pools),
            _binding(SHARED_POLICY_NAME, "NotIn", excluded, {})]


def fleet_dispatched_namespaces(stack: StackConfig) -> list[str]:
    """The namespaces of the tenants the stack's fleet dispatches from this cluster (`StackConfig.fleet_manager`),
    judged by the fleet stack's policies; none for a stack that is no fleet's dispatch manager."""
    return [t.name for t in stack.fleet_manager.tenants] if stack.fleet_manager else []


def exempt_debug_policy(stack: StackConfig) -> list[dict[str, Any]]:
    """The exempt namespaces (kube-system, the GPU Operator's) are judged for debug containers alone: a debug
    container added to one of their node agents' pods lands on a GPU node like any other, so it must not name
    devices and, where the pod can reach a GPU node, sets NVIDIA_VISIBLE_DEVICES=void. None while there are no
    tenants."""
    if not stack.tenants:
        return []
    return [_policy(EXEMPT_DEBUG_POLICY_NAME, "debug", set(), _stack_data(stack), {}, []),
            _binding(EXEMPT_DEBUG_POLICY_NAME, "In", list(EXEMPT_NAMESPACES), {})]
