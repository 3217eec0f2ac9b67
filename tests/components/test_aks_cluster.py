"""AksCluster under the mock engine."""

import pulumi

from components.aks_cluster import AksCluster, AksClusterArgs
from gpushare.model import Cluster, SystemPool
from render.mock_engine import MOCK_KUBECONFIG, run_pulumi

CLUSTER = Cluster(name="contoso-prod", resource_group="contoso-rg", kubernetes_version="1.33",
                  system_pool=SystemPool(vm_size="Standard_D8ds_v5", count=3))


def test_cluster_has_only_the_system_pool_inline_and_identity_features_on():
    recording = run_pulumi(lambda: AksCluster("cluster", AksClusterArgs(cluster=CLUSTER, location="westeurope")))
    group = recording.get("azure-native:resources:ResourceGroup", "cluster-rg")
    assert group.inputs == {"resourceGroupName": "contoso-rg", "location": "westeurope"}
    assert group.protect is True  # deleting the group would delete the cluster and every GPU pool in it
    managed = recording.get("azure-native:containerservice:ManagedCluster", "cluster-aks")
    inputs = managed.inputs
    assert inputs["resourceName"] == "contoso-prod"
    assert inputs["kubernetesVersion"] == "1.33"
    assert inputs["agentPoolProfiles"] == [{
        "name": "system", "mode": "System", "vmSize": "Standard_D8ds_v5", "count": 3, "osType": "Linux",
        "type": "VirtualMachineScaleSets",
    }]
    assert inputs["oidcIssuerProfile"] == {"enabled": True}
    assert inputs["securityProfile"] == {"workloadIdentity": {"enabled": True}}
    assert inputs["identity"] == {"type": "SystemAssigned"}
    assert managed.protect is True
    assert managed.depends_on == ["cluster-rg"]


def test_kubeconfig_output_is_decoded_and_secret():
    seen = {}

    def program():
        cluster = AksCluster("cluster", AksClusterArgs(cluster=CLUSTER, location="westeurope"))
        cluster.kubeconfig.apply(lambda value: seen.update(kubeconfig=value))
        pulumi.Output.from_input(cluster.kubeconfig.is_secret()).apply(lambda secret: seen.update(secret=secret))

    run_pulumi(program)
    assert seen == {"kubeconfig": MOCK_KUBECONFIG, "secret": True}
