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
(`gpushare.sharing.autoscaler_readiness`): a GPU node without `nvidia.com/gpu` it does not. This path is upstream
code read, not yet observed on an AKS cluster by gpushare.

The same template has no labels or taints but what tags name (upstream `ScaleSet.TemplateNodeInfo` passes empty
`inputLabels`/`inputTaints`), so a pod that selects `gpushare.io/pool` or a tenant's pool would not scale an empty
pool up. An autoscaled pool's tags therefore also carry its nodes' labels and taints, as `azure_template.go`
(cluster-autoscaler-1.35.2) decodes them:
- `extractLabelsFromTags`: tag `k8s.io_cluster-autoscaler_node-template_label_<name>`, value the label's value;
  `<name>` is the label key with each `_` read back as `/` and then each `~2` as `_` (Azure tag names may not
  contain `/`), so a key is written with `_` as `~2` first and `/` as `_` (`label_tag_name`);
- `extractTaintsFromTags`: tag `k8s.io_cluster-autoscaler_node-template_taint_<key>`, key encoded the same way,
  value `<value>:<Effect>` (it must match `(.*):(?:NoSchedule|NoExecute|PreferNoSchedule)`): one tag per key, so
  two taints with one key and two effects keep only the first (warned).
Azure allows 50 tags per resource, names of at most 512 characters and values of at most 256 (azure-resource-manager
tag-resources.md, "Limitations"); AKS adds tags of its own to the scale set (`aks-managed-poolName`, which
`azure_template.go` reads, and others; their number is not documented). A pool whose tags exceed 50 is refused;
one within `AKS_TAG_HEADROOM` of it is warned about.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from gpushare.errors import ConfigError, ConfigProblem
from gpushare.model.keys import POOLS_KEY
from gpushare.model.stack import (
    AUTOSCALER_LABEL_TAG_PREFIX,
    AUTOSCALER_RESOURCE_TAG_PREFIX,
    AUTOSCALER_TAINT_TAG_PREFIX,
    GpuPool,
    StackConfig,
)
from gpushare.sharing.capacity import WHOLE_GPU_RESOURCE, PoolCapacity
from gpushare.sharing.node_selection import parse_taint
from gpushare.sharing.pool_facts import PoolFacts, PoolFactsByName, given_or_derived

MAX_TAGS, MAX_TAG_NAME, MAX_TAG_VALUE = 50, 512, 256
"""Azure's limits per resource (azure-resource-manager tag-resources.md, "Limitations")."""
AKS_TAG_HEADROOM = 10
"""Tags left for the ones AKS writes on the scale set itself, whose number AKS does not document."""


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
    """gpushare's tags for one GPU pool: what each of its nodes advertises, as the autoscaler's template reads it. A
    DRA pool's nodes advertise no extended resource (their devices are in ResourceSlices), so its only tag is
    `nvidia.com/gpu: 0`, against the SKU's count."""
    advertised = {} if capacity.dra else {capacity.resource: capacity.per_node}
    if capacity.resource != WHOLE_GPU_RESOURCE:
        # The SKU's count is set first and a tag overrides it: a node advertising a MIG or `.shared` name has no
        # whole `nvidia.com/gpu` to offer.
        advertised[WHOLE_GPU_RESOURCE] = 0
    return {resource_tag_name(resource): str(count) for resource, count in sorted(advertised.items())}


def label_tag_name(key: str) -> str:
    """The tag naming node label `key` for the autoscaler's template: `extractLabelsFromTags` reads `_` as `/`, then
    `~2` as `_`."""
    return AUTOSCALER_LABEL_TAG_PREFIX + key.replace("_", "~2").replace("/", "_")


def taint_tag(taint: str) -> tuple[str, str]:
    """(name, value) of the tag naming an AKS taint `key=value:Effect` for `extractTaintsFromTags`."""
    key, value, effect = parse_taint(taint)
    return AUTOSCALER_TAINT_TAG_PREFIX + key.replace("_", "~2").replace("/", "_"), f"{value}:{effect}"


