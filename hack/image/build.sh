#!/usr/bin/env bash
# Builds the operator image here, without Docker or a registry, with the Containerfile's content: the
# base layer of hack/image/base.sh (Debian's Python 3.11 and Java 17), the package's dependencies and
# the package itself installed from their wheels into /opt/kafka-balancer, non-root, entrypoint
# hack/image/entrypoint.sh (`kafka-balancer`, or Spark's `driver`/`executor` for the scoring pods).
# The dependencies come from the hash lock requirements/image.txt (hack/lock.sh), built by the venv's
# locked setuptools (hack/setup.sh installs it), as the Containerfile does.
# Writes an OCI archive (`ctr images import`, `docker load`, `podman load`) named as the chart's
# default image.repository:appVersion, cached by the hash of its inputs (the layers are cached apart:
# the dependencies change less often than the package).
# Prints `image=NAME` and `archive=PATH` on stdout; progress goes to stderr.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
chart="$KB_ROOT/charts/kafka-balancer"
repository="$(sed -n 's/^  repository: *//p' "$chart/values.yaml" | head -1)"
tag="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$chart/Chart.yaml")"
image="$repository:$tag"
# The OCI labels, from the chart: the same words as Chart.yaml's description, sources and licence.
description="$(sed -n 's/^description: *//p' "$chart/Chart.yaml")"
source="$(sed -n '/^sources:/{n;s/^  - *//p}' "$chart/Chart.yaml")"
licenses="$(sed -n 's/^  artifacthub.io\/license: *//p' "$chart/Chart.yaml")"

base_layer="$("$KB_ROOT/hack/image/base.sh")"
s3a_jars="$("$KB_ROOT/hack/s3a/provision.sh")"
# Inputs of each layer: the dependency layer depends on the lock (and the base it was installed
# for), the image on that, the package's files, this script and the packer.
hash_files() { (cd "$KB_ROOT" && sha256sum "$@" | sha256sum | cut -c1-16); }
lock=requirements/image.txt
# "bytecode": the layers' bytecode is compiled as hash_bytecode below does (an older layer's is not).
deps_key="$(echo "$base_layer $(hash_files "$lock") bytecode=unchecked-hash" | sha256sum | cut -c1-16)"
mapfile -t package_files < <(cd "$KB_ROOT" && find operator -type f -not -path '*/__pycache__/*' | sort)
packer=devtools/kafka_balancer_dev/localbed/oci_image.py
s3a_key="$(cat "$s3a_jars"/*.jar | sha256sum | cut -c1-16)"
package_key="$(echo "$deps_key $s3a_key $(hash_files pyproject.toml README.md LICENSE "${chart#"$KB_ROOT"/}/Chart.yaml" hack/image/build.sh hack/image/entrypoint.sh "$packer" "${package_files[@]}")" |
  sha256sum | cut -c1-16)"
