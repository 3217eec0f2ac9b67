"""A plain Kubernetes manifest registered as pulumi_kubernetes's typed resource for its kind (`register_manifest`),
shared by the components that register domain-built manifests verbatim (`GpuTenant`, `SharedGpuPools`)."""

from __future__ import annotations

import re
from typing import Any

import pulumi
import pulumi_kubernetes as k8s


def resource_class(api_version: str, kind: str) -> type[pulumi.CustomResource]:
    """pulumi_kubernetes's class for a manifest: module `<group's first label>.<version>`, `core` for the core
    group (`rbac.authorization.k8s.io/v1` is `k8s.rbac.v1`). Looked up per manifest, because pulumi_kubernetes loads
    an API group's module on first use and rbac.v1 alone costs 0.03 s to a stack whose tenants bind no group."""
    group, _, version = api_version.rpartition("/")
    return getattr(getattr(getattr(k8s, group.split(".")[0] or "core"), version), kind)


def register_manifest(name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """The typed Pulumi resource for one manifest; its fields go to the engine under their Kubernetes names."""
    fields = {re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower(): value
              for key, value in manifest.items() if key not in ("apiVersion", "kind")}
    return resource_class(manifest["apiVersion"], manifest["kind"])(name, **fields, opts=opts)
