// Package relay gives an attempt without a network its two ways out: it
// listens on loopback ports inside the container and carries every
// connection to a unix socket planagent serves in the directory mounted
// into the container (the model gateway, the egress proxy). Clients and
// tools then speak plain TCP to 127.0.0.1, as they would to any proxy.
package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"syscall"

	"github.com/codeagent/codeagent/internal/splice"
)

// Env names the variable planagent sets to a list of
// "127.0.0.1:PORT=/path/to.sock" pairs, comma-separated.
const Env = "CODEAGENT_RELAY"

// Pair is one relayed port.
type Pair struct {
	Listen string // host:port on loopback
	Socket string // unix socket path
}

// Parse reads the value of Env.
func Parse(spec string) ([]Pair, error) {
	var out []Pair
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		addr, sock, ok := strings.Cut(item, "=")
		host, _, err := net.SplitHostPort(addr)
		if !ok || err != nil || sock == "" {
			return nil, fmt.Errorf("%s entry %q: want 127.0.0.1:PORT=/path/to.sock", Env, item)
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("%s entry %q: the relay listens on loopback only", Env, item)
		}
		out = append(out, Pair{Listen: addr, Socket: sock})
	}
	return out, nil
}

// Start listens on every pair's port and relays until ctx ends. A port
// that is taken (a nested codingagent under the agent's shell, whose
// parent already relays) is skipped: the parent's relay serves it.
func Start(ctx context.Context, pairs []Pair, log *slog.Logger) error {
	var errs []error
	for _, p := range pairs {
		l, err := net.Listen("tcp", p.Listen)
		if err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				continue
			}
			errs = append(errs, fmt.Errorf("relay %s → %s: %w", p.Listen, p.Socket, err))
			continue
		}
		context.AfterFunc(ctx, func() { l.Close() })
		go serve(l, p.Socket, log)
	}
	return errors.Join(errs...)
}

func serve(l net.Listener, socket string, log *slog.Logger) {
	for {
		c, err := l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				log.Warn("relay stopped", "listen", l.Addr().String(), "err", err)
			}
			return
		}
		go func() {
			u, err := net.Dial("unix", socket)
			if err != nil {
				log.Warn("relay: the host's end is gone", "socket", socket, "err", err)
				c.Close()
				return
			}
			splice.Conns(c, u)
		}()
	}
}
