//go:build kubernetes_1_32

package main

// apiserver.go's functions over k8s.io/apiserver v0.32: strict CEL cost is an argument (the
// StrictCostEnforcementForVAP gate, on by default there, so true), validating.NewPlugin cannot fail, and the generic
// initializer takes no effective version.

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apiserver/pkg/admission/initializer"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/featuregate"
)

const strictCost = true

func baseEnvSet() *environment.EnvSet {
	return environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion(), strictCost)
}

func declarations(hasParams, hasAuthorizer bool) plugincel.OptionalVariableDeclarations {
	return plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: hasAuthorizer,
		StrictCost: strictCost}
}

func newInitializedPlugin(client kubernetes.Interface, dynamicClient dynamic.Interface,
	factory informers.SharedInformerFactory, gates featuregate.FeatureGate, stop <-chan struct{},
	mapper meta.RESTMapper) (*validating.Plugin, error) {
	plugin := validating.NewPlugin(nil)
	initializer.New(client, dynamicClient, factory, authorizerfactory.NewAlwaysAllowAuthorizer(), gates, stop,
		mapper).Initialize(plugin)
	return plugin, nil
}
