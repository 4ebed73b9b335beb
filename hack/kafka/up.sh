#!/usr/bin/env bash
# Provisions the Kafka jars (cached) and starts a local bed; prints its bootstrap servers.
# Extra arguments go to `python -m kafka_balancer_dev.localbed kafka up` (e.g. --brokers 6 --run-dir DIR).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
libs="$("$KB_ROOT/hack/kafka/provision.sh")"
exec "$KB_VENV/bin/python" -m kafka_balancer_dev.localbed kafka up --libs "$libs" "$@"
