package main

// A cluster: the input's policies, bindings and namespaces, judged by two plugin instances.
//
// The dispatcher (k8s.io/apiserver/pkg/admission/plugin/policy/validating/dispatcher.go) returns only the first
// denial. To list every failing validation, a second instance holds the bindings that deny, rewritten to
// validationActions [Warn], and its warnings are collected: the Deny instance decides `allowed`, the Warn instance
// says why.

import (
	"encoding/json"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/client-go/kubernetes/scheme"
)

// strictDecoder decodes JSON into client-go's typed objects (k8s.io/client-go/kubernetes/scheme), as the API
// server decodes a request body into its kind, so that fields have their Go types and serialise back as the API
// server serialises them (a quantity written as the JSON number 1 reaches CEL as the string "1"). Strict, so that
// unknown and duplicate fields are reported; the object is still decoded, as with the API server's default
// fieldValidation (Warn), which drops them.
var strictDecoder = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
	kjson.SerializerOptions{Strict: true})

// decode: a typed object when client-go's scheme knows the kind, else unstructured. warnings: unknown or duplicate
// fields.
func decode(data []byte, defaultKind *schema.GroupVersionKind) (runtime.Object, []string, error) {
	obj, gvk, err := strictDecoder.Decode(data, defaultKind, nil)
	var warnings []string
	if err != nil && runtime.IsStrictDecodingError(err) {
		if strictErr, ok := runtime.AsStrictDecodingError(err); ok {
			for _, e := range strictErr.Errors() {
				warnings = append(warnings, e.Error())
			}
		}
		err = nil
	}
	if err != nil && (runtime.IsNotRegisteredError(err) || runtime.IsMissingKind(err) || runtime.IsMissingVersion(err)) {
		u := &unstructured.Unstructured{}
		if uerr := json.Unmarshal(data, &u.Object); uerr != nil {
			return nil, nil, uerr
		}
		if u.Object == nil {
			return nil, nil, fmt.Errorf("the object is not a JSON object")
		}
		if defaultKind != nil {
			if u.GetAPIVersion() == "" {
				u.SetAPIVersion(defaultKind.GroupVersion().String())
			}
			if u.GetKind() == "" {
				u.SetKind(defaultKind.Kind)
			}
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, nil, fmt.Errorf("the object has no apiVersion and kind, and the request no kind")
		}
		return u, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	return obj, warnings, nil
}

type cluster struct {
	mapper     meta.RESTMapper
	oi         admission.ObjectInterfaces
	deny, warn *instance
	namespaces map[string]bool
}

func newCluster(in setupJSON) (*cluster, []compileError, error) {
	compileErrors := []compileError{}
	var policies []*admissionregistrationv1.ValidatingAdmissionPolicy
	for i, raw := range in.Policies {
		obj, warnings, err := decode(raw, &policyGVK)
		p, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
		if err != nil || !ok {
			return nil, nil, usageError{fmt.Sprintf("policies[%d] is not a ValidatingAdmissionPolicy: %v", i, errOrKind(err, obj))}
		}
		for _, w := range warnings {
			// kubectl's default field validation (Strict) refuses these.
			compileErrors = append(compileErrors, compileError{Policy: p.Name, Error: w})
		}
		defaultPolicy(p)
		compileErrors = append(compileErrors, compilePolicyExpressions(p)...)
		// validation.go validateValidatingAdmissionPolicySpec: a policy without matchConstraints.resourceRules is
		// refused, so it is never in a cluster.
		if p.Spec.MatchConstraints == nil || len(p.Spec.MatchConstraints.ResourceRules) == 0 {
			compileErrors = append(compileErrors, compileError{Policy: p.Name,
				Error: field.Required(field.NewPath("spec", "matchConstraints", "resourceRules"), "").Error()})
			continue
		}
		policies = append(policies, p)
	}
	var bindings, warnBindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for i, raw := range in.Bindings {
		obj, warnings, err := decode(raw, &bindingGVK)
		b, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		if err != nil || !ok {
			return nil, nil, usageError{fmt.Sprintf("bindings[%d] is not a ValidatingAdmissionPolicyBinding: %v", i, errOrKind(err, obj))}
		}
		for _, w := range warnings {
			compileErrors = append(compileErrors, compileError{Policy: b.Spec.PolicyName,
				Error: fmt.Sprintf("binding %s: %s", b.Name, w)})
		}
		defaultBinding(b)
		if len(b.Spec.ValidationActions) == 0 {
			compileErrors = append(compileErrors, compileError{Policy: b.Spec.PolicyName, Error: fmt.Sprintf("binding %s: %s",
				b.Name, field.Required(field.NewPath("spec", "validationActions"), "at least one validation action is required"))})
			continue
		}
		bindings = append(bindings, b)
		for _, a := range b.Spec.ValidationActions {
			if a == admissionregistrationv1.Deny {
				w := b.DeepCopy()
				w.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
				warnBindings = append(warnBindings, w)
				break
			}
		}
	}
	known := map[string]bool{}
	var namespaces []*corev1.Namespace
	for i, raw := range in.Namespaces {
		obj, _, err := decode(raw, &nsGVK)
		ns, ok := obj.(*corev1.Namespace)
		if err != nil || !ok || ns.Name == "" {
			return nil, nil, usageError{fmt.Sprintf("namespaces[%d] is not a named Namespace: %v", i, errOrKind(err, obj))}
		}
		canonicalNamespace(ns, true)
		if !known[ns.Name] {
			known[ns.Name] = true
			namespaces = append(namespaces, ns)
		}
	}
	var params []runtime.Object
	for i, raw := range in.Params {
		obj, _, err := decode(raw, nil)
		if err != nil {
			return nil, nil, usageError{fmt.Sprintf("params[%d]: %v", i, err)}
		}
		params = append(params, obj)
	}

	mapper := newRESTMapper()
	oi := &admission.RuntimeObjectInterfaces{ObjectCreater: scheme.Scheme, ObjectTyper: scheme.Scheme,
		ObjectDefaulter: scheme.Scheme, ObjectConvertor: scheme.Scheme,
		EquivalentResourceMapper: newEquivalentResourceRegistry()}
	// One after the other: concurrent first compiles race inside the CEL compiler.
	deny, err := startInstance(policies, bindings, namespaces, params, mapper)
	if err != nil {
		return nil, nil, err
	}
	warn, err := startInstance(policies, warnBindings, namespaces, params, mapper)
	if err != nil {
		close(deny.stop)
		return nil, nil, err
	}
	return &cluster{mapper: mapper, oi: oi, deny: deny, warn: warn, namespaces: known}, compileErrors, nil
}

func errOrKind(err error, obj runtime.Object) string {
	if err != nil {
		return err.Error()
	}
	if obj == nil {
		return "nothing decoded"
	}
	return "it is a " + obj.GetObjectKind().GroupVersionKind().String()
}

func (c *cluster) close() {
	close(c.deny.stop)
	close(c.warn.stop)
}

// ensureNamespace: a namespace a request names but the input does not is created, as it would exist in a cluster
// accepting the request, with the label the API server sets on every namespace.
func (c *cluster) ensureNamespace(ns *corev1.Namespace) error {
	if c.namespaces[ns.Name] {
		return nil
	}
	for _, in := range []*instance{c.deny, c.warn} {
		if err := in.addNamespace(ns); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
		}
	}
	c.namespaces[ns.Name] = true
	return nil
}

