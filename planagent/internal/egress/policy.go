// Package egress holds the allow-list of what an attempt may reach besides
// the model gateway, and the HTTP CONNECT / forward proxy in planagent that
// enforces it: the attempt's own network reaches nothing, so this proxy is
// its only way out.
package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Open is the allow-list value that gives the attempts an open network
// (the runtime's own, unproxied): `egress: open`.
const Open = "open"

// Policy is a parsed allow-list. The zero Policy admits nothing.
type Policy struct {
	open  bool
	rules []rule
	// hosts maps a name to the address the proxy dials for it instead of
	// asking DNS (egress_hosts): a mirror on the LAN, a test server.
	hosts map[string]netip.Addr
}

// rule is one allow-list entry: a host name (exact, or "*.suffix" for the
// names under suffix) or an IP address or prefix, each with an optional
// port.
type rule struct {
	name     string // lower case, no trailing dot; "" for an address rule
	wildcard bool   // name is a suffix: "*.github.com" → "github.com"
	prefix   netip.Prefix
	port     int // 0: any
	// methods, when set, are the only request methods the rule admits
	// ("GET HEAD pypi.org"): plain http requests are checked, a tunnel is
	// CONNECT and only admitted when CONNECT is listed (the methods inside
	// it are encrypted, out of the proxy's sight).
	methods []string
}

// admitsMethod tells whether the rule lets method ("": any) through.
func (r rule) admitsMethod(method string) bool {
	return method == "" || len(r.methods) == 0 || slices.Contains(r.methods, method)
}

// Parse reads the allow-list entries (egress) and the name mappings
// (egress_hosts, "name=address"). The single entry "open" opens the
// network; "open" among other entries is refused as ambiguous.
func Parse(entries, hosts []string) (*Policy, error) {
	p := &Policy{hosts: make(map[string]netip.Addr)}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if strings.EqualFold(e, Open) {
			if len(entries) != 1 {
				return nil, fmt.Errorf("egress: %q opens the network to everything, so it cannot be combined with other entries: use egress: open alone, or a list of host names", Open)
			}
			p.open = true
			return p, nil
		}
		r, err := parseRule(e)
		if err != nil {
			return nil, fmt.Errorf("egress entry %q: %w", e, err)
		}
		p.rules = append(p.rules, r)
	}
	for _, h := range hosts {
		name, addr, ok := strings.Cut(strings.TrimSpace(h), "=")
		ip, err := netip.ParseAddr(strings.TrimSpace(addr))
		if !ok || err != nil || !validName(canonical(name)) {
			return nil, fmt.Errorf("egress_hosts entry %q: want name=address, e.g. mirror.internal=10.0.0.5", h)
		}
		p.hosts[canonical(name)] = ip.Unmap()
	}
	return p, nil
}

// IsOpen tells whether the list is `egress: open`: no proxy, the runtime's
// open network.
func (p *Policy) IsOpen() bool { return p.open }

// Entries renders the allow-list for messages and records.
func (p *Policy) Entries() []string {
	if p.open {
		return []string{Open}
	}
	out := make([]string, 0, len(p.rules))
	for _, r := range p.rules {
		out = append(out, r.String())
	}
	return out
}

func (r rule) String() string {
	var s string
	if len(r.methods) > 0 {
		s = strings.Join(r.methods, " ") + " "
	}
	switch {
	case r.name == "" && r.prefix.IsSingleIP():
		a := r.prefix.Addr().String()
		if r.port != 0 && r.prefix.Addr().Is6() {
			a = "[" + a + "]"
		}
		s += a
	case r.name == "":
		s += r.prefix.String()
	case r.wildcard:
		s += "*." + r.name
	default:
		s += r.name
	}
	if r.port != 0 {
		s += ":" + strconv.Itoa(r.port)
	}
	return s
}

