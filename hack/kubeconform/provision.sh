#!/usr/bin/env bash
# Builds kubeconform, which validates manifests against JSON schemas offline, at the version pinned in
# hack/kubeconform/go.mod. Its usual schemas are downloaded from GitHub; the tests generate them from
# the bed's apiserver instead (tests/support/kubeconform.py). Idempotent: cached by recipe under
# $KB_CACHE_DIR. Prints the path of the binary on stdout; progress and the build's timing go to stderr.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$KB_ROOT/hack/kube/versions.sh"
source "$KB_ROOT/hack/kube/gobuild.sh"
# The newest release the Go module proxy serves.
KUBECONFORM_VERSION=v0.7.0
require_pin kubeconform/ "github.com/yannh/kubeconform $KUBECONFORM_VERSION"
out="$KB_CACHE_DIR/kubeconform-$KUBECONFORM_VERSION/bin/kubeconform"
# Its release build stamps the version the same way (`kubeconform -v`).
build kubeconform/ github.com/yannh/kubeconform/cmd/kubeconform "$out" "-X main.version=$KUBECONFORM_VERSION"
printf '%s\n' "$out"
