#!/usr/bin/env bash
# Builds (once, cached by version) the binaries of the Kubernetes test bed from Go modules:
# kube-apiserver and kubectl, etcd, helm. Idempotent: a cached binary is rebuilt only when its
# recipe (module files, package, flags) changed.
# Prints one NAME=PATH line per binary on stdout; progress and build timings go to stderr.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$KB_ROOT/hack/kube/versions.sh"
source "$KB_ROOT/hack/kube/gobuild.sh"

ETCD_BIN="$KB_CACHE_DIR/etcd-$ETCD_VERSION/bin"
HELM_BIN="$KB_CACHE_DIR/helm-$HELM_VERSION/bin"

require_pin kubernetes "k8s.io/kubernetes $KUBE_VERSION"
require_pin etcd "go.etcd.io/etcd/server/v3 $ETCD_VERSION"
require_pin helm "helm.sh/helm/v3 $HELM_VERSION"

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
