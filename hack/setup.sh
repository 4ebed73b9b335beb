#!/usr/bin/env bash
# Creates the virtual environment with every pinned Python dependency (idempotent).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
stamp="$KB_VENV/.kb-installed"
if [ ! -x "$KB_VENV/bin/python" ]; then
  log "creating virtual environment $KB_VENV"
  python3 -m venv "$KB_VENV"
fi
# The development package (devtools/: the local beds, the demo, the synthetic clusters) is not in the
# wheel; this path file puts the checkout's copy on the venv's path, written with the editable install
# of the product (operator/) so that both always point at the same checkout.
pth="$("$KB_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/kafka_balancer_dev.pth"
lock="$KB_ROOT/requirements/dev.txt"
if [ ! -f "$stamp" ] || [ "$lock" -nt "$stamp" ] || [ "$KB_ROOT/pyproject.toml" -nt "$stamp" ] || [ ! -f "$pth" ]; then
  log "installing Python dependencies from requirements/dev.txt"
  # Everything at the lock's version and hash (hack/lock.sh), pip itself included. The locked build
  # backend goes first: sdists (pyspark) and the package are built without isolation, which would
  # otherwise fetch whatever setuptools is newest.
  "$KB_VENV/bin/pip" install --quiet --require-hashes -r "$KB_ROOT/requirements/build.txt"
  "$KB_VENV/bin/pip" install --quiet --require-hashes --no-build-isolation -r "$lock"
  "$KB_VENV/bin/pip" install --quiet --no-deps --no-build-isolation -e "$KB_ROOT"
  printf '%s\n' "$KB_ROOT/devtools" >"$pth"
  touch "$stamp"
fi
# The secured Kafka bed makes its mutual-TLS client key with openssl (keytool cannot write PEM keys).
if ! command -v openssl >/dev/null 2>&1; then
  log "installing openssl (Debian package)"
  apt-get update -qq && apt-get install -y -qq openssl >/dev/null
fi
