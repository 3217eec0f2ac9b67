"""Stack-file validation: every rule and every key path, asserted on the `ConfigError` the user sees.

Each case starts from `valid_raw()` (a fresh, minimal valid `config:` mapping), changes one thing, and checks the
problems: their exact set of paths, and, for each, the words that make the message useful (the bad value, what is
allowed, the fix).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from gpushare.errors import ConfigError, ConfigProblem
from gpushare.model import catalog
from gpushare.model.stack import (
    Autoscale,
    AzureEnvironment,
    AzureSettings,
    DriverOwner,
    GuardMode,
    MigStrategy,
    OsSku,
    PreflightMode,
    Sharing,
    SharingStrategy,
    StackConfig,
    SystemPool,
)
from gpushare.stackfile.config import (
    decode_engine_config,
    encode_engine_config,
    load_stack_file,
    parse_config,
    read_stack_file,
    stack_name_for,
)
from tests.stack_files import MINIMAL_STACK_YAML, T4, minimal_config, write_stack

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_STACKS = sorted((REPO_ROOT / "stacks").glob("Pulumi.*.yaml"))
SOURCE = "stacks/Pulumi.test.yaml"
STACK = "test"
H100 = "Standard_NC40ads_H100_v5"
POOLS = "gpushare:pools"
POOL0 = "gpushare:pools[0]"
SUBSCRIPTION = "3f2c9a10-7b1d-4c55-9e0a-2b8f6d41c7e3"


# --- builders ----------------------------------------------------------------------------------------------------

def valid_raw() -> dict[str, Any]:
    """The minimal stack's `config:` mapping; a fresh copy each call, so cases can mutate it freely."""
    return minimal_config()


Mutation = Callable[[dict[str, Any]], None]


def top(key: str, value: Any) -> Mutation:
    return lambda raw: raw.__setitem__(key, value)


def drop(key: str) -> Mutation:
    return lambda raw: raw.pop(key)


def cluster(**changes: Any) -> Mutation:
    return lambda raw: raw["gpushare:cluster"].update(changes)


def drop_cluster_key(key: str) -> Mutation:
    return lambda raw: raw["gpushare:cluster"].pop(key)


def operator(**values: Any) -> Mutation:
    return top("gpushare:operator", values)


def pool(**changes: Any) -> Mutation:
    """Change the first pool."""
    return lambda raw: raw[POOLS][0].update(changes)


def h100_pool(**changes: Any) -> Mutation:
    """Make the first pool a MIG-capable H100 pool, then change it."""
    return pool(vmSize=H100, **changes)


def drop_pool_key(key: str) -> Mutation:
    return lambda raw: raw[POOLS][0].pop(key)


def add_pool(**values: Any) -> Mutation:
    return lambda raw: raw[POOLS].append(values)


def combine(*mutations: Mutation) -> Mutation:
    def mutate(raw: dict[str, Any]) -> None:
        for mutation in mutations:
            mutation(raw)
    return mutate


def raw_with(*mutations: Mutation) -> dict[str, Any]:
    raw = valid_raw()
    combine(*mutations)(raw)
    return raw


def parse(raw: dict[str, Any]) -> StackConfig:
    return parse_config(raw, source=SOURCE, stack=STACK)


def problems_of(raw: dict[str, Any]) -> list[ConfigProblem]:
    with pytest.raises(ConfigError) as caught:
        parse(raw)
    assert caught.value.source == SOURCE
    return caught.value.problems


def show(problems: list[ConfigProblem]) -> str:
    return "\n".join(f"  {p}" for p in problems)


Expected = tuple[str, tuple[str, ...]]
"""(problem path, fragments its message must all contain)."""


def assert_problems(problems: list[ConfigProblem], expected: list[Expected], *, exact: bool = True) -> None:
    """The problems' paths are exactly the expected ones (as a multiset), and each carries its fragments."""
    got = sorted(p.path for p in problems)
    want = sorted(path for path, _ in expected)
    if exact:
        assert got == want, f"expected problems at {want}, got:\n{show(problems)}"
    for path, fragments in expected:
        messages = [p.message for p in problems if p.path == path]
        assert messages, f"no problem at {path}; got:\n{show(problems)}"
        assert any(all(f in m for f in fragments) for m in messages), (
            f"no message at {path} contains all of {fragments}; got:\n{show(problems)}")



# --- the valid baseline ------------------------------------------------------------------------------------------

def test_valid_raw_is_valid():
    """Every rejection below is caused by its one change, not by the baseline."""
    stack = parse(valid_raw())
    assert [p.name for p in stack.pools] == ["t4"]


def test_defaults_are_applied():
    stack = parse(valid_raw())
    assert stack.source == SOURCE
    assert stack.stack == STACK
    assert stack.location == "westeurope"
    assert stack.cluster.name == "gpushare-test"
    assert stack.cluster.resource_group == "gpushare-test-rg"
    assert stack.cluster.kubernetes_version is None
    assert stack.cluster.system_pool == SystemPool(vm_size="Standard_D4ds_v5", count=2)
    assert (stack.operator.chart_version, stack.operator.driver, stack.operator.mig_strategy) == (
        "v26.7.0", DriverOwner.AKS, MigStrategy.SINGLE)
    (t4,) = stack.pools
    assert t4.vm_size is catalog.find_vm_size(T4)
    assert (t4.count, t4.autoscale, t4.mig, t4.sharing) == (1, None, None, None)
    assert (t4.zones, t4.os_sku, t4.recreate) == ((), OsSku.UBUNTU, False)
    assert stack.guard is GuardMode.STRICT
    assert stack.preflight is PreflightMode.STRICT
    assert stack.azure == AzureSettings(subscription_id=None, environment=AzureEnvironment.PUBLIC)


def test_sharing_defaults_are_applied():
    stack = parse(raw_with(pool(sharing={"strategy": "time-slicing", "replicas": 4})))
    assert stack.pools[0].sharing == Sharing(
        SharingStrategy.TIME_SLICING, 4, rename_by_default=True, fail_requests_greater_than_one=True)


def test_autoscaled_pool_has_no_count():
    (t4,) = parse(raw_with(pool(autoscale={"min": 0, "max": 3}))).pools
    assert (t4.count, t4.autoscale, t4.min_nodes, t4.max_nodes) == (None, Autoscale(0, 3), 0, 3)


