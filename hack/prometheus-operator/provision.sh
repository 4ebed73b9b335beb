#!/usr/bin/env bash
# Builds Prometheus Operator (the controller kube-prometheus-stack runs) and a Prometheus server at the
# versions pinned in hack/prometheus-operator/go.mod and hack/prometheus-operator/prometheus/go.mod,
# and copies the operator's CRDs (ServiceMonitor, PodMonitor, Prometheus, ...) from its module's
# source. The node tier runs both against the bed's apiserver: the operator turns the chart's
# ServiceMonitor and PodMonitor into a scrape configuration, and this Prometheus discovers and scrapes
# the operator pod with it (Debian's Prometheus, hack/prometheus/, is built without Kubernetes
# discovery). Idempotent: cached by recipe under $KB_CACHE_DIR. Prints the directory holding
# bin/operator, bin/prometheus and crds/ on stdout; progress and the builds' timing go to stderr.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$KB_ROOT/hack/kube/versions.sh"
source "$KB_ROOT/hack/kube/gobuild.sh"
# The releases the Go module proxy serves here; their go.mod ask for no newer Go than the machine's.
PROMETHEUS_OPERATOR_VERSION=v0.85.0
# Prometheus 3.16.0: its Go module numbers v3.X.Y as v0.3XX.Y.
PROMETHEUS_MODULE_VERSION=v0.316.0
PROMETHEUS_VERSION=3.16.0
home="$KB_CACHE_DIR/prometheus-operator-$PROMETHEUS_OPERATOR_VERSION-prometheus-$PROMETHEUS_VERSION"
require_pin prometheus-operator/ "github.com/prometheus-operator/prometheus-operator $PROMETHEUS_OPERATOR_VERSION"
require_pin prometheus-operator/prometheus "github.com/prometheus/prometheus $PROMETHEUS_MODULE_VERSION"
# Their release builds stamp the version the same way (`operator --version`, `prometheus --version`).
build prometheus-operator/ github.com/prometheus-operator/prometheus-operator/cmd/operator "$home/bin/operator" \
  "-X github.com/prometheus/common/version.Version=${PROMETHEUS_OPERATOR_VERSION#v}"
build prometheus-operator/prometheus github.com/prometheus/prometheus/cmd/prometheus "$home/bin/prometheus" \
  "-X github.com/prometheus/common/version.Version=$PROMETHEUS_VERSION"
if [ ! -f "$home/crds/.copied" ]; then
  source_dir="$(cd "$KB_ROOT/hack/prometheus-operator" &&
    go mod download -json "github.com/prometheus-operator/prometheus-operator" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  rm -rf "$home/crds.partial"
  mkdir -p "$home/crds.partial"
  cp "$source_dir"/example/prometheus-operator-crd/*.yaml "$home/crds.partial/"
  chmod 0644 "$home"/crds.partial/*.yaml
  touch "$home/crds.partial/.copied"
  rm -rf "$home/crds"
  mv "$home/crds.partial" "$home/crds"
fi
printf '%s\n' "$home"
