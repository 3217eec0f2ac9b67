// kueueborrow: what Kueue v0.19.2's own scheduler cache (sigs.k8s.io/kueue/pkg/cache/scheduler) lets each
// ClusterQueue use of its cohort while the cohort is idle, run with no cluster.
//
// Reads a JSON list of Kueue v1beta2 objects (ResourceFlavor, Cohort, ClusterQueue; others are ignored) on stdin,
// adds them to a scheduler cache as Kueue's controllers do (AddOrUpdateResourceFlavor, AddOrUpdateCohort,
// AddClusterQueue, over Kueue's own fake client with its indexes, util/testing NewFakeClient), takes a Snapshot and
// writes, for each ClusterQueue and each flavor and resource it lists, {"clusterQueue", "flavor", "resource",
// "nominal", "potentialAvailable"} on stdout: PotentialAvailable is the most the queue can be admitted with no usage
// anywhere (`resource_node.go` potentialAvailable), so potentialAvailable - nominal is what it may borrow.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/resources"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing"
)

type row struct {
	ClusterQueue       string `json:"clusterQueue"`
	Flavor             string `json:"flavor"`
	Resource           string `json:"resource"`
	Nominal            string `json:"nominal"`
	PotentialAvailable string `json:"potentialAvailable"`
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kueueborrow:", err)
	os.Exit(2)
}

func main() {
	var raw []json.RawMessage
	if err := json.NewDecoder(os.Stdin).Decode(&raw); err != nil {
		fail(fmt.Errorf("stdin is not a JSON list of objects: %w", err))
	}
	ctx := context.Background()
	cache := schdcache.New(utiltesting.NewFakeClient())
	var queues []*kueue.ClusterQueue
	for _, item := range raw {
		var head struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(item, &head); err != nil {
			fail(err)
		}
		switch head.Kind {
		case "ResourceFlavor":
			obj := &kueue.ResourceFlavor{}
			if err := strict(item, obj); err != nil {
				fail(err)
			}
			cache.AddOrUpdateResourceFlavor(logr.Discard(), obj)
		case "Cohort":
			obj := &kueue.Cohort{}
			if err := strict(item, obj); err != nil {
				fail(err)
			}
			if err := cache.AddOrUpdateCohort(obj); err != nil {
				fail(err)
			}
		case "ClusterQueue":
			obj := &kueue.ClusterQueue{}
			if err := strict(item, obj); err != nil {
				fail(err)
			}
			queues = append(queues, obj)
		}
	}
	for _, cq := range queues {
		if err := cache.AddClusterQueue(ctx, cq); err != nil {
			fail(err)
		}
	}
	snapshot, err := cache.Snapshot(ctx)
	if err != nil {
		fail(err)
	}
	rows := []row{}
	for _, cq := range queues {
		cqSnapshot := snapshot.ClusterQueue(kueue.ClusterQueueReference(cq.Name))
		if cqSnapshot == nil {
			fail(fmt.Errorf("ClusterQueue %s is not active in the snapshot", cq.Name))
		}
		for _, group := range cq.Spec.ResourceGroups {
			for _, flavor := range group.Flavors {
				for _, quota := range flavor.Resources {
					fr := resources.FlavorResource{Flavor: flavor.Name, Resource: corev1.ResourceName(quota.Name)}
					rows = append(rows, row{
						ClusterQueue: cq.Name, Flavor: string(flavor.Name), Resource: string(quota.Name),
						Nominal: quota.NominalQuota.String(), PotentialAvailable: cqSnapshot.PotentialAvailable(fr).String(),
					})
				}
			}
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(rows); err != nil {
		os.Exit(1)
	}
}

// strict decodes refusing unknown fields, as the API server's strict field validation would warn of them.
func strict(data []byte, into any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}
