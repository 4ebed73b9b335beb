#!/usr/bin/env bash
# Builds (once, cached by the hash of this script) the base layer of the operator image from Debian's
# packages: a bookworm minbase root filesystem with Python 3.11 and a Java 17 runtime (embedded Spark),
# the content of the Containerfile's python:3.11-slim-bookworm base plus its openjdk-17-jre-headless,
# without a registry. Prints the path of the gzip-compressed layer tar on stdout.
# Pinned as a digest pins the Containerfile's base: hack/image/base.lock holds the sha256 of every .deb
# debootstrap installs (which it checked against the archive's signed index), and a build whose
# packages differ fails. Debian's stable suite changes at its point releases, which also take the old
# packages off the mirror: then review the printed difference and rerun with KB_BASE_RELOCK=1, which
# rewrites base.lock.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
SUITE=bookworm
MIRROR=http://deb.debian.org/debian
PACKAGES=python3,openjdk-17-jre-headless,ca-certificates,libnss-wrapper
lock="$KB_ROOT/hack/image/base.lock"
paths() {
  recipe="$(cat "${BASH_SOURCE[0]}" "$lock" | sha256sum | cut -c1-16)"
  home="$KB_CACHE_DIR/image/base-$recipe"
  layer="$home/base.tar.gz"
}
paths
if [ -f "$layer" ]; then
  echo "$layer"
  exit 0
fi
if ! command -v debootstrap >/dev/null 2>&1; then
  log "installing debootstrap (Debian package): it builds the image's root filesystem"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi
staging="$home.partial"
rootfs="$staging/rootfs"
# A crashed run may have left its /proc mounted in the staging root filesystem.
umount "$rootfs/proc" 2>/dev/null || true
rm -rf "$staging"
mkdir -p "$staging"
log "debootstrap $SUITE ($PACKAGES) into $rootfs (a few minutes)"
start=$SECONDS
if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$rootfs" "$MIRROR" >"$staging/debootstrap.log" 2>&1; then
  tail -20 "$staging/debootstrap.log" >&2
  log "debootstrap failed; its log is $staging/debootstrap.log"
  exit 1
fi
(cd "$rootfs/var/cache/apt/archives" && sha256sum -- *.deb) >"$staging/base.lock"
if [ "${KB_BASE_RELOCK:-}" = 1 ]; then
  cp "$staging/base.lock" "$lock"
  log "wrote $lock: commit it"
  # Filed under the new lock's recipe, where the next build looks.
  paths
elif ! diff -u "$lock" "$staging/base.lock" >&2; then
  log "Debian's packages differ from $lock (above); after review, rerun with KB_BASE_RELOCK=1"
  exit 1
fi
# What a container never uses: documentation, locales, package lists and caches, logs.
rm -rf "$rootfs"/usr/share/{doc,man,info,locale,lintian} "$rootfs"/var/lib/apt/lists/* \
  "$rootfs"/var/cache/apt/* "$rootfs"/var/cache/debconf/*-old "$rootfs"/var/log/* "$rootfs"/debootstrap
# JAVA_HOME names no architecture: /usr/lib/jvm/java-17 is the Java 17 of whatever one this is.
jvm="$(cd "$rootfs/usr/lib/jvm" && echo java-17-openjdk-*)"
[ -d "$rootfs/usr/lib/jvm/$jvm" ] || { log "no single Java 17 in $rootfs/usr/lib/jvm: $jvm"; exit 1; }
ln -s "$jvm" "$rootfs/usr/lib/jvm/java-17"
# A container's resolver and hostname come from the runtime.
: >"$rootfs/etc/resolv.conf"
: >"$rootfs/etc/hostname"
# The standard library's bytecode checked by hash, not by its sources' mtimes, which the layer sets
# to 0: else every Python of the image compiles what it imports of it (as build.sh's layers). By
# the image's own Python, inside it: a module may be a link to an absolute path (sitecustomize).
chroot "$rootfs" /usr/bin/python3.11 -m compileall -q -f --invalidation-mode unchecked-hash \
  /usr/lib/python3.11 /usr/lib/python3 >&2
tar --sort=name --mtime=@0 --numeric-owner --xattrs -C "$rootfs" -cf - . | gzip -6 -n >"$staging/base.tar.gz"
mkdir -p "$home"
mv "$staging/base.tar.gz" "$layer"
rm -rf "$staging"
log "built the base layer in $((SECONDS - start))s: $(du -h "$layer" | cut -f1) compressed"
echo "$layer"
