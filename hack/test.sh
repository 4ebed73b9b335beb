#!/usr/bin/env bash
# The test command: sets up everything it needs (cached), lints, type-checks, runs every tier.
# Extra arguments go to pytest, e.g. `hack/test.sh -m unit -x`.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
"$KB_ROOT/hack/setup.sh"
cd "$KB_ROOT"
log "ruff"
"$KB_VENV/bin/ruff" check operator devtools tests bench
"$KB_VENV/bin/ruff" format --check operator devtools tests bench
log "mypy"
"$KB_VENV/bin/mypy"
# The benches are scripts that import each other by file name, so they are checked as files.
"$KB_VENV/bin/mypy" bench/*.py
log "import contracts (layers, and which layer may import kopf, the Kafka clients, pyspark)"
# This checkout's package first, whatever checkout the venv's editable install points at.
PYTHONPATH="$KB_ROOT/operator${PYTHONPATH:+:$PYTHONPATH}" "$KB_VENV/bin/lint-imports"
log "kube bed binaries (built once from Go modules, then cached)"
"$KB_ROOT/hack/kube/provision.sh" >/dev/null
log "Kafka bed jars (resolved once from Maven Central, then cached)"
"$KB_ROOT/hack/kafka/provision.sh" >/dev/null
log "Prometheus and the JMX exporter agent (fetched once, then cached)"
"$KB_ROOT/hack/prometheus/provision.sh" >/dev/null
log "MinIO and the s3a jars of the shared-storage tests (built and resolved once, then cached)"
"$KB_ROOT/hack/minio/provision.sh" >/dev/null
"$KB_ROOT/hack/s3a/provision.sh" >/dev/null
log "the node's binaries and images (built once from Go modules and Debian's packages, then cached)"
"$KB_ROOT/hack/node/provision.sh" >/dev/null
log "pytest"
if [ "$#" -eq 0 ]; then
  set -- -m "unit or spark or integration or e2e or node"
fi
exec "$KB_VENV/bin/pytest" "$@"
