#!/usr/bin/env bash
# k8s-cluster.sh — the real single-node Kubernetes cluster (v1.32) of `make e2e-k8s` and of
# `make bench`'s Kubernetes figures, built only from the Go module proxy and Debian's apt
# repositories, for a Debian 12 machine with cgroup v1 (as the one it was written on).
#
#   scripts/k8s-cluster.sh up DIR [DOCKER_IMAGE...]   start (or reuse) a cluster under DIR, write
#                                                    DIR/kubeconfig, wait for the node to be Ready
#                                                    and import the given local Docker images
#   scripts/k8s-cluster.sh import DIR DOCKER_IMAGE... import more local Docker images into the node
#   scripts/k8s-cluster.sh down DIR                   stop everything started under DIR (by pid),
#                                                    unmount, remove the bridge, cgroups and DIR
#
# Binaries: kube-apiserver, kube-controller-manager, kube-scheduler and kubelet are built from
# k8s.io/kubernetes through a wrapper module that pins every staging module (written below), once
# into $K8S_CACHE (default /tmp/k8s/cache) and reused; a pause binary is built from the Go source
# below; etcd and the CNI plugins come from Debian (apt-get download etcd-server
# containernetworking-plugins). To save the cold build (20-40 min on 2 cores), a prebuilt archive
# of the same recipe, kubernetes-$K8S_VERSION-linux-amd64.tar.zst with its SHA256SUMS, is used
# when found in $K8S_PREBUILT_DIR (default: ../shared/k8s beside the checkout); K8S_BUILD=1
# builds from source regardless.
# Processes: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a private
# containerd (the system's /usr/bin/containerd with its own config, root, state and socket
# under DIR; the system Docker and its containerd are never touched), kubelet.
# Not started: kube-proxy and CoreDNS (no Service routing or cluster DNS inside pods).
# Pods get addresses from a private CNI bridge (the host is the first address of POD_SUBNET,
# 10.244.0.1 by default); they have no route to the outside. The API server listens on
# 127.0.0.1 only; its certificate also names the gateway, so a test can forward
# GATEWAY:PORT to it for a pod that uses the in-cluster config (KUBERNETES_SERVICE_HOST/PORT
# set to the forwarder: the ClusterIP of the kubernetes Service is not routed here).
#
# Needs: root, go, openssl, curl, kubectl, zstd (for the prebuilt archive), docker (only for
# importing images), apt-get.
# Environment: K8S_CACHE, K8S_PREBUILT_DIR, K8S_BUILD, K8S_GOMODCACHE, K8S_GOCACHE (Go caches used
# for the build, default under K8S_CACHE), ETCD_PORT, ETCD_PEER_PORT, APISERVER_PORT,
# KUBELET_PORT, KUBELET_HEALTHZ_PORT, POD_SUBNET (change all of these to run two clusters at
# once), READY_TIMEOUT, K8S_KEEP_ON_FAILURE=1 (leave a failed `up` running for inspection).
# A pod must use imagePullPolicy Never/IfNotPresent: there is no registry.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.32.13}
STAGING_VERSION=${STAGING_VERSION:-v0.32.13}
# k8s.io/endpointslice v0.32.13 is not served by the proxy here; v0.32.12 is.
ENDPOINTSLICE_VERSION=${ENDPOINTSLICE_VERSION:-v0.32.12}
K8S_CACHE=${K8S_CACHE:-/tmp/k8s/cache}
ETCD_PORT=${ETCD_PORT:-12379}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-12380}
APISERVER_PORT=${APISERVER_PORT:-16443}
KUBELET_PORT=${KUBELET_PORT:-10250}
KUBELET_HEALTHZ_PORT=${KUBELET_HEALTHZ_PORT:-10248}
POD_SUBNET=${POD_SUBNET:-10.244.0.0/24}
SERVICE_CIDR=${SERVICE_CIDR:-10.96.0.0/24}
# The node is named "localhost" so that the apiserver reaches the kubelet (logs, exec) over
# 127.0.0.1 (--kubelet-preferred-address-types=Hostname); a kubelet refuses a loopback node IP.
NODE_NAME=localhost
PAUSE_IMAGE=registry.k8s.io/pause:3.10
READY_TIMEOUT=${READY_TIMEOUT:-180}

BIN=$K8S_CACHE/bin
CNI_BIN=$K8S_CACHE/root/usr/lib/cni
ETCD_BIN=$K8S_CACHE/root/usr/bin/etcd

