"""A GPU pool's settings that AKS has and gpushare only passes on: the GPUs of a size outside the catalog (`gpu`),
the user's own node labels, taints and Azure tags, the OS disk, max pods, and Spot."""

from __future__ import annotations

import math
import re
import sys
from decimal import Decimal
from typing import Any

from gpushare.model import catalog
from gpushare.model.stack import (
    AUTOSCALER_TAG_PREFIXES,
    DEVICE_PLUGIN_CONFIG_LABEL,
    DEVICE_PLUGIN_DEPLOY_LABEL,
    GPU_TAINT,
    SPOT_MARKET_PRICE,
    OsDisk,
    OsDiskType,
    Spot,
    SpotEviction,
)
from gpushare.stackfile.checks import Checker, kind_of, show
from gpushare.stackfile.declarations import INTEGER, NUMBER, STRING, Field, Section

MIN_MAX_PODS, MAX_MAX_PODS = 10, 250
"""AKS's bounds for `maxPods` with Azure CNI (aks-docs azure-cni-overview.md, "Maximum pods per node")."""
MIN_OS_DISK_GB, MAX_OS_DISK_GB = 30, 2048
"""Azure's bounds for a Linux OS disk (the AKS API takes 0-2048; a Linux image needs 30)."""

GPU = Section((
    Field("model", STRING, "The NVIDIA GPU of a size the catalog lacks.", required=True,
          examples=tuple(p.name for p in catalog.GPU_PRODUCTS)),
    Field("count", INTEGER, "Whole GPUs per VM.", required=True, minimum=1, maximum=16),
    Field("memoryGb", INTEGER, "Memory per GPU in GB; needed where the model comes in several sizes.", minimum=1,
          why=" (GB of memory per GPU, a whole number)"),
))
OS_DISK = Section((
    Field("sizeGb", INTEGER, "The OS disk's size in GB; fixed at creation.", default_text="AKS's default",
          minimum=MIN_OS_DISK_GB, maximum=MAX_OS_DISK_GB),
    Field("type", STRING, "Managed, or Ephemeral (on the VM's cache or temp disk, which must fit it); fixed at "
                          "creation.", default_text="AKS's default", enum=OsDiskType),
), model=OsDisk)
SPOT = Section((
    Field("maxPrice", NUMBER, "USD per node-hour Azure may charge, above 0 with at most five decimal places, or -1 "
                              "for up to the on-demand price; fixed at creation.",
          exclusive_minimum=0, also=({"const": -1},)),
    Field("eviction", STRING, "What Azure does with an evicted node.", enum=SpotEviction),
), model=Spot)
GPU_KEYS = GPU.keys
MAX_TAG_NAME, MAX_TAG_VALUE = 512, 256
TAG_NAME_FORBIDDEN = set('<>%&\\?/')
"""Azure tag names may not contain these (azure-resource-manager tag-resources.md, "Limitations")."""
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_PREFIX_RE = re.compile(rf"^{_DNS_LABEL}(\.{_DNS_LABEL})*$")
_NAME_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_KEY_RULE = ("a Kubernetes label key: an optional DNS-subdomain prefix and `/`, then 1-63 letters, digits, `-`, `_` "
             "or `.`, starting and ending with a letter or digit")
_VALUE_RULE = "at most 63 letters, digits, `-`, `_` or `.`, starting and ending with a letter or digit, or empty"
KUBELET_ALLOWED_PREFIXES = ("kubelet.kubernetes.io", "node.kubernetes.io")
AKS_RESERVED_LABELS = ("node.kubernetes.io/instance-type",)
"""Labels AKS sets on every node and refuses to let you change (aks-docs use-labels.md, "Reserved system labels"),
in a prefix the kubelet otherwise allows."""


def _key_problem(key: str) -> str | None:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _PREFIX_RE.match(prefix)):
        return f"{_KEY_RULE} (the prefix {prefix!r} is not a lowercase DNS subdomain)"
    if not name or len(name) > 63 or not _NAME_RE.match(name):
        return _KEY_RULE
    return None


def _value_ok(value: str) -> bool:
    return value == "" or (len(value) <= 63 and bool(_NAME_RE.match(value)))


def _in_domain(prefix: str, domain: str) -> bool:
    return prefix == domain or prefix.endswith(f".{domain}")


def _reserved_key(key: str, gpushare_keys: tuple[str, ...]) -> str | None:
    """Why a label or taint key is not the user's to set, or None."""
    prefix = key.rpartition("/")[0]
    if key in gpushare_keys or _in_domain(prefix, "gpushare.io"):
        return "gpushare sets it on every GPU pool (the guard, the device plugin and the tenants depend on it)"
    if _in_domain(prefix, "kubernetes.azure.com"):
        return "AKS reserves the kubernetes.azure.com prefix for its own labels and taints"
    return None


