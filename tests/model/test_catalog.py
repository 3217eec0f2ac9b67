"""The GPU catalog: every size, every MIG profile, retired sizes (facts: shared reference aks-gpu.md sections 3-4)."""

from fractions import Fraction

import pytest

from gpushare.model import catalog
from gpushare.model.catalog import MigProfile

# (size, GPU model, GPUs per VM, vCPUs, quota family)
SIZES = [
    ("Standard_ND96asr_v4", "A100-40GB", 8, 96, "StandardNDASv4_A100Family"),
    ("Standard_ND96amsr_A100_v4", "A100-80GB", 8, 96, "standardNDAMSv4_A100Family"),
    ("Standard_NC24ads_A100_v4", "A100-80GB", 1, 24, "StandardNCADSA100v4Family"),
    ("Standard_NC48ads_A100_v4", "A100-80GB", 2, 48, "StandardNCADSA100v4Family"),
    ("Standard_NC96ads_A100_v4", "A100-80GB", 4, 96, "StandardNCADSA100v4Family"),
    ("Standard_NC40ads_H100_v5", "H100-NVL-94GB", 1, 40, "StandardNCadsH100v5Family"),
    ("Standard_NC80adis_H100_v5", "H100-NVL-94GB", 2, 80, "StandardNCadsH100v5Family"),
    ("Standard_ND96isr_H100_v5", "H100-80GB", 8, 96, "standardNDSH100v5Family"),
    ("Standard_ND96isr_H200_v5", "H200-141GB", 8, 96, "standardNDISRH200V5Family"),
    ("Standard_NC4as_T4_v3", "T4-16GB", 1, 4, "StandardNCASv3_T4Family"),
    ("Standard_NC8as_T4_v3", "T4-16GB", 1, 8, "StandardNCASv3_T4Family"),
    ("Standard_NC16as_T4_v3", "T4-16GB", 1, 16, "StandardNCASv3_T4Family"),
    ("Standard_NC64as_T4_v3", "T4-16GB", 4, 64, "StandardNCASv3_T4Family"),
    # NVadsA10_v5, whole GPUs only (aks-gpu.md section 3).
    ("Standard_NV36ads_A10_v5", "A10-24GB", 1, 36, "StandardNVADSA10v5Family"),
    ("Standard_NV36adms_A10_v5", "A10-24GB", 1, 36, "StandardNVADSA10v5Family"),
    ("Standard_NV72ads_A10_v5", "A10-24GB", 2, 72, "StandardNVADSA10v5Family"),
]

# MIG slice per AKS profile (MIG1g..MIG7g) for each GPU model.
SLICES = {
    "A100-40GB": ("1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
    "A100-80GB": ("1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "H100-80GB": ("1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "H100-NVL-94GB": ("1g.12gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),
    "H200-141GB": ("1g.18gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
}


@pytest.mark.parametrize("name, gpu, gpus, vcpus, family", SIZES, ids=[s[0] for s in SIZES])
def test_size_facts(name, gpu, gpus, vcpus, family):
    size = catalog.find_vm_size(name)
    assert size is not None
    assert (size.name, size.gpu.key, size.gpus, size.vcpus, size.quota_family) == (name, gpu, gpus, vcpus, family)
    assert size.retired_on is None
    assert size.mig_capable == (gpu in SLICES)


def test_catalog_has_exactly_the_documented_current_sizes():
    assert sorted(s.name for s in catalog.current_gpu_sizes()) == sorted(s[0] for s in SIZES)


MIG_CASES = [
    (size, profile, SLICES[gpu][i])
    for size, gpu, *_ in SIZES if gpu in SLICES
    for i, profile in enumerate(MigProfile)
]


@pytest.mark.parametrize("name, profile, expected", MIG_CASES,
                         ids=[f"{n}-{p.value}" for n, p, _ in MIG_CASES])
def test_mig_slice_for_every_size_and_profile(name, profile, expected):
    assert catalog.find_vm_size(name).mig_slice(profile) == expected


@pytest.mark.parametrize("profile, instances, usable", [
    (MigProfile.MIG1G, 7, Fraction(1)),
    (MigProfile.MIG2G, 3, Fraction(6, 7)),
    (MigProfile.MIG3G, 2, Fraction(6, 7)),
    (MigProfile.MIG4G, 1, Fraction(4, 7)),
    (MigProfile.MIG7G, 1, Fraction(1)),
], ids=lambda v: v.value if isinstance(v, MigProfile) else None)
def test_aks_builds_7_3_2_1_1_instances(profile, instances, usable):
    assert profile.instances_per_gpu == instances
    assert profile.usable_share == usable


@pytest.mark.parametrize("name", ["Standard_NC6s_v3", "Standard_NC12s_v3", "Standard_NC24s_v3", "Standard_NC24rs_v3"])
def test_ncv3_is_retired_with_a_current_replacement(name):
    size = catalog.find_vm_size(name)
    assert size.gpu.key == "V100-16GB" and not size.mig_capable
    assert str(size.retired_on) == "2025-09-30"
    named = [s.name for s in catalog.current_gpu_sizes() if s.name in size.replacement]
    assert named, f"replacement {size.replacement!r} names no current size"
    assert name not in [s.name for s in catalog.current_gpu_sizes()]


def test_lookup_is_case_insensitive_and_suggests_close_names():
    assert catalog.find_vm_size("standard_nc4as_t4_v3").name == "Standard_NC4as_T4_v3"
    assert catalog.find_vm_size("Standard_D4ds_v5") is None
    assert "Standard_ND96asr_v4" in catalog.closest_vm_sizes("Standard_ND96asr_v5")


def test_mps_client_limit_follows_compute_capability():
    assert catalog.T4_16GB.mps_max_clients == 48
    assert catalog.V100_16GB.mps_max_clients == 16


@pytest.mark.parametrize("name", ["Standard_NV6ads_A10_v5", "Standard_NV12ads_A10_v5", "Standard_NV18ads_A10_v5"])
def test_fractional_a10_sizes_are_refused_with_the_vgpu_reason(name):
    assert catalog.find_vm_size(name) is None
    assert "fraction of one A10 through NVIDIA vGPU" in catalog.refused_size_reason(name)


@pytest.mark.parametrize("name", ["Standard_NV8as_v4", "Standard_ND96isr_MI300X_v5", "Standard_NG32ads_V620_v1"])
def test_amd_sizes_are_refused(name):
    assert "AMD GPUs" in catalog.refused_size_reason(name)


def test_whole_gpu_sizes_are_not_refused():
    assert catalog.refused_size_reason("Standard_NV36ads_A10_v5") is None
    assert catalog.refused_size_reason("Standard_NC4as_T4_v3") is None


def test_a_stack_gpu_model_takes_the_known_variant_with_its_mig_slices():
    h100 = catalog.find_gpu_product("nvidia h100")
    assert catalog.stack_gpu_model(h100, 94).mig_slices[MigProfile.MIG1G] == "1g.12gb"
    assert not catalog.stack_gpu_model(h100, 64).mig_capable  # an unknown variant has no slice table
    assert catalog.vcpus_from_name("Standard_NC24lds_xl_RTXPRO6000BSE_v6") == 24