T0=$(date +%s.%N)
log() { printf '[cluster %6.1fs] %s\n' "$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')" "$*" >&2; }
UP_STARTED=0
die() {
  log "ERROR: $*"
  if [[ $UP_STARTED == 1 ]]; then
    UP_STARTED=0
    local f
    for f in "$DIR"/logs/*.log; do
      [[ -f $f ]] || continue
      echo "---- last lines of $(basename "$f")" >&2
      tail -n 15 "$f" >&2
    done
    if [[ ${K8S_KEEP_ON_FAILURE:-0} == 1 ]]; then
      log "leaving the half-started cluster for inspection; run: $0 down $DIR"
    else
      cmd_down_quiet || true
    fi
  fi
  exit 1
}

# ---------------------------------------------------------------- binaries (cached) ----
write_wrapper_module() {
  local d=$1
  mkdir -p "$d"
  {
    echo "module k8sbuild"
    echo
    echo "go 1.23.0"
    echo
    echo "godebug default=go1.23"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go \
      cloud-provider cluster-bootstrap code-generator component-base component-helpers \
      controller-manager cri-api cri-client csi-translation-lib dynamic-resource-allocation \
      externaljwt kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler \
      kubectl kubelet metrics mount-utils pod-security-admission sample-apiserver \
      sample-cli-plugin sample-controller; do
      printf '\tk8s.io/%s => k8s.io/%s %s\n' "$m" "$m" "$STAGING_VERSION"
    done
    printf '\tk8s.io/endpointslice => k8s.io/endpointslice %s\n' "$ENDPOINTSLICE_VERSION"
    echo ")"
  } >"$d/go.mod"
  cat >"$d/tools.go" <<'EOF'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
EOF
}

write_pause_source() {
  local d=$1
  mkdir -p "$d"
  printf 'module pause\n\ngo 1.23\n' >"$d/go.mod"
  cat >"$d/main.go" <<'EOF'
// Minimal sandbox ("pause") process: sleeps until SIGINT/SIGTERM and reaps zombies.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
EOF
}

ensure_binaries() {
  mkdir -p "$BIN" "$K8S_CACHE/logs"
  local stamp="$BIN/.k8s-$K8S_VERSION"
  # Prebuilt binaries of this same recipe, checked against their SHA256SUMS, save the cold
  # build; without the archive, or with K8S_BUILD=1, they are built from source.
  local pre_dir=${K8S_PREBUILT_DIR:-$(dirname "$(readlink -f "$0")")/../../shared/k8s}
  local pre; pre="$pre_dir/kubernetes-$K8S_VERSION-linux-amd64.tar.zst"
  if [[ ! -f $stamp && -f $pre && ${K8S_BUILD:-0} != 1 ]]; then
    log "unpacking prebuilt Kubernetes $K8S_VERSION binaries"
    zstd -dc "$pre" | tar -x -C "$BIN" || die "could not unpack $pre"
    (cd "$BIN" && sha256sum -c --quiet "$(dirname "$pre")/SHA256SUMS") || die "prebuilt binaries do not match SHA256SUMS"
    touch "$stamp"
  fi
  if [[ ! -f $stamp ]]; then
    if [[ ! -f $pre && ${K8S_BUILD:-0} != 1 ]]; then
      log "no prebuilt archive at $pre (it is there only in this project's CI layout; K8S_PREBUILT_DIR names another folder)"
    fi
    log "building Kubernetes $K8S_VERSION from the Go module proxy (cold: tens of minutes on 2 cores)"
    local src=$K8S_CACHE/src/k8sbuild
    write_wrapper_module "$src"
    local ld="-s -w"
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2) -X $p.gitTreeState=clean"
    done
    (
      cd "$src"
      export GOFLAGS=-mod=mod CGO_ENABLED=0
      export GOMODCACHE=${K8S_GOMODCACHE:-$K8S_CACHE/gomod} GOCACHE=${K8S_GOCACHE:-$K8S_CACHE/gocache}
      go mod tidy
      go build -trimpath -ldflags "$ld" -o "$BIN/" \
        k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet
    ) >"$K8S_CACHE/logs/build.log" 2>&1 || die "build failed, see $K8S_CACHE/logs/build.log"
    touch "$stamp"
    log "built Kubernetes binaries"
  fi
  if [[ ! -x $BIN/pause ]]; then
    write_pause_source "$K8S_CACHE/src/pause"
    (cd "$K8S_CACHE/src/pause" && GOCACHE=${K8S_GOCACHE:-$K8S_CACHE/gocache} CGO_ENABLED=0 \
      go build -trimpath -ldflags "-s -w" -o "$BIN/pause" .) || die "pause build failed"
  fi
  if [[ ! -x $ETCD_BIN || ! -x $CNI_BIN/bridge ]]; then
    log "fetching etcd-server and containernetworking-plugins with apt-get download"
    mkdir -p "$K8S_CACHE/debs" "$K8S_CACHE/root"
    (cd "$K8S_CACHE/debs" && { apt-get download etcd-server containernetworking-plugins ||
      { apt-get update -qq && apt-get download etcd-server containernetworking-plugins; }; }) \
      >"$K8S_CACHE/logs/apt.log" 2>&1 || die "apt-get download failed, see $K8S_CACHE/logs/apt.log"
    for f in "$K8S_CACHE"/debs/*.deb; do dpkg -x "$f" "$K8S_CACHE/root"; done
  fi
  if [[ ! -f $K8S_CACHE/pause-oci.tar ]]; then
    make_oci_tar "$BIN/pause" "$PAUSE_IMAGE" "$K8S_CACHE/pause-oci.tar"
  fi
}

# An OCI image archive (for `ctr images import`) holding one static binary as /pause,
# built without Docker or a registry.
make_oci_tar() {
  local binary=$1 ref=$2 out=$3 w
  w=$(mktemp -d)
  mkdir -p "$w/rootfs" "$w/oci/blobs/sha256"
  cp "$binary" "$w/rootfs/pause"
  tar --numeric-owner --owner=0 --group=0 -C "$w/rootfs" -cf "$w/layer.tar" pause
  local lsha lsize csha csize msha msize
  lsha=$(sha256sum "$w/layer.tar" | cut -d' ' -f1); lsize=$(stat -c %s "$w/layer.tar")
  mv "$w/layer.tar" "$w/oci/blobs/sha256/$lsha"
  printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/pause"],"User":"65535:65535"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$lsha" >"$w/config.json"
  csha=$(sha256sum "$w/config.json" | cut -d' ' -f1); csize=$(stat -c %s "$w/config.json")
  mv "$w/config.json" "$w/oci/blobs/sha256/$csha"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "$csha" "$csize" "$lsha" "$lsize" >"$w/manifest.json"
  msha=$(sha256sum "$w/manifest.json" | cut -d' ' -f1); msize=$(stat -c %s "$w/manifest.json")
  mv "$w/manifest.json" "$w/oci/blobs/sha256/$msha"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$msha" "$msize" "$ref" "${ref##*:}" >"$w/oci/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$w/oci/oci-layout"
  tar -C "$w/oci" -cf "$out" oci-layout index.json blobs
  rm -rf "$w"
}

# ---------------------------------------------------------------- helpers --------------
cgroup_name() { echo "k8sprobe-$(echo -n "$1" | md5sum | cut -c1-8)"; }
bridge_name() { echo "kp$(echo -n "$1" | md5sum | cut -c1-8)"; }
ctr_() { ctr -a "$DIR/containerd/containerd.sock" -n k8s.io "$@"; }
kc() { kubectl --kubeconfig "$DIR/kubeconfig" "$@"; }

alive() { local f=$DIR/pids/$1.pid; [[ -f $f ]] && running "$(cat "$f")"; }

start_proc() { # name cmd...
  local name=$1; shift
  mkdir -p "$DIR/pids" "$DIR/logs"
  setsid "$@" >"$DIR/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$DIR/pids/$name.pid"
}

wait_for() { # description timeout cmd...
  local what=$1 t=$2; shift 2
  local end=$(($(date +%s) + t))
  until "$@" >/dev/null 2>&1; do
    [[ $(date +%s) -lt $end ]] || die "timed out waiting for $what (logs in $DIR/logs)"
    sleep 0.3
  done
}

# ---------------------------------------------------------------- certificates ---------
gen_pki() {
  local P=$DIR/pki
  mkdir -p "$P"
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -keyout "$P/ca.key" -out "$P/ca.crt" -days 3650 \
    -subj "/CN=k8s-probe-ca" 2>/dev/null
  sign() { # name subject extfile-content
    openssl req "${ec[@]}" -keyout "$P/$1.key" -out "$P/$1.csr" -subj "$2" 2>/dev/null
    printf '%b' "$3" >"$P/$1.ext"
    openssl x509 -req -in "$P/$1.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial \
      -days 3650 -out "$P/$1.crt" -extfile "$P/$1.ext" 2>/dev/null
  }
  local svc_ip
  svc_ip=$(echo "$SERVICE_CIDR" | awk -F'[./]' '{print $1"."$2"."$3"."$4+1}')
  # The bridge gateway (the host as pods see it) too: with no kube-proxy, a pod that talks
  # to the API server (planagent in a Job, in-cluster config) is pointed at a forwarder
  # on the host there, and verifies the certificate against that address.
  local gw_ip
  gw_ip=$(echo "$POD_SUBNET" | awk -F'[./]' '{print $1"."$2"."$3"."$4+1}')
  sign apiserver "/CN=kube-apiserver" \
    "subjectAltName=IP:127.0.0.1,IP:$svc_ip,IP:$gw_ip,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
  sign admin "/O=system:masters/CN=kubernetes-admin" \
    "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n"
  sign kubelet-client "/O=system:nodes/CN=system:node:$NODE_NAME" \
    "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n"
  sign kubelet-server "/CN=$NODE_NAME" \
    "subjectAltName=DNS:$NODE_NAME,IP:127.0.0.1\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
  openssl ecparam -name prime256v1 -genkey -noout -out "$P/sa.key" 2>/dev/null
  openssl ec -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null
  write_kubeconfig "$DIR/kubeconfig" admin
  write_kubeconfig "$DIR/kubelet.kubeconfig" kubelet-client
}

write_kubeconfig() { # file certname
  local P=$DIR/pki
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: k8s-probe
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 "$P/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 "$P/$2.crt")
    client-key-data: $(base64 -w0 "$P/$2.key")
contexts:
- name: k8s-probe
  context: {cluster: k8s-probe, user: $2}
current-context: k8s-probe
EOF
}

# ---------------------------------------------------------------- components -----------
start_etcd() {
  start_proc etcd "$ETCD_BIN" --name k8sprobe --data-dir "$DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "k8sprobe=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state new \
    --quota-backend-bytes 2147483648 --snapshot-count 10000
  wait_for etcd 30 curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
}

start_apiserver() {
  local P=$DIR/pki
  start_proc kube-apiserver "$BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --secure-port "$APISERVER_PORT" --advertise-address 127.0.0.1 \
    --endpoint-reconciler-type none \
    --tls-cert-file "$P/apiserver.crt" --tls-private-key-file "$P/apiserver.key" \
    --client-ca-file "$P/ca.crt" \
    --kubelet-client-certificate "$P/admin.crt" --kubelet-client-key "$P/admin.key" \
    --kubelet-certificate-authority "$P/ca.crt" \
    --kubelet-preferred-address-types Hostname,InternalIP \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$P/sa.pub" --service-account-signing-key-file "$P/sa.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --allow-privileged=true --profiling=false --enable-priority-and-fairness=false \
    --cert-dir "$P/apiserver-generated"
  wait_for kube-apiserver 90 kc get --raw /readyz
}

start_controllers() {
  local P=$DIR/pki
  start_proc kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig "$DIR/kubeconfig" --leader-elect=false \
    --bind-address 127.0.0.1 --secure-port 0 \
    --service-account-private-key-file "$P/sa.key" --root-ca-file "$P/ca.crt" \
    --use-service-account-credentials=false --service-cluster-ip-range "$SERVICE_CIDR" \
    --controllers '*,-bootstrapsigner,-tokencleaner' --concurrent-job-syncs 5
  start_proc kube-scheduler "$BIN/kube-scheduler" \
    --kubeconfig "$DIR/kubeconfig" --leader-elect=false --bind-address 127.0.0.1 --secure-port 0
}

start_containerd() {
  local C=$DIR/containerd
  mkdir -p "$C" "$DIR/cni/net.d"
  cat >"$C/config.toml" <<EOF
version = 2
root = "$C/root"
state = "$C/state"
temp = "$C/tmp"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = "$C/containerd.sock"

[plugins."io.containerd.internal.v1.opt"]
  path = "$C/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  netns_mounts_under_state_dir = true
  # This VM withholds CAP_SYS_RESOURCE (even from root), so runc cannot lower oom_score_adj
  # (the kubelet asks -998 for sandboxes): without this, every sandbox fails with
  # "can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "$(command -v runc)"
        Root = "$C/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$DIR/cni/net.d"
EOF
  cat >"$DIR/cni/net.d/10-k8sprobe.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "k8sprobe-$(bridge_name "$DIR")",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$(bridge_name "$DIR")",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_SUBNET"}]],
        "dataDir": "$DIR/cni/ipam"
      }
    }
  ]
}
EOF
  start_proc containerd "$(command -v containerd)" --config "$C/config.toml"
  wait_for containerd 30 ctr -a "$C/containerd.sock" version
  ctr_ images import "$K8S_CACHE/pause-oci.tar" >/dev/null
}

start_kubelet() {
  local K=$DIR/kubelet cg
  cg=$(cgroup_name "$DIR")
  # cgroup v1 (cgroupfs): the kubelet nests its kubepods hierarchy under /$cg, which must exist.
  for h in /sys/fs/cgroup/*/; do
    [[ -d $h ]] || continue
    mkdir -p "$h$cg"
    if [[ -f ${h}cpuset.cpus ]]; then
      cat "${h}cpuset.cpus" >"$h$cg/cpuset.cpus"
      cat "${h}cpuset.mems" >"$h$cg/cpuset.mems"
    fi
  done
  mkdir -p "$K" "$DIR/pod-logs"
  cat >"$DIR/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: "$DIR/pki/ca.crt"}
authorization: {mode: AlwaysAllow}
tlsCertFile: "$DIR/pki/kubelet-server.crt"
tlsPrivateKeyFile: "$DIR/pki/kubelet-server.key"
containerRuntimeEndpoint: "unix://$DIR/containerd/containerd.sock"
cgroupDriver: cgroupfs
cgroupRoot: /$cg
cgroupsPerQOS: true
failSwapOn: false
makeIPTablesUtilChains: false
podLogsDir: "$DIR/pod-logs"
volumePluginDir: "$K/volume-plugins"
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
syncFrequency: 10s
fileCheckFrequency: 10s
nodeStatusUpdateFrequency: 5s
registerNode: true
maxPods: 50
EOF
  start_proc kubelet "$BIN/kubelet" --config "$DIR/kubelet-config.yaml" \
    --kubeconfig "$DIR/kubelet.kubeconfig" --root-dir "$K" --cert-dir "$K/pki" \
    --hostname-override "$NODE_NAME" --v 1
}

