// Wrapper module: builds kubeconform at a pinned release, with checksums recorded in go.sum.
module kafka-balancer.invalid/hack/kubeconform

go 1.26.0

tool github.com/yannh/kubeconform/cmd/kubeconform

require (
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.7 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.1 // indirect
	github.com/yannh/kubeconform v0.7.0 // indirect
	golang.org/x/text v0.25.0 // indirect
	sigs.k8s.io/yaml v1.4.0 // indirect
)