def template_tags(facts: PoolFacts) -> tuple[dict[str, str], list[str]]:
    """The label and taint tags of an autoscaled pool (none for a fixed one), and the taints left out: one tag per
    taint key. The taints are every taint its nodes carry, the Spot taint AKS adds included; the labels every label
    gpushare knows its nodes carry, the Spot label AKS sets that Kueue's flavor selects included, so a queued pod
    selecting it still scales the pool up from zero."""
    if facts.pool.autoscale is None:
        return {}, []
    tags = {label_tag_name(key): value for key, value in facts.carried_labels.items()}
    left_out = []
    for taint in facts.tolerated_taints:
        name, value = taint_tag(taint)
        if name in tags:
            left_out.append(taint)
            continue
        tags[name] = value
    return tags, left_out


def pool_tags(pool: GpuPool, capacity: PoolCapacity, template: Mapping[str, str] | None = None) -> dict[str, str]:
    """A pool's Azure tags: the user's own, gpushare's resource tags and the template's label and taint tags
    (`template_tags`). Validation refuses a user tag starting with one of gpushare's prefixes
    (`gpushare.stackfile.pool_settings`), so none of the user's replaces one of these and the autoscaler's template
    of the pool's nodes stays right."""
    return {**dict(pool.tags), **autoscaler_tags(capacity), **dict(template or {})}


def stack_pool_tags(stack: StackConfig, facts: PoolFactsByName | None = None) -> Mapping[str, Mapping[str, str]]:
    """Each pool's tags by name, within Azure's limits; raises ConfigError naming every pool over them."""
    problems, tags = [], {}
    for index, facts in enumerate(given_or_derived(stack, facts).values()):
        pool = facts.pool
        where = f"{POOLS_KEY}[{index}]"
        template, _ = template_tags(facts)
        tags[pool.name] = MappingProxyType(pool_tags(pool, facts.capacity, template))
        if len(tags[pool.name]) > MAX_TAGS:
            problems.append(ConfigProblem(where, _count_problem(pool, len(tags[pool.name]), len(template))))
        problems += [ConfigProblem(where, f"pool {pool.name}: the autoscaler tag {name!r} is {len(name)} characters, "
                                          f"above Azure's {MAX_TAG_NAME}; shorten the label or taint key")
                     for name in tags[pool.name] if len(name) > MAX_TAG_NAME]
        problems += [ConfigProblem(where, f"pool {pool.name}: the tag {name!r} has a value of {len(value)} "
                                          f"characters, above Azure's {MAX_TAG_VALUE}")
                     for name, value in tags[pool.name].items() if len(value) > MAX_TAG_VALUE]
    if problems:
        raise ConfigError(stack.source, problems)
    return MappingProxyType(tags)


def _count_problem(pool: GpuPool, count: int, template: int) -> str:
    return (f"pool {pool.name} needs {count} Azure tags on its scale set ({len(pool.tags)} of yours, "
            f"{count - len(pool.tags) - template} for the autoscaler's resources, {template} for its nodes' labels and "
            f"taints, which the autoscaler's scale-from-zero template reads), above Azure's {MAX_TAGS} per resource "
            "(azure-resource-manager tag-resources.md); remove some of the pool's tags, labels or taints")


def tag_warnings(facts: PoolFactsByName, tags_by_pool: Mapping[str, Mapping[str, str]]) -> list[str]:
    """Pools whose tags leave AKS less than `AKS_TAG_HEADROOM` of Azure's 50, and taints the template leaves out."""
    warnings = []
    for name, tags in tags_by_pool.items():
        if MAX_TAGS - AKS_TAG_HEADROOM < len(tags) <= MAX_TAGS:
            warnings.append(
                f"pool {name}: {len(tags)} Azure tags on its scale set, and AKS adds tags of its own there (an "
                f"undocumented number): above {MAX_TAGS} in all, Azure refuses the update; remove some of the pool's "
                "tags, labels or taints")
        if left_out := template_tags(facts[name])[1]:
            warnings.append(
                f"pool {name}: the autoscaler's node template has one taint per key, so {', '.join(left_out)} "
                "is left out of it: a pod that tolerates only that one may not scale the pool up from zero")
    return warnings
