package main

// The ValidatingAdmissionPolicy plugin of k8s.io/apiserver, set up as kube-apiserver sets it up, over fake clients.
//
// kube-apiserver registers the plugin (k8s.io/apiserver/pkg/admission/plugin/policy/validating/plugin.go, Register
// -> NewPlugin) and initialises it (newInitializedPlugin, apiserver.go) with the generic initializer
// (k8s.io/apiserver/pkg/admission/initializer/initializer.go, initializer.New): a clientset, a dynamic client, a
// shared informer factory, an authorizer, the feature gates, a drained-notification stop channel and a REST mapper.
// ValidateInitialization (k8s.io/apiserver/pkg/admission/plugin/policy/generic/plugin.go) then asks the factory for
// the namespace, policy and binding informers and starts the policy source, which compiles the policies once their
// informers have synced; the plugin is ready when that compile is stored.

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/warning"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/component-base/featuregate"
)

var (
	policyGVK  = admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy")
	bindingGVK = admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding")
	nsGVK      = corev1.SchemeGroupVersion.WithKind("Namespace")
)

// The v1 API's defaults, applied by the API server when it decodes a policy or binding and before it stores one
// (k8s.io/kubernetes pkg/apis/admissionregistration/v1/defaults.go: SetDefaults_ValidatingAdmissionPolicySpec,
// SetDefaults_MatchResources, SetDefaults_Rule, wired up by zz_generated.defaults.go for spec.matchConstraints, a
// binding's spec.matchResources, and every resourceRules and excludeResourceRules entry). Fake clients store what they
// are given, so they are applied here.
func defaultMatchResources(m *admissionregistrationv1.MatchResources) {
	if m.MatchPolicy == nil {
		p := admissionregistrationv1.Equivalent
		m.MatchPolicy = &p
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rules := range [][]admissionregistrationv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			if rules[i].Scope == nil {
				s := admissionregistrationv1.AllScopes
				rules[i].Scope = &s
			}
		}
	}
}

func defaultPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
	if p.Spec.FailurePolicy == nil {
		f := admissionregistrationv1.Fail
		p.Spec.FailurePolicy = &f
	}
	if p.Spec.MatchConstraints != nil {
		defaultMatchResources(p.Spec.MatchConstraints)
	}
}

func defaultBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	if b.Spec.MatchResources != nil {
		defaultMatchResources(b.Spec.MatchResources)
	}
}

// canonicalNamespace: what the namespace registry does to every Namespace it stores (k8s.io/kubernetes
// pkg/registry/core/namespace/strategy.go: PrepareForCreate sets phase Active and the kubernetes finalizer,
// Canonicalize sets the kubernetes.io/metadata.name label to the name, overwriting any other value).
func canonicalNamespace(ns *corev1.Namespace, create bool) {
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
	if create {
		ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
		hasKubernetes := false
		for _, f := range ns.Spec.Finalizers {
			hasKubernetes = hasKubernetes || f == corev1.FinalizerKubernetes
		}
		if !hasKubernetes {
			ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
		}
	}
}

func newNamespace(name string) *corev1.Namespace {
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name}}
	canonicalNamespace(ns, true)
	return ns
}

// instance: one plugin over its own fake cluster.
type instance struct {
	plugin   *validating.Plugin
	client   *fake.Clientset
	nsLister listersv1.NamespaceLister
	stop     chan struct{}
}

