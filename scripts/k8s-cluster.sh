#!/usr/bin/env bash
# k8s-cluster.sh — the single-node Kubernetes cluster of `make e2e-k8s`.
#
#   scripts/k8s-cluster.sh up DIR [DOCKER_IMAGE...]   start it under DIR, write DIR/kubeconfig,
#                                                    import the images into the node
#   scripts/k8s-cluster.sh down DIR                   stop everything it started, remove DIR
#
# It runs ../shared/k8s/cluster.sh beside the checkout (or $K8S_CLUSTER_SH): etcd, the control
# plane and a kubelet with a private containerd, from the prebuilt archive there (checked
# against its SHA256SUMS) or built from the Go module proxy when the archive is absent
# (K8S_BUILD=1 forces the build; 20-40 min cold on 2 cores, cached in $K8S_CACHE).
# Pods reach this host at the first address of POD_SUBNET (default 10.244.0.1).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CLUSTER_SH=${K8S_CLUSTER_SH:-$HERE/../../shared/k8s/cluster.sh}
if [[ ! -x $CLUSTER_SH ]]; then
  echo "k8s-cluster.sh: no cluster script at $CLUSTER_SH: set K8S_CLUSTER_SH to a copy of shared/k8s/cluster.sh" >&2
  exit 2
fi
if [[ -f $(dirname "$CLUSTER_SH")/SHA256SUMS ]] && [[ ${K8S_BUILD:-0} != 1 ]]; then
  (cd "$(dirname "$CLUSTER_SH")" && sha256sum --quiet -c SHA256SUMS) || {
    echo "k8s-cluster.sh: the prebuilt archive beside $CLUSTER_SH does not match SHA256SUMS; building from source" >&2
    export K8S_BUILD=1
  }
fi
exec "$CLUSTER_SH" "$@"
