package egress

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// helloTimeout bounds reading a ClientHello once its first byte is in: a
// client that starts a handshake and stalls must not hold the tunnel's
// reader for ever.
const helloTimeout = 30 * time.Second

// recordHandshake is the first byte of a TLS handshake record.
const recordHandshake = 0x16

// errHelloRead stops crypto/tls once it has parsed the ClientHello: the
// proxy wants the server name, not a handshake.
var errHelloRead = errors.New("client hello read")

// checkedConn is the client's side of a CONNECT tunnel whose first read
// checks what the client sends first: a TLS ClientHello must name the
// CONNECT host (no domain fronting through an allowed name). The checked
// bytes are then passed on unchanged. Until that first read returns,
// nothing of the client's reaches the upstream, while the upstream's bytes
// already flow to the client (a protocol where the server speaks first is
// not held up).
type checkedConn struct {
	net.Conn
	host  string // the CONNECT host as asked (a name: checked; an address: not)
	once  sync.Once
	r     io.Reader // after the check: the recorded bytes, then the client
	check func() error
}

func (c *checkedConn) Read(p []byte) (int, error) {
	var err error
	c.once.Do(func() { err = c.check() })
	if err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// CloseWrite passes the half-close on, as the bare connection would.
func (c *checkedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// newCheckedConn wraps client; pending is what the HTTP server had already
// read of it after the CONNECT. refuse hears of a mismatch.
func newCheckedConn(client net.Conn, pending []byte, host string, refuse func(reason string)) *checkedConn {
	c := &checkedConn{Conn: client, host: host}
	in := io.MultiReader(bytes.NewReader(pending), client)
	c.check = func() error {
		var seen bytes.Buffer
		first := make([]byte, 1)
		if _, err := io.ReadFull(in, first); err != nil {
			return err
		}
		seen.Write(first)
		c.r = io.MultiReader(&seen, in)
		if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil || first[0] != recordHandshake {
			// An address was named as such; not TLS: nothing to compare.
			return nil
		}
		_ = client.SetReadDeadline(time.Now().Add(helloTimeout))
		defer func() { _ = client.SetReadDeadline(time.Time{}) }()
		name, err := serverName(io.TeeReader(in, &seen), client)
		switch {
		case err != nil:
			// Reported before the client sees its tunnel close.
			refuse("the client's first bytes are a TLS record but no ClientHello the proxy can read (" + err.Error() + ")")
			_ = client.Close()
			return fmt.Errorf("egress: %w", err)
		case name != "" && canonical(name) != canonical(host):
			refuse(fmt.Sprintf("the TLS server name (SNI) %q is not the CONNECT host %q (domain fronting)", name, host))
			_ = client.Close()
			return errors.New("egress: TLS server name is not the CONNECT host")
		}
		return nil
	}
	return c
}

// serverName reads a TLS ClientHello (after its first byte, already read)
// from r and returns the server name it asks for ("" for none). crypto/tls
// parses it; the handshake stops right after.
func serverName(r io.Reader, conn net.Conn) (string, error) {
	var name string
	var got bool
	fake := &helloConn{r: io.MultiReader(bytes.NewReader([]byte{recordHandshake}), r), Conn: conn}
	err := tls.Server(fake, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		name, got = h.ServerName, true
		return nil, errHelloRead
	}}).Handshake()
	if got {
		return name, nil
	}
	if err == nil {
		err = errors.New("no ClientHello")
	}
	return "", err
}

// helloConn feeds crypto/tls the client's bytes and swallows what it
// answers (an alert): the real answer comes from the upstream.
type helloConn struct {
	net.Conn
	r io.Reader
}

func (h *helloConn) Read(p []byte) (int, error)  { return h.r.Read(p) }
func (h *helloConn) Write(p []byte) (int, error) { return len(p), nil }
func (h *helloConn) Close() error                { return nil }
