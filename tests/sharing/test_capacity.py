"""The capacity model: which resource each pool advertises and how many per node."""

import pytest

from gpushare.model.catalog import MigProfile, find_vm_size
from gpushare.model.stack import GpuPool, MigStrategy, Sharing, SharingStrategy
from gpushare.sharing.capacity import capacity_warnings, pool_capacity
from tests.builders import stack

SINGLE, MIXED = MigStrategy.SINGLE, MigStrategy.MIXED
NO_TENANTS = stack()
TS, MPS = SharingStrategy.TIME_SLICING, SharingStrategy.MPS


def pool(size, mig=None, sharing=None):
    return GpuPool(name="p", vm_size=find_vm_size(size), mig=mig, sharing=sharing)


CASES = [
    # id, pool, strategy, resource, per node, slice
    ("a100-40-mig1g-single", pool("Standard_ND96asr_v4", MigProfile.MIG1G), SINGLE, "nvidia.com/gpu", 56, "1g.5gb"),
    ("a100-40-mig1g-mixed", pool("Standard_ND96asr_v4", MigProfile.MIG1G), MIXED, "nvidia.com/mig-1g.5gb", 56, "1g.5gb"),
    ("a100-80-mig1g-mixed-1gpu", pool("Standard_NC24ads_A100_v4", MigProfile.MIG1G), MIXED, "nvidia.com/mig-1g.10gb", 7,
     "1g.10gb"),
    ("h100nvl-mig2g-single", pool("Standard_NC40ads_H100_v5", MigProfile.MIG2G), SINGLE, "nvidia.com/gpu", 3, "2g.24gb"),
    ("h200-mig3g-mixed", pool("Standard_ND96isr_H200_v5", MigProfile.MIG3G), MIXED, "nvidia.com/mig-3g.71gb", 16,
     "3g.71gb"),
    ("h100-mig7g-mixed", pool("Standard_ND96isr_H100_v5", MigProfile.MIG7G), MIXED, "nvidia.com/mig-7g.80gb", 8,
     "7g.80gb"),
    ("whole-t4x4", pool("Standard_NC64as_T4_v3"), SINGLE, "nvidia.com/gpu", 4, None),
    ("t4-ts4-renamed", pool("Standard_NC4as_T4_v3", sharing=Sharing(TS, 4)), SINGLE, "nvidia.com/gpu.shared", 4, None),
    ("t4x4-ts8-not-renamed", pool("Standard_NC64as_T4_v3", sharing=Sharing(TS, 8, rename_by_default=False)), SINGLE,
     "nvidia.com/gpu", 32, None),
    ("t4-mps10", pool("Standard_NC4as_T4_v3", sharing=Sharing(MPS, 10)), SINGLE, "nvidia.com/gpu.shared", 10, None),
    ("mig-mixed-plus-ts", pool("Standard_NC40ads_H100_v5", MigProfile.MIG3G, Sharing(TS, 2)), MIXED,
     "nvidia.com/mig-3g.47gb.shared", 4, "3g.47gb"),
    ("mig-single-plus-ts", pool("Standard_ND96asr_v4", MigProfile.MIG1G, Sharing(TS, 2)), SINGLE,
     "nvidia.com/gpu.shared", 112, "1g.5gb"),
]


