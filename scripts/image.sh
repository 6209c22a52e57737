#!/usr/bin/env bash
# Builds the codingagent image (`make image`) without pulling anything: the
# binaries are built here, statically, and the base image must be local.
#
#   IMAGE=name:tag   image to build (default codeagent/codingagent:latest)
#   BASE=name:tag    base image; it must be present locally. Default:
#                    debian:bookworm-slim when present, else codeagent/base:local
#                    (built by scripts/base-image.sh when missing)
#   VERSION=...      version stamped into the binaries (default: git describe)
set -euo pipefail
cd "$(dirname "$0")/.."

image="${IMAGE:-codeagent/codingagent:latest}"
version="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
ldflags="-s -w -X github.com/codeagent/codeagent/internal/cmdutil.version=$version"

# The image runs Linux whatever the host is: on macOS or Windows its
# binaries are cross-built into bin/linux-<arch>/ (the host's stay in bin/).
bindir=bin
if [ "$(go env GOOS)" != linux ]; then
  bindir="bin/linux-$(go env GOARCH)"
fi
for prog in codingagent planagent; do
  echo "building $bindir/$prog ($version, static, linux)"
  CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "$ldflags" -o "$bindir/$prog" "./$prog"
done

if [ -n "${BASE:-}" ]; then
  base="$BASE"
  if ! docker image inspect "$base" >/dev/null 2>&1; then
    echo "base image $base is not present locally and this script never pulls:" >&2
    echo "  docker load/pull it yourself, or unset BASE to use codeagent/base:local (scripts/base-image.sh)" >&2
    exit 1
  fi
elif docker image inspect debian:bookworm-slim >/dev/null 2>&1; then
  base=debian:bookworm-slim
else
  base=codeagent/base:local
  scripts/base-image.sh
fi

echo "building $image from $base"
# DOCKER_BUILDKIT=0: the classic builder resolves FROM from the local store;
# BuildKit would try the registry.
DOCKER_BUILDKIT=0 docker build --pull=false -f docker/Dockerfile \
  --build-arg BASE="$base" --build-arg BIN="$bindir" -t "$image" .
echo "built $image"
