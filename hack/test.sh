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
log "gopher-lua, Argo CD's Lua VM, for the Argo CD health checks (built once, then cached)"
"$KB_ROOT/hack/argocd/provision.sh" >/dev/null
log "Strimzi's CRDs for the Strimzi tests (generated once from io.strimzi:api, then cached)"
"$KB_ROOT/hack/strimzi/provision.sh" >/dev/null
log "chart-testing's ct, the chart's linter (built once, then cached)"
"$KB_ROOT/hack/chart-testing/provision.sh" >/dev/null
log "kubeconform, the rendered manifests' validator (built once, then cached)"
"$KB_ROOT/hack/kubeconform/provision.sh" >/dev/null
log "Prometheus Operator, which turns the chart's monitors into scrape configs (built once, then cached)"
"$KB_ROOT/hack/prometheus-operator/provision.sh" >/dev/null
log "the node's binaries and images (built once from Go modules and Debian's packages, then cached)"
"$KB_ROOT/hack/node/provision.sh" >/dev/null
log "pytest"
if [ "$#" -gt 0 ]; then
  exec "$KB_VENV/bin/pytest" "$@"
fi
# Every tier, in two runs side by side. The e2e tier mostly waits (throttled moves, pass intervals:
# the cores were 70 % idle through it), so the integration, unit and spark tiers run beside it,
# niced so that e2e's passes get the cores first; the node tier (Spark pods on the node's cores)
# runs after e2e in the same run. Each run has its own temporary directory and its own slice of the
# bed's ports (KB_BED_PORTS); the report of the run beside follows the other's.
# A few e2e files run last in the run beside, which has time to spare: their operator starts
# only once the integration tests on that run's beds are done (pytest keeps the order given).
beside_e2e=(tests/e2e/test_demo.py tests/e2e/test_scale_down.py tests/e2e/test_catastrophic_pattern.py)
basetemp="$(mktemp -d /tmp/kb-pytest.XXXXXX)"
trap 'kill "${side_pid:-}" 2>/dev/null || true; rm -rf "$basetemp"' EXIT
side_log="$basetemp/beside.log"
KB_BED_PORTS=1/2 nice -n 10 "$KB_VENV/bin/pytest" -m "integration or unit or spark or e2e" --durations=25 \
  --basetemp "$basetemp/beside" tests/unit tests/spark tests/integration "${beside_e2e[@]}" \
  >"$side_log" 2>&1 &
side_pid=$!
main_status=0
KB_BED_PORTS=0/2 "$KB_VENV/bin/pytest" -m "e2e or node" --durations=25 --basetemp "$basetemp/main" \
  "${beside_e2e[@]/#/--ignore=}" || main_status=$?
side_status=0
wait "$side_pid" || side_status=$?
log "the integration, unit and spark tiers, run beside (exit $side_status)"
cat "$side_log"
log "pytest: e2e and node exit $main_status, integration, unit and spark exit $side_status"
[ "$main_status" -eq 0 ] && [ "$side_status" -eq 0 ]