def test_explicit_values_override_defaults():
    stack = parse(raw_with(
        cluster(resourceGroup="rg-gpu", kubernetesVersion="1.36.2", upgrades={"channel": "none"},
                systemPool={"vmSize": "Standard_D8ds_v5", "count": 3}),
        # driver: operator is covered with Ubuntu elsewhere; it is refused on AzureLinux (no NVIDIA driver container).
        operator(chartVersion="v26.7.0", driver="aks", migStrategy="single"),
        pool(count=4, zones=["2"], osSku="AzureLinux", recreate=True,
             sharing={"strategy": "mps", "replicas": 3, "renameByDefault": False, "failRequestsGreaterThanOne": False}),
        top("gpushare:guard", "warn"),
        top("gpushare:preflight", "off"),
    ))
    assert stack.preflight is PreflightMode.OFF
    assert stack.cluster.resource_group == "rg-gpu"
    assert stack.cluster.kubernetes_version == "1.36.2"
    assert stack.cluster.system_pool == SystemPool("Standard_D8ds_v5", 3)
    assert (stack.operator.chart_version, stack.operator.driver, stack.operator.mig_strategy) == (
        "v26.7.0", DriverOwner.AKS, MigStrategy.SINGLE)
    (t4,) = stack.pools
    assert (t4.count, t4.zones, t4.os_sku, t4.recreate) == (4, ("2",), OsSku.AZURE_LINUX, True)
    assert t4.sharing == Sharing(SharingStrategy.MPS, 3, rename_by_default=False, fail_requests_greater_than_one=False)
    assert stack.guard is GuardMode.WARN


@pytest.mark.parametrize(
    ("written", "canonical"),
    [("standard_nc4as_t4_v3", T4), ("STANDARD_ND96ASR_V4", "Standard_ND96asr_v4"),
     ("Standard_nc40ADS_h100_V5", H100)],
    ids=["lowercase", "uppercase", "mixed-case"],
)
def test_vm_size_lookup_is_case_insensitive_and_returns_canonical_name(written, canonical):
    (only,) = parse(raw_with(pool(vmSize=written))).pools
    assert only.vm_size.name == canonical
    assert only.vm_size is catalog.find_vm_size(canonical)


@pytest.mark.parametrize(
    ("zones", "expected"),
    [([1, 2], ("1", "2")), ([3], ("3",)), (["1", 3], ("1", "3"))],
    ids=["numbers", "one-number", "string-and-number"],
)
def test_zones_given_as_numbers_are_accepted_as_strings(zones, expected):
    assert parse(raw_with(pool(zones=zones))).pools[0].zones == expected


@pytest.mark.parametrize("zones", [["2", "1"], ["3", "1", "2"], [3, "2"]], ids=["two", "three", "mixed-types"])
def test_zones_are_sorted_so_another_order_is_the_same_pool(zones):
    # Pulumi compares the list in order and availabilityZones replaces the pool: ["2", "1"] must not differ from a
    # pool deployed with ["1", "2"].
    assert parse(raw_with(pool(zones=zones))).pools[0].zones == tuple(sorted(str(z) for z in zones))


def test_zones_written_unquoted_in_yaml_are_accepted(tmp_path):
    path = write_stack(tmp_path, MINIMAL_STACK_YAML + "      zones: [1, 3]\n")
    assert load_stack_file(path).pools[0].zones == ("1", "3")


@dataclass(frozen=True)
class Accepted:
    id: str
    mutate: Mutation
    check: Callable[[StackConfig], bool]


ACCEPTED = [
    Accepted("accepts_mps_48_replicas_on_t4", pool(sharing={"strategy": "mps", "replicas": 48}),
             lambda s: s.pools[0].sharing.replicas == 48),
    Accepted("accepts_mps_48_replicas_on_h100_without_mig", h100_pool(sharing={"strategy": "mps", "replicas": 48}),
             lambda s: s.pools[0].sharing.strategy is SharingStrategy.MPS),
    Accepted("accepts_time_slicing_beyond_the_mps_limit", pool(sharing={"strategy": "time-slicing", "replicas": 100}),
             lambda s: s.pools[0].sharing.replicas == 100),
    Accepted("accepts_replicas_2", pool(sharing={"strategy": "time-slicing", "replicas": 2}),
             lambda s: s.pools[0].sharing.replicas == 2),
    Accepted("accepts_mig_with_time_slicing_under_mixed",
             combine(operator(migStrategy="mixed"),
                     h100_pool(mig="MIG2g", sharing={"strategy": "time-slicing", "replicas": 3})),
             lambda s: s.pools[0].mig is catalog.MigProfile.MIG2G),
    Accepted("accepts_every_mig_profile_on_h100", h100_pool(mig="MIG7g"),
             lambda s: s.pools[0].mig is catalog.MigProfile.MIG7G),
    Accepted("accepts_count_zero", pool(count=0), lambda s: s.pools[0].count == 0),
    Accepted("accepts_autoscale_min_equal_to_max", pool(autoscale={"min": 2, "max": 2}),
             lambda s: s.pools[0].autoscale == Autoscale(2, 2)),
    Accepted("accepts_two_pools_with_distinct_names", add_pool(name="t4b", vmSize="Standard_NC8as_T4_v3"),
             lambda s: [p.name for p in s.pools] == ["t4", "t4b"]),
    Accepted("accepts_one_os_sku_across_pools",
             combine(pool(osSku="AzureLinux"), add_pool(name="t4b", vmSize=T4, osSku="AzureLinux")),
             lambda s: {p.os_sku for p in s.pools} == {OsSku.AZURE_LINUX}),
    Accepted("accepts_empty_operator", top("gpushare:operator", None),
             lambda s: s.operator.chart_version == "v26.7.0"),
    Accepted("accepts_mixed_without_mps", combine(operator(migStrategy="mixed"), h100_pool(mig="MIG1g")),
             lambda s: s.operator.mig_strategy is MigStrategy.MIXED),
    Accepted("accepts_us_government_region", combine(top("azure-native:location", "usgovvirginia"),
                                                     top("azure-native:environment", "usgovernment")),
             lambda s: s.location == "usgovvirginia"),
    Accepted("accepts_china_region", combine(top("azure-native:location", "chinanorth3"),
                                             top("azure-native:environment", "china")),
             lambda s: s.location == "chinanorth3"),
    Accepted("accepts_other_provider_namespaces", top("azure-native:tenantId", "00000000-0000"),
             lambda s: s.location == "westeurope"),
    Accepted("accepts_preflight_off_read_by_yaml_as_false", top("gpushare:preflight", False),
             lambda s: s.preflight is PreflightMode.OFF),
    Accepted("accepts_azure_settings", combine(top("azure-native:subscriptionId", SUBSCRIPTION),
                                               top("azure-native:environment", "usgovernment"),
                                               top("azure-native:location", "usgovtexas")),
             lambda s: s.azure == AzureSettings(SUBSCRIPTION, AzureEnvironment.USGOVERNMENT)),
]


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.id for c in ACCEPTED])
def test_accepts(case: Accepted):
    assert case.check(parse(raw_with(case.mutate)))


# --- one case per rule and key path ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Rejected:
    id: str
    mutate: Mutation
    expected: list[Expected]
    exact: bool = True


MIG_SIZES = ", ".join(s.name for s in catalog.mig_capable_sizes())
CURRENT_SIZES = ", ".join(s.name for s in catalog.current_gpu_sizes())
POOL_KEYS = "allowed: name, vmSize, mig, sharing, count, autoscale, zones, osSku, recreate"
SHARING_KEYS = "allowed: strategy, replicas, renameByDefault, failRequestsGreaterThanOne"
MPS = {"strategy": "mps", "replicas": 2}

