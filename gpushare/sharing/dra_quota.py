"""How a ResourceQuota counts a DRA pool's devices: per DeviceClass, under a key the stack file's tenant quotas and the
tenants' ResourceQuotas share (`gpushare.stackfile.tenant_config`, `gpushare.kubernetes.tenants.quota_key`)."""

from __future__ import annotations

DEVICE_CLASS_QUOTA_SUFFIX = ".deviceclass.resource.k8s.io/devices"
"""ResourceQuota counts the devices a namespace's ResourceClaims request per DeviceClass under
`<class>.deviceclass.resource.k8s.io/devices` (k8s.io/api core/v1 types.go `ResourceClaimsPerClass`; kubernetes
v1.34.4 `pkg/quota/v1/evaluator/core/resource_claims.go` V1ResourceByDeviceClass, and Usage: `exactly.count` devices
per request, for `firstAvailable` the most any subrequest asks of each class, `allocationMode: All` as 32)."""


def device_class_quota_key(class_name: str) -> str:
    return class_name + DEVICE_CLASS_QUOTA_SUFFIX


def is_device_class(name: str) -> bool:
    """A quota entry names a DeviceClass, not an extended resource: a class name is a DNS subdomain (no '/'), an
    extended resource always has a domain prefix (`nvidia.com/gpu`)."""
    return "/" not in name
