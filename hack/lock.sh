#!/usr/bin/env bash
# Regenerates the hash-locked requirements from pyproject.toml's pins, transitive dependencies
# included; run it after changing a pin, then hack/setup.sh (tests/unit/packaging/test_lock.py fails
# on a lock that drifted from pyproject.toml). The image's Python (Debian bookworm's) and CI's are both
# 3.11 on x86_64 glibc 2.36, so one resolution serves both:
#   requirements/image.txt  what the operator image installs: [project] dependencies and the operator extra
#   requirements/build.txt  the build backend (build-system requires): the wheel is built without isolation
#   requirements/dev.txt    CI's venv: the image's set, the report and dev extras and the build
#                           backend, at the image's versions (constrained by the two above), so CI
#                           tests what ships
# The compiler is the dev extra's uv, pinned like the rest (KB_UV names another one to bootstrap).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
uv="${KB_UV:-$KB_VENV/bin/uv}"
if [ ! -x "$uv" ]; then
  log "no $uv: run hack/setup.sh first (the dev lock installs uv), or set KB_UV"
  exit 1
fi
cd "$KB_ROOT"
compile() {
  "$uv" pip compile --quiet --generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_36 \
    --custom-compile-command hack/lock.sh "$@"
}
build_requires() {
  python3 -c \
    'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))'
}
mkdir -p requirements
compile pyproject.toml --extra operator -o requirements/image.txt
build_requires | compile - -o requirements/build.txt
build_requires | compile pyproject.toml - --extra operator --extra report --extra dev -c requirements/image.txt -c requirements/build.txt \
  -o requirements/dev.txt
log "locked $(grep -c '^[a-z]' requirements/dev.txt) packages for CI, $(grep -c '^[a-z]' requirements/image.txt) for the image"
