"""What each pool's Ready nodes must show, from the same functions `plan` uses (see `gpushare.kubernetes.verify`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from gpushare.model.catalog import gpu_product_label
from gpushare.model.stack import SPOT_NODE_LABEL, SPOT_PRIORITY_LABEL, GpuPool, SharingStrategy, StackConfig
from gpushare.sharing import dra
from gpushare.sharing.operator_values import NAMESPACE, operator_plan
from gpushare.sharing.pool_facts import derive_pool_facts

NVIDIA_PREFIX = "nvidia.com/"
DEVICE_PLUGIN_DS = "nvidia-device-plugin-daemonset"
GFD_DS = "gpu-feature-discovery"
MPS_DS = "nvidia-device-plugin-mps-control-daemon"
VALIDATOR_DS = "nvidia-operator-validator"
OPERATOR_DAEMONSETS = (DEVICE_PLUGIN_DS, GFD_DS, VALIDATOR_DS)
"""The operator's pods label themselves `app=<DaemonSet name>` for each of these and MPS_DS."""
NODE_SETTLE = timedelta(minutes=10)
"""How long after a node turns Ready a missing operator pod still counts as pending (the operator first waits for
NFD's labels, then schedules its DaemonSets)."""

SPOT_LABELS = (SPOT_NODE_LABEL, SPOT_PRIORITY_LABEL)
"""The labels AKS marks a Spot node with, either accepted: `kubernetes.azure.com/priority=spot` and the deprecated
`kubernetes.azure.com/scalesetpriority=spot` (aks-docs use-labels.md @fb060ab L191-192)."""

RESTART_PLUGIN = f"kubectl rollout restart -n {NAMESPACE} daemonset/{DEVICE_PLUGIN_DS}"


@dataclass(frozen=True)
class ProductExpectation:
    """`<resource>.product`: the NVML name (from the catalog) and the suffix GFD appends."""

    key: str
    name: str | None
    suffix: str
    confirmed: bool
    """False: the catalog's name was only seen on clusters, not in NVIDIA's docs; check the suffix alone."""

    @property
    def value(self) -> str:
        return f"{self.name or '<GPU name>'}{self.suffix}"

    def matches(self, found: str) -> bool:
        if self.confirmed:
            return found == self.value
        if not found.endswith(self.suffix):
            return False
        base = found[: len(found) - len(self.suffix)]
        return bool(base) and "-MIG-" not in base and not base.endswith("-SHARED")


@dataclass(frozen=True)
class PoolExpectation:
    pool: str
    resource: str
    per_node: int
    gpus_per_node: int
    mig_slice: str | None
    config_key: str
    config_text: str
    min_nodes: int
    labels: Mapping[str, str]
    """GFD labels that must hold exactly."""
    product: ProductExpectation
    daemon_sets: tuple[str, ...]
    taints: tuple[str, ...]
    """Every taint the pool's nodes carry (the Spot taint AKS adds included): the smoke pod tolerates them."""
    autoscaled: bool = False
    """The pool autoscales: AKS runs the cluster autoscaler, which judges every node of the cluster."""
    spot: bool = False
    """A Spot pool: each node must carry AKS's Spot label (`SPOT_LABELS`)."""



def _product(pool: GpuPool, base_resource: str, slice_name: str | None) -> ProductExpectation:
    label = gpu_product_label(pool.vm_size)
    suffix = f"-MIG-{slice_name}" if slice_name else ""
    if pool.sharing and not pool.sharing.rename_by_default:
        suffix += "-SHARED"
    return ProductExpectation(
        key=f"{base_resource}.product", name=label.value if label else None, suffix=suffix,
        confirmed=bool(label and label.confirmed),
    )


def pool_expectations(stack: StackConfig) -> list[PoolExpectation]:
    """What each device-plugin pool's Ready nodes must show, from the same functions `plan` uses."""
    strategy = stack.operator.mig_strategy
    pool_facts = derive_pool_facts(stack)
    operator_plan(stack, pool_facts)  # refuses a device-plugin config that fails validation, as the program does
    expectations = []
    for facts in pool_facts.values():
        pool, capacity, config = facts.pool, facts.capacity, facts.device_config
        if config is None:
            # A DRA pool: what its nodes show is one ResourceSlice each, not device-plugin resources and labels
            # (`dra_pool_expectations`, checked by `verify.dra_pools`).
            continue
        labels = {
            "nvidia.com/mig.strategy": strategy.value,
            f"{capacity.base_resource}.replicas": str(pool.sharing.replicas if pool.sharing else 1),
            f"{capacity.base_resource}.sharing-strategy": pool.sharing.strategy.value if pool.sharing else "none",
        }
        if pool.sharing and pool.sharing.strategy is SharingStrategy.MPS:
            labels["nvidia.com/mps.capable"] = "true"
        daemon_sets = OPERATOR_DAEMONSETS
        if pool.sharing and pool.sharing.strategy is SharingStrategy.MPS:
            daemon_sets += (MPS_DS,)
        expectations.append(PoolExpectation(
            pool=pool.name,
            resource=capacity.resource,
            per_node=capacity.per_node,
            gpus_per_node=pool.vm_size.gpus,
            mig_slice=capacity.slice,
            config_key=config.key,
            config_text=config.text,
            min_nodes=pool.min_nodes,
            labels=labels,
            product=_product(pool, capacity.base_resource, capacity.slice),
            daemon_sets=daemon_sets,
            taints=facts.tolerated_taints,
            autoscaled=pool.autoscale is not None,
            spot=pool.spot is not None,
        ))
    return expectations


@dataclass(frozen=True)
class DraPoolExpectation:
    """What each Ready node of a DRA pool must show: one ResourceSlice of NVIDIA's DRA driver with the pool's
    devices (`gpushare.sharing.dra.device_kind`: whole GPUs, or the MIG devices AKS's static layout leaves on each),
    and no device plugin."""

    pool: str
    mig_profile: str | None
    """The MIG profile the driver publishes as `profile` (`3g.47gb`); None for whole GPUs."""
    gpus_per_node: int
    devices_per_gpu: int
    """1 for whole GPUs; the MIG layout's instances per GPU."""
    device_class: str
    min_nodes: int

    @property
    def device_type(self) -> str:
        return "mig" if self.mig_profile else "gpu"

    @property
    def describe(self) -> str:
        """`2 x mig 3g.47gb on each of 1 GPU(s)` or `1 whole GPU(s)`."""
        if self.mig_profile:
            return f"{self.devices_per_gpu} x mig {self.mig_profile} on each of {self.gpus_per_node} GPU(s)"
        return f"{self.gpus_per_node} whole GPU(s)"


def dra_pool_expectations(stack: StackConfig) -> list[DraPoolExpectation]:
    """What each DRA pool's Ready nodes must show, from the same functions `plan` uses."""
    found = []
    for pool in dra.dra_pools(stack):
        kind = dra.device_kind(pool)
        found.append(DraPoolExpectation(
            pool=pool.name, mig_profile=kind.mig_slice, gpus_per_node=pool.vm_size.gpus,
            devices_per_gpu=pool.mig.instances_per_gpu if pool.mig else 1, device_class=kind.class_name,
            min_nodes=pool.min_nodes))
    return found
