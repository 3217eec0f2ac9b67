// autoscalercheck: the cluster autoscaler's own GPU readiness rule and cluster-wide health threshold, run on node
// objects with no cluster, to test gpushare's model of them (gpushare/stackfile/autoscaler_readiness.py).
//
// Input (stdin, JSON): {"nodes": [<v1.Node>...], "okTotalUnreadyCount": 3, "maxTotalUnreadyPercentage": 45,
// "now": "<RFC 3339>"}; the two thresholds default to the autoscaler's flag defaults (config/flags/flags.go) and
// "now" to the current time.
// Output (stdout, JSON): {"unready": [names], "ready": [names], "clusterHealthy": bool, "totalUnready": n,
// "total": n}:
//   - "unready": the nodes GpuCustomResourcesProcessor.FilterOutNodesWithUnreadyResources
//     (processors/customresources/gpu_processor.go) marks unready with kubernetes.ResourceUnready, judged with the
//     Azure provider's GPULabel/GetNodeGpuConfig (cloudprovider/azure/azure_cloud_provider.go);
//   - "ready": the ready nodes it keeps, from the ready-node lister's rule (utils/kubernetes IsNodeReadyAndSchedulable);
//   - "clusterHealthy": ClusterStateRegistry.IsClusterHealthy (clusterstate/clusterstate.go) after UpdateNodes with
//     the processor's node list, the check StaticAutoscaler.RunOnce stops on ("Cluster is not ready for
//     autoscaling", core/static_autoscaler.go), with "totalUnready" of "total" nodes as it counts them
//     (GetClusterReadiness: a node not ready within 15 minutes of its creation is "not started", not unready).
//
// All from k8s.io/autoscaler/cluster-autoscaler at tag cluster-autoscaler-1.35.2 (go.mod).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	apiv1 "k8s.io/api/core/v1"
	"k8s.io/autoscaler/cluster-autoscaler/cloudprovider/azure"
	testprovider "k8s.io/autoscaler/cluster-autoscaler/cloudprovider/test"
	"k8s.io/autoscaler/cluster-autoscaler/clusterstate"
	"k8s.io/autoscaler/cluster-autoscaler/config"
	ca_context "k8s.io/autoscaler/cluster-autoscaler/context"
	"k8s.io/autoscaler/cluster-autoscaler/processors/customresources"
	"k8s.io/autoscaler/cluster-autoscaler/processors/nodegroupconfig"
	"k8s.io/autoscaler/cluster-autoscaler/processors/nodegroups/asyncnodegroups"
	"k8s.io/autoscaler/cluster-autoscaler/utils/backoff"
	kube_util "k8s.io/autoscaler/cluster-autoscaler/utils/kubernetes"
)

type input struct {
	Nodes                     []*apiv1.Node `json:"nodes"`
	OkTotalUnreadyCount       *int          `json:"okTotalUnreadyCount"`
	MaxTotalUnreadyPercentage *float64      `json:"maxTotalUnreadyPercentage"`
	Now                       *time.Time    `json:"now"`
}

type output struct {
	Unready        []string `json:"unready"`
	Ready          []string `json:"ready"`
	ClusterHealthy bool     `json:"clusterHealthy"`
	TotalUnready   int      `json:"totalUnready"`
	Total          int      `json:"total"`
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "autoscalercheck: %v\n", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	var req input
	decoder := json.NewDecoder(in)
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&req); err != nil {
		return fmt.Errorf("reading the input: %w", err)
	}
	// The flag defaults: --ok-total-unready-count=3, --max-total-unready-percentage=45 (config/flags/flags.go).
	okCount, maxPercent, now := 3, 45.0, time.Now()
	if req.OkTotalUnreadyCount != nil {
		okCount = *req.OkTotalUnreadyCount
	}
	if req.MaxTotalUnreadyPercentage != nil {
		maxPercent = *req.MaxTotalUnreadyPercentage
	}
	if req.Now != nil {
		now = *req.Now
	}

	// The Azure provider's GPULabel and GetNodeGpuConfig read only the node, not the manager (cloud calls), so a
	// provider with none judges nodes as the one in AKS does.
	autoscalingCtx := &ca_context.AutoscalingContext{CloudProvider: &azure.AzureCloudProvider{}}
	ready := make([]*apiv1.Node, 0, len(req.Nodes))
	for _, node := range req.Nodes {
		if kube_util.IsNodeReadyAndSchedulable(node) {
			ready = append(ready, node)
		}
	}
	processor := &customresources.GpuCustomResourcesProcessor{}
	allNodes, readyNodes := processor.FilterOutNodesWithUnreadyResources(autoscalingCtx, req.Nodes, ready, nil, nil)

	result := output{Unready: []string{}, Ready: []string{}}
	for _, node := range allNodes {
		if readiness, err := kube_util.GetNodeReadiness(node); err == nil && readiness.Reason == kube_util.ResourceUnready {
			result.Unready = append(result.Unready, node.Name)
		}
	}
	for _, node := range readyNodes {
		result.Ready = append(result.Ready, node.Name)
	}

	// Cluster-wide health counts every node, in a node group or not (updateReadinessStats' total), so a provider
	// with no node groups gives the same verdict. Every node given is a live VM: a node the provider has no
	// instance for would count as being deleted (getCloudProviderDeletedNodes), not as unready.
	provider := testprovider.NewTestCloudProviderBuilder().
		WithHasInstance(func(string) (bool, error) { return true, nil }).Build()
	registry := clusterstate.NewClusterStateRegistry(provider,
		clusterstate.ClusterStateRegistryConfig{OkTotalUnreadyCount: okCount, MaxTotalUnreadyPercentage: maxPercent},
		nil, backoff.NewIdBasedExponentialBackoff(time.Minute, time.Hour, time.Hour),
		nodegroupconfig.NewDefaultNodeGroupConfigProcessor(config.NodeGroupAutoscalingOptions{MaxNodeProvisionTime: 15 * time.Minute}),
		asyncnodegroups.NewDefaultAsyncNodeGroupStateChecker())
	if err := registry.UpdateNodes(allNodes, nil, now); err != nil {
		return fmt.Errorf("ClusterStateRegistry.UpdateNodes: %w", err)
	}
	result.ClusterHealthy = registry.IsClusterHealthy()
	readiness := registry.GetClusterReadiness()
	result.TotalUnready, result.Total = len(readiness.Unready), len(readiness.Registered)
	encoder := json.NewEncoder(out)
	encoder.SetIndent("", "  ")
	return encoder.Encode(result)
}
