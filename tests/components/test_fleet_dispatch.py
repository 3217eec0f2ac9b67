"""FleetDispatch and the fleet program's dispatch under the mock engine: with `dispatch.manager`, the manager's
MultiKueue objects on the manager's cluster, the manager's identity on each worker's, and the worker's kubeconfig on
the manager only as a secret (built from the worker's outputs, never from the plan); nothing without a tenant to
dispatch. What Kueue does with these objects is shown on real control planes
(tests/controlplane/test_multikueue_on_real_control_planes.py)."""

import copy
import json

from gpushare.components.fleet_program import fleet_program
from gpushare.render.mock_engine import run_pulumi
from tests.fleet_files import MEMBER_STACKS, VISION_GROUP, fleet_doc, write_fleet


def dispatching_fleet(tmp_path):
    """eu the manager; vision's pools on us only, whose queues are on: vision's Jobs may go to us."""
    stacks = copy.deepcopy(MEMBER_STACKS)
    stacks["us"]["gpushare:queues"] = {"enabled": True}
    document = fleet_doc()
    document["tenants"][0]["members"] = {"us": {"pools": ["h100"]}}
    return write_fleet(tmp_path, document, stacks)


def test_the_manager_gets_the_multikueue_objects_and_a_secret_kubeconfig_per_worker(tmp_path):
    recording = run_pulumi(fleet_program, config={"gpushare:fleetFile": str(dispatching_fleet(tmp_path))})
    assert recording.exports["dispatch"] == {"vision": ["us"]}
    on = {r.name: r.provider for r in recording.resources if r.custom and r.type.startswith("kubernetes:")}
    kinds = {r.name: r.type for r in recording.resources if r.type.startswith("kubernetes:")}
    # The worker's identity for the manager on us's cluster; Kueue's objects on eu's.
    assert on["dispatch-us-serviceaccount"] == on["dispatch-us-secret"] == "dispatch-us-provider"
    assert kinds["dispatch-us-clusterrole"] == "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
    manager_side = {name for name, provider in on.items() if provider == "dispatch-eu-provider"}
    assert {"dispatch-multikueuecluster-us", "dispatch-multikueueconfig-gpushare-fleet-vision",
            "dispatch-admissioncheck-gpushare-fleet-vision", "dispatch-clusterqueue-vision",
            "dispatch-localqueue-vision-vision", "dispatch-namespace-vision", "dispatch-kubeconfig-us"} <= manager_side
    # vision's admission policy as us builds it, on the manager: its Jobs there may name only its queue and class.
    policy = recording.get("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy",
                           "dispatch-validatingadmissionpolicy-gpushare-tenant-vision.us")
    assert on[policy.name] == on["dispatch-validatingadmissionpolicybinding-gpushare-tenant-vision.us"] \
        == "dispatch-eu-provider"
    assert "kueue.x-k8s.io/priority-class: gpushare-vision" in json.dumps(policy.inputs["spec"]["validations"])
    cluster = recording.get("kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueCluster", "dispatch-multikueuecluster-us")
    assert cluster.inputs["spec"]["clusterSource"]["kubeConfig"]["location"] == "gpushare-fleet-us-kubeconfig"
    assert "dispatch-kubeconfig-us" in cluster.depends_on
    assert "dispatch-namespace-vision" in recording.get("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue",
                                                        "dispatch-localqueue-vision-vision").depends_on
    # eu's own shared policy leaves vision's namespace to these policies: the namespace is made only after them
    # (and removed before them); the tenant's groups get `edit` there only after its quota of no pods.
    namespace = recording.get("kubernetes:core/v1:Namespace", "dispatch-namespace-vision")
    assert {"dispatch-validatingadmissionpolicy-gpushare-tenant-vision.us",
            "dispatch-validatingadmissionpolicybinding-gpushare-tenant-vision.us"} <= set(namespace.depends_on)
    edit = recording.get("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
                         f"dispatch-rolebinding-vision-gpushare-edit-{VISION_GROUP}")
    assert {"dispatch-namespace-vision", "dispatch-resourcequota-vision-gpushare-fleet-no-pods"} <= set(edit.depends_on)
    # The kubeconfig: the worker's API server (from its credentials) and the token Secret's data, as a secret.
    secret = recording.get("kubernetes:core/v1:Secret", "dispatch-kubeconfig-us")
    assert secret.secret_inputs == ["stringData"]
    assert secret.inputs["metadata"] == {"name": "gpushare-fleet-us-kubeconfig", "namespace": "kueue-system",
                                         "labels": {"app.kubernetes.io/managed-by": "gpushare"}}
    kubeconfig = json.loads(secret.inputs["stringData"]["kubeconfig"])
    assert kubeconfig["clusters"][0]["cluster"]["server"].startswith("https://")
    assert kubeconfig["users"] == [{"name": "gpushare-multikueue", "user": {"token": ""}}]  # the mock fills none
    assert "dispatch-us-secret" in secret.depends_on
    # The worker's queues are its own stack's, not the fleet stack's.
    assert not [r for r in recording.resources if r.name.startswith("dispatch-") and "queue" in r.name
                and on.get(r.name) == "dispatch-us-provider"]


def test_nothing_is_registered_without_a_tenant_to_dispatch(tmp_path):
    recording = run_pulumi(fleet_program, config={"gpushare:fleetFile": str(write_fleet(tmp_path))})
    assert "dispatch" not in recording.exports
    assert not [r for r in recording.resources if r.name.startswith("dispatch")]
