package egress

import (
	"net"
	"net/url"
)

// EntryFor is the allow-list entry admitting u: its host (a name, or an
// address, admitted by naming it) with its port, the scheme's when u has
// none. Both container runtimes add the model's URL so.
func EntryFor(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}
