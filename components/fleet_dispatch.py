"""Dispatch across a fleet's clusters with Kueue MultiKueue: what the fleet stack registers on the manager member's
cluster and on each worker's, from the fleet plan's dispatch (`gpushare.kubernetes.multikueue.dispatch`).

On each worker: the identity the manager's Kueue acts as (`worker_access_objects`: a ServiceAccount in Kueue's
namespace, its ClusterRole and binding, and its token Secret, which Kubernetes fills with the token and the cluster's
CA). On the manager: the tenants' namespaces, groups, no-pods quotas and admission policies (each tenant's as each of
its workers builds it, `multikueue.manager_policy`), Kueue's ResourceFlavor, MultiKueueClusters,
MultiKueueConfigs, AdmissionChecks, WorkloadPriorityClasses, ClusterQueues and LocalQueues, and per worker the
Secret MultiKueueCluster reads its kubeconfig from (`worker_kubeconfig`: the worker's API server, and that token and
CA inline). A tenant's namespace is registered after its admission policies (the manager member's shared policy
leaves the namespace to them, `StackConfig.fleet_manager`), so it never exists unjudged, and its RoleBindings after
its quota of no pods. The kubeconfig is built from the token Secret's outputs inside `apply` and registered as a secret
(`pulumi.Output.secret`, and `additional_secret_outputs` on both Secrets): the state holds it encrypted, and no plan
or `fleet plan` output carries it.

The workers' queues are not here: each worker's own stack registers them (`KueueQueues`), with the same names the
manager's Workloads name. Kueue itself (its CRDs) is the manager member's own release: every Kueue object here is
registered after the kubeconfig Secrets and namespaces it needs, and a `pulumi up` of the fleet stack before the
manager's stack has Kueue fails on the first of them, saying the kind is unknown."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpushare.components.manifest_resource import register_manifest
from gpushare.kubernetes.multikueue import (
    KUBECONFIG_KEY,
    NO_PODS_QUOTA,
    FleetDispatchPlan,
    worker_access_objects,
    worker_kubeconfig,
)
from gpushare.kubernetes.tenants import MANAGED_BY
from gpushare.model.stack import TENANT_LABEL

SECRET_OUTPUTS = ["data", "stringData"]
"""A Secret's fields the state keeps encrypted (pulumi-kubernetes marks them secret itself; said here too, so a
provider version that did not would still not write a token in plain state)."""


@dataclass(frozen=True)
class FleetDispatchArgs:
    plan: FleetDispatchPlan
    """Required. The fleet plan's dispatch (`build_fleet_plan(...).dispatch`)."""
    manager_provider: pulumi.ProviderResource
    """Required. The Kubernetes provider of the manager member's cluster."""
    worker_providers: Mapping[str, pulumi.ProviderResource]
    """Required. Worker stack -> the Kubernetes provider of its cluster (every worker in `plan.workers`)."""
    worker_servers: Mapping[str, pulumi.Input[str]]
    """Required. Worker stack -> its API server's URL, as the manager's Kueue reaches it."""


class FleetDispatch(pulumi.ComponentResource):
    """The manager's MultiKueue objects and the workers' identity for it, the kubeconfigs between them secret."""

    dispatched: pulumi.Output[dict[str, list[str]]]
    """Tenant -> the member stacks its Jobs may go to."""

    def __init__(self, name: str, args: FleetDispatchArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:fleet:FleetDispatch", name, None, opts)
        plan = args.plan
        on_manager = pulumi.ResourceOptions(parent=self, provider=args.manager_provider)
        kubeconfigs: dict[str, pulumi.Resource] = {}
        for worker in plan.workers:
            on_worker = pulumi.ResourceOptions(parent=self, provider=args.worker_providers[worker])
            token = None
            for manifest in worker_access_objects():
                resource_name = f"{name}-{worker}-{manifest['kind'].lower()}"
                if manifest["kind"] == "Secret":
                    token = register_manifest(resource_name, manifest, pulumi.ResourceOptions.merge(
                        on_worker, pulumi.ResourceOptions(additional_secret_outputs=SECRET_OUTPUTS)))
                else:
                    register_manifest(resource_name, manifest, on_worker)
            assert token is not None
            kubeconfig = pulumi.Output.all(args.worker_servers[worker], token.data).apply(  # type: ignore[attr-defined]
                lambda values: worker_kubeconfig(values[0], values[1] or {}))
            kubeconfigs[worker] = k8s.core.v1.Secret(
                f"{name}-kubeconfig-{worker}", type="Opaque",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=plan.kubeconfig_secrets[worker],
                                                    namespace=plan.secret_namespace, labels=dict(MANAGED_BY)),
                string_data={KUBECONFIG_KEY: pulumi.Output.secret(kubeconfig)},
                opts=pulumi.ResourceOptions.merge(on_manager, pulumi.ResourceOptions(
                    additional_secret_outputs=SECRET_OUTPUTS)))
        namespaces: dict[str, pulumi.Resource] = {}
        policies: dict[str, list[pulumi.Resource]] = {}
        """tenant -> its admission policies and bindings here, which its namespace waits for."""
        no_pods: dict[str, pulumi.Resource] = {}
        """namespace -> its quota of no pods, which the tenant's RoleBindings there wait for."""
        for manifest in plan.manager_objects:
            meta: dict[str, Any] = manifest["metadata"]
            kind = manifest["kind"]
            resource_name = f"{name}-{kind.lower()}-{meta.get('namespace') + '-' if meta.get('namespace') else ''}" \
                            f"{meta['name']}"
            waits: list[pulumi.Resource] = []
            if meta.get("namespace") in namespaces:
                waits.append(namespaces[meta["namespace"]])
            if kind == "MultiKueueCluster":
                waits.append(kubeconfigs[meta["name"]])
            if kind == "Namespace":
                # The manager member's shared policy leaves this namespace to the tenant's dispatch policies
                # (`StackConfig.fleet_manager`): it is made after them and removed before them, never unjudged.
                waits += policies.get(meta["name"], [])
            if kind == "RoleBinding" and meta.get("namespace") in no_pods:
                waits.append(no_pods[meta["namespace"]])  # the tenant's `edit` there only once no pod can run
            opts_here = pulumi.ResourceOptions.merge(on_manager, pulumi.ResourceOptions(depends_on=waits))
            if manifest["apiVersion"].startswith("kueue.x-k8s.io/"):
                # As KueueQueues registers Kueue's kinds: the manifest whole (a WorkloadPriorityClass's `value`
                # sits at the top level).
                pulumi.CustomResource(f"kubernetes:{manifest['apiVersion']}:{kind}", resource_name, dict(manifest),
                                      opts_here)
            else:
                created = register_manifest(resource_name, manifest, opts_here)
                if kind == "Namespace":
                    namespaces[meta["name"]] = created
                elif kind.startswith("ValidatingAdmissionPolicy") and TENANT_LABEL in meta.get("labels", {}):
                    policies.setdefault(meta["labels"][TENANT_LABEL], []).append(created)
                elif kind == "ResourceQuota" and meta["name"] == NO_PODS_QUOTA:
                    no_pods[meta["namespace"]] = created
        self.dispatched = pulumi.Output.from_input({t: list(ws) for t, ws in plan.tenant_workers.items()})
        self.register_outputs({"dispatched": self.dispatched})
