"""Stack rules that come from what the GPU Operator chart can serve, reported with every other config error."""

import pytest

from gpushare.errors import ConfigError
from gpushare.sharing.operator_values import operator_warnings
from gpushare.stackfile.config import parse_config


def raw(*pools, **operator):
    config = {
        "azure-native:location": "westeurope",
        "gpushare:cluster": {"name": "c1"},
        "gpushare:pools": list(pools),
    }
    if operator:
        config["gpushare:operator"] = operator
    return config


T4 = {"name": "t4", "vmSize": "Standard_NC4as_T4_v3"}
A100_MIG = {"name": "a100mig", "vmSize": "Standard_ND96asr_v4", "mig": "MIG1g"}


def problems(config):
    with pytest.raises(ConfigError) as raised:
        parse_config(config, source="stacks/Pulumi.t.yaml", stack="t")
    return [str(p) for p in raised.value.problems]


def test_accepts_a_chart_version_without_verified_value_paths_with_a_warning():
    # Open world (issue 19): any released version; what gpushare has not verified is a warning, not a refusal.
    stack = parse_config(raw(T4, chartVersion="v26.3.0"), source="s", stack="t")
    assert stack.operator.chart_version == "v26.3.0"
    assert operator_warnings(stack)[0].startswith(
        "gpushare:operator.chartVersion v26.3.0 is not one gpushare has verified (verified: v26.7.0)")


def test_rejects_gpu_pools_on_different_oses_naming_the_right_pool_index():
    # pools[1] fails on its own; the OS rule must still point at pools[2], the pool that differs.
    found = problems(raw(T4, {"name": "BAD", "vmSize": "Standard_NC4as_T4_v3"},
                         {**T4, "name": "t4al", "osSku": "AzureLinux"}))
    assert found[-1] == ("gpushare:pools[2].osSku: the NVIDIA GPU Operator does not support GPU nodes on different "
                         "OSes in one cluster, got AzureLinux while gpushare:pools[0] (t4) uses Ubuntu; use one "
                         "osSku for every GPU pool")
    assert len(found) == 2


def test_rejects_mig_pools_when_the_operator_owns_the_driver():
    assert problems(raw(A100_MIG, T4, driver="operator")) == [
        "gpushare:pools[0].mig: MIG pools need AKS's driver to be partitioned at creation, but "
        "gpushare:operator.driver is operator; use driver: aks, or drop `mig` from this pool"]


def test_operator_rules_are_reported_with_the_other_errors():
    found = problems({**raw(A100_MIG, driver="operator", chartVersion="v1.0", values={"mig": {"strategy": "mixed"}}),
                      "gpushare:cluster": {}})
    assert [p.split(":")[0] + ":" + p.split(":")[1] for p in found] == [
        "gpushare:cluster.name", "gpushare:operator.chartVersion", "gpushare:operator.values.mig.strategy",
        "gpushare:pools[0].mig"]


def test_rejects_azure_linux_when_the_operator_owns_the_driver():
    # NVIDIA ships GPU Operator driver containers for Ubuntu, RHEL and Rocky Linux only.
    assert problems(raw({**T4, "osSku": "AzureLinux"}, driver="operator")) == [
        "gpushare:pools[0].osSku: AzureLinux GPU nodes cannot get their driver from the GPU Operator "
        "(gpushare:operator.driver is operator): NVIDIA ships its driver containers for Ubuntu, RHEL and Rocky Linux "
        "only; use osSku: Ubuntu, or driver: aks (AKS installs the driver on AzureLinux)"]


@pytest.mark.parametrize("os_sku, driver", [("AzureLinux", "aks"), ("Ubuntu", "operator")])
def test_accepts_azure_linux_with_the_aks_driver_and_ubuntu_with_the_operator_driver(os_sku, driver):
    stack = parse_config(raw({**T4, "osSku": os_sku}, driver=driver), source="s", stack="t")
    assert (stack.pools[0].os_sku.value, stack.operator.driver.value) == (os_sku, driver)
