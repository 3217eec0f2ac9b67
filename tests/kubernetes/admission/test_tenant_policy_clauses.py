"""Every clause of every validation of the tenant admission policies, each with an admit case that the clause alone
lets through and a refuse case that the validation refuses, judged by the API server's own ValidatingAdmissionPolicy
plugin (`tools/vapcheck`).

A validation's expression is a disjunction (`variables.debug || !variables.judged || variables.pool in [...]`); its
clauses are the top-level `||` operands. `CLAUSES` gives each clause of each policy of the test stack a `Case`:
- `admit`: a request the policies admit, and that the validation refuses once that clause alone is replaced by
  `false`: the clause is what lets it through, so a bug that turns the clause false is caught;
- `refuse`: a request, most often the admit case with that clause made false, that the validation refuses: a bug
  that turns the clause true where it must not be is caught.
The policies are judged with each validation's message replaced by its name, next to a copy of it per clause with that
clause replaced by `false` (named `<validation> without <clause>`), so a decision names the validations that fail.
A new validation or clause without cases here fails `test_every_clause_of_every_validation_has_cases`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml

from gpushare.kubernetes.admission.policies import EXEMPT_DEBUG_POLICY_NAME, SHARED_POLICY_NAME
from gpushare.kubernetes.tenant_objects import tenant_manifests
from gpushare.kubernetes.tenants import tenant_policy_name
from gpushare.stackfile.config import parse_config
from tests.kubernetes.apiserver_admission import plugin_cluster
from tests.kubernetes.admission.test_tenant_admission import (
    ALL_GPUS,
    DAEMON_SET_CONTROLLER,
    DCGM,
    STACK_YAML,
    T4BATCH_AFFINITY,
    TOLERATE_ALL,
    TOLERATE_GPU,
    UNMANAGED,
    VOID,
    annotated,
    annotated_template,
    container,
    daemon_set_pod,
    gpu,
    pod,
    tolerate_tenant,
    with_debug_container,
    workload,
)

TENANT, NLP = "gpushare-tenant-vision", "gpushare-tenant-nlp"
SHARED, DEBUG_POLICY = SHARED_POLICY_NAME, EXEMPT_DEBUG_POLICY_NAME
ALL_LISTED = f"{SHARED_POLICY_NAME} (every pool a tenant's)"
"""The shared policy of a stack whose every pool a tenant lists: its pool validation refuses every judged pod."""
POOLS = "[pools]"
"""A clause's list of pool names, written so: the same clause of each tenant's policy."""


# --- the policies' validations and their clauses ------------------------------------------------------------------

def clauses(expression: str) -> list[str]:
    """The top-level `||` operands of a CEL expression (outside parentheses, brackets, braces and string literals)."""
    parts, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(expression):
        char = expression[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0 and expression.startswith(" || ", i):
            parts.append(expression[start:i])
            start = i + 4
            i += 3
        i += 1
    return [*parts, expression[start:]]


def _shown(clause: str) -> str:
    """A clause with its list of string literals (a policy's pools) written `[pools]`."""
    head, bracket, tail = clause.partition(" in [")
    return f"{head} in {POOLS}" if bracket and tail.startswith('"') and tail.endswith("]") else clause


def validation_name(validation: dict[str, str]) -> str:
    """A validation by the variable its last clause reads (`size(variables.deviceEnv) == 0`: deviceEnv)."""
    last = clauses(validation["expression"])[-1]
    return last.split("variables.", 1)[1].split(" ", 1)[0].split(")", 1)[0].split(".", 1)[0]


def policies(manifests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {m["metadata"]["name"]: m for m in manifests if m["kind"] == "ValidatingAdmissionPolicy"}


def policy_clauses(policy: dict[str, Any]) -> dict[tuple[str, str], tuple[int, int]]:
    """(validation, clause as `_shown`) -> (the validation's index, the clause's index)."""
    found = {}
    for v, validation in enumerate(policy["spec"]["validations"]):
        for c, clause in enumerate(clauses(validation["expression"])):
            found[validation_name(validation), _shown(clause)] = (v, c)
    return found


def without(policy: str, name: str, clause: str) -> str:
    return f"{policy}: {name} without {clause}"


def named_policy(key: str, policy: dict[str, Any]) -> dict[str, Any]:
    """`policy` whose validations fail with their names, and a copy of each per clause with that clause `false`."""
    policy = copy.deepcopy(policy)
    named = []
    for validation in policy["spec"]["validations"]:
        name = validation_name(validation)
        parts = clauses(validation["expression"])
        named.append({"expression": validation["expression"], "message": f"{key}: {name}"})
        for c, clause in enumerate(parts):
            mutated = " || ".join("false" if i == c else part for i, part in enumerate(parts))
            named.append({"expression": mutated, "message": without(key, name, _shown(clause))})
    policy["spec"]["validations"] = named
    return policy


def named_manifests(manifests: list[dict[str, Any]], key_of: dict[str, str]) -> list[dict[str, Any]]:
    return [named_policy(key_of.get(m["metadata"]["name"], m["metadata"]["name"]), m)
            if m["kind"] == "ValidatingAdmissionPolicy" else m for m in manifests]


# --- the requests ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Request:
    obj: dict[str, Any]
    namespace: str
    how: dict[str, Any] = field(default_factory=dict)
    """`PluginCluster.admit`'s keywords: operation, old, subresource, user."""


def create(obj: dict[str, Any], namespace: str, user: str | None = None) -> Request:
    return Request(obj, namespace, {"user": user} if user else {})


def debugged(stored: dict[str, Any], namespace: str, env: list[dict[str, Any]] | None = VOID,
             user: str | None = None) -> Request:
    """`kubectl debug` on a pod stored before a policy tightened: its debug container sent to the subresource."""
    return Request(with_debug_container(stored, env), namespace,
                   {"operation": "UPDATE", "old": stored, "subresource": "ephemeralcontainers",
                    **({"user": user} if user else {})})


@dataclass(frozen=True)
class Case:
    admit: Request
    refuse: Request


H100_POD = pod(container(limits=gpu()), pool="h100mig")
"""A compliant GPU pod of tenant vision (the LimitRange makes it Guaranteed)."""
SHARED_POD = pod(container(limits=gpu("nvidia.com/gpu")), pool="t4batch")
"""A GPU pod on the pool no tenant lists."""
AIMED_AT_A100 = {"kubernetes.azure.com/agentpool": "a100"}
"""AKS's pool label naming a pool gpushare manages: not aimed elsewhere."""
CDI = {"cdi.k8s.io/all": "nvidia.com/gpu=all"}
NOT_CDI = {"example.com/cdi": "x"}
CNI_AGENT = daemon_set_pod(container(env=DCGM), tolerations=[TOLERATE_ALL])
"""A platform node agent's pod: every taint tolerated, every GPU of its node in its env (dcgm-exporter)."""


def burstable(**spec: Any) -> dict[str, Any]:
    return pod(container(limits=gpu(cpu="2"), requests={"cpu": "1"}), **spec)


def gpu_env_from(prefix: str | None, resource: str = "nvidia.com/mig-1g.12gb", **spec: Any) -> dict[str, Any]:
    source = {"configMapRef": {"name": "c"}, **({"prefix": prefix} if prefix else {})}
    return pod(container(limits={resource: 1}, env_from=[source]), **spec)


def on_node(node: str) -> dict[str, Any]:
    """A GPU pod of the pool no tenant lists, created with `node` as its spec.nodeName."""
    return pod(container(limits=gpu("nvidia.com/gpu")), pool="t4batch", nodeName=node)


def platform_deployment(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return workload("Deployment", pod(*containers, tolerations=[TOLERATE_ALL], **spec))


CLAUSES: dict[tuple[str, str, str], Case] = {
    # The tenant's policy (namespace vision).
    (TENANT, "nodeName", "variables.nodeName == ''"): Case(
        create(H100_POD, "vision"), create(pod(container(limits=gpu()), pool="h100mig", nodeName="n1"), "vision")),
    (TENANT, "foreignTolerations", "variables.debug"): Case(
        debugged(pod(container(limits=gpu()), pool="h100mig", tolerations=[TOLERATE_ALL]), "vision"),
        create(pod(container(limits=gpu()), pool="h100mig", tolerations=[TOLERATE_ALL]), "vision")),
    (TENANT, "foreignTolerations", "variables.aimedElsewhere"): Case(
        create(pod(container(limits={"nvidia.com/gpu": 1}), nodeSelector=UNMANAGED, tolerations=[TOLERATE_ALL]),
               "vision"),
        create(pod(container(limits={"nvidia.com/gpu": 1}), nodeSelector=AIMED_AT_A100, tolerations=[TOLERATE_ALL]),
               "vision")),
    (TENANT, "foreignTolerations", "size(variables.foreignTolerations) == 0"): Case(
        create(pod(container(limits=gpu()), pool="h100mig", tolerations=[tolerate_tenant("vision")]), "vision"),
        create(pod(container(limits=gpu()), pool="h100mig", tolerations=[tolerate_tenant("nlp")]), "vision")),
    (TENANT, "pool", "variables.debug"): Case(
        debugged(pod(container(limits=gpu())), "vision"), create(pod(container(limits=gpu())), "vision")),
    (TENANT, "pool", "!variables.judged"): Case(
        create(pod(container(env=VOID)), "vision"), create(pod(container(env=VOID), tolerations=[TOLERATE_GPU]),
                                                           "vision")),
    (TENANT, "pool", "variables.aimedElsewhere"): Case(
        create(pod(container(limits={"nvidia.com/gpu": 1}), nodeSelector=UNMANAGED), "vision"),
        create(pod(container(limits={"nvidia.com/gpu": 1}), nodeSelector=AIMED_AT_A100), "vision")),
    (TENANT, "pool", f"variables.pool in {POOLS}"): Case(
        create(H100_POD, "vision"), create(pod(container(limits=gpu()), pool="a100"), "vision")),
    (TENANT, "zeroGpu", "size(variables.zeroGpu) == 0"): Case(
        create(H100_POD, "vision"),
        create(pod(container(limits={"nvidia.com/mig-1g.12gb": 0}, env=VOID), pool="h100mig"), "vision")),
    (TENANT, "deviceEnv", "size(variables.deviceEnv) == 0"): Case(
        create(pod(container(limits=gpu()), container("s", env=VOID), pool="h100mig"), "vision"),
        create(pod(container(limits=gpu()), container("s", env=[*VOID, *ALL_GPUS]), pool="h100mig"), "vision")),
    (TENANT, "unsafeEnvFrom", "size(variables.unsafeEnvFrom) == 0"): Case(
        create(gpu_env_from("APP_", pool="h100mig"), "vision"), create(gpu_env_from(None, pool="h100mig"), "vision")),
    (TENANT, "noVoid", "!variables.judged"): Case(
        create(pod(container()), "vision"), create(pod(container(), tolerations=[TOLERATE_GPU]), "vision")),
    (TENANT, "noVoid", "size(variables.noVoid) == 0"): Case(
        create(pod(container(limits=gpu()), container("s", env=VOID), pool="h100mig"), "vision"),
        create(pod(container(limits=gpu()), container("s"), pool="h100mig"), "vision")),
    (TENANT, "cdiAnnotations", "variables.debug"): Case(
        debugged(annotated(H100_POD, CDI), "vision"), create(annotated(H100_POD, CDI), "vision")),
    (TENANT, "cdiAnnotations", "size(variables.cdiAnnotations) == 0"): Case(
        create(annotated(H100_POD, NOT_CDI), "vision"), create(annotated(H100_POD, CDI), "vision")),
    (TENANT, "runtimeClass", "variables.debug"): Case(
        debugged(pod(container(limits=gpu()), pool="h100mig", runtimeClassName="nvidia"), "vision"),
        create(pod(container(limits=gpu()), pool="h100mig", runtimeClassName="nvidia"), "vision")),
    (TENANT, "runtimeClass", "!variables.judged"): Case(
        create(pod(container(), runtimeClassName="nvidia"), "vision"),
        create(pod(container(env=VOID), pool="h100mig", runtimeClassName="nvidia"), "vision")),
    (TENANT, "runtimeClass", "variables.aimedElsewhere"): Case(
        create(pod(container(limits={"nvidia.com/gpu": 1}), nodeSelector=UNMANAGED, runtimeClassName="nvidia"),
               "vision"),
        create(pod(container(limits={"nvidia.com/gpu": 1}), nodeSelector=AIMED_AT_A100, runtimeClassName="nvidia"),
               "vision")),
    (TENANT, "runtimeClass", "!variables.runtimeClass.startsWith('nvidia')"): Case(
        create(pod(container(limits=gpu()), pool="h100mig", runtimeClassName="kata"), "vision"),
        create(pod(container(limits=gpu()), pool="h100mig", runtimeClassName="nvidia-cdi"), "vision")),
    (TENANT, "priorityClass", "variables.debug"): Case(
        debugged(pod(container(limits=gpu()), pool="h100mig", priorityClassName="system-node-critical"), "vision"),
        create(pod(container(limits=gpu()), pool="h100mig", priorityClassName="system-node-critical"), "vision")),
    (TENANT, "priorityClass", "!variables.priorityClass.startsWith('system-')"): Case(
        create(pod(container(), priorityClassName="batch-low"), "vision"),
        create(pod(container(), priorityClassName="system-cluster-critical"), "vision")),
    (TENANT, "notGuaranteed", "variables.debug"): Case(
        debugged(burstable(nodeSelector={"gpushare.io/pool": "h100mig"}), "vision"),
        create(burstable(nodeSelector={"gpushare.io/pool": "h100mig"}), "vision")),
    (TENANT, "notGuaranteed", "!variables.gpuPod"): Case(
        create(pod(container(requests={"cpu": "100m"}, env=VOID), pool="h100mig"), "vision"),
        create(pod(container(limits=gpu(), requests={"cpu": "100m"}), pool="h100mig"), "vision")),
    (TENANT, "notGuaranteed", "size(variables.notGuaranteed) == 0"): Case(
        create(pod(container(limits=gpu(cpu="2"), requests={"cpu": "2"}), pool="h100mig"), "vision"),
        create(burstable(nodeSelector={"gpushare.io/pool": "h100mig"}), "vision")),

    # The shared policy (every other namespace: team-x, logging; platform namespaces calico-system and monitoring).
    (SHARED, "nodeNamePool", "variables.nodeName == ''"): Case(
        create(SHARED_POD, "team-x"), create(on_node("aks-a100-12345678-vmss000000"), "team-x")),
    (SHARED, "nodeNamePool", "'*' in variables.platformPools"): Case(
        create(daemon_set_pod(container(env=DCGM), tolerations=[TOLERATE_ALL], nodeName="aks-a100-12345678-vmss000000"),
               "calico-system", DAEMON_SET_CONTROLLER),
        create(daemon_set_pod(container(env=DCGM), tolerations=[TOLERATE_ALL], nodeName="aks-a100-12345678-vmss000000"),
               "monitoring", DAEMON_SET_CONTROLLER)),
    (SHARED, "nodeNamePool", "variables.unmanagedNode"): Case(
        create(pod(container(limits={"nvidia.com/gpu": 1}), nodeSelector=UNMANAGED,
                   nodeName="aks-legacygpu-12345678-vmss000000"), "team-x"),
        create(pod(container(limits={"nvidia.com/gpu": 1}), nodeSelector=UNMANAGED,
                   nodeName="aks-a100-12345678-vmss000000"), "team-x")),
    (SHARED, "nodeNamePool", "variables.nodeNamePool in variables.usablePools"): Case(
        create(on_node("aks-t4batch-12345678-vmss000001"), "team-x"),
        create(on_node("aks-a100-12345678-vmss000000"), "team-x")),
    (SHARED, "platformPlaced", "!variables.platform"): Case(
        create(workload("DaemonSet", pod(container(env=VOID), pool="t4batch", tolerations=[TOLERATE_GPU])), "team-x"),
        create(workload("DaemonSet", pod(container(env=VOID), pool="h100mig", tolerations=[TOLERATE_GPU])),
               "monitoring")),
    (SHARED, "platformPlaced", "variables.platformPlaced"): Case(
        create(workload("DaemonSet", pod(container(env=DCGM), tolerations=[TOLERATE_ALL], affinity=T4BATCH_AFFINITY)),
               "monitoring"),
        create(workload("DaemonSet", pod(container(env=DCGM), tolerations=[TOLERATE_ALL])), "monitoring")),
    (SHARED, "pool", "variables.debug"): Case(
        debugged(pod(container(limits=gpu("nvidia.com/gpu"))), "team-x"),
        create(pod(container(limits=gpu("nvidia.com/gpu"))), "team-x")),
    (SHARED, "pool", "!variables.judged"): Case(
        create(platform_deployment(container(limits=gpu("nvidia.com/gpu"), env=VOID)), "calico-system"),
        create(platform_deployment(container(limits=gpu("nvidia.com/gpu"), env=VOID)), "logging")),
    (SHARED, "pool", "variables.aimedElsewhere"): Case(
        create(pod(container(limits={"nvidia.com/gpu": 1}), nodeSelector=UNMANAGED), "team-x"),
        create(pod(container(limits={"nvidia.com/gpu": 1}), nodeSelector=AIMED_AT_A100), "team-x")),
    (SHARED, "pool", f"variables.pool in {POOLS}"): Case(
        create(SHARED_POD, "team-x"), create(pod(container(limits=gpu("nvidia.com/gpu")), pool="a100"), "team-x")),
    (SHARED, "zeroGpu", "size(variables.zeroGpu) == 0"): Case(
        create(SHARED_POD, "team-x"),
        create(pod(container(limits={"nvidia.com/gpu": "0"}, env=VOID), pool="t4batch"), "team-x")),
    (SHARED, "deviceEnv", "variables.platform"): Case(
        create(CNI_AGENT, "calico-system", DAEMON_SET_CONTROLLER), create(CNI_AGENT, "calico-system")),
    (SHARED, "deviceEnv", "size(variables.deviceEnv) == 0"): Case(
        create(pod(container(env=VOID)), "default"), create(pod(container(env=ALL_GPUS)), "default")),
    (SHARED, "unsafeEnvFrom", "variables.platform"): Case(
        create(workload("Deployment", gpu_env_from(None, "nvidia.com/gpu", tolerations=[TOLERATE_ALL])),
               "calico-system"),
        create(workload("Deployment", gpu_env_from(None, "nvidia.com/gpu", pool="t4batch")), "logging")),
    (SHARED, "unsafeEnvFrom", "size(variables.unsafeEnvFrom) == 0"): Case(
        create(gpu_env_from("APP_", "nvidia.com/gpu", pool="t4batch"), "team-x"),
        create(gpu_env_from(None, "nvidia.com/gpu", pool="t4batch"), "team-x")),
    (SHARED, "noVoid", "!variables.judged"): Case(
        create(pod(container()), "team-x"), create(pod(container(), pool="t4batch"), "team-x")),
    (SHARED, "noVoid", "size(variables.noVoid) == 0"): Case(
        create(pod(container(env=VOID), pool="t4batch", tolerations=[TOLERATE_GPU]), "team-x"),
        create(pod(container(), pool="t4batch", tolerations=[TOLERATE_GPU]), "team-x")),
    (SHARED, "cdiAnnotations", "variables.platform"): Case(
        create(annotated_template(workload("Deployment", pod(container())), CDI), "calico-system"),
        create(annotated_template(workload("Deployment", pod(container())), CDI), "logging")),
    (SHARED, "cdiAnnotations", "variables.debug"): Case(
        debugged(annotated(SHARED_POD, CDI), "team-x"), create(annotated(SHARED_POD, CDI), "team-x")),
    (SHARED, "cdiAnnotations", "size(variables.cdiAnnotations) == 0"): Case(
        create(annotated(SHARED_POD, NOT_CDI), "team-x"), create(annotated(SHARED_POD, CDI), "team-x")),
    (SHARED, "runtimeClass", "variables.debug"): Case(
        debugged(pod(container(limits=gpu("nvidia.com/gpu")), pool="t4batch", runtimeClassName="nvidia"), "team-x"),
        create(pod(container(limits=gpu("nvidia.com/gpu")), pool="t4batch", runtimeClassName="nvidia"), "team-x")),
    (SHARED, "runtimeClass", "!variables.judged"): Case(
        create(platform_deployment(container(), runtimeClassName="nvidia"), "calico-system"),
        create(pod(container(env=VOID), pool="t4batch", runtimeClassName="nvidia"), "team-x")),
    (SHARED, "runtimeClass", "variables.aimedElsewhere"): Case(
        create(pod(container(limits={"nvidia.com/gpu": 1}), nodeSelector=UNMANAGED, runtimeClassName="nvidia"),
               "team-x"),
        create(pod(container(limits={"nvidia.com/gpu": 1}), nodeSelector=AIMED_AT_A100, runtimeClassName="nvidia"),
               "team-x")),
    (SHARED, "runtimeClass", "!variables.runtimeClass.startsWith('nvidia')"): Case(
        create(pod(container(limits=gpu("nvidia.com/gpu")), pool="t4batch", runtimeClassName="kata"), "team-x"),
        create(pod(container(limits=gpu("nvidia.com/gpu")), pool="t4batch", runtimeClassName="nvidia-legacy"),
               "team-x")),

    # kube-system and the GPU Operator's namespace: debug containers only.
    (DEBUG_POLICY, "deviceEnv", "size(variables.deviceEnv) == 0"): Case(
        debugged(CNI_AGENT, "kube-system"), debugged(CNI_AGENT, "kube-system", ALL_GPUS)),
    (DEBUG_POLICY, "noVoid", "!variables.judged"): Case(
        debugged(pod(container()), "gpu-operator", None),
        debugged(pod(container(), pool="t4ts"), "gpu-operator", None)),
    (DEBUG_POLICY, "noVoid", "size(variables.noVoid) == 0"): Case(
        debugged(CNI_AGENT, "kube-system"), debugged(CNI_AGENT, "kube-system", None)),

    # The shared policy where every pool is a tenant's: its pool validation.
    (ALL_LISTED, "aimedElsewhere", "variables.debug"): Case(
        debugged(pod(container(limits=gpu("nvidia.com/gpu"))), "team-x"),
        create(pod(container(limits=gpu("nvidia.com/gpu"))), "team-x")),
    (ALL_LISTED, "aimedElsewhere", "!variables.judged"): Case(
        create(pod(container(env=VOID)), "team-x"), create(pod(container(env=VOID), pool="a100"), "team-x")),
    (ALL_LISTED, "aimedElsewhere", "variables.aimedElsewhere"): Case(
        create(pod(container(limits={"nvidia.com/gpu": 1}), nodeSelector=UNMANAGED), "team-x"),
        create(pod(container(limits={"nvidia.com/gpu": 1}), nodeSelector=AIMED_AT_A100), "team-x")),
}


# --- the stacks and their clusters ------------------------------------------------------------------------------------

def _stack(every_pool_listed: bool = False):
    raw = yaml.safe_load(STACK_YAML)["config"]
    if every_pool_listed:
        raw["gpushare:pools"] = raw["gpushare:pools"][:3]
        raw["gpushare:platform"]["namespaces"] = [{"name": "calico-system"}]
    return parse_config(raw, source="stacks/Pulumi.shared.yaml", stack="shared")


@pytest.fixture(scope="module")
def manifests():
    return {"stack": tenant_manifests(_stack()), "every pool listed": tenant_manifests(_stack(every_pool_listed=True))}


def listed(manifests) -> dict[str, dict[str, Any]]:
    """Each policy the table covers, by its name in the table."""
    found = policies(manifests["stack"])
    return {TENANT: found[TENANT], SHARED: found[SHARED], DEBUG_POLICY: found[DEBUG_POLICY],
            ALL_LISTED: policies(manifests["every pool listed"])[SHARED]}


@pytest.fixture(scope="module")
def clusters(manifests, kubernetes):
    """Per stack: its policies as they are, and as `named_policy` makes them."""
    made = {}
    for stack, key_of in (("stack", {}), ("every pool listed", {SHARED: ALL_LISTED})):
        made[stack, "real"] = plugin_cluster(manifests[stack], kubernetes)
        made[stack, "named"] = plugin_cluster(named_manifests(manifests[stack], key_of), kubernetes)
    yield made
    for cluster in made.values():
        cluster.close()


def _judge(clusters, policy: str, request: Request, kind: str):
    stack = "every pool listed" if policy == ALL_LISTED else "stack"
    return clusters[stack, kind].admit(copy.deepcopy(request.obj), request.namespace, **copy.deepcopy(request.how))


# --- the tests --------------------------------------------------------------------------------------------------------

def test_every_clause_of_every_validation_has_cases(manifests):
    """The table lists exactly the clauses of the policies' validations. Each tenant's policy has the clauses of the one
    the table covers (less the QoS rule where `guaranteed: false`), and the shared policy of a stack whose every pool a
    tenant lists those of the other one, but for its pool validation."""
    covered = listed(manifests)
    shared = set(policy_clauses(covered[SHARED]))
    all_listed = set(policy_clauses(covered[ALL_LISTED]))
    found = {(name, *key) for name, policy in covered.items() for key in policy_clauses(policy)
             if name != ALL_LISTED or key not in shared}
    assert sorted(found - set(CLAUSES)) == [], "clauses without cases"
    assert sorted(set(CLAUSES) - found) == [], "cases of clauses the policies no longer have"
    tenant = set(policy_clauses(covered[TENANT]))
    nlp = set(policy_clauses(policies(manifests["stack"])[NLP]))
    assert nlp == {key for key in tenant if key[0] != "notGuaranteed"}
    assert tenant_policy_name(_stack().tenants[1]) == NLP
    assert {key for key in shared if key[0] != "pool"} == {key for key in all_listed if key[0] != "aimedElsewhere"}


@pytest.mark.parametrize("key", list(CLAUSES), ids=[" | ".join(key) for key in CLAUSES])
def test_the_clause_alone_admits_its_admit_case(clusters, key):
    policy, name, clause = key
    case = CLAUSES[key]
    decision = _judge(clusters, policy, case.admit, "real")
    assert decision.allowed, decision.messages
    named = _judge(clusters, policy, case.admit, "named")
    assert without(policy, name, clause) in named.messages, (
        f"{clause} is not what admits this request: with it false, {name} still admits it ({named.messages})")


@pytest.mark.parametrize("key", list(CLAUSES), ids=[" | ".join(key) for key in CLAUSES])
def test_the_validation_refuses_its_refuse_case(clusters, key):
    policy, name, _ = key
    case = CLAUSES[key]
    assert not _judge(clusters, policy, case.refuse, "real").allowed
    named = _judge(clusters, policy, case.refuse, "named")
    assert f"{policy}: {name}" in named.messages, named.messages


def test_the_clause_splitter_keeps_nested_and_quoted_operators():
    assert clauses("a || (b || c) || d.exists(x, x == 'p || q') || [e || f][0]") == [
        "a", "(b || c)", "d.exists(x, x == 'p || q')", "[e || f][0]"]
    assert clauses('"a || b"') == ['"a || b"'] and clauses("x") == ["x"]