var operations = map[string]admission.Operation{
	"CREATE": admission.Create, "UPDATE": admission.Update, "DELETE": admission.Delete, "CONNECT": admission.Connect,
}

type request struct {
	attrs    func() admission.Attributes
	warnings []string
}

func (c *cluster) judge(req requestJSON) resultJSON {
	res := resultJSON{ID: req.ID, Messages: []string{}, EvalErrors: []string{}}
	built, err := c.build(req)
	if err != nil {
		res.Error = oneLine(err.Error())
		return res
	}
	res.Warnings = built.warnings
	warnings, err := c.deny.validate(built.attrs, c.oi)
	res.Warnings = append(res.Warnings, warnings...)
	if err == nil {
		res.Allowed = true
		return res
	}
	res.Denial = err.Error()
	wwarnings, werr := c.warn.validate(built.attrs, c.oi)
	for _, f := range failures(wwarnings) {
		if f.evalError {
			res.EvalErrors = append(res.EvalErrors, f.message)
		} else {
			res.Messages = append(res.Messages, f.message)
		}
	}
	// A configuration error (or a namespace lookup failure) denies whatever the binding's actions: the Warn
	// instance returns it as its error rather than as a warning.
	if werr != nil {
		msg := denialMessage(werr)
		if !contains(res.EvalErrors, msg) && !contains(res.Messages, msg) {
			res.EvalErrors = append(res.EvalErrors, msg)
		}
	}
	if len(res.Messages) == 0 && len(res.EvalErrors) == 0 {
		msg := denialMessage(err)
		if isEvalError(msg) {
			res.EvalErrors = append(res.EvalErrors, msg)
		} else {
			res.Messages = append(res.Messages, msg)
		}
	}
	return res
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (c *cluster) build(req requestJSON) (*request, error) {
	op, ok := operations[strings.ToUpper(req.Operation)]
	if !ok {
		return nil, fmt.Errorf("operation %q is not CREATE, UPDATE, DELETE or CONNECT", req.Operation)
	}
	var kind *schema.GroupVersionKind
	if req.Kind != nil {
		kind = &schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}
	}
	var warnings []string
	decodeOne := func(raw json.RawMessage, what string) (runtime.Object, error) {
		if len(raw) == 0 || string(raw) == "null" {
			return nil, nil
		}
		obj, w, err := decode(raw, kind)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", what, err)
		}
		gvk := obj.GetObjectKind().GroupVersionKind()
		if kind == nil {
			kind = &gvk
		} else if gvk != *kind {
			return nil, fmt.Errorf("%s is a %s but the request's kind is %s", what, gvk, *kind)
		}
		for _, x := range w {
			warnings = append(warnings, what+": "+x)
		}
		return obj, nil
	}
	obj, err := decodeOne(req.Object, "object")
	if err != nil {
		return nil, err
	}
	old, err := decodeOne(req.OldObject, "oldObject")
	if err != nil {
		return nil, err
	}
	if kind == nil {
		return nil, fmt.Errorf("no kind: give the request's kind or an object with apiVersion and kind")
	}
	if req.Kind != nil && (req.Kind.Version == "" || req.Kind.Kind == "") {
		return nil, fmt.Errorf("kind needs version and kind")
	}

	var resource schema.GroupVersionResource
	namespaced := req.Namespace != ""
	if mapped, scoped, err := resourceFor(c.mapper, *kind); err == nil {
		resource, namespaced = mapped, scoped
	} else if req.Resource == nil {
		return nil, err
	}
	if req.Resource != nil {
		resource = schema.GroupVersionResource{Group: req.Resource.Group, Version: req.Resource.Version, Resource: req.Resource.Resource}
	}
	isNamespace := resource.Group == "" && resource.Resource == "namespaces"

	switch op {
	case admission.Create:
		if obj == nil {
			return nil, fmt.Errorf("a CREATE needs an object")
		}
		old = nil
	case admission.Update:
		if obj == nil {
			return nil, fmt.Errorf("an UPDATE needs an object")
		}
		if old == nil {
			old = obj.DeepCopyObject()
		}
	case admission.Delete:
		// The API server validates a delete with the stored object as oldObject and no object
		// (k8s.io/apiserver/pkg/registry/rest/delete.go AdmissionToValidateObjectDeleteFunc).
		if old == nil {
			old = obj
		}
		obj = nil
	}

	name := req.Name
	for _, o := range []runtime.Object{obj, old} {
		if a, err := meta.Accessor(o); name == "" && o != nil && err == nil {
			name = a.GetName()
		}
	}
	namespace := req.Namespace
	if isNamespace && namespace == "" {
		// The request info of /api/v1/namespaces/NAME has namespace NAME, and the create handler sets it too
		// (k8s.io/apiserver/pkg/endpoints/handlers/create.go); the dispatcher unsets it again for namespaces.
		namespace = name
	}
	if !namespaced && !isNamespace {
		namespace = ""
	}
	if namespaced && namespace == "" {
		return nil, fmt.Errorf("%s is namespaced: give the request's namespace", resource.GroupResource())
	}

	// What the handlers and the registry do to the object before validating admission.
	if obj != nil && req.SubResource == "" {
		if err := prepareObject(obj, old, op, namespace, resource); err != nil {
			return nil, err
		}
	}

	switch {
	case isNamespace && op == admission.Create:
		// The namespace is being created: the matcher reads its labels from the object.
	case isNamespace:
		ns := newNamespace(name)
		if stored, ok := old.(*corev1.Namespace); ok {
			ns = stored.DeepCopy()
			canonicalNamespace(ns, false)
		}
		if err := c.ensureNamespace(ns); err != nil {
			return nil, err
		}
	case namespace != "":
		if err := c.ensureNamespace(newNamespace(namespace)); err != nil {
			return nil, err
		}
	}

	var info user.Info = &user.DefaultInfo{Name: "vapcheck@example.com", Groups: []string{user.AllAuthenticated}}
	if req.UserInfo != nil {
		info = &user.DefaultInfo{Name: req.UserInfo.Username, UID: req.UserInfo.UID, Groups: req.UserInfo.Groups,
			Extra: req.UserInfo.Extra}
	}
	var dryRun []string
	if req.DryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	// The handlers' options objects, with their TypeMeta set as create.go, update.go and delete.go set it.
	var options runtime.Object
	switch op {
	case admission.Create:
		options = &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "CreateOptions"}, DryRun: dryRun}
	case admission.Update:
		options = &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "UpdateOptions"}, DryRun: dryRun}
	case admission.Delete:
		options = &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "DeleteOptions"}, DryRun: dryRun}
	}
	gvk := *kind
	attrs := func() admission.Attributes {
		var o, oo runtime.Object
		if obj != nil {
			o = obj.DeepCopyObject()
		}
		if old != nil {
			oo = old.DeepCopyObject()
		}
		return admission.NewAttributesRecord(o, oo, gvk, namespace, name, resource, req.SubResource, op, options,
			req.DryRun, info)
	}
	return &request{attrs: attrs, warnings: warnings}, nil
}

