#!/usr/bin/env bash
# For machines WITH Docker or podman: the operator as users run it, on a kind cluster (a real kubelet,
# real Pods). Builds the image from the Containerfile under the name the chart's default values give
# it, loads it into the cluster as an archive (no registry), installs the chart as the in-cluster test
# does (tests/node/conftest.py: release kb in namespace kafka-balancer, clusterWide as the pools are
# in another namespace, --wait for a Ready operator)
# and applies examples/pool.yaml and examples/goals.yaml into their namespace.
# The tests never use it: kind's node image comes from Docker Hub, and the test machines have no
# container engine; the node tier (hack/node/up.sh) runs the same chart and image on a local kubelet.
# Environment: KB_KIND_CLUSTER (cluster name, default kafka-balancer), KB_POOL_NAMESPACE (where the
# examples go, default kafka), KB_KAFKA_BOOTSTRAP (the pool's bootstrapServers, as pods reach your
# brokers; default the example's kafka-0.kafka:9092,...).
# Prints the cluster's kubeconfig path on stdout; progress goes to stderr.
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=kube/versions.sh
source "$KB_ROOT/hack/kube/versions.sh"

# kind runs its nodes as containers of either engine; podman needs kind's podman provider.
if command -v docker >/dev/null 2>&1; then
  engine=docker
elif command -v podman >/dev/null 2>&1; then
  engine=podman
  export KIND_EXPERIMENTAL_PROVIDER=podman
else
  log "neither docker nor podman found: kind runs Kubernetes nodes as containers and cannot work here."
  log "Without either, hack/node/up.sh runs a real node (root), hack/kube/up.sh an API-only bed."
  exit 1
fi
if ! "$engine" info >/dev/null 2>&1; then
  log "$engine is installed but does not answer (is its service running, may you use it?)."
  exit 1
fi

cluster="${KB_KIND_CLUSTER:-kafka-balancer}"
pool_namespace="${KB_POOL_NAMESPACE:-kafka}"
release=kb
release_namespace=kafka-balancer
chart="$KB_ROOT/charts/kafka-balancer"

kind_bin="$KB_CACHE_DIR/kind-$KIND_VERSION/bin"
if [ ! -x "$kind_bin/kind" ]; then
  log "installing kind $KIND_VERSION"
  GOBIN="$kind_bin" GOMODCACHE="$KB_CACHE_DIR/go/mod" GOCACHE="$KB_CACHE_DIR/go/build" GOTOOLCHAIN=local \
    go install "sigs.k8s.io/kind@$KIND_VERSION"
fi
kind="$kind_bin/kind"
tools="$("$KB_ROOT/hack/kube/provision.sh")"
kubectl="$(sed -n 's/^kubectl=//p' <<<"$tools")"
helm="$(sed -n 's/^helm=//p' <<<"$tools")"

# The image the chart's default values name (image.repository:appVersion), so no value is overridden.
image="$("$helm" template "$release" "$chart" --show-only templates/deployment.yaml |
  sed -n 's/^ *image: "\(.*\)"$/\1/p')"
archive="$KB_ROOT/run/kind/operator.tar"
mkdir -p "$(dirname "$archive")"
log "building $image from the Containerfile with $engine"
"$engine" build -f "$KB_ROOT/Containerfile" -t "$image" "$KB_ROOT"
"$engine" save -o "$archive" "$image"

# The node image is the one this kind release pins, so the cluster version is pinned too.
if ! "$kind" get clusters | grep -qx "$cluster"; then
  "$kind" create cluster --name "$cluster" --wait 180s
fi
kubeconfig="$KB_ROOT/run/kind/kubeconfig"
"$kind" export kubeconfig --name "$cluster" --kubeconfig "$kubeconfig"
# Into the node's containerd: the chart's IfNotPresent pull policy then never pulls it.
"$kind" load image-archive "$archive" --name "$cluster"

log "installing the chart (release $release in $release_namespace) and waiting for a Ready operator"
# upgrade --install: a second run rolls the rebuilt image out instead of failing on the existing release.
"$helm" upgrade --install "$release" "$chart" --kubeconfig "$kubeconfig" \
  -n "$release_namespace" --create-namespace --set clusterWide=true --wait --timeout 5m

if ! "$kubectl" --kubeconfig "$kubeconfig" get namespace "$pool_namespace" >/dev/null 2>&1; then
  "$kubectl" --kubeconfig "$kubeconfig" create namespace "$pool_namespace"
fi
# The example pool, pointed at your brokers when KB_KAFKA_BOOTSTRAP says where pods reach them.
bootstrap_edit=""
if [ -n "${KB_KAFKA_BOOTSTRAP:-}" ]; then
  bootstrap_edit="s|^\( *bootstrapServers:\).*|\1 $KB_KAFKA_BOOTSTRAP|"
fi
sed "$bootstrap_edit" "$KB_ROOT/examples/pool.yaml" |
  "$kubectl" --kubeconfig "$kubeconfig" apply -n "$pool_namespace" -f -
"$kubectl" --kubeconfig "$kubeconfig" apply -n "$pool_namespace" -f "$KB_ROOT/examples/goals.yaml"
"$kubectl" --kubeconfig "$kubeconfig" get bp,bg -n "$pool_namespace" >&2
log "kind cluster $cluster runs the operator; the pool reports in: kubectl get bp,bg -n $pool_namespace"
echo "$kubeconfig"