REJECTED = [
    # The rules.
    Rejected("rejects_mig_on_t4", pool(mig="MIG1g"), [(f"{POOL0}.mig", (
        f"{T4} (NVIDIA T4 16GB) does not support MIG", "remove `mig`", f"use a MIG-capable size: {MIG_SIZES}"))]),
    Rejected("rejects_mig_on_t4_64", pool(vmSize="Standard_NC64as_T4_v3", mig="MIG7g"), [(f"{POOL0}.mig", (
        "Standard_NC64as_T4_v3", "does not support MIG", "remove `mig`", H100))]),
    Rejected("rejects_mps_with_mig", h100_pool(mig="MIG1g", sharing=MPS), [(f"{POOL0}.sharing.strategy", (
        "mps cannot run on MIG devices", "use time-slicing on a MIG pool", "or mps on a pool without `mig`"))]),
    Rejected("rejects_mps_with_misspelt_mig", h100_pool(mig="MIG9g", sharing=MPS), [
        (f"{POOL0}.mig", ("unknown value 'MIG9g'", "allowed: MIG1g, MIG2g, MIG3g, MIG4g, MIG7g")),
        (f"{POOL0}.sharing.strategy", ("mps cannot run on MIG devices",))]),
    Rejected("rejects_mps_under_mixed", combine(operator(migStrategy="mixed"), pool(sharing=MPS)), [
        (f"{POOL0}.sharing.strategy", ("mps cannot be used while gpushare:operator.migStrategy is mixed",
                                       "use time-slicing", "or migStrategy: single"))]),
    Rejected("rejects_mps_with_mig_under_mixed",
             combine(operator(migStrategy="mixed"), h100_pool(mig="MIG3g", sharing=MPS)), [
        (f"{POOL0}.sharing.strategy", ("mps cannot run on MIG devices",)),
        (f"{POOL0}.sharing.strategy", ("migStrategy is mixed", "migStrategy: single"))]),
    Rejected("rejects_time_slicing_replicas_1", pool(sharing={"strategy": "time-slicing", "replicas": 1}), [
        (f"{POOL0}.sharing.replicas", ("must be 2 or more", "got 1", "drop `sharing` for whole GPUs"))]),
    Rejected("rejects_mps_replicas_0", pool(sharing={"strategy": "mps", "replicas": 0}), [
        (f"{POOL0}.sharing.replicas", ("must be 2 or more", "got 0"))]),
    Rejected("rejects_negative_replicas", pool(sharing={"strategy": "time-slicing", "replicas": -4}), [
        (f"{POOL0}.sharing.replicas", ("must be 2 or more", "got -4"))]),
    Rejected("rejects_mps_replicas_49_on_t4", pool(sharing={"strategy": "mps", "replicas": 49}), [
        (f"{POOL0}.sharing.replicas", ("must be from 2 to 48 for mps on NVIDIA T4 16GB",
                                       "the device plugin's limit per GPU", "got 49"))]),
    Rejected("rejects_mps_replicas_64_on_h100", h100_pool(sharing={"strategy": "mps", "replicas": 64}), [
        (f"{POOL0}.sharing.replicas", ("must be from 2 to 48 for mps on NVIDIA H100 NVL 94GB", "got 64"))]),
    Rejected("rejects_duplicate_pool_names", add_pool(name="t4", vmSize="Standard_NC8as_T4_v3"), [
        (f"{POOLS}[1].name", ("pool name 't4' is already used by gpushare:pools[0]", "must be unique"))]),
    Rejected("rejects_duplicate_pool_names_third_pool",
             combine(add_pool(name="t4b", vmSize=T4), add_pool(name="t4b", vmSize=T4)), [
        (f"{POOLS}[2].name", ("'t4b' is already used by gpushare:pools[1]",))]),
    Rejected("rejects_count_and_autoscale", pool(count=2, autoscale={"min": 0, "max": 3}), [
        (POOL0, ("either `count`", "or `autoscale: {min, max}`", "not both"))]),
    Rejected("rejects_autoscale_min_greater_than_max", pool(autoscale={"min": 3, "max": 2}), [
        (f"{POOL0}.autoscale", ("min (3) is greater than max (2)", "set min <= max"))]),
    Rejected("rejects_count_as_string", pool(count="2"), [
        (f"{POOL0}.count", ("expected a whole number from 0 to 1000", "got a string '2'", "write it without quotes"))]),
    Rejected("rejects_replicas_as_string", pool(sharing={"strategy": "mps", "replicas": "4"}), [
        (f"{POOL0}.sharing.replicas", ("expected a whole number 2 or more", "got a string '4'",
                                       "write it without quotes"))]),
    Rejected("rejects_replicas_as_word", pool(sharing={"strategy": "mps", "replicas": "four"}), [
        (f"{POOL0}.sharing.replicas", ("expected a whole number 2 or more", "got a string 'four'"))]),
    Rejected("rejects_autoscale_min_as_string", pool(autoscale={"min": "0", "max": 2}), [
        (f"{POOL0}.autoscale.min", ("expected a whole number from 0 to 1000", "got a string '0'",
                                    "write it without quotes"))]),
    Rejected("rejects_system_pool_count_as_string", cluster(systemPool={"count": "3"}), [
        ("gpushare:cluster.systemPool.count", ("expected a whole number from 1 to 1000", "got a string '3'",
                                               "write it without quotes"))]),
    # aks-docs quotas-skus-regions.md: "AKS doesn't support B series VMs for system node pools".
    Rejected("rejects_a_burstable_system_pool", cluster(systemPool={"vmSize": "Standard_B4ms"}), [
        ("gpushare:cluster.systemPool.vmSize", ("Standard_B4ms is a B-series (burstable) size",
                                                "not support for system pools", "Standard_D4ds_v5"))]),
    Rejected("rejects_missing_pools", drop(POOLS), [
        (POOLS, ("required: at least one GPU pool", f"- {{name: t4, vmSize: {T4}}}"))]),
    Rejected("rejects_empty_pools", top(POOLS, []), [
        (POOLS, ("expected a list of at least one GPU pool", "got a list []", "gpushare:pools:"))]),

    # Unknown keys, at every level, with the closest valid key.
    Rejected("rejects_unknown_gpushare_key", top("gpushare:pool", []), [
        ("gpushare:pool", ("unknown key (did you mean 'gpushare:pools'?)",
                           "allowed: gpushare:cluster, gpushare:operator, gpushare:pools, gpushare:guard, "
                           "gpushare:preflight"))]),
    Rejected("rejects_unknown_gpushare_key_operators", top("gpushare:operators", {}), [
        ("gpushare:operators", ("did you mean 'gpushare:operator'?",))]),
    Rejected("rejects_key_without_namespace", top("pools", []), [
        ("pools", ("config keys need a namespace", "did you mean gpushare:pools?"))]),
    Rejected("rejects_unknown_cluster_key", cluster(nmae="x"), [
        ("gpushare:cluster.nmae", ("unknown key (did you mean 'name'?)",
                                   "allowed: name, resourceGroup, kubernetesVersion, systemPool"))]),
    Rejected("rejects_unknown_cluster_key_resource_group", cluster(resourcegroup="rg"), [
        ("gpushare:cluster.resourcegroup", ("did you mean 'resourceGroup'?",))]),
    Rejected("rejects_unknown_system_pool_key", cluster(systemPool={"vmsize": "Standard_D8ds_v5"}), [
        ("gpushare:cluster.systemPool.vmsize", ("unknown key (did you mean 'vmSize'?)", "allowed: vmSize, count"))]),
    Rejected("rejects_unknown_operator_key", operator(chartversion="v26.7.0"), [
        ("gpushare:operator.chartversion", ("unknown key (did you mean 'chartVersion'?)",
                                            "allowed: chartVersion, driver, migStrategy"))]),
    Rejected("rejects_unknown_operator_key_mig_strategy", operator(strategy="mixed"), [
        ("gpushare:operator.strategy", ("did you mean 'migStrategy'?",))]),
    Rejected("rejects_unknown_pool_key", pool(zone=["1"]), [
        (f"{POOL0}.zone", ("unknown key (did you mean 'zones'?)", POOL_KEYS))]),
    Rejected("rejects_unknown_pool_key_vm_size_case", combine(drop_pool_key("vmSize"), pool(vmsize=T4)), [
        (f"{POOL0}.vmsize", ("did you mean 'vmSize'?",)),
        (f"{POOL0}.vmSize", ("required: a GPU VM size",))]),
    Rejected("rejects_unknown_sharing_key",
             pool(sharing={"strategy": "mps", "replicas": 2, "renamebydefault": False}), [
        (f"{POOL0}.sharing.renamebydefault", ("unknown key (did you mean 'renameByDefault'?)", SHARING_KEYS))]),
    Rejected("rejects_unknown_sharing_key_replica", pool(sharing={"strategy": "mps", "replicas": 2, "replica": 4}), [
        (f"{POOL0}.sharing.replica", ("did you mean 'replicas'?",))]),
    Rejected("rejects_unknown_autoscale_key", pool(autoscale={"min": 0, "max": 2, "mn": 1}), [
        (f"{POOL0}.autoscale.mn", ("unknown key (did you mean 'min'?)", "allowed: min, max"))]),
    Rejected("rejects_unknown_autoscale_key_replacing_max", pool(autoscale={"min": 0, "maximum": 2}), [
        (f"{POOL0}.autoscale.maximum", ("did you mean 'max'?",)),
        (f"{POOL0}.autoscale.max", ("required: the most nodes the autoscaler keeps",))]),

    # azure-native:location.
    Rejected("rejects_missing_location", drop("azure-native:location"), [
        ("azure-native:location", ("required", "azure-native:location: westeurope"))]),
    Rejected("rejects_location_display_name", top("azure-native:location", "West Europe"), [
        ("azure-native:location", ("programmatic name", "got 'West Europe'", "write 'westeurope'"))]),
    Rejected("rejects_location_not_a_string", top("azure-native:location", 5), [
        ("azure-native:location", ("expected a string", "got a number 5"))]),
    Rejected("rejects_abbreviated_region", top("azure-native:location", "westeu"), [
        ("azure-native:location", ("unknown Azure region 'westeu' (did you mean westeurope?)",
                                   "az account list-locations"))]),
    Rejected("rejects_region_that_does_not_exist", top("azure-native:location", "eastus3"), [
        ("azure-native:location", ("unknown Azure region 'eastus3' (did you mean eastus or westus3?)",))]),

    # gpushare:cluster.
    Rejected("rejects_missing_cluster", drop("gpushare:cluster"), [
        ("gpushare:cluster", ("required", "gpushare:cluster: {name:"))]),
    Rejected("rejects_cluster_not_a_mapping", top("gpushare:cluster", "gpushare-test"), [
        ("gpushare:cluster", ("expected a mapping with keys name, resourceGroup", "got a string 'gpushare-test'"))]),
    Rejected("rejects_missing_cluster_name", drop_cluster_key("name"), [
        ("gpushare:cluster.name", ("required: the AKS cluster name",))]),
    Rejected("rejects_cluster_name_with_bad_start", cluster(name="-gpu"), [
        ("gpushare:cluster.name", ("must be 1-63 letters, digits, '-' or '_'", "got '-gpu'"))]),
    Rejected("rejects_cluster_name_too_long", cluster(name="a" * 64), [
        ("gpushare:cluster.name", ("must be 1-63", "a" * 64))]),
    Rejected("rejects_resource_group_ending_in_dot", cluster(resourceGroup="rg."), [
        ("gpushare:cluster.resourceGroup", ("not ending in '.'", "got 'rg.'"))]),
    Rejected("rejects_unquoted_kubernetes_version", cluster(kubernetesVersion=1.33), [
        ("gpushare:cluster.kubernetesVersion", ("reads an unquoted version as a number", "(here 1.33)",
                                                'kubernetesVersion: "1.36"'))]),
    Rejected("rejects_bad_kubernetes_version", cluster(kubernetesVersion="v1.33"), [
        ("gpushare:cluster.kubernetesVersion", ('such as "1.36" or "1.36.2"', "got 'v1.33'"))]),
    Rejected("rejects_system_pool_not_a_mapping", cluster(systemPool="Standard_D4ds_v5"), [
        ("gpushare:cluster.systemPool", ("expected a mapping with keys vmSize, count",))]),
    Rejected("rejects_gpu_system_pool", cluster(systemPool={"vmSize": T4}), [
        ("gpushare:cluster.systemPool.vmSize", (f"{T4} is a GPU size", "such as Standard_D4ds_v5",
                                                "put GPUs in gpushare:pools"))]),
    Rejected("rejects_system_pool_vm_size_not_azure", cluster(systemPool={"vmSize": "D4ds_v5"}), [
        ("gpushare:cluster.systemPool.vmSize", ("Azure VM size such as Standard_D4ds_v5", "got 'D4ds_v5'"))]),
    Rejected("rejects_system_pool_count_zero", cluster(systemPool={"count": 0}), [
        ("gpushare:cluster.systemPool.count", ("must be from 1 to 1000", "at least one node", "got 0"))]),

    # gpushare:operator.
    Rejected("rejects_operator_not_a_mapping", top("gpushare:operator", "aks"), [
        ("gpushare:operator", ("expected a mapping with keys chartVersion, driver, migStrategy",))]),
    Rejected("rejects_chart_version_without_v", operator(chartVersion="26.7.0"), [
        ("gpushare:operator.chartVersion", ("such as v26.7.0", "with the leading v", "got '26.7.0'"))]),
    Rejected("rejects_chart_version_as_number", operator(chartVersion=26.7), [
        ("gpushare:operator.chartVersion", ("with the leading v", "got '26.7'"))]),
    Rejected("rejects_mig_with_operator_driver", combine(operator(driver="operator"), h100_pool(mig="MIG1g")), [
        (f"{POOL0}.mig", ("gpushare:operator.driver is operator", "use driver: aks", "or drop `mig`"))]),
    Rejected("rejects_unknown_driver", operator(driver="nvidia"), [
        ("gpushare:operator.driver", ("unknown value 'nvidia'", "allowed: aks, operator"))]),
    Rejected("rejects_mig_strategy_wrong_case", operator(migStrategy="Mixed"), [
        ("gpushare:operator.migStrategy", ("unknown value 'Mixed'", "case-sensitive", "write 'mixed'"))]),
    Rejected("rejects_unknown_mig_strategy", operator(migStrategy="none"), [
        ("gpushare:operator.migStrategy", ("unknown value 'none'", "allowed: single, mixed"))]),

    # gpushare:pools[i].
    Rejected("rejects_pools_as_mapping", top(POOLS, {"name": "t4", "vmSize": T4}), [
        (POOLS, ("expected a list of at least one GPU pool", "got a mapping"))]),
    Rejected("rejects_pool_not_a_mapping", top(POOLS, ["t4"]), [
        (POOL0, ("expected a mapping with keys name, vmSize", "got a string 't4'"))]),
    Rejected("rejects_missing_pool_name", drop_pool_key("name"), [
        (f"{POOL0}.name", ("required: the AKS node pool name", "at most 12"))]),
    Rejected("rejects_uppercase_pool_name", pool(name="T4"), [
        (f"{POOL0}.name", ("1-12 lowercase letters or digits", "got 'T4'"))]),
    Rejected("rejects_pool_name_too_long", pool(name="t4timeslicing"), [
        (f"{POOL0}.name", ("1-12 lowercase", "got 't4timeslicing'"))]),
    Rejected("rejects_pool_name_with_dash", pool(name="t4-ts"), [
        (f"{POOL0}.name", ("lowercase letters or digits", "got 't4-ts'"))]),
    Rejected("rejects_pool_named_system", pool(name="system"), [
        (f"{POOL0}.name", ("'system' is the cluster's system pool", "choose another name"))]),
    Rejected("rejects_missing_vm_size", drop_pool_key("vmSize"), [
        (f"{POOL0}.vmSize", ("required: a GPU VM size such as Standard_NC4as_T4_v3",))]),
    Rejected("rejects_misspelt_vm_size", pool(vmSize="Standard_NC4as_T4_v4"), [
        (f"{POOL0}.vmSize", ("'Standard_NC4as_T4_v4' is not a GPU size gpushare knows", f"did you mean {T4}",
                             f"allowed: {CURRENT_SIZES}"))]),
    Rejected("rejects_non_gpu_vm_size", pool(vmSize="Standard_D4ds_v5"), [
        (f"{POOL0}.vmSize", ("'Standard_D4ds_v5' is not a GPU size: Azure's D family has no GPUs",
                             f"allowed: {CURRENT_SIZES}"))]),
    Rejected("rejects_memory_optimised_size_as_not_a_gpu_size", pool(vmSize="Standard_E8s_v5"), [
        (f"{POOL0}.vmSize", ("'Standard_E8s_v5' is not a GPU size: Azure's E family has no GPUs",))]),
    Rejected("rejects_vm_size_not_a_string", pool(vmSize=4), [
        (f"{POOL0}.vmSize", ("expected a VM size name such as Standard_NC4as_T4_v3", "got a number 4"))]),
    Rejected("rejects_mig_profile_wrong_case", h100_pool(mig="mig1g"), [
        (f"{POOL0}.mig", ("unknown value 'mig1g'", "case-sensitive", "write 'MIG1g'"))]),
    Rejected("rejects_unknown_mig_profile", h100_pool(mig="1g.10gb"), [
        (f"{POOL0}.mig", ("unknown value '1g.10gb'", "allowed: MIG1g, MIG2g, MIG3g, MIG4g, MIG7g"))]),
    Rejected("rejects_mig_profile_in_upper_case_suggesting_the_profile", h100_pool(mig="MIG1G"), [
        (f"{POOL0}.mig", ("unknown value 'MIG1G'", "write 'MIG1g'"))]),
    Rejected("rejects_mig_slice_name_suggesting_the_profile", h100_pool(mig="1g.12gb"), [
        (f"{POOL0}.mig", ("unknown value '1g.12gb': `mig` takes the AKS MIG profile name, not a slice name",
                          "write 'MIG1g' (on Standard_NC40ads_H100_v5 it builds 1g.12gb slices)"))]),
    Rejected("rejects_mixed_resource_name_suggesting_the_profile", h100_pool(mig="mig-3g.47gb"), [
        (f"{POOL0}.mig", ("not a slice name", "write 'MIG3g'"))]),
    Rejected("rejects_unknown_slice_count", h100_pool(mig="5g.60gb"), [
        (f"{POOL0}.mig", ("unknown value '5g.60gb'", "allowed: MIG1g"))]),
    Rejected("rejects_sharing_not_a_mapping", pool(sharing="mps"), [
        (f"{POOL0}.sharing", ("expected a mapping with keys strategy, replicas",))]),
    Rejected("rejects_missing_sharing_strategy", pool(sharing={"replicas": 4}), [
        (f"{POOL0}.sharing.strategy", ("required: one of time-slicing, mps",))]),
    Rejected("rejects_missing_sharing_replicas", pool(sharing={"strategy": "mps"}), [
        (f"{POOL0}.sharing.replicas", ("required: how many pods share each GPU (2 or more)",))]),
    Rejected("rejects_unknown_sharing_strategy", pool(sharing={"strategy": "timeslicing", "replicas": 4}), [
        (f"{POOL0}.sharing.strategy", ("unknown value 'timeslicing' (did you mean 'time-slicing'?)",
                                       "allowed: time-slicing, mps"))]),
    Rejected("rejects_rename_by_default_not_boolean",
             pool(sharing={"strategy": "mps", "replicas": 2, "renameByDefault": "no"}), [
        (f"{POOL0}.sharing.renameByDefault", ("expected true or false", "got a string 'no'"))]),
    Rejected("rejects_fail_requests_not_boolean",
             pool(sharing={"strategy": "mps", "replicas": 2, "failRequestsGreaterThanOne": 1}), [
        (f"{POOL0}.sharing.failRequestsGreaterThanOne", ("expected true or false", "got a number 1"))]),
    Rejected("rejects_negative_count", pool(count=-1), [
        (f"{POOL0}.count", ("must be from 0 to 1000", "got -1"))]),
    Rejected("rejects_count_over_aks_limit", pool(count=1001), [
        (f"{POOL0}.count", ("must be from 0 to 1000", "got 1001"))]),
    Rejected("rejects_fractional_count", pool(count=1.5), [
        (f"{POOL0}.count", ("expected a whole number", "got a number 1.5"))]),
    Rejected("rejects_boolean_count", pool(count=True), [
        (f"{POOL0}.count", ("expected a whole number", "got a boolean true"))]),
    Rejected("rejects_autoscale_not_a_mapping", pool(autoscale=3), [
        (f"{POOL0}.autoscale", ("expected a mapping with keys min, max", "got a number 3"))]),
    Rejected("rejects_autoscale_without_max", pool(autoscale={"min": 0}), [
        (f"{POOL0}.autoscale.max", ("required: the most nodes",))]),
    Rejected("rejects_autoscale_without_min", pool(autoscale={"max": 2}), [
        (f"{POOL0}.autoscale.min", ("required: the fewest nodes",))]),
    Rejected("rejects_autoscale_max_zero", pool(autoscale={"min": 0, "max": 0}), [
        (f"{POOL0}.autoscale.max", ("must be from 1 to 1000", "is a pool with `count: 0`", "got 0"))]),
    Rejected("rejects_autoscale_keys_at_the_pool_level",
             combine(pool(autoscale=None, min=1, max=2)), [
        (f"{POOL0}.autoscale", ("is empty (YAML reads `autoscale:` with nothing indented under it as null)",
                                "indent min, max under it")),
        (f"{POOL0}.min", ("`min` is a key of `autoscale`, not of gpushare:pools[0]", "check the indentation",
                          "autoscale: {min: ..., max: ...}")),
        (f"{POOL0}.max", ("`max` is a key of `autoscale`", "check the indentation"))]),
    Rejected("rejects_sharing_keys_at_the_pool_level", pool(sharing=None, strategy="mps", replicas=2), [
        (f"{POOL0}.sharing", ("is empty", "indent strategy, replicas under it")),
        (f"{POOL0}.strategy", ("`strategy` is a key of `sharing`", "check the indentation")),
        (f"{POOL0}.replicas", ("`replicas` is a key of `sharing`", "check the indentation"))]),
    Rejected("rejects_empty_sharing", pool(sharing=None), [
        (f"{POOL0}.sharing", ("is empty", "or remove `sharing:`"))]),
    Rejected("rejects_autoscale_negative_min", pool(autoscale={"min": -1, "max": 2}), [
        (f"{POOL0}.autoscale.min", ("must be from 0 to 1000", "got -1"))]),
    Rejected("rejects_zones_not_a_list", pool(zones="1"), [
        (f"{POOL0}.zones", ('expected a list of availability zones such as ["1", "2"]', "got a string '1'"))]),
    Rejected("rejects_unknown_zone", pool(zones=["1", 4]), [
        (f"{POOL0}.zones[1]", ("unknown availability zone 4", "allowed: 1, 2, 3"))]),
    Rejected("rejects_zone_listed_twice", pool(zones=["2", 2]), [
        (f"{POOL0}.zones[1]", ("zone 2 is listed twice",))]),
    Rejected("rejects_unknown_os_sku", pool(osSku="Windows"), [
        (f"{POOL0}.osSku", ("unknown value 'Windows'", "allowed: Ubuntu, AzureLinux"))]),
    Rejected("rejects_os_sku_wrong_case", pool(osSku="ubuntu"), [
        (f"{POOL0}.osSku", ("case-sensitive", "write 'Ubuntu'"))]),
    Rejected("rejects_recreate_not_boolean", pool(recreate="yes please"), [
        (f"{POOL0}.recreate", ("expected true or false", "got a string 'yes please'"))]),
    Rejected("rejects_gpu_pools_on_different_os_skus", add_pool(name="t4b", vmSize=T4, osSku="AzureLinux"), [
        (f"{POOLS}[1].osSku", ("got AzureLinux while gpushare:pools[0] (t4) uses Ubuntu",
                               "use one osSku for every GPU pool"))]),
    Rejected("rejects_second_pool_problems_at_its_index", add_pool(name="a100", vmSize=T4, mig="MIG1g"), [
        (f"{POOLS}[1].mig", ("does not support MIG",))]),

    # gpushare:guard and secrets.
    Rejected("rejects_guard_wrong_case", top("gpushare:guard", "Warn"), [
        ("gpushare:guard", ("unknown value 'Warn'", "case-sensitive", "write 'warn'"))]),
    Rejected("rejects_unknown_guard", top("gpushare:guard", "off"), [
        ("gpushare:guard", ("unknown value 'off'", "allowed: strict, warn"))]),
    Rejected("rejects_unknown_preflight", top("gpushare:preflight", "skip"), [
        ("gpushare:preflight", ("unknown value 'skip'", "allowed: strict, warn, off"))]),
    Rejected("rejects_subscription_that_is_not_a_guid", top("azure-native:subscriptionId", "my-subscription"), [
        ("azure-native:subscriptionId", ("must be a subscription id", "got 'my-subscription'",
                                         "az account show --query id -o tsv"))]),
    Rejected("rejects_government_region_in_the_public_cloud", top("azure-native:location", "usgovvirginia"), [
        ("azure-native:location", ("usgovvirginia is a region of the usgovernment cloud",
                                   "azure-native:environment is not set (public)",
                                   "set `azure-native:environment: usgovernment`"))]),
    Rejected("rejects_public_region_in_the_china_cloud", top("azure-native:environment", "china"), [
        ("azure-native:location", ("westeurope is a region of the public cloud", "azure-native:environment is china",
                                   "set `azure-native:environment: public`"))]),
    Rejected("rejects_unknown_azure_environment", top("azure-native:environment", "AzureCloud"), [
        ("azure-native:environment", ("unknown value 'AzureCloud'", "allowed: public, usgovernment, china"))]),
    Rejected("rejects_guard_off_read_by_yaml_as_false", top("gpushare:guard", False), [
        ("gpushare:guard", ("YAML reads an unquoted off, no or false as the boolean false", "cannot be switched off",
                            "gpushare:guard: warn"))]),
    Rejected("rejects_preflight_on_read_by_yaml_as_true", top("gpushare:preflight", True), [
        ("gpushare:preflight", ("YAML reads an unquoted on, yes or true as the boolean true",
                                "write `gpushare:preflight: strict` or `gpushare:preflight: warn`"))]),
    Rejected("rejects_secret_gpushare_value", top("gpushare:cluster", {"secure": "AAABAJ..."}), [
        ("gpushare:cluster", ("must not be a secret", "shown in plans and previews"))], exact=False),

    # Once gaps in config.py, now fixed: keep them fixed.
    Rejected("rejects_bare_location_key_suggesting_azure_native", top("location", "westeurope"), [
        ("location", ("config keys need a namespace", "did you mean azure-native:location?"))]),
    Rejected("rejects_bare_pool_key_suggesting_a_real_key", top("pool", []), [
        ("pool", ("did you mean gpushare:pools?",))]),
]


