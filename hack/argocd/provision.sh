#!/usr/bin/env bash
# Builds health-lua (hack/argocd/main.go): Argo CD's Lua VM, gopher-lua at the version pinned in
# hack/argocd/go.mod, running a resource health script as Argo CD's controller runs a custom health
# check, so the checks in integrations/argocd/ are tested by the interpreter Argo CD uses. Idempotent:
# cached by recipe. Prints the path of the binary on stdout; progress goes to stderr.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$KB_ROOT/hack/kube/versions.sh"
source "$KB_ROOT/hack/kube/gobuild.sh"
GOPHER_LUA_VERSION=v1.1.2
require_pin argocd/ "github.com/yuin/gopher-lua $GOPHER_LUA_VERSION"
out="$KB_CACHE_DIR/health-lua-$GOPHER_LUA_VERSION/bin/health-lua"
build argocd/ . "$out" ""
printf '%s\n' "$out"
