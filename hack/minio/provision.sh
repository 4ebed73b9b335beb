#!/usr/bin/env bash
# Builds the MinIO server, the S3-compatible store the storage bed runs, from the Go module proxy at a
# pinned pseudo-version (MinIO tags its releases RELEASE.<date>, which the proxy does not serve as
# versions). Idempotent: the binary is cached by recipe under $KB_CACHE_DIR and rebuilt only when
# hack/minio/go.mod or go.sum change. Prints the path of the `minio` binary on stdout; progress and
# the build's timing go to stderr.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$KB_ROOT/hack/kube/versions.sh"
source "$KB_ROOT/hack/kube/gobuild.sh"
# The newest pseudo-version the proxy served on 2026-11-24 (commit 7aac2a2c5b7c of 2026-02-12); its
# go.mod asks for Go 1.24, so the machine's Go builds it without another toolchain.
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
MINIO_BIN="$KB_CACHE_DIR/minio-$MINIO_VERSION/bin"
require_pin minio/ "github.com/minio/minio $MINIO_VERSION"
# MinIO's own release build stamps these (buildscripts/gen-ldflags.go); `minio --version` shows them.
minio_date="2026-02-12T20:18:48Z"
minio_ldflags="-X github.com/minio/minio/cmd.Version=$minio_date"
minio_ldflags+=" -X github.com/minio/minio/cmd.ReleaseTag=DEVELOPMENT.$MINIO_VERSION"
minio_ldflags+=" -X github.com/minio/minio/cmd.CopyrightYear=${minio_date%%-*}"
for id in CommitID ShortCommitID; do
  minio_ldflags+=" -X github.com/minio/minio/cmd.$id=${MINIO_VERSION##*-}"
done
build minio/ github.com/minio/minio "$MINIO_BIN/minio" "$minio_ldflags"
printf '%s\n' "$MINIO_BIN/minio"
