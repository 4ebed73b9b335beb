#!/usr/bin/env bash
# Builds (once, cached by version) the binaries of the Kubernetes test bed from Go modules:
# kube-apiserver and kubectl, etcd, helm. Idempotent: a cached binary is rebuilt only when its
# recipe (module files, package, flags) changed.
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

require_pin() {
  local module="$1" requirement="$2"
  if ! grep -Eq "^(require)?[[:space:]]*$requirement( //.*)?\$" "$KB_ROOT/hack/kube/$module/go.mod"; then
    log "hack/kube/$module/go.mod does not require $requirement (versions.sh): update both together"
    exit 1
  fi
}
require_pin kubernetes "k8s.io/kubernetes $KUBE_VERSION"
require_pin etcd "go.etcd.io/etcd/server/v3 $ETCD_VERSION"
require_pin helm "helm.sh/helm/v3 $HELM_VERSION"

# build MODULE_DIR PACKAGE OUTPUT EXTRA_LDFLAGS: builds into a temporary file first, so an
# interrupted build never leaves a truncated binary that a later run would take for a cached one.
build() {
  local module="$1" package="$2" output="$3" ldflags="-s -w $4"
  local recipe
  recipe="$(cd "$KB_ROOT/hack/kube/$module" && shopt -s nullglob &&
    { echo "$package $ldflags"; cat go.mod go.sum ./*.go; } | sha256sum | cut -d' ' -f1)"
  if [ -x "$output" ] && [ "$(cat "$output.recipe" 2>/dev/null)" = "$recipe" ]; then
    return
  fi
  mkdir -p "$(dirname "$output")"
  log "building $(basename "$output") from $package (a cold build takes minutes)"
  local start=$SECONDS
  (cd "$KB_ROOT/hack/kube/$module" && go build -trimpath -ldflags="$ldflags" -o "$output.tmp" "$package")
  mv "$output.tmp" "$output"
  echo "$recipe" >"$output.recipe"
  log "built $(basename "$output") in $((SECONDS - start))s"
}

# The version stamps of Kubernetes' own release build (hack/lib/version.sh), for client-go and
# component-base alike.
kube_ldflags=""
major_minor="${KUBE_VERSION#v}"
for pair in "gitVersion=$KUBE_VERSION" "gitCommit=$KUBE_GIT_COMMIT" "gitTreeState=clean" \
  "buildDate=$KUBE_BUILD_DATE" "gitMajor=${major_minor%%.*}" "gitMinor=$(echo "$major_minor" | cut -d. -f2)"; do
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    kube_ldflags+=" -X $pkg.$pair"
  done
done
build kubernetes k8s.io/kubernetes/cmd/kube-apiserver "$KUBE_BIN/kube-apiserver" "$kube_ldflags"
build kubernetes k8s.io/kubernetes/cmd/kubectl "$KUBE_BIN/kubectl" "$kube_ldflags"

build etcd . "$ETCD_BIN/etcd" ""

# Helm's Makefile stamps its version and the Kubernetes version it assumes offline (`helm template`,
# `helm lint`): its client-go v0.N.x means Kubernetes 1.N; unstamped, helm assumes 1.20.
helm_client_go="$(cd "$KB_ROOT/hack/kube/helm" && go list -m -f '{{.Version}}' k8s.io/client-go)"
helm_kube_minor="$(echo "${helm_client_go#v}" | cut -d. -f2)"
helm_ldflags="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
helm_ldflags+=" -X helm.sh/helm/v3/internal/version.gitCommit=$HELM_GIT_COMMIT"
helm_ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  helm_ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$helm_kube_minor"
done
build helm helm.sh/helm/v3/cmd/helm "$HELM_BIN/helm" "$helm_ldflags"

printf 'kube-apiserver=%s\nkubectl=%s\netcd=%s\nhelm=%s\n' \
  "$KUBE_BIN/kube-apiserver" "$KUBE_BIN/kubectl" "$ETCD_BIN/etcd" "$HELM_BIN/helm"