func startInstance(policies []*admissionregistrationv1.ValidatingAdmissionPolicy,
	bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, namespaces []*corev1.Namespace,
	params []runtime.Object, mapper meta.RESTMapper) (*instance, error) {
	var objs []runtime.Object
	for _, p := range policies {
		objs = append(objs, p.DeepCopy())
	}
	for _, b := range bindings {
		objs = append(objs, b.DeepCopy())
	}
	for _, n := range namespaces {
		objs = append(objs, n.DeepCopy())
	}
	for _, p := range params {
		objs = append(objs, p.DeepCopyObject())
	}
	dynObjs := make([]runtime.Object, len(objs))
	for i, o := range objs {
		dynObjs[i] = o.DeepCopyObject()
	}
	client := fake.NewClientset(objs...)
	dynamicClient := dynamicfake.NewSimpleDynamicClient(scheme.Scheme, dynObjs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	stop := make(chan struct{})

	// The default feature gate: kube-apiserver's, at its defaults (no --feature-gates).
	var gates featuregate.FeatureGate = utilfeature.DefaultFeatureGate
	plugin, err := newInitializedPlugin(client, dynamicClient, factory, gates, stop, mapper)
	if err != nil {
		close(stop)
		return nil, fmt.Errorf("creating the ValidatingAdmissionPolicy plugin: %w", err)
	}
	if err := admission.ValidateInitialization(plugin); err != nil {
		close(stop)
		return nil, fmt.Errorf("initialising the ValidatingAdmissionPolicy plugin: %w", err)
	}
	// ValidateInitialization has registered the namespace informer; this is the same (shared) one.
	nsLister := factory.Core().V1().Namespaces().Lister()
	factory.Start(stop)
	for typ, ok := range factory.WaitForCacheSync(stop) {
		if !ok {
			close(stop)
			return nil, fmt.Errorf("the %v informer did not sync", typ)
		}
	}
	// admission.Handler.WaitForReady waits up to 10s for the plugin's ready func (namespace informer synced and
	// policies compiled).
	if !plugin.WaitForReady() {
		close(stop)
		return nil, fmt.Errorf("the ValidatingAdmissionPolicy plugin did not become ready")
	}
	return &instance{plugin: plugin, client: client, nsLister: nsLister, stop: stop}, nil
}

// addNamespace creates a namespace in the instance's fake cluster and waits until the plugin's namespace lister
// has it. The namespace matcher would fall back to a client GET on a lister miss
// (k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/namespace/matcher.go, GetNamespace and
// GetNamespaceLabels), which the fake clientset answers, so the wait only makes the lister path the one taken.
func (in *instance) addNamespace(ns *corev1.Namespace) error {
	_, err := in.client.CoreV1().Namespaces().Create(context.Background(), ns.DeepCopy(), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := in.nsLister.Get(ns.Name); err == nil {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil // the client fallback still finds it
}

type recorder struct{ texts []string }

func (r *recorder) AddWarning(_, text string) { r.texts = append(r.texts, text) }

// validate: the plugin's decision on a fresh attributes record, and the warnings it added
// (k8s.io/apiserver/pkg/warning: the dispatcher adds a Warn action's failures to the request context's recorder).
func (in *instance) validate(attrs func() admission.Attributes, o admission.ObjectInterfaces) ([]string, error) {
	rec := &recorder{}
	ctx := warning.WithWarningRecorder(context.Background(), rec)
	err := in.plugin.Validate(ctx, attrs(), o)
	return rec.texts, err
}

// The dispatcher's texts (k8s.io/apiserver/pkg/admission/plugin/policy/validating/dispatcher.go, Dispatch): a Warn
// action adds "Validation failed for ValidatingAdmissionPolicy '<policy>' with binding '<binding>': <message>"; a
// denial is an admission.NewForbidden error whose message ends "ValidatingAdmissionPolicy '<policy>' with binding
// '<binding>' denied request: <message>" (or without the binding, for a policy's configuration error).
var (
	warningRE = regexp.MustCompile(`(?s)^Validation failed for ValidatingAdmissionPolicy '([^']*)' with binding '([^']*)': (.*)$`)
	denialRE  = regexp.MustCompile(`(?s)ValidatingAdmissionPolicy '([^']*)'(?: with binding '([^']*)')? denied request: (.*)$`)
)

// isEvalError: whether a decision's message is one of the errors the validator reports in place of a validation's
// message (Evaluation EvalError in validator.go; the texts come from k8s.io/apiserver/pkg/admission/plugin/cel
// activation.go Eval, validator.go, webhook/matchconditions/matcher.go and dispatcher.go addConfigError). The
// warning carries only the text, so the kind of decision is told by it.
func isEvalError(msg string) bool {
	for _, prefix := range []string{
		"compilation error: ",
		"validation failed due to running out of cost budget",
		"runtime cost could not be calculated",
		"failed messageExpression: ",
		"failed to configure ",
		"failed to prepare ",
		"unrecognized failure policy",
		"Invalid type sent to validator",
		"internal error converting ExpressionAccessor",
		"unexpected internal error compiling expression",
	} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	// "expression '<expr>' resulted in error: <err>", alone or aggregated ("[e1, e2]") for matchConditions.
	return strings.Contains(msg, "' resulted in error: ") &&
		(strings.HasPrefix(msg, "expression '") || strings.HasPrefix(msg, "[expression '"))
}

type failure struct {
	policy, binding, message string
	evalError                bool
}

// failures: every failing validation the Warn instance reported, ordered by policy, then binding, then validation
// (the dispatcher iterates policies in map order but a binding's decisions in validation order).
func failures(warnings []string) []failure {
	var out []failure
	for _, w := range warnings {
		m := warningRE.FindStringSubmatch(w)
		if m == nil {
			out = append(out, failure{message: w, evalError: isEvalError(w)})
			continue
		}
		out = append(out, failure{policy: m[1], binding: m[2], message: m[3], evalError: isEvalError(m[3])})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].policy != out[j].policy {
			return out[i].policy < out[j].policy
		}
		return out[i].binding < out[j].binding
	})
	return out
}

// denialMessage: the message of a plugin error, without the prefix the dispatcher adds.
func denialMessage(err error) string {
	text := err.Error()
	if m := denialRE.FindStringSubmatch(text); m != nil {
		return m[3]
	}
	return text
}
