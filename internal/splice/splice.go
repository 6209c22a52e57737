// Package splice joins two connections: the relay in the attempt's
// container and the egress proxy on the host both pass bytes through
// unchanged once they have decided a connection may go on.
package splice

import (
	"io"
	"net"
	"sync"
)

// Conns copies both ways until both directions end, passing on each
// half-close (a client that closes its write side still gets the answer),
// then closes both.
func Conns(a, b net.Conn) {
	var wg sync.WaitGroup
	half := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}
	wg.Add(2)
	go half(a, b)
	go half(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}