def parse_labels(c: Checker, value: Any, path: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        c.add(path, f"expected a mapping of node labels such as {{team: vision}}, got {kind_of(value)} {show(value)}")
        return ()
    labels = []
    for key, label in value.items():
        where = f"{path}.{key}"
        if not isinstance(key, str) or _key_problem(key):
            c.add(where, f"{show(key)} is not {_KEY_RULE}")
            continue
        prefix = key.rpartition("/")[0]
        if why := _reserved_key(key, (DEVICE_PLUGIN_CONFIG_LABEL, DEVICE_PLUGIN_DEPLOY_LABEL)):
            c.add(where, f"{key!r} is not yours to set: {why}; use a key of your own, "
                         f"e.g. example.com/{key.rpartition('/')[2]}")
            continue
        if key in AKS_RESERVED_LABELS:
            c.add(where, f"{key!r} is a label AKS sets on every node (the VM size) and refuses to change (aks-docs "
                         f"use-labels.md, reserved system labels); select on it as it is, or use a key of your own")
            continue
        if (_in_domain(prefix, "kubernetes.io") or _in_domain(prefix, "k8s.io")) and not any(
                _in_domain(prefix, allowed) for allowed in KUBELET_ALLOWED_PREFIXES):
            c.add(where, f"{key!r}: the kubelet refuses node labels under kubernetes.io and k8s.io except "
                         f"{' and '.join(KUBELET_ALLOWED_PREFIXES)} (its --node-labels check), and the node would not "
                         f"join; use a prefix of your own")
            continue
        if not isinstance(label, str):
            fix = "; quote it" if isinstance(label, (int, float, bool)) else ""
            c.add(where, f"expected a string label value ({_VALUE_RULE}), got {kind_of(label)} {show(label)}{fix}")
            continue
        if not _value_ok(label):
            c.add(where, f"label value must be {_VALUE_RULE}, got {show(label)}")
            continue
        labels.append((key, label))
    return tuple(labels)


def parse_taints(c: Checker, value: Any, path: str) -> tuple[str, ...]:
    example = '["dedicated=vision:NoSchedule"]'
    if not isinstance(value, list):
        c.add(path, f"expected a list of taints such as {example}, got {kind_of(value)} {show(value)}")
        return ()
    taints: list[str] = []
    seen: dict[tuple[str, str], int] = {}
    gpu_taint_key = GPU_TAINT.partition("=")[0]
    for i, taint in enumerate(value):
        where = f"{path}[{i}]"
        key_value, _, effect = taint.rpartition(":") if isinstance(taint, str) else ("", "", "")
        key, _, taint_value = key_value.partition("=")
        if not isinstance(taint, str) or effect not in TAINT_EFFECTS or not key:
            c.add(where, f"expected a taint `key=value:Effect` or `key:Effect` with Effect one of "
                         f"{', '.join(TAINT_EFFECTS)}, got {show(taint)}; e.g. {example}")
            continue
        if problem := _key_problem(key):
            c.add(where, f"taint key {key!r} is not {problem}")
            continue
        if why := _reserved_key(key, (gpu_taint_key,)):
            c.add(where, f"taint key {key!r} is not yours to set: {why}; use a key of your own")
            continue
        if not _value_ok(taint_value):
            c.add(where, f"taint value must be {_VALUE_RULE}, got {show(taint_value)}")
            continue
        if (key, effect) in seen:
            c.add(where, f"a taint with key {key!r} and effect {effect} is already listed at "
                         f"{path}[{seen[key, effect]}]; a node holds one per key and effect")
            continue
        seen[key, effect] = i
        taints.append(taint)
    return tuple(taints)


def parse_tags(c: Checker, value: Any, path: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        c.add(path, f"expected a mapping of Azure tags such as {{costCenter: \"1234\"}}, got {kind_of(value)} "
                    f"{show(value)}")
        return ()
    tags = []
    for name, tag in value.items():
        where = f"{path}.{name}"
        text = str(name)
        if not text or len(text) > MAX_TAG_NAME or TAG_NAME_FORBIDDEN & set(text):
            c.add(where, f"Azure tag names are 1-{MAX_TAG_NAME} characters without any of "
                         f"{' '.join(sorted(TAG_NAME_FORBIDDEN))}, got {show(name)}")
            continue
        # Azure compares tag names case-insensitively (azure-resource-manager tag-resources.md, "Limitations").
        if prefix := next((p for p in AUTOSCALER_TAG_PREFIXES if text.lower().startswith(p.lower())), None):
            c.add(where, f"tags starting with {prefix} are gpushare's: they tell the cluster autoscaler what this "
                         "pool's nodes advertise, and the labels and taints they carry, and yours would overwrite "
                         "them; remove it (gpushare sets it from the pool's sharing, labels and taints)")
            continue
        if not isinstance(tag, str):
            fix = "; quote it" if isinstance(tag, (int, float, bool)) else ""
            c.add(where, f"expected a string tag value (at most {MAX_TAG_VALUE} characters), got {kind_of(tag)} "
                         f"{show(tag)}{fix}")
            continue
        if len(tag) > MAX_TAG_VALUE:
            c.add(where, f"Azure tag values are at most {MAX_TAG_VALUE} characters, got {len(tag)}")
            continue
        tags.append((text, tag))
    return tuple(tags)


def parse_os_disk(c: Checker, value: Any, path: str) -> OsDisk | None:
    return c.section(value, OS_DISK, path)


SPOT_PRICE_DECIMALS = 5
"""aks-docs spot-node-pool.md: SpotMaxPrice "must be -1 or a positive value with up to five decimal places"."""


def parse_spot(c: Checker, value: Any, path: str) -> Spot | None:
    return c.section(value, SPOT, path, rules={"maxPrice": _spot_max_price})


def _spot_max_price(c: Checker, given: Any, path: str) -> float | None:
    """-1, or a price above 0 with AKS's decimal places (the declaration's NUMBER with its `also`)."""
    if isinstance(given, bool) or not isinstance(given, (int, float)):
        c.add(path, f"expected -1 (up to the on-demand price) or a price in USD per hour above 0, "
                    f"got {kind_of(given)} {show(given)}")
        return None
    if not math.isfinite(given if isinstance(given, float) else 0.0) or abs(given) > sys.float_info.max:
        # `plan` refuses .inf and .nan when it reads the file; the engine's config is JSON, whose decoder reads
        # Infinity and NaN (and AKS's Decimal check below has no exponent for them).
        c.add(path, f"must be a finite price in USD per hour, got {given}; write -1 to pay up to the on-demand price")
        return None
    if given != SPOT_MARKET_PRICE and given <= 0:
        c.add(path, f"must be -1 (up to the on-demand price) or above 0 (USD per hour, AKS's "
                    f"`spotMaxPrice` rule), got {given}; write -1 to pay up to the on-demand price")
        return None
    if given != SPOT_MARKET_PRICE and Decimal(repr(given)).as_tuple().exponent < -SPOT_PRICE_DECIMALS:
        c.add(path, f"must have at most {SPOT_PRICE_DECIMALS} decimal places (AKS's `spotMaxPrice` "
                    f"rule), got {given}; e.g. {round(given, SPOT_PRICE_DECIMALS)}")
        return None
    return float(given)


def _gpu_product(c: Checker, value: Any, path: str) -> catalog.GpuProduct | None:
    product = catalog.find_gpu_product(value) if isinstance(value, str) else None
    if product is None:
        c.add(path, f"gpushare cannot map {show(value)} to an NVIDIA GPU product; allowed: "
                    f"{', '.join(p.name for p in catalog.GPU_PRODUCTS)}")
    return product


def parse_gpu(c: Checker, value: Any, path: str, vm_size: str) -> catalog.VmSize | None:
    """The `gpu:` block of a size outside the catalog: the VM size it describes, or None (problems recorded)."""
    products = ", ".join(p.name for p in catalog.GPU_PRODUCTS)
    values = c.section_values(value, GPU, path, rules={"model": _gpu_product}, missing={
        "model": f"the NVIDIA GPU on {vm_size}; allowed: {products}",
        "count": f"how many whole GPUs one {vm_size} has"})
    if values is None:
        return None
    product, count, memory = values["model"], values["count"], values["memoryGb"]
    if "memoryGb" in values.given:
        pass  # checked by its declaration (None when it failed)
    elif product is not None and len(product.models) == 1:
        memory = product.models[0].memory_gb
    elif product is not None:
        known = ", ".join(str(m.memory_gb) for m in product.models) or "any"
        c.add(f"{path}.memoryGb", f"required for {product.name}: the memory of each GPU in GB (known: {known})")
    vcpus = catalog.vcpus_from_name(vm_size)
    if vcpus is None:
        c.add(path, f"cannot read the vCPU count from {vm_size!r} (Azure size names carry it after the family "
                    "letters, e.g. Standard_NV36ads_A10_v5); check the vmSize")
    if product is None or count is None or memory is None or vcpus is None:
        return None
    return catalog.stack_described_size(vm_size, catalog.stack_gpu_model(product, memory), count, vcpus)


def check_gpu_against_catalog(c: Checker, value: Any, path: str, size: catalog.VmSize) -> None:
    """A `gpu:` block on a catalog size must agree with the catalog."""
    raw = c.mapping(value, path, GPU_KEYS)
    if raw is None:
        return
    facts = {"model": size.gpu.display_name, "count": size.gpus, "memoryGb": size.gpu.memory_gb}
    product = catalog.find_gpu_product(raw["model"]) if isinstance(raw.get("model"), str) else None
    wrong = []
    if "model" in raw and (product is None or not any(m.key == size.gpu.key for m in product.models)):
        wrong.append(f"model {show(raw['model'])}")
    if "count" in raw and raw["count"] != size.gpus:
        wrong.append(f"count {show(raw['count'])}")
    if "memoryGb" in raw and raw["memoryGb"] != size.gpu.memory_gb:
        wrong.append(f"memoryGb {show(raw['memoryGb'])}")
    if wrong:
        known = ", ".join(f"{key}: {fact}" for key, fact in facts.items())
        c.add(path, f"contradicts gpushare's catalog for {size.name} ({'; '.join(wrong)}); the catalog has "
                    f"{known}; remove `gpu:` (it is only for sizes the catalog lacks)")