@pytest.mark.parametrize("case", REJECTED, ids=[c.id for c in REJECTED])
def test_rejects(case: Rejected):
    assert_problems(problems_of(raw_with(case.mutate)), case.expected, exact=case.exact)


RETIRED = [size for size in catalog.VM_SIZES if size.retired_on]


def test_catalog_still_has_retired_sizes():
    """Guards the parametrization below against silently shrinking to nothing."""
    assert {s.name for s in RETIRED} >= {"Standard_NC6s_v3", "Standard_NC12s_v3", "Standard_NC24s_v3"}


@pytest.mark.parametrize("size", RETIRED, ids=[f"rejects_retired_{s.name}" for s in RETIRED])
@pytest.mark.parametrize("spelling", [str, str.lower], ids=["canonical", "lowercase"])
def test_rejects_retired_size_naming_its_current_replacement(size, spelling):
    problems = problems_of(raw_with(pool(vmSize=spelling(size.name))))
    assert_problems(problems, [(f"{POOL0}.vmSize", (
        f"{size.name} (NCv3, NVIDIA V100 16GB) was retired on 2025-09-30", "can no longer be deployed",
        f"use {size.replacement}"))])
    named = re.findall(r"Standard_\w+", problems[0].message.split("; use ", 1)[1])
    current = {s.name for s in catalog.current_gpu_sizes()}
    assert named and set(named) <= current, f"replacement names a size that is not current: {named}"


