"""GPU software already on an existing cluster that would clash with the GPU Operator gpushare installs, from a
Kubernetes read (`cluster_read.read_gpu_software`): preflight rows (`gpu-software`) with what to do.

- Another GPU Operator: its ClusterPolicy (`clusterpolicies.nvidia.com`, cluster-scoped; the chart creates one,
  `cluster-policy`) not from gpushare's release. Helm does not adopt an object another release owns (helm v3
  `pkg/action/validate.go` `existingResourceConflict`: "exists and cannot be imported into the current release:
  invalid ownership metadata"), so the first `up` fails on it; and two operators would each run their operands on
  the GPU nodes. Refused.
- Another NVIDIA device plugin DaemonSet (AKS's documented `nvidia-device-plugin-daemonset` in kube-system, NVIDIA's
  Helm chart, a copy of the static manifest): image `k8s-device-plugin`, or its name. Where its pod template
  tolerates a gpushare pool's taints and its node selection admits the pool's nodes
  (`gpushare.sharing.node_selection`), each of those nodes would run two device plugins advertising the same GPUs:
  refused, naming the pools. NVIDIA's manifests tolerate `nvidia.com/gpu` with `Exists`, which gpushare's GPU taint
  is. Otherwise a warning: it stays off gpushare's pools, but the operator will run its device plugin on the
  nodes it serves wherever their taints let it.
gpushare's own objects (after its first `up`) are told apart by the namespace: gpushare's operator namespace carries
`app.kubernetes.io/managed-by: gpushare`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpushare.azure.preflight.preflight_report import Check, Verdict
from gpushare.model.stack import StackConfig
from gpushare.sharing.node_selection import selects, untolerated
from gpushare.sharing.operator_values import NAMESPACE
from gpushare.sharing.pool_facts import PoolFactsByName, given_or_derived

DEVICE_PLUGIN_IMAGE = "k8s-device-plugin"
DEVICE_PLUGIN_NAME = "nvidia-device-plugin"
NOT_THE_PLUGIN = ("gpu-feature-discovery", "mps-control-daemon")
"""Tools NVIDIA ships in the device plugin's image that advertise no device: GPU Feature Discovery and the MPS
control daemon (k8s-device-plugin v0.20.0 `cmd/gpu-feature-discovery`, `cmd/mps-control-daemon`; the GPU Operator
runs the latter as `nvidia-device-plugin-mps-control-daemon`)."""
GPUSHARE_MANAGED_BY = ("app.kubernetes.io/managed-by", "gpushare")
HELM_RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"
HELM_RELEASE_NAME = "meta.helm.sh/release-name"


@dataclass(frozen=True)
class GpuSoftware:
    """What the read found (the API's JSON)."""

    daemon_sets: Sequence[Mapping[str, Any]]
    """Every DaemonSet in the cluster."""
    cluster_policies: Sequence[Mapping[str, Any]]
    """Every ClusterPolicy; empty when the CRD is not installed."""
    gpushare_namespace: Mapping[str, Any] | None
    """gpushare's operator namespace, None when it does not exist."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _ours(software: GpuSoftware, namespace: str | None) -> bool:
    labels = _meta(software.gpushare_namespace or {}).get("labels") or {}
    return namespace == NAMESPACE and labels.get(GPUSHARE_MANAGED_BY[0]) == GPUSHARE_MANAGED_BY[1]


def _other_tool(text: str) -> bool:
    return any(tool in text for tool in NOT_THE_PLUGIN)


def is_device_plugin(daemon_set: Mapping[str, Any]) -> bool:
    """A DaemonSet running NVIDIA's device plugin: by name, or a container of its image that runs the plugin rather
    than one of the other tools that image ships (`NOT_THE_PLUGIN`)."""
    name = str(_meta(daemon_set).get("name", ""))
    containers = (((daemon_set.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    runs_plugin = [
        c for c in containers if DEVICE_PLUGIN_IMAGE in str(c.get("image", "")) and not _other_tool(
            " ".join(str(part) for part in [c.get("name", ""), *(c.get("command") or []), *(c.get("args") or [])]))]
    return bool(runs_plugin) or (DEVICE_PLUGIN_NAME in name and not _other_tool(name))


def gpu_node_labels(stack: StackConfig, pool_name: str, facts: PoolFactsByName | None = None) -> dict[str, str]:
    """The labels a node of a gpushare pool carries: the pool's own, AKS's (aks-docs use-labels.md: agentpool,
    `kubernetes.azure.com/accelerator` on GPU nodes, the VM size, OS), and what NFD and GPU Feature Discovery add
    (`feature.node.kubernetes.io/pci-10de.present`, `nvidia.com/gpu.present`)."""
    pool_facts = given_or_derived(stack, facts)[pool_name]
    return {
        **pool_facts.carried_labels,
        "agentpool": pool_name, "kubernetes.azure.com/agentpool": pool_name,
        "kubernetes.azure.com/accelerator": "nvidia",
        "node.kubernetes.io/instance-type": pool_facts.pool.vm_size.name, "beta.kubernetes.io/instance-type":
        pool_facts.pool.vm_size.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "feature.node.kubernetes.io/pci-10de.present": "true", "nvidia.com/gpu.present": "true",
    }


def _reached_pools(stack: StackConfig, daemon_set: Mapping[str, Any], facts: PoolFactsByName) -> list[str]:
    pod_spec = ((daemon_set.get("spec") or {}).get("template") or {}).get("spec") or {}
    tolerations = pod_spec.get("tolerations") or []
    return [name for name, pool in facts.items() if not untolerated(tolerations, pool.tolerated_taints)
            and selects(pod_spec, gpu_node_labels(stack, name, facts))]


def gpu_software_checks(stack: StackConfig, software: GpuSoftware, facts: PoolFactsByName | None = None) -> list[Check]:
    """One row per GPU Operator or device plugin that is not gpushare's; one passing row when there is none."""
    facts = given_or_derived(stack, facts)
    checks = []
    for policy in software.cluster_policies:
        meta = _meta(policy)
        annotations = meta.get("annotations") or {}
        release_namespace = annotations.get(HELM_RELEASE_NAMESPACE)
        if _ours(software, release_namespace):
            continue
        release = annotations.get(HELM_RELEASE_NAME)
        where = (f"Helm release {release} in namespace {release_namespace}" if release and release_namespace
                 else "no Helm release gpushare can name")
        uninstall = (f"helm uninstall {release} -n {release_namespace}" if release and release_namespace
                     else f"kubectl delete clusterpolicy {meta.get('name')} and the operator that reconciles it")
        checks.append(Check(
            "gpu-software", f"ClusterPolicy {meta.get('name')}", Verdict.FAIL,
            f"a GPU Operator is already installed ({where}): Helm cannot install gpushare's release over another "
            "release's ClusterPolicy, and two operators would each run their device plugin on the GPU nodes",
            f"remove it before the first `up` ({uninstall}): gpushare installs and configures its own operator, "
            "with the device-plugin configs its pools need"))
    for daemon_set in software.daemon_sets:
        meta = _meta(daemon_set)
        namespace, name = meta.get("namespace"), meta.get("name")
        if not is_device_plugin(daemon_set) or _ours(software, namespace):
            continue
        subject = f"DaemonSet {namespace}/{name}"
        delete = f"kubectl delete daemonset -n {namespace} {name}"
        if pools := _reached_pools(stack, daemon_set, facts):
            checks.append(Check(
                "gpu-software", subject, Verdict.FAIL,
                f"an NVIDIA device plugin not gpushare's, whose tolerations and node selection admit the nodes of "
                f"pool{'s' if len(pools) != 1 else ''} {', '.join(pools)}: each would run it beside the GPU "
                "Operator's device plugin, two plugins advertising the same GPUs",
                f"remove it ({delete}; the GPU Operator's device plugin serves every GPU node gpushare manages), or "
                "keep it off gpushare's pools with a required node affinity `gpushare.io/pool DoesNotExist`"))
        else:
            checks.append(Check(
                "gpu-software", subject, Verdict.WARN,
                "an NVIDIA device plugin not gpushare's; its tolerations or node selection keep it off gpushare's "
                "pools, but the GPU Operator gpushare installs runs its own device plugin on every NVIDIA node whose "
                "taints it tolerates, so the nodes this one serves get two unless their taints keep the operator off",
                f"taint the node pools it serves with a taint gpushare's pools do not carry, or remove it ({delete})"))
    if not checks:
        checks.append(Check("gpu-software", "cluster", Verdict.PASS,
                            "no GPU Operator (ClusterPolicy) and no NVIDIA device plugin DaemonSet but gpushare's"))
    return checks


NOT_READ = Check("gpu-software", "cluster", Verdict.WARN,
                 "Kubernetes was not read, so a GPU Operator or NVIDIA device plugin already on the cluster (which "
                 "would put two device plugins on gpushare's nodes) was not looked for",
                 "run `preflight --kubeconfig FILE` (and `--context NAME`) with the cluster's credentials")
