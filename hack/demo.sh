#!/usr/bin/env bash
# Sets everything up, then runs the main job on embedded defaults: `kafka-balancer demo` starts a
# local Kafka (racks a, b, c) and kube-apiserver, the operator with embedded Spark, a skewed topic
# under live traffic; it balances it, adds a broker (warm-up), drains one (same rack), draws the
# before/after report and checks every message. Arguments go to `kafka-balancer demo` (e.g. --fast).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
"$KB_ROOT/hack/setup.sh"
cd "$KB_ROOT"
exec "$KB_VENV/bin/kafka-balancer" demo "$@"