wait_node_ready() {
  local end=$(($(date +%s) + READY_TIMEOUT))
  until [[ $(kc get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]; do
    [[ $(date +%s) -lt $end ]] || die "node not Ready after ${READY_TIMEOUT}s (logs in $DIR/logs)"
    alive kubelet || die "kubelet exited, see $DIR/logs/kubelet.log"
    sleep 0.5
  done
  # Pods are admitted only once the default service account exists.
  wait_for "default service account" 60 kc -n default get serviceaccount default
}

import_images() {
  local img
  for img in "$@"; do
    log "importing $img into the node's containerd"
    docker image inspect "$img" >/dev/null 2>&1 || die "no local Docker image $img"
    docker save "$img" | ctr_ images import - >/dev/null
  done
}

healthy() {
  [[ -f $DIR/kubeconfig ]] && alive etcd && alive kube-apiserver && alive kube-controller-manager &&
    alive kube-scheduler && alive containerd && alive kubelet &&
    [[ $(kc get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}

cmd_up() {
  if healthy; then
    log "cluster under $DIR already up"
  else
    [[ -d $DIR ]] && cmd_down_quiet
    ensure_binaries
    mkdir -p "$DIR"
    touch "$DIR/.k8s-probe"
    UP_STARTED=1
    gen_pki;            log "certificates written"
    start_etcd;         log "etcd ready"
    start_apiserver;    log "kube-apiserver ready"
    start_controllers
    start_containerd;   log "containerd ready, pause image imported"
    start_kubelet
    wait_node_ready;    log "node $NODE_NAME Ready"
  fi
  allow_pod_traffic
  [[ $# -gt 0 ]] && import_images "$@"
  log "export KUBECONFIG=$DIR/kubeconfig"
}

# Pod to pod over the bridge: with br_netfilter on (Docker loads it), bridged frames pass
# iptables' FORWARD chain, whose policy Docker sets to DROP, so one pod's connection to another
# pod's IP times out (pod to the host's bridge address goes through INPUT and works). A real
# cluster's CNI lets its pods talk; this accepts the bridge's own traffic (removed by `down`).
pod_rule() { iptables "$1" FORWARD -i "$(bridge_name "$DIR")" -o "$(bridge_name "$DIR")" -j ACCEPT; }
allow_pod_traffic() {
  command -v iptables >/dev/null || return 0
  pod_rule -C 2>/dev/null || pod_rule -I || die "could not let pods reach each other (iptables -I FORWARD)"
}

# ---------------------------------------------------------------- teardown -------------
# A process that is gone or a zombie (our daemons are reparented to pid 1, which may reap late).
running() { [[ -r /proc/$1/stat ]] && [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]; }

stop_pids() { # name... : SIGTERM all of them, wait up to 15s, then SIGKILL what is left
  local n pid pids=()
  for n in "$@"; do
    [[ -f $DIR/pids/$n.pid ]] || continue
    pid=$(cat "$DIR/pids/$n.pid")
    if running "$pid"; then kill -TERM "$pid" 2>/dev/null && pids+=("$pid"); fi
    rm -f "$DIR/pids/$n.pid"
  done
  local i left
  for ((i = 0; i < 150; i++)); do
    left=0
    for pid in "${pids[@]}"; do running "$pid" && left=1; done
    [[ $left == 0 ]] && return 0
    sleep 0.1
  done
  for pid in "${pids[@]}"; do running "$pid" && kill -KILL "$pid" 2>/dev/null; done
  return 0
}

cmd_down_quiet() {
  [[ -d $DIR ]] || return 0
  # Never remove a directory that `up` did not make.
  [[ -f $DIR/.k8s-probe || -z $(ls -A "$DIR") ]] || die "refusing: $DIR was not made by cluster.sh up"
  local sock=$DIR/containerd/containerd.sock cg br
  cg=$(cgroup_name "$DIR"); br=$(bridge_name "$DIR")
  stop_pids kubelet
  if alive containerd; then
    # Kill every container and sandbox so that their shims exit and CNI is torn down.
    local ids id
    ids=$(ctr_ tasks ls -q 2>/dev/null || true)
    [[ -z $ids ]] || ctr_ tasks delete --force $ids >/dev/null 2>&1 || true
    ids=$(ctr_ containers ls -q 2>/dev/null || true)
    [[ -z $ids ]] || ctr_ containers delete $ids >/dev/null 2>&1 || true
    # containerd's CNI result cache lives in /var/lib/cni/results whatever its config says.
    for id in $ids; do rm -f /var/lib/cni/results/*-"$id"-* 2>/dev/null || true; done
  fi
  stop_pids containerd
  # Shims outlive containerd; end those of this containerd only (matched by its socket path).
  local pid
  for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $sock( |$)" || true); do kill -KILL "$pid" 2>/dev/null || true; done
  stop_pids kube-scheduler kube-controller-manager kube-apiserver etcd
  # Unmount whatever is left under DIR (rootfs overlays, shm, netns, kubelet volumes), deepest first.
  local m
  for m in $(awk -v d="$DIR/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
  ip link show "$br" >/dev/null 2>&1 && ip link delete "$br" 2>/dev/null || true
  while command -v iptables >/dev/null && pod_rule -C 2>/dev/null; do pod_rule -D || break; done
  # cgroups made by the kubelet and by us under /$cg, leaves first.
  local h try
  for try in 1 2 3 4 5; do
    for h in /sys/fs/cgroup/*/; do
      [[ -d $h$cg ]] || continue
      find "$h$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    done
    compgen -G "/sys/fs/cgroup/*/$cg" >/dev/null || break
    sleep 0.5
  done
  # The kubelet symlinks container logs into /var/log/containers; drop ours.
  if [[ -d /var/log/containers ]]; then
    find /var/log/containers -maxdepth 1 -type l -lname "$DIR/*" -delete 2>/dev/null || true
  fi
  rm -rf /var/lib/cni/results/"k8sprobe-$br"-* 2>/dev/null || true
  # Made by the kubelet / CNI if absent; removed only when empty.
  rmdir /var/lib/cni/results /var/lib/cni /var/log/containers 2>/dev/null || true
  rm -rf "$DIR"
}

cmd_down() {
  [[ -d $DIR ]] || { log "nothing to stop under $DIR"; return 0; }
  cmd_down_quiet
  log "cluster under $DIR is down"
}

# ---------------------------------------------------------------- main -----------------
main() {
  [[ $# -ge 2 ]] || { sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2; }
  local verb=$1
  [[ $(id -u) == 0 ]] || { echo "k8s-cluster.sh: must run as root" >&2; exit 1; }
  DIR=$(realpath -m "$2")
  shift 2
  case $verb in
    up) cmd_up "$@" ;;
    import) import_images "$@" ;;
    down) cmd_down ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2 ;;
  esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then main "$@"; fi
