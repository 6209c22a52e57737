#!/usr/bin/env bash
# Builds the images the container tests run agents and acceptance commands
# in, from this machine's files (no registry is reachable), to show that any
# image with /bin/sh works: planagent brings the codingagent binary itself.
#
#   codeagent/busybox:local   a static busybox and nothing else: no
#                             codingagent, no CA certificates, no passwd entry
#   codeagent/go:local        busybox plus a copy of this host's Go toolchain
#                             (GO_ROOT, default $(go env GOROOT)) on PATH, its
#                             build cache warmed for `go test` of the standard
#                             packages (GOCACHE=/usr/local/gocache, writable by
#                             any uid) so a fresh container does not compile
#                             the runtime for minutes
#
# Each is built only when missing (FORCE=1 rebuilds), so a second run is a
# pair of `docker image inspect`s.
set -euo pipefail

busybox_image="${BUSYBOX_IMAGE:-codeagent/busybox:local}"
go_image="${GO_IMAGE:-codeagent/go:local}"

present() { [ "${FORCE:-0}" != 1 ] && docker image inspect "$1" >/dev/null 2>&1; }

if present "$busybox_image" && present "$go_image"; then
  echo "test images $busybox_image and $go_image already present (FORCE=1 rebuilds them)"
  exit 0
fi

busybox=/bin/busybox
if ! [ -x "$busybox" ] || ldd "$busybox" >/dev/null 2>&1; then
  echo "$busybox is missing or dynamically linked: install busybox-static (apt-get install busybox-static)" >&2
  exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# rootfs DIR: a static busybox with its applets and a world-writable /tmp.
rootfs() {
  local root="$1"
  mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,tmp,etc}
  chmod 1777 "$root/tmp"
  cp "$busybox" "$root/bin/busybox"
  "$busybox" --list-full | while read -r applet; do
    case "$applet" in bin/busybox | linuxrc) continue ;; esac
    [ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
  done
  echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
  echo 'root:x:0:' >"$root/etc/group"
}

if ! present "$busybox_image"; then
  rootfs "$work/busybox"
  tar --numeric-owner --owner=0 --group=0 -C "$work/busybox" -c . |
    docker import --change 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' --change 'CMD ["/bin/sh"]' - "$busybox_image" >/dev/null
  echo "built $busybox_image"
fi

if ! present "$go_image"; then
  goroot="${GO_ROOT:-$(go env GOROOT)}"
  [ -x "$goroot/bin/go" ] || { echo "no Go toolchain at $goroot: set GO_ROOT" >&2; exit 1; }
  rootfs "$work/go"
  mkdir -p "$work/go/usr/local"
  # One tar stream: the rootfs, then the toolchain renamed to usr/local/go
  # on the way (no copy of it on disk).
  base="$(basename "$goroot")"
  tar --numeric-owner --owner=0 --group=0 \
    --transform "s,^$base/,usr/local/go/,;s,^$base\$,usr/local/go," \
    -C "$work/go" -c . -C "$(dirname "$goroot")" "$base" |
    docker import \
      --change 'ENV PATH=/usr/local/go/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'ENV GOTOOLCHAIN=local' --change 'ENV CGO_ENABLED=0' \
      --change 'CMD ["/bin/sh"]' - "$go_image-cold" >/dev/null
  # Warm the cache in a container, then commit it: docker import cannot run
  # anything.
  warm="codeagent-warm-go-$$"
  docker run --name "$warm" -e GOCACHE=/usr/local/gocache "$go_image-cold" sh -c '
    mkdir -p /tmp/w && cd /tmp/w && printf "module w\n\ngo 1.22\n" >go.mod &&
    printf "package w\n\nimport \"testing\"\n\nfunc TestW(t *testing.T) {}\n" >w_test.go &&
    go test ./... && go vet ./... && chmod -R a+rwX /usr/local/gocache' >/dev/null
  docker commit --change 'ENV GOCACHE=/usr/local/gocache' "$warm" "$go_image" >/dev/null
  docker rm -f "$warm" >/dev/null
  docker rmi "$go_image-cold" >/dev/null
  echo "built $go_image from $goroot"
fi