def test_retired_sizes_are_replaced_by_sizes_azure_still_deploys():
    undeployable = {s.name for s in catalog.current_gpu_sizes() if s.note and "no new" in s.note}
    assert undeployable, "the catalog no longer marks any size as closed to new capacity"
    offenders = {size.name: sorted(set(re.findall(r"Standard_\w+", size.replacement)) & undeployable)
                 for size in RETIRED}
    assert not any(offenders.values()), offenders


def test_secret_gpushare_value_is_one_problem():
    problems = problems_of(raw_with(top("gpushare:cluster", {"secure": "AAABAJ..."})))
    assert_problems(problems, [("gpushare:cluster", ("must not be a secret",))])


def test_several_problems_are_all_reported_at_once():
    raw = raw_with(
        top("azure-native:location", "West Europe"),
        cluster(nmae="typo", kubernetesVersion=1.33),
        operator(migStrategy="mixed", driver="nvidia"),
        pool(mig="MIG1g", count="2", autoscale={"min": 3, "max": 1}),
        add_pool(name="mps", vmSize="Standard_NC6s_v3", sharing={"strategy": "mps", "replicas": 1}),
        add_pool(name="mps2", vmSize=T4, sharing={"strategy": "mps", "replicas": 4}),
        add_pool(name="mps2", vmSize=T4),
        top("gpushare:guard", "Warn"),
        top("gpushare:pool", []),
    )
    with pytest.raises(ConfigError) as caught:
        parse(raw)
    problems = caught.value.problems
    assert_problems(problems, [
        ("gpushare:pool", ("did you mean 'gpushare:pools'?",)),
        ("azure-native:location", ("write 'westeurope'",)),
        ("gpushare:cluster.nmae", ("did you mean 'name'?",)),
        ("gpushare:cluster.kubernetesVersion", ("quote it",)),
        ("gpushare:operator.driver", ("allowed: aks, operator",)),
        (f"{POOL0}.mig", ("does not support MIG",)),
        (f"{POOL0}.count", ("write it without quotes",)),
        (f"{POOL0}.autoscale", ("min (3) is greater than max (1)",)),
        (POOL0, ("not both",)),
        (f"{POOLS}[1].vmSize", ("was retired",)),
        (f"{POOLS}[1].sharing.replicas", ("must be 2 or more",)),
        (f"{POOLS}[2].sharing.strategy", ("migStrategy is mixed",)),
        (f"{POOLS}[3].name", ("already used by gpushare:pools[2]",)),
        ("gpushare:guard", ("write 'warn'",)),
    ])
    text = str(caught.value)
    assert text.splitlines()[0] == f"{SOURCE}: {len(problems)} configuration errors"
    for problem in problems:
        assert f"  - {problem.path}: {problem.message}" in text


