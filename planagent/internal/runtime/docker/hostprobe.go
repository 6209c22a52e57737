package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"time"
)

// hostProbeTimeout bounds each look-up and connection of hostAdvice.
const hostProbeTimeout = 3 * time.Second

// hostAdvice says why a model server the container could not reach is out
// of reach, from what this host sees of raw (the base URL as configured,
// before the loopback rewrite): a host name that does not resolve is a
// DNS or network matter, a port where nothing listens wants the server
// started, and only a server that answers on the loopback alone wants to
// listen on 0.0.0.0. loopbackOnly is false when another cause was found;
// answers tells that the server answers this host (at its URL).
func hostAdvice(ctx context.Context, raw string) (advice string, loopbackOnly, answers bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return fmt.Sprintf("OPENAI_BASE_URL %q is not a URL with a host: set it to the server's URL, e.g. http://HOST:PORT/v1", raw), false, false
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	ip := net.ParseIP(host)
	if ip == nil && host != "localhost" {
		lctx, cancel := context.WithTimeout(ctx, hostProbeTimeout)
		addrs, err := net.DefaultResolver.LookupHost(lctx, host)
		cancel()
		if err != nil || len(addrs) == 0 {
			return fmt.Sprintf("the host name %s does not resolve on this machine either (DNS): check the name in OPENAI_BASE_URL, the DNS settings and the network", host), false, false
		}
	}
	addr := net.JoinHostPort(host, port)
	d := net.Dialer{Timeout: hostProbeTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Sprintf("nothing listens on %s on this machine either: start the model server (e.g. `ollama serve`, `llama-server --port %s`) or fix the port in OPENAI_BASE_URL", addr, port), false, false
		}
		return fmt.Sprintf("%s does not answer from this machine either (%v): check that the server is up and the network or firewall lets it through", addr, err), false, false
	}
	c.Close()
	loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
	if !loopback {
		return fmt.Sprintf("%s answers on this machine but not from the container: check the container's network (config network) and any proxy or firewall between them", addr), false, true
	}
	// It answers on the loopback: does it on this host's other addresses,
	// which is how a container reaches it?
	other := nonLoopbackIP()
	if other == "" {
		return "", true, true
	}
	c, err = d.DialContext(ctx, "tcp", net.JoinHostPort(other, port))
	if err != nil {
		return "", true, true
	}
	c.Close()
	return fmt.Sprintf("the server answers on this host's loopback and on %s, but not from the container: a firewall between the docker bridge and the host? (or set OPENAI_BASE_URL to an address the container can reach)", other), false, true
}

// nonLoopbackIP is an IPv4 address of this host other than the loopback
// (the docker bridge's gateway among them), or "".
func nonLoopbackIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}
