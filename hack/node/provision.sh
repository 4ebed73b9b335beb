#!/usr/bin/env bash
# Provides what the single-node Kubernetes bed runs (idempotent, cached):
# - from Debian's packages, installed when missing: containerd and runc (the container runtime),
#   containernetworking-plugins (the pod network: bridge, host-local, loopback, portmap),
#   iptables and conntrack (kube-proxy's Service rules);
# - built from the pinned hack/kube/kubernetes module (the kube-apiserver's, same version): kubelet,
#   kube-scheduler, kube-controller-manager and kube-proxy; from hack/kube/coredns: CoreDNS;
# - the sandbox ("pause") image: Kubernetes' own build/pause/linux/pause.c from the same module,
#   linked statically and packed as an OCI archive, so no registry is ever contacted.
# Prints one NAME=PATH line per artefact on stdout; progress and build timings go to stderr.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$KB_ROOT/hack/kube/versions.sh"
source "$KB_ROOT/hack/kube/gobuild.sh"

DEBIAN_PACKAGES=(containerd runc containernetworking-plugins iptables conntrack)
missing=()
for package in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]} (Debian packages)"
  apt-get update -qq >/dev/null
  # Debian's policy-rc.d (or the absence of an init system) keeps containerd's service from starting:
  # the bed starts its own containerd with its own configuration.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

require_pin kubernetes "k8s.io/kubernetes $KUBE_VERSION"
require_pin coredns "github.com/coredns/coredns $COREDNS_VERSION"

for component in kubelet kube-scheduler kube-controller-manager kube-proxy; do
  build kubernetes "k8s.io/kubernetes/cmd/$component" "$KUBE_BIN/$component" "$kube_ldflags"
done
COREDNS_BIN="$KB_CACHE_DIR/coredns-$COREDNS_VERSION/bin"
build coredns . "$COREDNS_BIN/coredns" ""

# The pause binary and its image, cached by the hash of pause.c, the compiler and the packer.
kube_src="$(cd "$KB_ROOT/hack/kube/kubernetes" && go mod download -json k8s.io/kubernetes | sed -n 's/.*"Dir": "\(.*\)",/\1/p')"
pause_src="$kube_src/build/pause/linux/pause.c"
pause_dir="$KB_CACHE_DIR/pause-$KUBE_VERSION"
pause_image="$pause_dir/pause.oci.tar"
pause_recipe="$({ cat "$pause_src" "$KB_ROOT/devtools/kafka_balancer_dev/localbed/oci_image.py"; gcc --version; } |
  sha256sum | cut -d' ' -f1)"
if [ ! -f "$pause_image" ] || [ "$(cat "$pause_image.recipe" 2>/dev/null)" != "$pause_recipe" ]; then
  log "building the pause image from $pause_src"
  rm -rf "$pause_dir.partial"
  mkdir -p "$pause_dir.partial/rootfs"
  # The version string is what Kubernetes' build/pause/Makefile passes.
  gcc -Os -Wall -Werror -static -DVERSION="$KUBE_VERSION" -o "$pause_dir.partial/rootfs/pause" "$pause_src"
  strip "$pause_dir.partial/rootfs/pause"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$pause_dir.partial/rootfs" \
    -cf "$pause_dir.partial/layer.tar" .
  "$KB_VENV/bin/python" -m kafka_balancer_dev.localbed.oci_image --name "kafka-balancer.local/pause:$KUBE_VERSION" \
    --layer "$pause_dir.partial/layer.tar" --entrypoint /pause --user 65535:65535 \
    --output "$pause_dir.partial/pause.oci.tar"
  mkdir -p "$pause_dir"
  mv "$pause_dir.partial/pause.oci.tar" "$pause_image"
  echo "$pause_recipe" >"$pause_image.recipe"
  rm -rf "$pause_dir.partial"
fi

printf 'kubelet=%s\nkube-scheduler=%s\nkube-controller-manager=%s\nkube-proxy=%s\ncoredns=%s\npause-image=%s\n' \
  "$KUBE_BIN/kubelet" "$KUBE_BIN/kube-scheduler" "$KUBE_BIN/kube-controller-manager" "$KUBE_BIN/kube-proxy" \
  "$COREDNS_BIN/coredns" "$pause_image"