home="$KB_CACHE_DIR/image"
archive="$home/operator-$package_key.oci.tar"
if [ ! -f "$archive" ]; then
  start=$SECONDS
  work="$home/build-$package_key.partial"
  # An interrupted build's leftovers (one build at a time per cache directory).
  rm -rf "$home"/build-*.partial
  mkdir -p "$work"
  log "building the kafka-balancer wheel"
  # From a copy of what the wheel is made of: pip builds in the source tree, and a build/ directory
  # left in the checkout would leak stale modules into later wheels.
  mkdir -p "$work/src"
  cp -r "$KB_ROOT/pyproject.toml" "$KB_ROOT/README.md" "$KB_ROOT/LICENSE" "$KB_ROOT/operator" "$work/src/"
  find "$work/src" -name __pycache__ -prune -exec rm -rf {} +
  "$KB_VENV/bin/pip" wheel --quiet --no-deps --no-build-isolation --wheel-dir "$work/wheels" "$work/src" >&2
  wheel="$(ls "$work"/wheels/kafka_balancer-*.whl)"
  # The image's Python is Debian's /usr/bin/python3 (3.11, the same bytecode as the venv's 3.11).
  fix_scripts() {
    find "$1/opt/kafka-balancer/bin" -maxdepth 1 -type f -exec sed -i '1s|^#!.*python.*$|#!/usr/bin/python3|' {} +
  }
  # Bytecode valid whatever the sources' mtimes, which the layers set to 0: the bytecode pip wrote
  # records the install's times, so every Python of the image compiled what it imported, every time
  # (its root filesystem is read-only): seconds of CPU at each start of the scoring job.
  hash_bytecode() {
    "$KB_VENV/bin/python" -m compileall -q -f -j 0 --invalidation-mode unchecked-hash -s "$1" -p / \
      "$1/opt/kafka-balancer" >&2
  }
  deps_layer="$home/deps-$deps_key.tar.gz"
  if [ ! -f "$deps_layer" ]; then
    log "installing $lock into the dependency layer"
    # pyspark is an sdist: built without isolation by the venv's locked setuptools.
    "$KB_VENV/bin/pip" install --quiet --require-hashes --no-build-isolation \
      --target "$work/deps/opt/kafka-balancer" -r "$KB_ROOT/$lock" >&2
    fix_scripts "$work/deps"
    hash_bytecode "$work/deps"
    tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work/deps" -cf - . |
      gzip -6 -n >"$deps_layer.partial"
    mv "$deps_layer.partial" "$deps_layer"
  fi
  mkdir -p "$work/s3a/opt/kafka-balancer/pyspark/jars"
  cp "$s3a_jars"/*.jar "$work/s3a/opt/kafka-balancer/pyspark/jars/"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work/s3a" -cf "$work/s3a.tar" .
  "$KB_VENV/bin/pip" install --quiet --no-deps --target "$work/package/opt/kafka-balancer" "$wheel" >&2
  fix_scripts "$work/package"
  hash_bytecode "$work/package"
  # Spark's driver and executor pods start this image too: the entrypoint dispatches their commands.
  install -m 0755 "$KB_ROOT/hack/image/entrypoint.sh" "$work/package/opt/kafka-balancer/bin/kafka-balancer-entrypoint"
  # The image's user gets a name: Hadoop's login (in Spark's driver and executors, and the embedded
  # job) refuses a uid without one.
  mkdir -p "$work/package/etc"
  for db in passwd group; do
    tar -xzOf "$base_layer" "./etc/$db" >"$work/package/etc/$db"
  done
  echo "kafka-balancer:x:65532:65532::/tmp:/usr/sbin/nologin" >>"$work/package/etc/passwd"
  echo "kafka-balancer:x:65532:" >>"$work/package/etc/group"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work/package" -cf "$work/package.tar" .
  log "packing $image"
  "$KB_VENV/bin/python" -m kafka_balancer_dev.localbed.oci_image --name "$image" \
    --layer "$base_layer" --layer "$deps_layer" --layer "$work/s3a.tar" --layer "$work/package.tar" \
    --entrypoint /opt/kafka-balancer/bin/kafka-balancer-entrypoint --cmd=--help --user 65532:65532 \
    --env PATH=/opt/kafka-balancer/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env PYTHONPATH=/opt/kafka-balancer --env PYTHONDONTWRITEBYTECODE=1 \
    --env JAVA_HOME=/usr/lib/jvm/java-17 --env HOME=/tmp \
    --label org.opencontainers.image.title=kafka-balancer \
    --label "org.opencontainers.image.description=$description" \
    --label "org.opencontainers.image.source=$source" \
    --label "org.opencontainers.image.licenses=$licenses" \
    --label "org.opencontainers.image.version=$tag" \
    --output "$work/image.oci.tar"
  mv "$work/image.oci.tar" "$archive"
  rm -rf "$work"
  # Each is most of a GiB: keep the newest image and the dependency layer it uses.
  find "$home" -maxdepth 1 \( -name 'operator-*.oci.tar' -o -name 'deps-*.tar.gz' \) \
    ! -name "$(basename "$archive")" ! -name "$(basename "$deps_layer")" -delete
  log "built $image in $((SECONDS - start))s: $(du -h "$archive" | cut -f1) compressed"
fi
printf 'image=%s\narchive=%s\n' "$image" "$archive"
