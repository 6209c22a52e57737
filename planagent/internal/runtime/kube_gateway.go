package runtime

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/codeagent/codeagent/internal/config"
)

// The model gateway for the kubernetes runtime: the pods get the gateway's
// URL and a token of their attempt, never the key (no Secret holds it, no
// Job spec names it). planagent listens on an address the pods route to:
// GatewayAddr when set (on the host: an address of the host on the pods'
// network, such as the CNI bridge's gateway), else, in a pod of the
// cluster, its own pod IP.

// errNoGatewayAddr: planagent runs outside the cluster and was not told
// where its pods reach it.
var errNoGatewayAddr = errors.New("kubernetes runtime: the model gateway needs an address of this host that the cluster's pods reach: " +
	"set kube_gateway (e.g. kube_gateway: 10.244.0.1, the CNI bridge's gateway, or the host's address on the nodes' network), " +
	"or run planagent in a pod of the cluster")

// listenGateway starts the gateway on addr (host or host:port; no port:
// any) and returns the base URL the pods use.
func (k *Kube) listenGateway(addr string) (string, error) {
	if addr == "" {
		return "", errNoGatewayAddr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, "0"
	}
	got, err := k.opts.Gateway.Listen(net.JoinHostPort(host, port))
	if err != nil {
		return "", fmt.Errorf("kubernetes runtime: the model gateway cannot listen on %s (kube_gateway must be an address of this host): %w", addr, err)
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(got.Port)) + k.opts.Gateway.Path(), nil
}

// podAddress is the address of the pod planagent runs in: POD_IP (the
// downward API's status.podIP, which the Deployment should set), else
// the address its hostname resolves to (a pod's hostname resolves to its
// IP through /etc/hosts).
func podAddress() string {
	if ip := os.Getenv("POD_IP"); ip != "" {
		return ip
	}
	name, err := os.Hostname()
	if err != nil {
		return ""
	}
	addrs, err := net.LookupHost(name)
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip != nil && !ip.IsLoopback() {
			return a
		}
	}
	return ""
}

// isModelKey reports whether name is a provider key variable, which never
// reaches a pod when the gateway serves the model.
func isModelKey(name string) bool {
	return name == config.APIKeyEnv || name == config.AnthropicKeyEnv
}
