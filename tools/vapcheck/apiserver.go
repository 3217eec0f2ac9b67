//go:build !kubernetes_1_32

package main

// Where k8s.io/apiserver's API differs between the minors vapcheck builds (see build), the newest's (v0.36):
// strict CEL cost is no longer a choice (environment.MustBaseEnvSet and OptionalVariableDeclarations lost it: always
// strict), validating.NewPlugin returns an error, and the generic initializer takes the effective version
// (k8s.io/apiserver pkg/server/options/admission.go passes the server's; here the build's, as
// environment.DefaultCompatibilityVersion falls back to). apiserver_1_32.go is the oldest's.

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apiserver/pkg/admission/initializer"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/featuregate"
)

func baseEnvSet() *environment.EnvSet {
	return environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
}

func declarations(hasParams, hasAuthorizer bool) plugincel.OptionalVariableDeclarations {
	return plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: hasAuthorizer}
}

func newInitializedPlugin(client kubernetes.Interface, dynamicClient dynamic.Interface,
	factory informers.SharedInformerFactory, gates featuregate.FeatureGate, stop <-chan struct{},
	mapper meta.RESTMapper) (*validating.Plugin, error) {
	plugin, err := validating.NewPlugin(nil)
	if err != nil {
		return nil, err
	}
	initializer.New(client, dynamicClient, factory, authorizerfactory.NewAlwaysAllowAuthorizer(), gates,
		compatibility.DefaultBuildEffectiveVersion(), stop, mapper).Initialize(plugin)
	return plugin, nil
}
