#!/usr/bin/env bash
# Builds chart-testing's `ct` (the linter Helm's own chart repositories run) at the version pinned in
# hack/chart-testing/go.mod, with the two files `ct lint` reads from its release archive and not from
# the binary: etc/chart_schema.yaml (the Chart.yaml schema yamale checks) and etc/lintconf.yaml (the
# yamllint rules), both copied from the same module's source. ct shells out to helm, yamllint and
# yamale; the caller puts them on PATH. Idempotent: cached by recipe under $KB_CACHE_DIR. Prints the
# directory holding bin/ct and etc/ on stdout; progress and the build's timing go to stderr.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$KB_ROOT/hack/kube/versions.sh"
source "$KB_ROOT/hack/kube/gobuild.sh"
# The newest release the Go module proxy serves; its go.mod asks for Go 1.24, so the machine's Go
# builds it without another toolchain.
CHART_TESTING_VERSION=v3.14.0
CHART_TESTING_GIT_COMMIT=2651b49048950c5473b1f533c900d17614bc6aa0
home="$KB_CACHE_DIR/chart-testing-$CHART_TESTING_VERSION"
require_pin chart-testing/ "github.com/helm/chart-testing/v3 $CHART_TESTING_VERSION"
# ct's release build (Goreleaser) stamps the same (`ct version`).
build chart-testing/ github.com/helm/chart-testing/v3/ct "$home/bin/ct" \
  "-X github.com/helm/chart-testing/v3/ct/cmd.Version=$CHART_TESTING_VERSION -X github.com/helm/chart-testing/v3/ct/cmd.GitCommit=$CHART_TESTING_GIT_COMMIT"
if [ ! -f "$home/etc/chart_schema.yaml" ] || [ ! -f "$home/etc/lintconf.yaml" ]; then
  source_dir="$(cd "$KB_ROOT/hack/chart-testing" &&
    go mod download -json "github.com/helm/chart-testing/v3" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  rm -rf "$home/etc.partial"
  mkdir -p "$home/etc.partial"
  cp "$source_dir/etc/chart_schema.yaml" "$source_dir/etc/lintconf.yaml" "$home/etc.partial/"
  rm -rf "$home/etc"
  mv "$home/etc.partial" "$home/etc"
fi
printf '%s\n' "$home"
