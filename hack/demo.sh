#!/usr/bin/env bash
# Sets everything up, then runs the main job on embedded defaults: a skewed 12-broker
# cluster (3 racks, one hot broker pair, one new empty broker) planned with examples/goals.yaml.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
"$KB_ROOT/hack/setup.sh"
out="$KB_ROOT/run/demo"
mkdir -p "$out"
"$KB_VENV/bin/python" -m kafka_balancer.synthetic --output "$out/snapshot.json"
"$KB_VENV/bin/kafka-balancer" plan --snapshot "$out/snapshot.json" --goals "$KB_ROOT/examples/goals.yaml" \
  --output "$out/plan.json" --report "$out/report.json"
"$KB_VENV/bin/kafka-balancer" report --snapshot "$out/snapshot.json" --plan "$out/plan.json" \
  --goals "$KB_ROOT/examples/goals.yaml" --output "$out/report.png"
log "plan: $out/plan.json (Kafka reassignment JSON), report: $out/report.json, picture: $out/report.png"
