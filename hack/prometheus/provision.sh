#!/usr/bin/env bash
# Provides what the bed's broker metrics need (idempotent, cached): the Prometheus server from
# Debian's package (unpacked, not installed), the Prometheus JMX exporter Java agent from Maven
# Central and its rules (jmx-exporter.yaml). Prints the directory holding `prometheus`, `promtool`
# (the chart's alert rules are checked and unit-tested with it), `jmx_prometheus_javaagent.jar` and
# `jmx-exporter.yaml` on stdout;
# everything else goes to stderr. A second run finds the stamp and touches no network.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
PROMETHEUS_DEB_VERSION="2.42.0+ds-5+deb12u1"   # Debian bookworm's prometheus
JMX_EXPORTER_VERSION="1.0.1"                   # io.prometheus.jmx:jmx_prometheus_javaagent
home="$KB_CACHE_DIR/prometheus-${PROMETHEUS_DEB_VERSION%%+*}-jmx-$JMX_EXPORTER_VERSION"
stamp="$home/.provisioned"
# A cache made before promtool was kept lacks it: provisioned again, whole.
if [ ! -f "$stamp" ] || [ ! -x "$home/promtool" ]; then
  log "unpacking Prometheus $PROMETHEUS_DEB_VERSION (Debian) and fetching the JMX exporter $JMX_EXPORTER_VERSION into $home"
  staging="$home.partial"
  rm -rf "$staging"
  mkdir -p "$staging/deb"
  if ! (cd "$staging/deb" && apt-get download "prometheus=$PROMETHEUS_DEB_VERSION" >/dev/null 2>&1); then
    # A fresh machine may have empty package lists.
    apt-get update -qq >/dev/null
    (cd "$staging/deb" && apt-get download "prometheus=$PROMETHEUS_DEB_VERSION" >/dev/null 2>&1) || {
      log "apt-get download prometheus=$PROMETHEUS_DEB_VERSION failed"
      exit 1
    }
  fi
  dpkg-deb -x "$staging"/deb/prometheus_*.deb "$staging/unpacked"
  mv "$staging/unpacked/usr/bin/prometheus" "$staging/unpacked/usr/bin/promtool" "$staging/"
  if ! mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
    -Dartifact="io.prometheus.jmx:jmx_prometheus_javaagent:$JMX_EXPORTER_VERSION" \
    -DoutputDirectory="$staging" -Dmdep.stripVersion=true \
    -Dmaven.repo.local="$KB_CACHE_DIR/maven-repo" >"$staging/mvn.log" 2>&1; then
    cat "$staging/mvn.log" >&2
    log "fetching the JMX exporter failed (see above)"
    exit 1
  fi
  rm -rf "$staging/deb" "$staging/unpacked" "$staging/mvn.log"
  "$staging/prometheus" --version >/dev/null
  "$staging/promtool" --version >/dev/null
  # Swap in whole so a broken download never leaves a half-filled directory behind.
  rm -rf "$home"
  mv "$staging" "$home"
  touch "$stamp"
fi
# The agent's rules are the project's own file: copied every run, so an edit takes effect.
cp "$KB_ROOT/hack/prometheus/jmx-exporter.yaml" "$home/jmx-exporter.yaml"
printf '%s\n' "$home"
