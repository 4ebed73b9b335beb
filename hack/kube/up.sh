#!/usr/bin/env bash
# Provisions the Kubernetes bed's binaries (cached) and starts etcd + kube-apiserver on 127.0.0.1;
# prints the kubeconfig path. Extra arguments go to `python -m kafka_balancer_dev.localbed kube up`.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
exec "$KB_VENV/bin/python" -m kafka_balancer_dev.localbed kube up "$@"
