#!/usr/bin/env bash
# Creates the virtual environment with every pinned Python dependency (idempotent).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
stamp="$KB_VENV/.kb-installed"
if [ ! -x "$KB_VENV/bin/python" ]; then
  log "creating virtual environment $KB_VENV"
  python3 -m venv "$KB_VENV"
fi
if [ ! -f "$stamp" ] || [ "$KB_ROOT/pyproject.toml" -nt "$stamp" ]; then
  log "installing Python dependencies"
  "$KB_VENV/bin/pip" install --quiet --upgrade pip
  "$KB_VENV/bin/pip" install --quiet -e "$KB_ROOT[dev]"
  touch "$stamp"
fi
# The secured Kafka bed makes its mutual-TLS client key with openssl (keytool cannot write PEM keys).
if ! command -v openssl >/dev/null 2>&1; then
  log "installing openssl (Debian package)"
  apt-get update -qq && apt-get install -y -qq openssl >/dev/null
fi
