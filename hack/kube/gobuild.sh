# Building pinned Go binaries from the wrapper modules under hack/kube/ (and hack/minio/), cached by
# recipe. Source it (after lib.sh and versions.sh); do not run it. Used by hack/kube/provision.sh (the
# API bed), hack/node/provision.sh (the node's components) and hack/minio/provision.sh (the S3 server).

# Module and build caches live with the other heavy caches, so a second run is instant.
export GOMODCACHE="$KB_CACHE_DIR/go/mod" GOCACHE="$KB_CACHE_DIR/go/build"
# Build with the installed toolchain; never download another one.
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0

KUBE_BIN="$KB_CACHE_DIR/kube-$KUBE_VERSION/bin"

# module_dir MODULE_DIR: a wrapper module named alone lives under hack/kube/; one named with a
# slash is a path from hack/ (hack/minio/ builds a tool of its own, not part of the Kubernetes bed).
module_dir() {
  case "$1" in
    */*) printf '%s\n' "$KB_ROOT/hack/$1" ;;
    *) printf '%s\n' "$KB_ROOT/hack/kube/$1" ;;
  esac
}

# require_pin MODULE_DIR "MODULE VERSION": refuses a wrapper module that drifted from its pinned version.
require_pin() {
  local module="$1" requirement="$2" dir
  dir="$(module_dir "$module")"
  if ! grep -Eq "^(require)?[[:space:]]*$requirement( //.*)?\$" "$dir/go.mod"; then
    log "${dir#"$KB_ROOT/"}/go.mod does not require $requirement: update it and the pin together"
    exit 1
  fi
}

# build MODULE_DIR PACKAGE OUTPUT EXTRA_LDFLAGS: builds into a temporary file first, so an
# interrupted build never leaves a truncated binary that a later run would take for a cached one.
build() {
  local module="$1" package="$2" output="$3" ldflags="-s -w $4"
  local recipe dir
  dir="$(module_dir "$module")"
  recipe="$(cd "$dir" && shopt -s nullglob &&
    { echo "$package $ldflags"; cat go.mod go.sum ./*.go; } | sha256sum | cut -d' ' -f1)"
  if [ -x "$output" ] && [ "$(cat "$output.recipe" 2>/dev/null)" = "$recipe" ]; then
    return
  fi
  mkdir -p "$(dirname "$output")"
  log "building $(basename "$output") from $package (a cold build takes minutes)"
  local start=$SECONDS
  (cd "$dir" && go build -trimpath -ldflags="$ldflags" -o "$output.tmp" "$package")
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
