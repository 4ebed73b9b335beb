#!/usr/bin/env bash
# Generates the CRDs of Strimzi's Kafka, KafkaNodePool and KafkaUser from Strimzi's published API model
# (hack/strimzi/pom.xml: io.strimzi:api and io.strimzi:crd-generator from Maven Central), with the
# generator arguments Strimzi's own build passes (api/pom.xml, execution generate-crd-co-install-v1).
# Idempotent and cached: prints the CRD directory on stdout; everything else goes to stderr.
# A second run finds the stamp and touches no network.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
pom="$KB_ROOT/hack/strimzi/pom.xml"
version="$(sed -n 's:.*<strimzi.version>\(.*\)</strimzi.version>.*:\1:p' "$pom")"
home="$KB_CACHE_DIR/strimzi-$version"
crds="$home/crds"
stamp="$home/.provisioned"
# The generator arguments live here, not in the POM, so a change to either regenerates.
recipe="$(cat "$pom" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
# Strimzi 1.x's classes are compiled for Java 21, newer than the PATH's java may be (the Kafka bed's runs
# on 17): take the PATH's if it is recent enough, else the first JDK under /usr/lib/jvm that is.
java_21() {
  local candidate major
  for candidate in "$(command -v java || true)" /usr/lib/jvm/*/bin/java; do
    [ -x "$candidate" ] || continue
    major="$("$candidate" -version 2>&1 | sed -n '1s/.*version "\([0-9]*\).*/\1/p')"
    if [ "${major:-0}" -ge 21 ]; then
      printf '%s\n' "$candidate"
      return 0
    fi
  done
  log "CrdGenerator needs Java 21 or newer: none on PATH or under /usr/lib/jvm"
  return 1
}
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$recipe" ]; then
  log "generating Strimzi $version's CRDs from io.strimzi:api (Maven Central) into $crds"
  staging="$home/crds.partial"
  rm -rf "$staging"
  mkdir -p "$staging"
  if ! mvn -q -B --strict-checksums -f "$pom" \
    -Dmaven.repo.local="$KB_CACHE_DIR/maven-repo" \
    dependency:build-classpath -DincludeScope=runtime -Dmdep.outputFile="$home/classpath" >"$home/mvn.log" 2>&1; then
    cat "$home/mvn.log" >&2
    log "resolving io.strimzi:api and io.strimzi:crd-generator failed (see above)"
    exit 1
  fi
  java="$(java_21)" || exit 1
  model=io.strimzi.api.kafka.model
  if ! "$java" -classpath "$(cat "$home/classpath")" io.strimzi.crdgenerator.CrdGenerator \
    --label app:strimzi --label strimzi.io/crd-install:true \
    --target-kube 1.16+ --crd-api-version v1 --api-versions v1 --storage-version v1 \
    --yaml \
    "$model.kafka.Kafka=$staging/040-Crd-kafka.yaml" \
    "$model.user.KafkaUser=$staging/044-Crd-kafkauser.yaml" \
    "$model.nodepool.KafkaNodePool=$staging/045-Crd-kafkanodepool.yaml" >"$home/generator.log" 2>&1; then
    cat "$home/generator.log" >&2
    log "CrdGenerator failed (see above)"
    exit 1
  fi
  # Swap in whole so a failed run never leaves a half-filled CRD directory behind.
  rm -rf "$crds"
  mv "$staging" "$crds"
  printf '%s\n' "$recipe" >"$stamp"
fi
printf '%s\n' "$crds"
