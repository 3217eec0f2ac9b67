// nodeselect reads a JSON list of cases, each {"pod": <PodSpec>, "node": {"labels": {...}, "taints": [...]}}, from
// stdin and prints, per case, whether the scheduler's helpers let the pod onto the node:
//   - "tolerated": no NoSchedule or NoExecute taint of the node is left untolerated
//     (corev1.FindMatchingUntoleratedTaint, as the TaintToleration filter plugin calls it, with the
//     TaintTolerationComparisonOperators gate at its default: alpha and off in 1.36, k8s.io/kubernetes
//     pkg/features/kube_features.go, so a `Lt` or `Gt` toleration tolerates nothing);
//   - "selected": the pod's nodeSelector and required node affinity match the node
//     (nodeaffinity.GetRequiredNodeAffinity(pod).Match, as the NodeAffinity filter plugin calls it).
package main

import (
	"encoding/json"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// comparisonOperators: the scheduler's TaintTolerationComparisonOperators feature gate (see above).
const comparisonOperators = false

type node struct {
	Labels map[string]string `json:"labels"`
	Taints []v1.Taint        `json:"taints"`
}

type testCase struct {
	Pod  v1.PodSpec `json:"pod"`
	Node node       `json:"node"`
}

type verdict struct {
	Tolerated bool `json:"tolerated"`
	Selected  bool `json:"selected"`
}

func main() {
	var cases []testCase
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		fmt.Fprintln(os.Stderr, "nodeselect: cannot read the cases:", err)
		os.Exit(2)
	}
	repelling := func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}
	out := make([]verdict, 0, len(cases))
	for _, c := range cases {
		pod := &v1.Pod{Spec: c.Pod}
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: c.Node.Labels}, Spec: v1.NodeSpec{Taints: c.Node.Taints}}
		_, untolerated := corev1.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, pod.Spec.Tolerations,
			repelling, comparisonOperators)
		selected, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(n)
		if err != nil {
			selected = false
		}
		out = append(out, verdict{Tolerated: !untolerated, Selected: selected})
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "nodeselect:", err)
		os.Exit(1)
	}
}
