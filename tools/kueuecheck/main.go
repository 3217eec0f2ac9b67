// kueuecheck: Kueue v0.19.2's own admission webhooks (sigs.k8s.io/kueue/pkg/webhooks), run with no cluster.
//
// Reads a JSON list of Kueue v1beta2 objects (ResourceFlavor, ClusterQueue, Cohort) on stdin and writes, for each,
// {"kind", "name", "errors": [...]} on stdout: what Kueue's validating webhook answers to a create of it, after its
// defaulting webhook (ClusterQueue, ResourceFlavor) ran as the API server would call it first. LocalQueue and
// WorkloadPriorityClass have no webhook in Kueue v0.19.2 (pkg/webhooks/webhooks.go Setup registers none).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/webhooks"
)

type result struct {
	Kind   string   `json:"kind"`
	Name   string   `json:"name"`
	Errors []string `json:"errors"`
}

func main() {
	var raw []json.RawMessage
	if err := json.NewDecoder(os.Stdin).Decode(&raw); err != nil {
		fmt.Fprintln(os.Stderr, "kueuecheck: stdin is not a JSON list of objects:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	results := []result{}
	for _, item := range raw {
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(item, &head); err != nil {
			fmt.Fprintln(os.Stderr, "kueuecheck:", err)
			os.Exit(2)
		}
		var err error
		switch head.Kind {
		case "ClusterQueue":
			obj := &kueue.ClusterQueue{}
			if err = strict(item, obj); err == nil {
				hook := &webhooks.ClusterQueueWebhook{}
				if err = hook.Default(ctx, obj); err == nil {
					_, err = hook.ValidateCreate(ctx, obj)
				}
			}
		case "ResourceFlavor":
			obj := &kueue.ResourceFlavor{}
			if err = strict(item, obj); err == nil {
				hook := &webhooks.ResourceFlavorWebhook{}
				if err = hook.Default(ctx, obj); err == nil {
					_, err = hook.ValidateCreate(ctx, obj)
				}
			}
		case "Cohort":
			obj := &kueue.Cohort{}
			if err = strict(item, obj); err == nil {
				_, err = (&webhooks.CohortWebhook{}).ValidateCreate(ctx, obj)
			}
		default:
			err = fmt.Errorf("kueuecheck judges ClusterQueue, ResourceFlavor and Cohort, not %q", head.Kind)
		}
		r := result{Kind: head.Kind, Name: head.Metadata.Name, Errors: []string{}}
		if err != nil {
			r.Errors = append(r.Errors, err.Error())
		}
		results = append(results, r)
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		os.Exit(1)
	}
}

// strict decodes refusing unknown fields, as the API server's strict field validation would warn of them.
func strict(data []byte, into any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}