// methodsOf splits an entry's leading methods ("GET HEAD pypi.org": spaces,
// not commas, which separate entries in CODEAGENT_EGRESS) from its host.
func methodsOf(e string) ([]string, string, error) {
	fields := strings.Fields(e)
	if len(fields) < 2 {
		return nil, e, nil
	}
	var methods []string
	for _, m := range fields[:len(fields)-1] {
		m = strings.ToUpper(m)
		if strings.IndexFunc(m, func(c rune) bool { return c < 'A' || c > 'Z' }) >= 0 {
			return nil, "", fmt.Errorf("method %q: want HTTP methods before the host, separated by spaces, e.g. \"GET HEAD OPTIONS pypi.org\"", m)
		}
		if !slices.Contains(methods, m) {
			methods = append(methods, m)
		}
	}
	slices.Sort(methods)
	return methods, fields[len(fields)-1], nil
}

func parseRule(e string) (rule, error) {
	methods, e, err := methodsOf(e)
	if err != nil {
		return rule{}, err
	}
	r, err := parseHost(e)
	r.methods = methods
	return r, err
}

func parseHost(e string) (rule, error) {
	if e == "" {
		return rule{}, errors.New("empty: name a host such as proxy.golang.org or *.github.com")
	}
	if strings.Contains(e, "://") {
		return rule{}, errors.New("want a host name (proxy.golang.org, *.github.com), an address or prefix (10.0.0.5, 10.0.0.0/24), each with an optional :port; not a URL")
	}
	if pfx, err := netip.ParsePrefix(e); err == nil {
		return rule{prefix: pfx.Masked()}, nil
	}
	if ip, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
		return rule{prefix: netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen())}, nil
	}
	host, port := e, 0
	if h, ps, err := net.SplitHostPort(e); err == nil {
		n, perr := strconv.Atoi(ps)
		if perr != nil || n < 1 || n > 65535 {
			return rule{}, fmt.Errorf("port %q: want 1-65535", ps)
		}
		host, port = h, n
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return rule{prefix: netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()), port: port}, nil
	}
	host = canonical(host)
	r := rule{name: host, port: port}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		r.name, r.wildcard = rest, true
	}
	if !validName(r.name) || strings.Contains(r.name, "*") {
		return rule{}, errors.New("not a host name: use letters, digits, '-' and '.', with one leading \"*.\" for every name under a domain")
	}
	return r, nil
}

func canonical(name string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), ".")
}

func validName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '*') {
				return false
			}
		}
	}
	return true
}

// admitsName tells whether a rule names host (canonical) on port for
// method.
func (p *Policy) admitsName(host string, port int, method string) bool {
	for _, r := range p.rules {
		if r.name == "" || (r.port != 0 && r.port != port) || !r.admitsMethod(method) {
			continue
		}
		if r.wildcard && strings.HasSuffix(host, "."+r.name) || !r.wildcard && host == r.name {
			return true
		}
	}
	return false
}

// namesAddr tells whether an address rule names ip on port explicitly for
// method ("" for any): the one way to a loopback, private or link-local
// address.
func (p *Policy) namesAddr(ip netip.Addr, port int, method string) bool {
	for _, r := range p.rules {
		if r.name == "" && (r.port == 0 || r.port == port) && r.prefix.Contains(ip) && (method == "" || r.admitsMethod(method)) {
			return true
		}
	}
	return false
}

// internal are the addresses that are never dialed unless named: the host's
// own (loopback, the docker bridges), the LAN's, link-local (the cloud
// metadata services 169.254.169.254 and fd00:ec2::254 among them) and the
// ones that name no single host.
var internal = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT, also Alibaba's metadata 100.100.100.200
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64 of any IPv4 address, internal ones included
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2002::/16"), // 6to4 embeds an IPv4 address
}

// Internal tells whether ip is an address the proxy refuses unless the
// allow-list names it: loopback, private (RFC 1918, fc00::/7), link-local,
// unspecified, multicast and the special ranges above.
func Internal(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() || !ip.IsValid() {
		return true
	}
	for _, p := range internal {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// With is p with more entries and name mappings (what planagent itself
// needs the attempts to reach).
func (p *Policy) With(entries, hosts []string) (*Policy, error) {
	if p.open {
		return p, nil
	}
	all := append(p.Entries(), entries...)
	mapped := make([]string, 0, len(p.hosts)+len(hosts))
	for name, a := range p.hosts {
		mapped = append(mapped, name+"="+a.String())
	}
	return Parse(all, append(mapped, hosts...))
}