def test_one_problem_is_counted_in_the_singular():
    with pytest.raises(ConfigError) as caught:
        parse(raw_with(pool(count=-1)))
    assert str(caught.value).splitlines()[0] == f"{SOURCE}: 1 configuration error"


def test_duplicate_pool_name_is_reported_even_when_that_pool_has_other_problems():
    problems = problems_of(raw_with(add_pool(name="t4", vmSize="Standard_NC4as_T4_v9")))
    assert_problems(problems, [
        (f"{POOLS}[1].vmSize", ("is not a GPU size",)),
        (f"{POOLS}[1].name", ("already used by gpushare:pools[0]",)),
    ])


def test_mps_with_null_mig_is_accepted():
    stack = parse(raw_with(pool(mig=None, sharing=MPS)))
    assert stack.pools[0].mig is None


# --- the stack file itself ---------------------------------------------------------------------------------------

def test_load_stack_file_names_the_stack_after_the_file(tmp_path):
    stack = load_stack_file(write_stack(tmp_path, MINIMAL_STACK_YAML, "Pulumi.gpu-west.yaml"))
    assert (stack.stack, stack.source) == ("gpu-west", str(tmp_path / "Pulumi.gpu-west.yaml"))


@dataclass(frozen=True)
class BadFile:
    id: str
    text: str | bytes | None
    expected: list[Expected]
    exact: bool = True


