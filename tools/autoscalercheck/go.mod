// autoscalercheck: the cluster autoscaler's GPU readiness rule and cluster health threshold, run on node objects
// with no cluster (main.go).
module gpushare.local/tools/autoscalercheck

// k8s.io/autoscaler/cluster-autoscaler at tag cluster-autoscaler-1.35.2 declares go 1.25.0 (its go.mod).
go 1.25.0

// The repository's tags (cluster-autoscaler-1.35.2) are not Go module tags, so the module is required at the
// pseudo-version of the commit that tag names: 2d42588803c71fe9b35dcd9e3669ac6bb550ca22, committed
// 2026-07-22T21:27:50Z (`git rev-parse 'cluster-autoscaler-1.35.2^{commit}'` in kubernetes/autoscaler).
require k8s.io/autoscaler/cluster-autoscaler v0.0.0-20260722212750-2d42588803c7

// The Node type the input decodes to (replaced below with the version the autoscaler builds with).
require k8s.io/api v0.35.6

require (
	cel.dev/expr v0.24.0 // indirect
	github.com/Azure/azure-sdk-for-go-extensions v0.1.6 // indirect
	github.com/Azure/azure-sdk-for-go/sdk/azcore v1.21.0 // indirect
	github.com/Azure/azure-sdk-for-go/sdk/azidentity v1.13.1 // indirect
	github.com/Azure/azure-sdk-for-go/sdk/internal v1.11.2 // indirect
	github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/authorization/armauthorization/v2 v2.2.0 // indirect
	github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6 v6.4.0 // indirect
	github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7 v7.3.0 // indirect
	github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerregistry/armcontainerregistry v1.2.0 // indirect
	github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6 v6.6.0 // indirect
	github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v8 v8.3.0-beta.1 // indirect
	github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/keyvault/armkeyvault v1.5.0 // indirect
	github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/msi/armmsi v1.3.0 // indirect
	github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6 v6.2.0 // indirect
	github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns v1.3.0 // indirect
	github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources v1.2.0 // indirect
	github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/storage/armstorage v1.8.1 // indirect
	github.com/Azure/azure-sdk-for-go/sdk/security/keyvault/azsecrets v1.4.0 // indirect
	github.com/Azure/azure-sdk-for-go/sdk/security/keyvault/internal v1.2.0 // indirect
	github.com/Azure/azure-sdk-for-go/sdk/storage/azblob v1.6.3 // indirect
	github.com/Azure/go-armbalancer v0.0.2 // indirect
	github.com/Azure/go-autorest v14.2.0+incompatible // indirect
	github.com/Azure/go-autorest/autorest v0.11.29 // indirect
	github.com/Azure/go-autorest/autorest/adal v0.9.24 // indirect
	github.com/Azure/go-autorest/autorest/date v0.3.0 // indirect
	github.com/Azure/go-autorest/logger v0.2.1 // indirect
	github.com/Azure/go-autorest/tracing v0.6.0 // indirect
	github.com/Azure/msi-dataplane v0.4.3 // indirect
	github.com/Azure/skewer/v2 v2.0.1 // indirect
	github.com/AzureAD/microsoft-authentication-library-for-go v1.6.0 // indirect
	github.com/Microsoft/go-winio v0.6.2 // indirect
	github.com/antlr4-go/antlr/v4 v4.13.1 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/blang/semver/v4 v4.0.0 // indirect
	github.com/cenkalti/backoff/v5 v5.0.3 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/distribution/reference v0.6.0 // indirect
	github.com/emicklei/go-restful/v3 v3.13.0 // indirect
	github.com/felixge/httpsnoop v1.0.4 // indirect
	github.com/fsnotify/fsnotify v1.9.0 // indirect
	github.com/fxamacker/cbor/v2 v2.9.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/go-openapi/jsonpointer v0.21.2 // indirect
	github.com/go-openapi/jsonreference v0.21.0 // indirect
	github.com/go-openapi/swag v0.23.1 // indirect
	github.com/golang-jwt/jwt/v4 v4.5.2 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.0 // indirect
	github.com/google/cel-go v0.26.1 // indirect
	github.com/google/gnostic-models v0.7.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/grafana/regexp v0.0.0-20240518133315-a468a5bfb3bc // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.27.2 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/josharian/intern v1.0.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/kylelemons/godebug v1.1.0 // indirect
	github.com/mailru/easyjson v0.9.0 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/pkg/browser v0.0.0-20240102092130-5ac0b6a4141c // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/pmezard/go-difflib v1.0.1-0.20181226105442-5d4384ee4fb2 // indirect
	github.com/prometheus/client_golang v1.23.2 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.66.1 // indirect
	github.com/prometheus/otlptranslator v0.0.0-20250717125610-8549f4ab4f8f // indirect
	github.com/prometheus/procfs v0.17.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	github.com/samber/lo v1.51.0 // indirect
	github.com/spf13/cobra v1.10.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/stoewer/go-strcase v1.3.1 // indirect
	github.com/stretchr/objx v0.5.2 // indirect
	github.com/stretchr/testify v1.11.1 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc v0.62.0 // indirect
	go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp v0.62.0 // indirect
	go.opentelemetry.io/otel v1.41.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace v1.37.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc v1.37.0 // indirect
	go.opentelemetry.io/otel/exporters/prometheus v0.59.1 // indirect
	go.opentelemetry.io/otel/metric v1.41.0 // indirect
	go.opentelemetry.io/otel/sdk v1.37.0 // indirect
	go.opentelemetry.io/otel/sdk/metric v1.37.0 // indirect
	go.opentelemetry.io/otel/trace v1.41.0 // indirect
	go.opentelemetry.io/proto/otlp v1.7.1 // indirect
	go.uber.org/mock v0.6.0 // indirect
	go.yaml.in/yaml/v2 v2.4.3 // indirect
	go.yaml.in/yaml/v3 v3.0.4 // indirect
	golang.org/x/crypto v0.47.0 // indirect
	golang.org/x/exp v0.0.0-20250819193227-8b4c13bb791b // indirect
	golang.org/x/net v0.49.0 // indirect
	golang.org/x/oauth2 v0.30.0 // indirect
	golang.org/x/sync v0.19.0 // indirect
	golang.org/x/sys v0.40.0 // indirect
	golang.org/x/term v0.39.0 // indirect
	golang.org/x/text v0.33.0 // indirect
	golang.org/x/time v0.14.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20250826171959-ef028d996bc1 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250826171959-ef028d996bc1 // indirect
	google.golang.org/grpc v1.75.0 // indirect
	google.golang.org/protobuf v1.36.8 // indirect
	gopkg.in/evanphx/json-patch.v4 v4.13.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	k8s.io/apiextensions-apiserver v0.35.6 // indirect
	k8s.io/apimachinery v0.35.6 // indirect
	k8s.io/apiserver v0.35.6 // indirect
	k8s.io/client-go v0.35.6 // indirect
	k8s.io/cloud-provider v0.35.1 // indirect
	k8s.io/component-base v0.35.6 // indirect
	k8s.io/component-helpers v0.35.6 // indirect
	k8s.io/controller-manager v0.35.6 // indirect
	k8s.io/cri-api v0.35.6 // indirect
	k8s.io/cri-client v0.0.0 // indirect
	k8s.io/csi-translation-lib v0.27.0 // indirect
	k8s.io/dynamic-resource-allocation v0.35.6 // indirect
	k8s.io/klog/v2 v2.130.1 // indirect
	k8s.io/kube-openapi v0.0.0-20250910181357-589584f1c912 // indirect
	k8s.io/kube-scheduler v0.0.0 // indirect
	k8s.io/kubelet v0.35.6 // indirect
	k8s.io/kubernetes v1.35.6 // indirect
	k8s.io/utils v0.0.0-20251002143259-bc988d571ff4 // indirect
	sigs.k8s.io/cloud-provider-azure v1.34.3 // indirect
	sigs.k8s.io/cloud-provider-azure/pkg/azclient v0.9.2 // indirect
	sigs.k8s.io/cloud-provider-azure/pkg/azclient/configloader v0.8.4 // indirect
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
	sigs.k8s.io/randfill v1.0.0 // indirect
	sigs.k8s.io/structured-merge-diff/v6 v6.3.2-0.20260122202528-d9cc6641c482 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)

