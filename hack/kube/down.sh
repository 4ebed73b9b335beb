#!/usr/bin/env bash
# Stops the local Kubernetes bed recorded in the run directory (by PID). Extra arguments: --run-dir DIR.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
exec "$KB_VENV/bin/python" -m kafka_balancer_dev.localbed kube down "$@"
