#!/usr/bin/env bash
# The README's first run, as a newcomer does it: a fresh clone of this checkout's HEAD, a fresh
# virtual environment and an empty cache directory, then the README's two commands, timed.
# Usage: hack/newcomer.sh [WORK_DIR] [-- DEMO_ARGS...]. On 2 cores the cold Go builds alone take
# about 12 minutes, so this is a documented command, not part of CI.
set -euo pipefail
source_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${1:-$(mktemp -d /tmp/kb-newcomer.XXXXXX)}"
shift || true
[ "${1:-}" = "--" ] && shift
mkdir -p "$work"
git clone --quiet "$source_root" "$work/kafka-balancer"
cd "$work/kafka-balancer"
export KB_CACHE_DIR="$work/cache" KB_VENV="$work/kafka-balancer/.venv"
printf 'newcomer run in %s (cache %s)\n' "$work" "$KB_CACHE_DIR" >&2
SECONDS=0
hack/demo.sh "$@"
printf 'demo: %d s\n' "$SECONDS" >&2
SECONDS=0
hack/test.sh
printf 'tests: %d s\n' "$SECONDS" >&2
