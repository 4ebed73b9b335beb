#!/usr/bin/env bash
# Starts the machine's single-node Kubernetes (root; one per machine): provisions it and builds the
# operator image (both cached), then prints the kubeconfig path. Extra arguments: --run-dir DIR.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
exec "$KB_VENV/bin/python" -m kafka_balancer_dev.localbed node up "$@"
