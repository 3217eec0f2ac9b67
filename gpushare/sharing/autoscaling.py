"""What the cluster autoscaler believes a new node of a GPU pool offers, and the scale-set tags that make it right.

Where the autoscaler's picture of a node comes from (kubernetes/autoscaler, commit 55c37cd5eb, 2026-08):
- a pool with a ready node: that node, as the API server reports it (`MixedTemplateNodeInfoProvider.Process` in
  `cluster-autoscaler/processors/nodeinfosprovider/mixed_nodeinfos_processor.go` builds a group's template from a
  real, ready, schedulable node first, then from a cached one of a node that ran recently); so its device-plugin
  resources are the real ones;
- only an empty pool falls back to the scale set (`TemplateNodeInfoFromNodeGroupTemplate` ->
  `cloudprovider/azure/azure_template.go` `buildNodeFromTemplate`): `nvidia.com/gpu` = the SKU's physical GPUs, then
  `processVMSSTemplate` sets every resource a scale-set tag `k8s.io_cluster-autoscaler_node-template_resources_<name>`
  names (`extractAllocatableResourcesFromScaleSet`: the tag's value parsed as a quantity), so a tag also overrides
  the SKU's `nvidia.com/gpu`.

AKS copies an agent pool's `tags` to the pool's scale set ("Tags set on a node pool apply only to resources related
to that node pool", learn.microsoft.com/azure/aks/use-tags). So every GPU pool carries `autoscaler_tags`: each
resource its nodes advertise, per node, and `nvidia.com/gpu: 0` where they advertise none of it (the SKU count would
otherwise claim whole GPUs a MIG or renamed pool does not offer). That is what lets `autoscale.min: 0` start a pool
of every sharing mode. Whether the autoscaler then counts the pool's nodes ready is another rule
(`gpushare.stackfile.autoscaler_readiness`): a GPU node without `nvidia.com/gpu` it does not. This path is upstream
code read, not yet observed on an AKS cluster by gpushare.
"""

from __future__ import annotations

from gpushare.sharing.capacity import WHOLE_GPU_RESOURCE, PoolCapacity
from gpushare.stackfile.model import AUTOSCALER_RESOURCE_TAG_PREFIX, GpuPool


def resource_tag_name(resource: str) -> str:
    """The scale-set tag name that tells the autoscaler about `resource`.

    Azure tag names may not contain `/`; the autoscaler turns each `_` of the tag name back into `/` (and `~2`
    into `/` as well, in `extractAllocatableResourcesFromScaleSet`; only its label and taint tags decode `~2` to
    `_`). So a resource name with `_` in it has no tag that decodes to it.
    """
    if "_" in resource:
        raise ValueError(f"{resource}: the autoscaler decodes every `_` of a resource tag to `/`, so a resource "
                         f"name with `_` cannot be written as a tag")
    return AUTOSCALER_RESOURCE_TAG_PREFIX + resource.replace("/", "_")


def autoscaler_tags(capacity: PoolCapacity) -> dict[str, str]:
    """gpushare's tags for one GPU pool: what each of its nodes advertises, as the autoscaler's template reads it."""
    advertised = {capacity.resource: capacity.per_node}
    if capacity.resource != WHOLE_GPU_RESOURCE:
        # The SKU's count is set first and a tag overrides it: a node advertising a MIG or `.shared` name has no
        # whole `nvidia.com/gpu` to offer.
        advertised[WHOLE_GPU_RESOURCE] = 0
    return {resource_tag_name(resource): str(count) for resource, count in sorted(advertised.items())}


def pool_tags(pool: GpuPool, capacity: PoolCapacity) -> dict[str, str]:
    """A pool's Azure tags: the user's own and gpushare's autoscaler tags. Validation refuses a user tag starting
    with gpushare's prefix (`gpushare.stackfile.pool_settings`), so none of the user's replaces one of these and
    the autoscaler's template of the pool's nodes stays right."""
    return {**dict(pool.tags), **autoscaler_tags(capacity)}
