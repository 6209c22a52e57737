package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/config"
)

// Gateway serves the model API to the attempts with the provider's key,
// which it alone holds (planagent/internal/gateway): an attempt gets a
// token of its own and the gateway's URL instead of the key. (The kube
// runtime declares its own, with Grant for the attempts it adopts.)
type Gateway interface {
	// ServeHTTP serves the model API: the docker runtime serves it on
	// each container's socket under closed egress.
	http.Handler
	// Listen serves on addr (port 0: any) and returns the address got.
	Listen(addr string) (*net.TCPAddr, error)
	// Issue makes a token for one attempt and the function that revokes it.
	Issue(name string) (token string, revoke func(), err error)
	// Path is the base path of the model API, which the attempts' base
	// URL keeps so their clients build the provider's paths.
	Path() string
}

// listenGateway starts the gateway where the containers reach this host:
// the gateway address of the attempts' docker network (the bridge's side
// on the host), or loopback with --network host. Where that address is not
// on this host (Docker Desktop's VM), loopback through
// host.docker.internal, as a loopback model URL is reached. It returns the
// base URL the containers use.
func (d *Docker) listenGateway(ctx context.Context) (string, error) {
	if d.opts.Network == "host" {
		addr, err := d.opts.Gateway.Listen("127.0.0.1:0")
		if err != nil {
			return "", err
		}
		return d.gatewayURL("127.0.0.1", addr.Port), nil
	}
	ip, err := d.networkGateway(ctx)
	if err != nil {
		return "", err
	}
	addr, err := d.opts.Gateway.Listen(net.JoinHostPort(ip, "0"))
	if err == nil {
		return d.gatewayURL(ip, addr.Port), nil
	}
	d.log.Info("the docker network's gateway address is not on this host; the model gateway listens on loopback, reached as "+dockerHostAlias,
		"address", ip, "err", err)
	addr, lerr := d.opts.Gateway.Listen("127.0.0.1:0")
	if lerr != nil {
		return "", fmt.Errorf("model gateway: neither %s (the docker network's gateway) nor loopback: %w", ip, errors.Join(err, lerr))
	}
	return d.gatewayURL(dockerHostAlias, addr.Port), nil
}

// networkGateway is the host's address on the attempts' network, from the
// engine (default network: bridge).
func (d *Docker) networkGateway(ctx context.Context) (string, error) {
	name := d.opts.Network
	if name == "" || name == "default" {
		name = "bridge"
	}
	res, err := d.api.NetworkInspect(ctx, name, client.NetworkInspectOptions{})
	if err != nil {
		return "", fmt.Errorf("model gateway: inspect docker network %s for the address the containers reach this host at: %w", name, err)
	}
	for _, c := range res.Network.IPAM.Config {
		if c.Gateway.IsValid() && c.Gateway.Is4() {
			return c.Gateway.String(), nil
		}
	}
	for _, c := range res.Network.IPAM.Config {
		if c.Gateway.IsValid() {
			return c.Gateway.String(), nil
		}
	}
	// Older engines (API 1.41) leave the default bridge's gateway out of
	// its IPAM config: docker's IPAM gives a network's gateway the
	// subnet's first address. A wrong guess is not on this host, and
	// listenGateway falls back to loopback then.
	for _, c := range res.Network.IPAM.Config {
		if c.Subnet.IsValid() && c.Subnet.Addr().Is4() {
			return c.Subnet.Masked().Addr().Next().String(), nil
		}
	}
	return "", fmt.Errorf("model gateway: docker network %s has no gateway address, so its containers cannot reach planagent's model gateway: use a bridge network (network: bridge)", name)
}

func (d *Docker) gatewayURL(host string, port int) string {
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + d.opts.Gateway.Path()
}

// issueToken is an attempt's gateway token and its revocation; without a
// gateway, none (the key goes in the environment, as before the gateway).
func (d *Docker) issueToken(name string) (string, func(), error) {
	if d.gatewayBase == "" {
		return "", func() {}, nil
	}
	return d.opts.Gateway.Issue(name)
}

// gatewayEnv replaces the key and base URL of env with the attempt's token
// and the gateway: the key is in no container.
func (d *Docker) gatewayEnv(env map[string]string, token string) {
	delete(env, config.AnthropicKeyEnv)
	env[config.APIKeyEnv] = token
	env["OPENAI_BASE_URL"] = d.gatewayBase
}
