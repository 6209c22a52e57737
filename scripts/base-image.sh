#!/usr/bin/env bash
# Builds codeagent/base:local from packages of this machine, for engines that
# cannot pull (no registry reachable). The rootfs holds a static busybox (sh and
# the coreutils applets), CA certificates, git with the shared libraries it
# links against, and an unprivileged `agent` user (uid/gid 10001).
#
#   BASE_IMAGE=name:tag   image to create (default codeagent/base:local)
#   FORCE=1               rebuild even when the image exists
set -euo pipefail

image="${BASE_IMAGE:-codeagent/base:local}"

if [ "${FORCE:-0}" != 1 ] && docker image inspect "$image" >/dev/null 2>&1; then
  echo "base image $image already present (FORCE=1 rebuilds it)"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

missing=()
dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)
[ -f /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]} with apt-get"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

busybox=/bin/busybox
# The dynamic busybox package also installs /bin/busybox; the rootfs has no libc
# of its own for it, so insist on a static one.
if ldd "$busybox" >/dev/null 2>&1; then
  echo "$busybox is dynamically linked: install busybox-static (apt-get install busybox-static)" >&2
  exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc/ssl/certs,tmp,app/volumes,usr/lib/git-core}
chmod 1777 "$root/tmp"

cp "$busybox" "$root/bin/busybox"
# --list-full prints each applet with its install path (bin/sh, usr/bin/awk, ...).
"$busybox" --list-full | while read -r applet; do
  case "$applet" in bin/busybox | linuxrc) continue ;; esac
  [ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
done

cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"

# git is optional: the agent's git-aware tools degrade without it, so a host
# without git still gets a usable base.
if git_bin="$(command -v git)"; then
  cp "$git_bin" "$root/usr/bin/git"
  # Builtins re-exec "git" from the exec path (gc --auto after commit, ...).
  ln -s /usr/bin/git "$root/usr/lib/git-core/git"
  # The transport's server side runs as its own program: a clone or fetch
  # from a local path (planagent's task copies) execs git-upload-pack, a
  # push git-receive-pack. Each is the git binary under that name.
  for server in git-upload-pack git-receive-pack git-upload-archive; do
    ln -s /usr/bin/git "$root/usr/lib/git-core/$server"
    ln -s git "$root/usr/bin/$server"
  done
  # ldd prints "name => /path" for libraries and the loader's path on its own.
  ldd "$git_bin" | awk '/=> \// {print $3} /^[[:space:]]*\/.*ld-linux/ {print $1}' | while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
  if [ -d /usr/share/git-core/templates ]; then
    mkdir -p "$root/usr/share/git-core"
    cp -r /usr/share/git-core/templates "$root/usr/share/git-core/templates"
  fi
else
  echo "warning: git not found on this host; the base image has no git" >&2
fi

cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
agent:x:10001:10001:agent:/tmp:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
agent:x:10001:
nogroup:x:65534:
EOF
echo 'hosts: files dns' >"$root/etc/nsswitch.conf"
mkdir -p "$root/root"
chmod 700 "$root/root"

# HOME points at /tmp so any --user uid (the operator's) has a writable home.
tar --numeric-owner --owner=0 --group=0 -C "$root" -c . |
  docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV HOME=/tmp' \
    --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    --change 'CMD ["/bin/sh"]' \
    - "$image" >/dev/null
echo "built base image $image"
