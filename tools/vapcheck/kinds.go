package main

// The kinds vapcheck knows: a REST mapper for the plugin and for requests that omit their resource, and the
// equivalent-resource registry of the ObjectInterfaces the plugin converts objects with.
//
// kube-apiserver builds both from its installed API groups (discovery, and
// k8s.io/apiserver/pkg/endpoints/installer.go registering every resource's kind in the EquivalentResourceRegistry).
// With no API server, this table stands in for them. Scopes and plurals are those of Kubernetes 1.36's built-in
// resources (the control-plane tier's discovery), the same in 1.32 for every kind listed.

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type knownKind struct {
	group, version, kind, resource string
	namespaced                     bool
	subresources                   map[string]schema.GroupVersionKind // subresource -> kind of its requests
}

func podSubresources() map[string]schema.GroupVersionKind {
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	return map[string]schema.GroupVersionKind{
		"status": pod, "ephemeralcontainers": pod, "resize": pod,
		"binding":  {Version: "v1", Kind: "Binding"},
		"eviction": {Group: "policy", Version: "v1", Kind: "Eviction"},
	}
}

func scaled(group, version, kind string) map[string]schema.GroupVersionKind {
	return map[string]schema.GroupVersionKind{
		"status": {Group: group, Version: version, Kind: kind},
		"scale":  {Group: "autoscaling", Version: "v1", Kind: "Scale"},
	}
}

func status(group, version, kind string) map[string]schema.GroupVersionKind {
	return map[string]schema.GroupVersionKind{"status": {Group: group, Version: version, Kind: kind}}
}

var knownKinds = []knownKind{
	// core/v1
	{"", "v1", "Pod", "pods", true, podSubresources()},
	{"", "v1", "Namespace", "namespaces", false, status("", "v1", "Namespace")},
	{"", "v1", "Service", "services", true, status("", "v1", "Service")},
	{"", "v1", "ConfigMap", "configmaps", true, nil},
	{"", "v1", "Secret", "secrets", true, nil},
	{"", "v1", "ServiceAccount", "serviceaccounts", true, nil},
	{"", "v1", "Endpoints", "endpoints", true, nil},
	{"", "v1", "Event", "events", true, nil},
	{"", "v1", "LimitRange", "limitranges", true, nil},
	{"", "v1", "ResourceQuota", "resourcequotas", true, status("", "v1", "ResourceQuota")},
	{"", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true, status("", "v1", "PersistentVolumeClaim")},
	{"", "v1", "PersistentVolume", "persistentvolumes", false, status("", "v1", "PersistentVolume")},
	{"", "v1", "PodTemplate", "podtemplates", true, nil},
	{"", "v1", "ReplicationController", "replicationcontrollers", true, scaled("", "v1", "ReplicationController")},
	{"", "v1", "Node", "nodes", false, status("", "v1", "Node")},
	{"", "v1", "ComponentStatus", "componentstatuses", false, nil},
	// apps/v1
	{"apps", "v1", "Deployment", "deployments", true, scaled("apps", "v1", "Deployment")},
	{"apps", "v1", "StatefulSet", "statefulsets", true, scaled("apps", "v1", "StatefulSet")},
	{"apps", "v1", "DaemonSet", "daemonsets", true, status("apps", "v1", "DaemonSet")},
	{"apps", "v1", "ReplicaSet", "replicasets", true, scaled("apps", "v1", "ReplicaSet")},
	{"apps", "v1", "ControllerRevision", "controllerrevisions", true, nil},
	// batch/v1
	{"batch", "v1", "Job", "jobs", true, status("batch", "v1", "Job")},
	{"batch", "v1", "CronJob", "cronjobs", true, status("batch", "v1", "CronJob")},
	// others a cluster's tenants commonly touch
	{"autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true, nil},
	{"autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true, nil},
	{"policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true, nil},
	{"networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true, nil},
	{"networking.k8s.io", "v1", "Ingress", "ingresses", true, nil},
	{"networking.k8s.io", "v1", "IngressClass", "ingressclasses", false, nil},
	{"rbac.authorization.k8s.io", "v1", "Role", "roles", true, nil},
	{"rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true, nil},
	{"rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false, nil},
	{"rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false, nil},
	{"scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", false, nil},
	{"storage.k8s.io", "v1", "StorageClass", "storageclasses", false, nil},
	{"node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", false, nil},
	{"coordination.k8s.io", "v1", "Lease", "leases", true, nil},
	{"discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", true, nil},
	{"admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", false, nil},
	// resource.k8s.io/v1 (DRA, GA in 1.34): what tenants on DRA pools create and name
	{"resource.k8s.io", "v1", "ResourceClaim", "resourceclaims", true, status("resource.k8s.io", "v1", "ResourceClaim")},
	{"resource.k8s.io", "v1", "ResourceClaimTemplate", "resourceclaimtemplates", true, nil},
	{"resource.k8s.io", "v1", "DeviceClass", "deviceclasses", false, nil},
	{"resource.k8s.io", "v1", "ResourceSlice", "resourceslices", false, nil},
	{"admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings", false, nil},
}

// newRESTMapper: the kinds above, the first version listed for a group preferred.
func newRESTMapper() meta.RESTMapper {
	var versions []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, k := range knownKinds {
		gv := schema.GroupVersion{Group: k.group, Version: k.version}
		if !seen[gv] {
			seen[gv] = true
			versions = append(versions, gv)
		}
	}
	m := meta.NewDefaultRESTMapper(versions)
	for _, k := range knownKinds {
		scope := meta.RESTScopeRoot
		if k.namespaced {
			scope = meta.RESTScopeNamespace
		}
		gvk := schema.GroupVersionKind{Group: k.group, Version: k.version, Kind: k.kind}
		singular := schema.GroupVersionResource{Group: k.group, Version: k.version, Resource: lower(k.kind)}
		m.AddSpecific(gvk, gvk.GroupVersion().WithResource(k.resource), singular, scope)
	}
	return m
}

// newEquivalentResourceRegistry: what the API server's installer registers (installer.go `RegisterKindFor`), so
// `KindFor` answers for matchPolicy Equivalent.
func newEquivalentResourceRegistry() runtime.EquivalentResourceRegistry {
	r := runtime.NewEquivalentResourceRegistry()
	for _, k := range knownKinds {
		gvr := schema.GroupVersionResource{Group: k.group, Version: k.version, Resource: k.resource}
		r.RegisterKindFor(gvr, "", schema.GroupVersionKind{Group: k.group, Version: k.version, Kind: k.kind})
		for sub, kind := range k.subresources {
			r.RegisterKindFor(gvr, sub, kind)
		}
	}
	return r
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// resourceFor: the resource of a kind, for requests that name only the kind.
func resourceFor(mapper meta.RESTMapper, gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("kind %s is not one vapcheck knows; give the request's resource", gvk)
	}
	return mapping.Resource, mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}
