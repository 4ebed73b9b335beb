#!/usr/bin/env bash
# Builds the node tier's Kafka image here, the way hack/image/build.sh builds the operator's: the same
# base layer (hack/image/base.sh: Debian with Java 17), the same packer, no Docker, no registry. On
# top: the Kafka jars of the local bed (hack/kafka/provision.sh) in /opt/kafka/libs, a log4j2
# configuration that logs to stdout and the entrypoint hack/image/kafka-entrypoint.sh, non-root.
# Writes an OCI archive cached by the hash of its inputs; prints `image=NAME` and `archive=PATH` on
# stdout, progress on stderr.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
base_layer="$("$KB_ROOT/hack/image/base.sh")"
libs="$("$KB_ROOT/hack/kafka/provision.sh")"
version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$KB_ROOT/hack/kafka/pom.xml")"
packer=devtools/kafka_balancer_dev/localbed/oci_image.py
key="$({
  echo "$base_layer"
  (cd "$libs" && sha256sum -- *.jar)
  (cd "$KB_ROOT" && sha256sum hack/image/build-kafka.sh hack/image/kafka-entrypoint.sh hack/image/kafka-log4j2.xml hack/image/kafka-tools-log4j2.xml "$packer")
} | sha256sum | cut -c1-16)"
# The tag carries the key: a changed image is never mistaken for the one containerd already holds.
image="kafka-balancer.invalid/kafka:$version-$key"
home="$KB_CACHE_DIR/image"
archive="$home/kafka-$key.oci.tar"
if [ ! -f "$archive" ]; then
  start=$SECONDS
  work="$home/kafka-build-$key.partial"
  rm -rf "$home"/kafka-build-*.partial
  mkdir -p "$work/layer/opt/kafka/libs" "$work/layer/opt/kafka/bin" "$work/layer/opt/kafka/config" "$work/layer/etc"
  cp "$libs"/*.jar "$work/layer/opt/kafka/libs/"
  install -m 0755 "$KB_ROOT/hack/image/kafka-entrypoint.sh" "$work/layer/opt/kafka/bin/kafka-entrypoint"
  install -m 0644 "$KB_ROOT/hack/image/kafka-log4j2.xml" "$work/layer/opt/kafka/config/log4j2.xml"
  install -m 0644 "$KB_ROOT/hack/image/kafka-tools-log4j2.xml" "$work/layer/opt/kafka/config/tools-log4j2.xml"
  # Kafka's tools (kubectl exec … kafka-run CLASS ARGS) start the same JVM with another main class.
  printf '#!/bin/bash\nexec "$JAVA_HOME/bin/java" $KAFKA_JVM_OPTS -Dlog4j2.configurationFile=/opt/kafka/config/tools-log4j2.xml -cp "/opt/kafka/libs/*" "$@"\n' \
    >"$work/layer/opt/kafka/bin/kafka-run"
  chmod 0755 "$work/layer/opt/kafka/bin/kafka-run"
  for db in passwd group; do
    tar -xzOf "$base_layer" "./etc/$db" >"$work/layer/etc/$db"
  done
  echo "kafka:x:65532:65532::/tmp:/usr/sbin/nologin" >>"$work/layer/etc/passwd"
  echo "kafka:x:65532:" >>"$work/layer/etc/group"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work/layer" -cf "$work/kafka.tar" .
  log "packing $image"
  "$KB_VENV/bin/python" -m kafka_balancer_dev.localbed.oci_image --name "$image" \
    --layer "$base_layer" --layer "$work/kafka.tar" \
    --entrypoint /opt/kafka/bin/kafka-entrypoint --user 65532:65532 \
    --env PATH=/opt/kafka/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env JAVA_HOME=/usr/lib/jvm/java-17 --env HOME=/tmp \
    --output "$work/image.oci.tar"
  mv "$work/image.oci.tar" "$archive"
  rm -rf "$work"
  # Keep the newest Kafka image only.
  find "$home" -maxdepth 1 -name 'kafka-*.oci.tar' ! -name "$(basename "$archive")" -delete
  log "built $image in $((SECONDS - start))s: $(du -h "$archive" | cut -f1) compressed"
fi
printf 'image=%s\narchive=%s\n' "$image" "$archive"
