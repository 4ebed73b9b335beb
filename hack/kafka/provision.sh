#!/usr/bin/env bash
# Resolves the Kafka jars of the local test bed from Maven Central (idempotent, cached).
# Prints the libs directory on stdout; everything else goes to stderr.
# A second run finds the stamp and touches no network.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
pom="$KB_ROOT/hack/kafka/pom.xml"
version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")"
home="$KB_CACHE_DIR/kafka-$version"
libs="$home/libs"
stamp="$home/.provisioned"
pom_sum="$(sha256sum "$pom" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$pom_sum" ]; then
  log "resolving Apache Kafka $version jars from Maven Central into $libs"
  staging="$home/libs.partial"
  rm -rf "$staging"
  mkdir -p "$staging"
  if ! mvn -q -B -f "$pom" \
    -Dmaven.repo.local="$KB_CACHE_DIR/maven-repo" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$staging" >"$home/mvn.log" 2>&1; then
    cat "$home/mvn.log" >&2
    log "resolving the Kafka jars failed (see above)"
    exit 1
  fi
  # Swap in whole so a broken download never leaves a half-filled libs directory behind.
  rm -rf "$libs"
  mv "$staging" "$libs"
  printf '%s\n' "$pom_sum" >"$stamp"
fi
printf '%s\n' "$libs"