@pytest.mark.parametrize("p, strategy, resource, per_node, slice_", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_advertised_resource_and_count(p, strategy, resource, per_node, slice_):
    capacity = pool_capacity(p, strategy)
    assert (capacity.resource, capacity.per_node, capacity.slice) == (resource, per_node, slice_)
    assert capacity.total(3) == per_node * 3


def test_base_resource_is_the_name_before_the_shared_suffix():
    capacity = pool_capacity(pool("Standard_NC40ads_H100_v5", MigProfile.MIG3G, Sharing(TS, 2)), MIXED)
    assert capacity.base_resource == "nvidia.com/mig-3g.47gb"
    assert capacity.devices_per_node == 2


@pytest.mark.parametrize("profile, idle", [(MigProfile.MIG2G, "1/7"), (MigProfile.MIG3G, "1/7"),
                                           (MigProfile.MIG4G, "3/7")], ids=lambda v: getattr(v, "value", v))
def test_layouts_that_leave_compute_idle_warn(profile, idle):
    p = pool("Standard_ND96asr_v4", profile)
    warnings = capacity_warnings(p, pool_capacity(p, SINGLE), NO_TENANTS)
    assert any(f"leaving {idle} of each GPU's compute idle" in w for w in warnings), warnings


@pytest.mark.parametrize("size, used, memory", [("Standard_ND96asr_v4", "7 x 5 = 35", 40),
                                                ("Standard_NC40ads_H100_v5", "7 x 12 = 84", 94),
                                                ("Standard_ND96isr_H200_v5", "7 x 18 = 126", 141)])
def test_the_idle_compute_warning_says_mig1g_leaves_memory_unused(size, used, memory):
    # Seven 1g slices use all seven compute slices but only seven of the eight memory slices.
    p = pool(size, MigProfile.MIG3G)
    (warning,) = capacity_warnings(p, pool_capacity(p, SINGLE), NO_TENANTS)
    assert warning.endswith(f"; MIG7g uses the whole GPU, MIG1g all of its compute but {used} of its {memory} GB "
                            f"of memory")


@pytest.mark.parametrize("profile", [MigProfile.MIG1G, MigProfile.MIG7G], ids=lambda v: v.value)
def test_full_layouts_do_not_warn(profile):
    p = pool("Standard_ND96asr_v4", profile)
    assert capacity_warnings(p, pool_capacity(p, SINGLE), NO_TENANTS) == []


@pytest.mark.parametrize("strategy, warns", [(MPS, True), (TS, False)], ids=["mps", "time-slicing"])
def test_mps_pools_say_the_device_plugin_calls_mps_experimental(strategy, warns):
    p = pool("Standard_NC4as_T4_v3", sharing=Sharing(strategy, 4))
    experimental = [w for w in capacity_warnings(p, pool_capacity(p, SINGLE), NO_TENANTS) if "experimental" in w]
    assert experimental == ([
        "pool p: NVIDIA's device plugin still calls its MPS support experimental (its README, since v0.15.0); "
        "its time-slicing is not marked so"] if warns else [])


@pytest.mark.parametrize("strategy, warns", [(MPS, True), (TS, False)], ids=["mps", "time-slicing"])
def test_mps_pools_say_that_one_user_at_a_time_gets_the_gpus(strategy, warns):
    # nvidia-cuda-mps-control(1): one MPS server per node at a time, as one UID; a client of another UID waits.
    p = pool("Standard_NC4as_T4_v3", sharing=Sharing(strategy, 4))
    one_user = [w for w in capacity_warnings(p, pool_capacity(p, SINGLE), NO_TENANTS) if "one Linux user" in w]
    assert one_user == ([
        "pool p: MPS serves one Linux user at a time on each node: a pod whose CUDA processes run as another UID "
        "than those already on the node's GPUs waits at CUDA start-up until they have all exited; run every pod on "
        "this pool as the same user (securityContext.runAsUser)"] if warns else [])


def test_one_resource_name_for_different_devices_warns():
    from gpushare.sharing.capacity import ambiguous_resource_warnings

    ts = GpuPool(name="ts", vm_size=find_vm_size("Standard_NC4as_T4_v3"), sharing=Sharing(TS, 4))
    mps = GpuPool(name="mps", vm_size=find_vm_size("Standard_NC4as_T4_v3"), sharing=Sharing(MPS, 4))
    twin = GpuPool(name="twin", vm_size=find_vm_size("Standard_NC8as_T4_v3"), sharing=Sharing(TS, 4))
    warnings = ambiguous_resource_warnings([(p, pool_capacity(p, SINGLE)) for p in (ts, mps)], NO_TENANTS)
    assert len(warnings) == 1
    assert "pools ts, mps all advertise nvidia.com/gpu.shared" in warnings[0]
    assert "gpushare.io/pool" in warnings[0]
    # Same device behind the same name is not ambiguous.
    assert ambiguous_resource_warnings([(p, pool_capacity(p, SINGLE)) for p in (ts, twin)], NO_TENANTS) == []
