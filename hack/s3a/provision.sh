#!/usr/bin/env bash
# Resolves the jars Spark's s3a:// needs (hack/s3a/pom.xml: hadoop-aws and the AWS SDK v2 bundle its
# POM declares) from Maven Central, with checksums enforced, and trims the SDK bundle to the services
# S3A calls (trim_bundle.py). Idempotent and cached: prints the jars directory on stdout; everything
# else goes to stderr. A second run finds the stamp and touches no network.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
pom="$KB_ROOT/hack/s3a/pom.xml"
version="$(sed -n 's:.*<hadoop.version>\(.*\)</hadoop.version>.*:\1:p' "$pom")"
home="$KB_CACHE_DIR/s3a-$version"
jars="$home/jars"
stamp="$home/.provisioned"
trim="$KB_ROOT/hack/s3a/trim_bundle.py"
recipe="$(cat "$pom" "${BASH_SOURCE[0]}" "$trim" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$recipe" ]; then
  log "resolving hadoop-aws $version and its AWS SDK from Maven Central into $jars"
  staging="$home/jars.partial"
  rm -rf "$staging"
  mkdir -p "$staging"
  if ! mvn -q -B --strict-checksums -f "$pom" \
    -Dmaven.repo.local="$KB_CACHE_DIR/maven-repo" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$staging" >"$home/mvn.log" 2>&1; then
    cat "$home/mvn.log" >&2
    log "resolving the s3a jars failed (see above)"
    exit 1
  fi
  # The SDK bundle is 654 MiB of every AWS service's client; the script keeps those S3A loads. The
  # Containerfile runs it too, so both images hold the same trimmed bundle.
  bundle="$(echo "$staging"/bundle-*.jar)"
  "$KB_VENV/bin/python" "$trim" "$bundle" "${bundle%.jar}-s3a.jar"
  rm "$bundle"
  # Swap in whole so a broken download never leaves a half-filled jars directory behind.
  rm -rf "$jars"
  mv "$staging" "$jars"
  printf '%s\n' "$recipe" >"$stamp"
fi
printf '%s\n' "$jars"