BAD_FILES = [
    BadFile("rejects_malformed_yaml",
            "config:\n  azure-native:location: westeurope\n  gpushare:cluster: {name: c1\n  gpushare:pools: []\n",
            [("line 4, column 17", ("not valid YAML", "expected ',' or '}'"))]),
    # libyaml reads the file; on an error PyYAML's own parser reads it again, for the message naming the character
    # (libyaml says only "found unknown escape character", one column further on).
    BadFile("rejects_unknown_escape_with_pythons_message", 'config:\n  azure-native:location: "west\\qeurope"\n',
            [("line 2, column 32", ("not valid YAML", "found unknown escape character 'q'"))]),
    BadFile("rejects_tab_indented_yaml", "config:\n\tazure-native:location: westeurope\n",
            [("line 2, column 1", ("not valid YAML",))]),
    BadFile("rejects_file_without_config", "secretsprovider: passphrase\n",
            [("config", ("a YAML mapping with a `config:` mapping", "azure-native:location: westeurope",
                         "gpushare:pools: [...]"))]),
    BadFile("rejects_settings_written_without_config", "gpushare:pools: []\n",
            [("config", ("with a `config:` mapping",))], exact=False),
    BadFile("rejects_empty_file", "", [("config", ("with a `config:` mapping",))]),
    BadFile("rejects_empty_config", "config:\n", [("config", ("with a `config:` mapping",))]),
    BadFile("rejects_config_as_list", "config:\n  - azure-native:location: westeurope\n",
            [("config", ("with a `config:` mapping",))]),
    BadFile("rejects_yaml_list_document", "- config: {}\n", [("config", ("with a `config:` mapping",))]),
    BadFile("rejects_unknown_top_level_key", MINIMAL_STACK_YAML + "secretsProvider: passphrase\n",
            [("secretsProvider", ("unknown top-level key (did you mean 'secretsprovider'?)",
                                  "gpushare settings go under `config:`"))]),
    BadFile("rejects_gpushare_key_outside_config", MINIMAL_STACK_YAML + "gpushare:guard: warn\n",
            [("gpushare:guard", ("unknown top-level key", "go under `config:`"))]),
    BadFile("rejects_missing_file", None, [("(file)", ("no such stack file",))]),
    BadFile("rejects_non_utf8_file", b"config:\n  azure-native:location: \xff\n",
            [("(file)", ("cannot be read",))]),
]


