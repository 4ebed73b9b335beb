#!/usr/bin/env bash
# Builds (once, cached by version) the binaries of the Kubernetes test bed from Go modules:
# kube-apiserver and kubectl, etcd, helm. Idempotent: a cached binary is never rebuilt.
# Prints one NAME=PATH line per binary on stdout; progress and build timings go to stderr.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$KB_ROOT/hack/kube/versions.sh"

# Module and build caches live with the other heavy caches, so a second run is instant.
export GOMODCACHE="$KB_CACHE_DIR/go/mod" GOCACHE="$KB_CACHE_DIR/go/build"
# Build with the installed toolchain; never download another one.
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0

KUBE_BIN="$KB_CACHE_DIR/kube-$KUBE_VERSION/bin"
ETCD_BIN="$KB_CACHE_DIR/etcd-$ETCD_VERSION/bin"
HELM_BIN="$KB_CACHE_DIR/helm-$HELM_VERSION/bin"

# build MODULE_DIR PACKAGE OUTPUT: builds into a temporary file first, so an interrupted
# build never leaves a truncated binary that a later run would take for a cached one.
build() {
  local module="$1" package="$2" output="$3"
  if [ -x "$output" ]; then
    return
  fi
  mkdir -p "$(dirname "$output")"
  log "building $(basename "$output") from $package (cold builds take minutes)"
  local start=$SECONDS
  (cd "$KB_ROOT/hack/kube/$module" && go build -trimpath -ldflags='-s -w' -o "$output.tmp" "$package")
  mv "$output.tmp" "$output"
  log "built $(basename "$output") in $((SECONDS - start))s"
}

build kubernetes k8s.io/kubernetes/cmd/kube-apiserver "$KUBE_BIN/kube-apiserver"
build kubernetes k8s.io/kubernetes/cmd/kubectl "$KUBE_BIN/kubectl"
build etcd . "$ETCD_BIN/etcd"
build helm helm.sh/helm/v3/cmd/helm "$HELM_BIN/helm"

printf 'kube-apiserver=%s\nkubectl=%s\netcd=%s\nhelm=%s\n' \
  "$KUBE_BIN/kube-apiserver" "$KUBE_BIN/kubectl" "$ETCD_BIN/etcd" "$HELM_BIN/helm"
