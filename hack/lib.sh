# Shared shell settings for hack/ scripts. Source it; do not run it.
set -euo pipefail
KB_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Heavy, version-keyed builds and downloads live here, outside the checkout, so a second run is fast.
KB_CACHE_DIR="${KB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kafka-balancer}"
KB_VENV="${KB_VENV:-$KB_ROOT/.venv}"
export KB_ROOT KB_CACHE_DIR KB_VENV
mkdir -p "$KB_CACHE_DIR"
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
