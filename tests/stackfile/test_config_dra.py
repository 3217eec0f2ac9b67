"""`allocation: dra` on a pool: what NVIDIA's DRA driver v0.5.0 can run there is accepted (MPS inside a MIG device,
which the device plugin refuses), what it cannot is refused with the driver's reason (time-slicing a MIG device,
device-plugin settings, scaling from zero, a Kubernetes without resource.k8s.io/v1), and its alpha parts warned."""

from __future__ import annotations

from typing import Any

import pytest

from gpushare.errors import ConfigError
from gpushare.model.stack import Allocation
from gpushare.plan.stack_plan import build_plan
from gpushare.stackfile.config import parse_config
from gpushare.stackfile.dra_pools import dra_warnings
from tests.stack_files import minimal_config

SOURCE = "stacks/Pulumi.test.yaml"
POOL0 = "gpushare:pools[0]"
H100 = "Standard_NC40ads_H100_v5"
MPS = {"strategy": "mps", "replicas": 2}
TIME_SLICING = {"strategy": "time-slicing", "replicas": 4}


def config(cluster: dict[str, Any] | None = None, **pool: Any) -> dict[str, Any]:
    raw = minimal_config()
    raw["gpushare:pools"][0].update(pool)
    raw["gpushare:cluster"].update(cluster or {})
    return raw


def parsed(raw: dict[str, Any]):
    return parse_config(raw, source=SOURCE, stack="test")


def problems(raw: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parsed(raw)
    return {p.path: p.message for p in caught.value.problems}


def test_a_pool_is_served_by_the_device_plugin_unless_it_says_dra():
    assert parsed(config()).pools[0].allocation is Allocation.DEVICE_PLUGIN
    assert parsed(config(allocation="dra")).pools[0].allocation is Allocation.DRA


def test_an_unknown_allocation_names_the_two_allowed():
    assert "allowed: devicePlugin, dra" in problems(config(allocation="claims"))[f"{POOL0}.allocation"]


def test_mps_inside_a_mig_device_is_refused_for_the_device_plugin_and_points_to_dra():
    message = problems(config(vmSize=H100, mig="MIG3g", sharing=MPS))[f"{POOL0}.sharing.strategy"]
    assert "mps cannot run on MIG devices served by the device plugin" in message
    assert "allocation: dra (NVIDIA's DRA driver runs MPS inside a MIG device; alpha)" in message


def test_mps_inside_a_mig_device_is_accepted_on_a_dra_pool_also_under_migstrategy_mixed():
    raw = config(vmSize=H100, mig="MIG3g", sharing=MPS, allocation="dra")
    raw["gpushare:operator"] = {"migStrategy": "mixed"}
    pool = parsed(raw).pools[0]
    assert (pool.allocation, pool.mig.value, pool.sharing.strategy.value) == (Allocation.DRA, "MIG3g", "mps")


def test_mps_clients_on_a_dra_pool_keep_the_per_gpu_limit_with_the_dra_reason():
    message = problems(config(sharing={"strategy": "mps", "replicas": 49}, allocation="dra"))[
        f"{POOL0}.sharing.replicas"]
    assert "must be from 2 to 48" in message and "on DRA pools" in message and "got 49" in message


def test_time_slicing_a_mig_device_is_refused_on_a_dra_pool_with_the_drivers_reason():
    message = problems(config(vmSize=H100, mig="MIG3g", sharing=TIME_SLICING, allocation="dra"))[
        f"{POOL0}.sharing.strategy"]
    assert "the DRA driver cannot time-slice a MIG device" in message
    assert "cmd/gpu-kubelet-plugin/device_state.go L1316-1319" in message
    assert "use mps" in message and "allocation: devicePlugin" in message


def test_time_slicing_whole_gpus_is_accepted_on_a_dra_pool():
    assert parsed(config(sharing=TIME_SLICING, allocation="dra")).pools[0].sharing.replicas == 4


@pytest.mark.parametrize("key", ["renameByDefault", "failRequestsGreaterThanOne"])
def test_a_device_plugin_sharing_setting_is_refused_on_a_dra_pool(key):
    message = problems(config(sharing={**TIME_SLICING, key: True}, allocation="dra"))[f"{POOL0}.sharing.{key}"]
    assert "a device-plugin setting" in message and "remove it" in message


def test_a_dra_pool_cannot_autoscale_from_zero_nodes():
    message = problems(config(count=None, autoscale={"min": 0, "max": 2}, allocation="dra"))[
        f"{POOL0}.autoscale.min"]
    assert "kubernetes/autoscaler#10277" in message and "set min: 1 or more" in message
    assert parsed(config(autoscale={"min": 1, "max": 2}, allocation="dra")).pools[0].autoscale.min == 1


def test_a_dra_pool_needs_a_kubernetes_serving_resource_k8s_io_v1():
    lts = {"kubernetesVersion": "1.33", "tier": "Premium", "supportPlan": "AKSLongTermSupport"}
    message = problems(config(lts, allocation="dra"))[f"{POOL0}.allocation"]
    assert "dra needs Kubernetes 1.34 or newer" in message and "'1.33'" in message
    assert parsed(config(lts)).pools[0].allocation is Allocation.DEVICE_PLUGIN
    assert parsed(config({**lts, "kubernetesVersion": "1.34"}, allocation="dra")).pools[0].allocation is Allocation.DRA


def test_a_dra_pool_is_warned_about_what_is_alpha_once_in_the_plan():
    (mps_on_mig,) = dra_warnings(parsed(config(vmSize=H100, mig="MIG3g", sharing=MPS, allocation="dra")))
    assert "MPS is behind the alpha feature gate MPSSupport, inside each MIG device" in mps_on_mig
    assert "not deployed" not in mps_on_mig
    assert build_plan(parsed(config(vmSize=H100, mig="MIG3g", sharing=MPS, allocation="dra"))).warnings.count(
        mps_on_mig) == 1
    (time_sliced,) = dra_warnings(parsed(config(sharing=TIME_SLICING, allocation="dra")))
    assert "TimeSlicingSettings" in time_sliced
    assert dra_warnings(parsed(config(sharing=TIME_SLICING))) == []


def test_a_dra_pool_is_refused_with_the_operators_driver_because_its_reload_would_strand_the_kubelet_plugin():
    raw = config(allocation="dra")
    raw["gpushare:operator"] = {"driver": "operator"}
    message = problems(raw)[f"{POOL0}.allocation"]
    assert message.startswith("dra with gpushare:operator.driver: operator is refused")
    # why, with the driver manager's and the operator's sources, and the fix
    assert "k8s-driver-manager v0.12.0" in message and "cannot prepare claims after the reload" in message
    assert "nvidia.com/gpu.deploy.dra-driver" in message and "removeGPUStateLabels" in message
    assert "NODE_LABEL_FOR_GPU_POD_EVICTION" in message and "deadlock" in message
    assert "set gpushare:operator.driver: aks" in message and "allocation: devicePlugin" in message


def test_the_operators_driver_is_refused_on_each_dra_pool_only():
    raw = minimal_config()
    pool = raw["gpushare:pools"][0]
    raw["gpushare:pools"] = [{**pool, "name": "plugin"}, {**pool, "name": "dra1", "allocation": "dra"},
                             {**pool, "name": "dra2", "allocation": "dra"}]
    raw["gpushare:operator"] = {"driver": "operator"}
    assert {path for path in problems(raw) if path.endswith(".allocation")} == {
        "gpushare:pools[1].allocation", "gpushare:pools[2].allocation"}
    raw["gpushare:pools"] = raw["gpushare:pools"][:1]
    assert parsed(raw).operator.driver.value == "operator"
