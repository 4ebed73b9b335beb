#!/usr/bin/env bash
# Undoes everything the single-node Kubernetes did on this machine (processes, bridge, iptables rules,
# mounts, cgroups, sysctls, kubelet's fixed paths), from its journal. Harmless when nothing runs.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
exec "$KB_VENV/bin/python" -m kafka_balancer_dev.localbed node down "$@"