// prepareObject: the create and update paths up to validating admission.
//   - create.go wipes the system fields of the object's metadata (rest.WipeObjectMetaSystemFields) and sets or
//     checks its namespace (rest.EnsureObjectNamespaceMatchesRequestNamespace); the registry's store then generates
//     a name from generateName and fills uid and creationTimestamp (rest.FillObjectMetaSystemFields) before
//     BeforeCreate (k8s.io/apiserver/pkg/registry/generic/registry/store.go Create);
//   - an update keeps the stored object's uid and creationTimestamp (rest.BeforeUpdate);
//   - the namespace registry's PrepareForCreate and Canonicalize (canonicalNamespace).
//
// Other kinds' PrepareForCreate (e.g. a Pod's status, QoS class and generation) is not modelled.
func prepareObject(obj, old runtime.Object, op admission.Operation, namespace string, resource schema.GroupVersionResource) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(rest.ExpectedNamespaceForResource(namespace, resource), m); err != nil {
		return err
	}
	switch op {
	case admission.Create:
		rest.WipeObjectMetaSystemFields(m)
		if m.GetName() == "" && m.GetGenerateName() != "" {
			m.SetName(names.SimpleNameGenerator.GenerateName(m.GetGenerateName()))
		}
		rest.FillObjectMetaSystemFields(m)
	case admission.Update:
		if o, err := meta.Accessor(old); err == nil {
			if m.GetUID() == "" {
				m.SetUID(o.GetUID())
			}
			m.SetCreationTimestamp(o.GetCreationTimestamp())
		}
	}
	if ns, ok := obj.(*corev1.Namespace); ok {
		canonicalNamespace(ns, op == admission.Create)
	}
	return nil
}
