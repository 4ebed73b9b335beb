#!/usr/bin/env bash
# For machines WITH a Docker engine: creates a kind cluster (a real kubelet, real Pods) and installs
# the project's CRDs. The tests never use it: they run on machines without Docker, against the
# Docker-free API bed of hack/kube/up.sh (etcd + kube-apiserver).
# Environment: KB_KIND_CLUSTER (cluster name, default kafka-balancer).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$KB_ROOT/hack/kube/versions.sh"

if ! command -v docker >/dev/null 2>&1; then
  log "docker not found: kind runs Kubernetes nodes as Docker containers and cannot work here."
  log "Without Docker, use hack/kube/up.sh (a real kube-apiserver + etcd, no kubelet)."
  exit 1
fi
if ! docker info >/dev/null 2>&1; then
  log "docker is installed but its engine does not answer (is the daemon running, may you use it?)."
  exit 1
fi

cluster="${KB_KIND_CLUSTER:-kafka-balancer}"
kind_bin="$KB_CACHE_DIR/kind-$KIND_VERSION/bin"
if [ ! -x "$kind_bin/kind" ]; then
  log "installing kind $KIND_VERSION"
  GOBIN="$kind_bin" GOMODCACHE="$KB_CACHE_DIR/go/mod" GOCACHE="$KB_CACHE_DIR/go/build" GOTOOLCHAIN=local \
    go install "sigs.k8s.io/kind@$KIND_VERSION"
fi
kind="$kind_bin/kind"
kubectl="$("$KB_ROOT/hack/kube/provision.sh" | sed -n 's/^kubectl=//p')"

# The node image is the one this kind release pins, so the cluster version is pinned too.
if ! "$kind" get clusters | grep -qx "$cluster"; then
  "$kind" create cluster --name "$cluster" --wait 180s
fi
kubeconfig="$KB_ROOT/run/kind/kubeconfig"
mkdir -p "$(dirname "$kubeconfig")"
"$kind" export kubeconfig --name "$cluster" --kubeconfig "$kubeconfig"

shopt -s nullglob
crds=("$KB_ROOT"/crds/*.yaml "$KB_ROOT"/charts/kafka-balancer/crds/*.yaml)
if [ "${#crds[@]}" -eq 0 ]; then
  log "no CRD manifests in crds/ yet; the cluster is up without them"
else
  for crd in "${crds[@]}"; do
    "$kubectl" --kubeconfig "$kubeconfig" apply --server-side -f "$crd"
  done
  "$kubectl" --kubeconfig "$kubeconfig" wait --for=condition=Established --timeout=60s crd --all
fi
log "kind cluster $cluster is ready"
echo "$kubeconfig"
