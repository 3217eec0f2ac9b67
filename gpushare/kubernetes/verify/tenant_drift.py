"""Tenant drift: each rendered tenant object must exist in the cluster and hold what gpushare rendered."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gpushare.kubernetes.verify.findings import Finding
from gpushare.model.quantity import parse_quantity

ObjectRef = tuple[str, str, str | None, str]
"""(apiVersion, kind, namespace or None, name)."""

RBAC_READER = "Azure Kubernetes Service RBAC Reader"
RBAC_ADMIN = "Azure Kubernetes Service RBAC Admin"
RBAC_CLUSTER_ADMIN = "Azure Kubernetes Service RBAC Cluster Admin"
_DATA_ACTION = "Microsoft.ContainerService/managedClusters"
READ_ROLES: Mapping[str, str] = {
    "Namespace": f"{RBAC_READER} on the cluster",
    "ResourceQuota": f"{RBAC_READER} on the namespace or the cluster",
    "LimitRange": f"{RBAC_READER} on the namespace or the cluster",
    "RoleBinding": (f"{RBAC_ADMIN} on the namespace, or {RBAC_CLUSTER_ADMIN} ({RBAC_READER} and Writer may not read "
                    "roles or role bindings)"),
    "ValidatingAdmissionPolicy": (f"{RBAC_CLUSTER_ADMIN}, or a custom role with "
                                  f"{_DATA_ACTION}/admissionregistration.k8s.io/validatingadmissionpolicies/read "
                                  "(cluster-scoped: no namespaced role covers it)"),
    "ValidatingAdmissionPolicyBinding": (f"{RBAC_CLUSTER_ADMIN}, or a custom role with {_DATA_ACTION}/"
                                         "admissionregistration.k8s.io/validatingadmissionpolicybindings/read"),
}
"""The Azure RBAC data role that lets an identity read each kind gpushare renders for tenants (AKS built-in roles,
learn.microsoft.com/azure/aks/manage-azure-rbac; RBAC Reader is Kubernetes' `view`: most objects of a namespace, no
roles or role bindings, nothing cluster-scoped but namespaces)."""


class Forbidden:
    """The identity may not read the object (403): its check is skipped, not failed."""

    def __repr__(self) -> str:
        return "FORBIDDEN"


FORBIDDEN = Forbidden()


@dataclass(frozen=True)
class SkippedCheck:
    """A comparison verify could not make because the identity may not read the object."""

    where: str
    object: str
    """`RoleBinding nlp/gpushare-edit-...`."""
    needs: str
    """The role that would allow the read."""

    def to_json(self) -> dict:
        return {"where": self.where, "object": self.object, "needs": self.needs}


def _label(ref: ObjectRef) -> str:
    _, kind, namespace, name = ref
    return f"{kind} {namespace + '/' if namespace else ''}{name}"


def skipped_checks(what: str, manifests: Iterable[Mapping],
                   live: Mapping[ObjectRef, Mapping | None | Forbidden]) -> list[SkippedCheck]:
    """The rendered objects the identity may not read, each with the role that would let it."""
    return [SkippedCheck(what, _label(ref), READ_ROLES.get(ref[1], RBAC_CLUSTER_ADMIN))
            for ref in map(object_ref, manifests) if live.get(ref) is FORBIDDEN]

def object_ref(manifest: Mapping) -> ObjectRef:
    metadata = manifest.get("metadata") or {}
    return manifest["apiVersion"], manifest["kind"], metadata.get("namespace"), metadata["name"]



def _same_scalar(rendered: object, live: object) -> bool:
    """Equal, or the same quantity: the API server rewrites quantities in its canonical form ("1024Mi" -> "1Gi")."""
    if rendered == live or str(rendered) == str(live):
        return True
    if isinstance(rendered, bool) or isinstance(live, bool):
        return False
    a, b = parse_quantity(rendered), parse_quantity(live)
    return a is not None and a == b


def _differences(rendered: object, live: object, path: str) -> list[str]:
    """Where `live` lacks or changes what `rendered` sets; fields the API server adds (defaults) are ignored."""
    if isinstance(rendered, Mapping):
        if not isinstance(live, Mapping):
            return [f"{path}: missing"]
        return [d for key, value in rendered.items()
                for d in _differences(value, live.get(key), f"{path}.{key}" if path else str(key))]
    if isinstance(rendered, list):
        if not isinstance(live, list) or len(live) != len(rendered):
            return [f"{path}: {len(rendered)} item(s) rendered, {len(live) if isinstance(live, list) else 0} live"]
        return [d for i, (a, b) in enumerate(zip(rendered, live)) for d in _differences(a, b, f"{path}[{i}]")]
    return [] if _same_scalar(rendered, live) else [f"{path}: {live!r} in the cluster, {rendered!r} rendered"]


def manifest_findings(what: str, manifests: Iterable[Mapping],
                      live: Mapping[ObjectRef, Mapping | None | Forbidden]) -> list[Finding]:
    """Each rendered object must exist and hold what gpushare rendered (labels and every field but metadata/status).
    One the identity may not read is no finding (`skipped_checks` names it)."""
    findings = []
    for manifest in manifests:
        ref = object_ref(manifest)
        label = _label(ref)
        obj = live.get(ref)
        if obj is FORBIDDEN:
            continue
        if obj is None:
            findings.append(Finding(what, f"{label} not found", f"the stack's {what} are not deployed",
                                    "run `pulumi up`"))
            continue
        rendered = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind", "metadata", "status")}
        rendered["labels"] = (manifest.get("metadata") or {}).get("labels") or {}
        current = {**obj, "labels": (obj.get("metadata") or {}).get("labels") or {}}
        differences = _differences(rendered, current, "")
        if differences:
            findings.append(Finding(
                what, f"{label} differs from the plan: {'; '.join(differences[:3])}"
                      + (f" (and {len(differences) - 3} more)" if len(differences) > 3 else ""),
                "it was changed outside gpushare, or deployed from another version of the stack",
                "run `pulumi up` (`pulumi refresh` first shows what changed)",
            ))
    return findings