// Copied from cluster-autoscaler/go.mod at that commit: a dependency's replace lines do not apply to the module
// that requires it, and without them Go resolves k8s.io/kubernetes' staging modules to v0.0.0, which do not exist.
// Upstream's own `k8s.io/autoscaler/cluster-autoscaler/apis => ./apis` becomes the same commit's apis module.
replace k8s.io/autoscaler/cluster-autoscaler/apis => k8s.io/autoscaler/cluster-autoscaler/apis v0.0.0-20260722212750-2d42588803c7

replace github.com/aws/aws-sdk-go/service/eks => github.com/aws/aws-sdk-go/service/eks v1.38.49

replace github.com/rancher/go-rancher => github.com/rancher/go-rancher v0.1.0

replace k8s.io/api => k8s.io/api v0.35.6

replace k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.35.6

replace k8s.io/apimachinery => k8s.io/apimachinery v0.35.6

replace k8s.io/cli-runtime => k8s.io/cli-runtime v0.35.6

replace k8s.io/client-go => k8s.io/client-go v0.35.6

replace k8s.io/cloud-provider => k8s.io/cloud-provider v0.35.6

replace k8s.io/cluster-bootstrap => k8s.io/cluster-bootstrap v0.35.6

replace k8s.io/code-generator => k8s.io/code-generator v0.35.6

replace k8s.io/component-base => k8s.io/component-base v0.35.6

replace k8s.io/component-helpers => k8s.io/component-helpers v0.35.6

replace k8s.io/controller-manager => k8s.io/controller-manager v0.35.6

replace k8s.io/cri-api => k8s.io/cri-api v0.35.6

replace k8s.io/csi-translation-lib => k8s.io/csi-translation-lib v0.35.6

replace k8s.io/kube-aggregator => k8s.io/kube-aggregator v0.35.6

replace k8s.io/kube-controller-manager => k8s.io/kube-controller-manager v0.35.6

replace k8s.io/kube-proxy => k8s.io/kube-proxy v0.35.6

replace k8s.io/kube-scheduler => k8s.io/kube-scheduler v0.35.6

replace k8s.io/kubectl => k8s.io/kubectl v0.35.6

replace k8s.io/kubelet => k8s.io/kubelet v0.35.6

replace k8s.io/metrics => k8s.io/metrics v0.35.6

replace k8s.io/mount-utils => k8s.io/mount-utils v0.35.6

replace k8s.io/sample-apiserver => k8s.io/sample-apiserver v0.35.6

replace k8s.io/sample-cli-plugin => k8s.io/sample-cli-plugin v0.35.6

replace k8s.io/sample-controller => k8s.io/sample-controller v0.35.6

replace k8s.io/pod-security-admission => k8s.io/pod-security-admission v0.35.6

replace k8s.io/dynamic-resource-allocation => k8s.io/dynamic-resource-allocation v0.35.6

replace k8s.io/kms => k8s.io/kms v0.35.6

replace k8s.io/endpointslice => k8s.io/endpointslice v0.35.6

replace k8s.io/cri-client => k8s.io/cri-client v0.35.6

replace k8s.io/externaljwt => k8s.io/externaljwt v0.35.6