@pytest.mark.parametrize("case", BAD_FILES, ids=[c.id for c in BAD_FILES])
def test_read_stack_file_rejects(tmp_path, case: BadFile):
    path = tmp_path / "Pulumi.bad.yaml"
    if isinstance(case.text, bytes):
        path.write_bytes(case.text)
    elif case.text is not None:
        path.write_text(case.text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_stack_file(path)
    assert caught.value.source == str(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert_problems(caught.value.problems, case.expected, exact=case.exact)


def test_read_stack_file_returns_the_config_mapping(tmp_path):
    path = write_stack(tmp_path, MINIMAL_STACK_YAML + "encryptionsalt: v1:abc\n")
    stack_file = read_stack_file(path)
    assert (stack_file.path, stack_file.config, stack_file.problems) == (path, valid_raw(), ())


def test_misspelt_config_key_suggests_config(tmp_path):
    with pytest.raises(ConfigError) as caught:
        load_stack_file(write_stack(tmp_path, MINIMAL_STACK_YAML.replace("config:", "confg:", 1)))
    assert_problems(caught.value.problems, [
        ("confg", ("unknown top-level key (did you mean 'config'?)",)),
        ("config", ("with a `config:` mapping",)),
    ])


def test_top_level_and_config_problems_are_reported_together(tmp_path):
    path = write_stack(tmp_path, MINIMAL_STACK_YAML + "      count: -1\nsecretsProvider: passphrase\n")
    with pytest.raises(ConfigError) as caught:
        load_stack_file(path)
    assert_problems(caught.value.problems, [
        ("secretsProvider", ("did you mean 'secretsprovider'?",)),
        (f"{POOL0}.count", ("got -1",)),
    ])


def test_duplicate_yaml_keys_are_rejected(tmp_path):
    path = write_stack(tmp_path, MINIMAL_STACK_YAML + "      count: 1\n      count: 2\n")
    with pytest.raises(ConfigError) as caught:
        load_stack_file(path)
    assert_problems(caught.value.problems, [("line 9, column 7", ("duplicate key 'count'", "keep one"))])


# --- what the Pulumi engine passes the program -------------------------------------------------------------------

ROUND_TRIP_YAML = f"""\
config:
  azure-native:location: westeurope
  gpushare:cluster:
    name: rt
    kubernetesVersion: "1.36"
    systemPool: {{vmSize: Standard_D4ds_v5, count: 3}}
  gpushare:operator: {{migStrategy: mixed, driver: aks}}
  gpushare:guard: warn
  gpushare:pools:
    - name: h100
      vmSize: {H100.lower()}
      mig: MIG3g
      sharing: {{strategy: time-slicing, replicas: 2, renameByDefault: false}}
      zones: [1, 2]
      osSku: AzureLinux
      recreate: true
    - name: t4
      vmSize: {T4}
      autoscale: {{min: 0, max: 4}}
      osSku: AzureLinux
"""


def _round_trip_paths(tmp_path: Path) -> list[Path]:
    return [*EXAMPLE_STACKS, write_stack(tmp_path, ROUND_TRIP_YAML, "Pulumi.rt.yaml")]


def test_example_stacks_exist():
    assert {p.name for p in EXAMPLE_STACKS} >= {"Pulumi.dev.yaml", "Pulumi.prod.yaml"}


@pytest.mark.parametrize("which", range(len(EXAMPLE_STACKS) + 1),
                         ids=[p.name for p in EXAMPLE_STACKS] + ["every-section"])
def test_engine_config_round_trip_gives_the_same_stack(tmp_path, which):
    path = _round_trip_paths(tmp_path)[which]
    raw = read_stack_file(path).config
    engine = encode_engine_config(raw)
    assert all(isinstance(v, str) for v in engine.values()), "the engine passes every value as a string"
    direct = parse_config(raw, source=str(path), stack=stack_name_for(path))
    via_engine = parse_config(decode_engine_config(engine), source=str(path), stack=stack_name_for(path))
    assert via_engine == direct
    assert direct == load_stack_file(path)


ROUND_TRIP_INVALID = [
    ("rejects_count_as_string", pool(count="2")),
    ("rejects_unquoted_kubernetes_version", cluster(kubernetesVersion=1.33)),
    ("rejects_guard_wrong_case", top("gpushare:guard", "Warn")),
    ("rejects_unknown_pool_key", pool(zone=[1])),
    ("rejects_mps_under_mixed", combine(operator(migStrategy="mixed"), pool(sharing=MPS))),
    ("rejects_pools_as_string", top(POOLS, "t4")),
    ("rejects_missing_pools", drop(POOLS)),
]


@pytest.mark.parametrize("mutate", [m for _, m in ROUND_TRIP_INVALID], ids=[i for i, _ in ROUND_TRIP_INVALID])
def test_engine_config_round_trip_gives_the_same_problems(mutate):
    raw = raw_with(mutate)
    direct = problems_of(raw)
    via_engine = problems_of(decode_engine_config(encode_engine_config(raw)))
    assert via_engine == direct


def test_decode_engine_config_parses_only_gpushare_values():
    decoded = decode_engine_config({
        "azure-native:location": "westeurope",
        "azure-native:tags": '{"a": 1}',
        "gpushare:cluster": '{"name": "c"}',
        "gpushare:guard": "warn",
    })
    assert decoded == {"azure-native:location": "westeurope", "azure-native:tags": '{"a": 1}',
                       "gpushare:cluster": {"name": "c"}, "gpushare:guard": "warn"}


@pytest.mark.parametrize(
    ("file", "stack"),
    [("stacks/Pulumi.prod.yaml", "prod"), ("Pulumi.contoso-prod.yaml", "contoso-prod"),
     ("/abs/Pulumi.dev.yml", "dev"), ("Pulumi.a.b.yaml", "a.b"), ("/tmp/my-stack.yaml", "my-stack"),
     ("Pulumi.dev.json", "Pulumi.dev")],
    ids=["relative", "dashed", "yml", "dotted", "other-name", "other-suffix"],
)
def test_stack_name_for(file, stack):
    assert stack_name_for(Path(file)) == stack
