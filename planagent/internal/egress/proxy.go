package egress

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/codeagent/codeagent/internal/splice"
)

// Resolver is the part of *net.Resolver the proxy uses: it resolves every
// name itself and dials the address it checked, so a name cannot be
// re-resolved to somewhere else between the check and the connection.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Refusal is one request the proxy turned away.
type Refusal struct {
	Method string // CONNECT, GET, …
	Host   string // as asked: a name or an address
	Port   int
	Reason string
	// Client is who sent the request. With Options.Authenticate it is
	// the name its credential proves ("" for a request refused for want
	// of one: whoever sent it is not known). Without, it is the user name
	// the client sent in Proxy-Authorization (Basic), "" when none: the
	// local runtime's watcher names each attempt so
	// (config.AttemptProxyEnv), a label that proves nothing.
	Client string
}

// ReasonNoCredential is the Reason of a request refused with 407 under
// Options.Authenticate.
const ReasonNoCredential = "no valid attempt credential"

func (r Refusal) String() string {
	return fmt.Sprintf("%s %s refused: %s", r.Method, net.JoinHostPort(r.Host, strconv.Itoa(r.Port)), r.Reason)
}

// Options configure a Proxy.
type Options struct {
	Policy *Policy
	// Resolver looks names up; nil is net.DefaultResolver.
	Resolver Resolver
	// Refuse are more addresses never dialed unless named (the docker
	// bridges' gateways: the host, whatever their range).
	Refuse []netip.Prefix
	// OnRefuse hears of every refusal (for the run's events and the
	// task's result); it must not block.
	OnRefuse func(Refusal)
	// Authenticate, when set, makes Proxy-Authorization (Basic) a
	// credential: a request is served only when it returns ok for the
	// user and password sent, and is then the client it names; any other
	// is answered 407 and refused (ReasonNoCredential). nil: the user
	// name only labels refusals (the local runtime, where the proxy is
	// advice).
	Authenticate func(user, pass string) (client string, ok bool)
	Logger       *slog.Logger
}

// Proxy is an HTTP proxy: CONNECT for https (and anything else over TCP)
// and absolute-URI requests for plain http, admitting only the hosts of
// its Policy.
type Proxy struct {
	opts   Options
	dialer net.Dialer
	rp     *httputil.ReverseProxy
	log    *slog.Logger
}

// refusedError carries a Refusal out of the transport's dial.
type refusedError struct{ r Refusal }

func (e *refusedError) Error() string { return e.r.String() }

// New makes a Proxy; nil Policy admits nothing.
func New(opts Options) *Proxy {
	if opts.Policy == nil {
		opts.Policy = &Policy{}
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	p := &Proxy{opts: opts, dialer: net.Dialer{Timeout: 30 * time.Second}, log: opts.Logger}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	transport := &http.Transport{
		// Never the host's own proxy settings: this is the way out.
		Proxy:                 nil,
		DialContext:           p.dialContext,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// The URL's host is the one checked; a Host header naming
			// another would reach a host nobody admitted (virtual hosting).
			pr.Out.Host = ""
		},
		Transport:     transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var ref *refusedError
			if errors.As(err, &ref) {
				// r is the request as sent on, without Proxy-Authorization.
				client, _ := r.Context().Value(clientKey{}).(string)
				p.refused(w, client, ref.r)
				return
			}
			http.Error(w, "codeagent egress proxy: "+r.URL.Host+": "+err.Error(), http.StatusBadGateway)
		},
	}
	return p
}

// ServeHTTP proxies one request: CONNECT opens a tunnel to an admitted
// host and port, an absolute http:// URL is forwarded; anything else is
// not a proxy request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	client, ok := p.client(r)
	if !ok {
		p.unauthenticated(w, r)
		return
	}
	if r.Method == http.MethodConnect {
		p.connect(w, r, client)
		return
	}
	if r.URL.Host == "" || r.URL.Scheme != "http" {
		http.Error(w, "codeagent egress proxy: only CONNECT host:port and absolute http:// URLs are proxied (set HTTPS_PROXY / HTTP_PROXY to this address)", http.StatusBadRequest)
		return
	}
	// The method is checked here, not only at the dial: a request reuses
	// the transport's idle connection to its host without dialing.
	port := 80
	if ps := r.URL.Port(); ps != "" {
		port, _ = strconv.Atoi(ps)
	}
	if ref := p.methodRefused(r.Method, r.URL.Hostname(), port); ref != nil {
		p.refused(w, client, ref.r)
		return
	}
	ctx := context.WithValue(r.Context(), methodKey{}, r.Method)
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(ctx, clientKey{}, client)))
}

// client is who sent r: with Authenticate, the name its credential
// proves (ok false: none valid); without, the label it sent.
func (p *Proxy) client(r *http.Request) (string, bool) {
	user, pass, sent := credentialOf(r)
	if p.opts.Authenticate == nil {
		return user, true
	}
	if !sent {
		return "", false
	}
	return p.opts.Authenticate(user, pass)
}

// unauthenticated answers 407, which asks the client for its credential,
// and records the refusal under no client: the name it may have sent is
// what it claims, not what it is.
func (p *Proxy) unauthenticated(w http.ResponseWriter, r *http.Request) {
	host, port := r.URL.Hostname(), 80
	target := r.URL.Host
	if r.Method == http.MethodConnect {
		target = r.Host
	}
	if h, ps, err := net.SplitHostPort(target); err == nil {
		host = h
		port, _ = strconv.Atoi(ps)
	} else if target != "" {
		host = strings.Trim(target, "[]")
	}
	ref := Refusal{Method: r.Method, Host: host, Port: port, Reason: ReasonNoCredential}
	if user, _, sent := credentialOf(r); sent {
		// Logged, never the password: which name was tried helps to find
		// a pod that sends another's.
		p.log.Warn("egress proxy credential refused", "claimed", user, "remote", r.RemoteAddr)
	}
	p.refusedTunnel(ref)
	w.Header().Set("Proxy-Authenticate", `Basic realm="codeagent egress"`)
	http.Error(w, "codeagent egress proxy: "+ref.String()+" (use the proxy URL of HTTPS_PROXY as given, with its user and password)", http.StatusProxyAuthRequired)
}

// methodRefused is the refusal of a request whose host the allow-list
// names, but only for other methods; nil otherwise (the dial checks the
// rest).
func (p *Proxy) methodRefused(method, host string, port int) *refusedError {
	pol := p.opts.Policy
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if ip = ip.Unmap(); pol.namesAddr(ip, port, "") && !pol.namesAddr(ip, port, method) {
			return &refusedError{Refusal{Method: method, Host: host, Port: port, Reason: "the egress entries for this address do not allow " + method + methodNote(method)}}
		}
		return nil
	}
	if name := canonical(host); pol.admitsName(name, port, "") && !pol.admitsName(name, port, method) {
		return &refusedError{Refusal{Method: method, Host: host, Port: port, Reason: "the egress entries for " + name + " do not allow " + method + methodNote(method)}}
	}
	return nil
}

func (p *Proxy) connect(w http.ResponseWriter, r *http.Request, client string) {
	target := r.Host
	if _, _, err := net.SplitHostPort(target); err != nil {
		http.Error(w, "codeagent egress proxy: CONNECT wants host:port, got "+target, http.StatusBadRequest)
		return
	}
	upstream, err := p.dial(r.Context(), http.MethodConnect, target)
	if err != nil {
		var ref *refusedError
		if errors.As(err, &ref) {
			p.refused(w, client, ref.r)
			return
		}
		http.Error(w, "codeagent egress proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "codeagent egress proxy: this connection cannot be tunnelled", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		conn.Close()
		upstream.Close()
		return
	}
	// What the client sent after its CONNECT (a TLS hello) may already be
	// in the server's buffer: it is checked with the rest.
	var pending []byte
	if n := buf.Reader.Buffered(); n > 0 {
		pending, _ = buf.Reader.Peek(n)
	}
	host, port := hostPort(target)
	checked := newCheckedConn(conn, pending, host, func(reason string) {
		p.refusedTunnel(Refusal{Method: http.MethodConnect, Host: host, Port: port, Reason: reason, Client: client})
	})
	splice.Conns(checked, upstream)
}

// hostPort splits a CONNECT target already known to split.
func hostPort(target string) (string, int) {
	host, ps, _ := net.SplitHostPort(target)
	port, _ := strconv.Atoi(ps)
	return host, port
}

func (p *Proxy) dialContext(ctx context.Context, _, addr string) (net.Conn, error) {
	method := http.MethodGet
	if m, ok := ctx.Value(methodKey{}).(string); ok {
		method = m
	}
	return p.dial(ctx, method, addr)
}

type methodKey struct{}

// clientKey carries the request's client to the reverse proxy's error
// handler, which sees the request without its hop-by-hop headers.
type clientKey struct{}

// dial checks hostport against the policy, resolves it and connects to the
// first admitted address.
func (p *Proxy) dial(ctx context.Context, method, hostport string) (net.Conn, error) {
	host, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w", hostport, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return nil, &refusedError{Refusal{Method: method, Host: host, Port: port, Reason: "not a port number"}}
	}
	addrs, err := p.admit(ctx, method, host, port)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		c, err := p.dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("%s: %w", hostport, errors.Join(errs...))
}

// admit returns the addresses the proxy may dial for host:port, or a
// refusedError saying why none.
func (p *Proxy) admit(ctx context.Context, method, host string, port int) ([]netip.Addr, error) {
	pol := p.opts.Policy
	refuse := func(reason string) error {
		return &refusedError{Refusal{Method: method, Host: host, Port: port, Reason: reason}}
	}
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		ip = ip.Unmap()
		if pol.namesAddr(ip, port, method) {
			return []netip.Addr{ip}, nil
		}
		if ref := p.methodRefused(method, host, port); ref != nil {
			return nil, ref
		}
		return nil, refuse("the address is not in the egress allow-list (name the host, or add the address to egress)")
	}
	name := canonical(host)
	if !validName(name) || strings.Contains(name, "*") {
		return nil, refuse("not a host name")
	}
	if !pol.admitsName(name, port, method) {
		if ref := p.methodRefused(method, host, port); ref != nil {
			return nil, ref
		}
		return nil, refuse("not in the egress allow-list (add it with --egress " + name + " or to egress: in the config)")
	}
	if a, ok := pol.hosts[name]; ok {
		// egress_hosts names the address explicitly.
		return []netip.Addr{a}, nil
	}
	found, err := p.opts.Resolver.LookupNetIP(ctx, "ip", name)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", name, err)
	}
	var ok []netip.Addr
	var inside []string
	for _, a := range found {
		a = a.Unmap()
		if (Internal(a) || p.extra(a)) && !pol.namesAddr(a, port, "") {
			inside = append(inside, a.String())
			continue
		}
		ok = append(ok, a)
	}
	if len(ok) == 0 {
		return nil, refuse(fmt.Sprintf("resolves to %s: loopback, private, link-local or the docker host's address, never reached unless egress names the address", strings.Join(inside, ", ")))
	}
	return ok, nil
}

// methodNote says how to let method through: https is one CONNECT whose
// methods inside the proxy cannot see.
func methodNote(method string) string {
	if method == http.MethodConnect {
		return " (https is a CONNECT tunnel: the methods inside it are encrypted, so a method rule admits it only when it lists CONNECT, and then admits every method inside)"
	}
	return " (add it to the entry's methods, e.g. \"GET HEAD " + method + " host\")"
}

func (p *Proxy) extra(a netip.Addr) bool {
	for _, pfx := range p.opts.Refuse {
		if pfx.Contains(a) {
			return true
		}
	}
	return false
}

func (p *Proxy) refused(w http.ResponseWriter, client string, r Refusal) {
	r.Client = client
	p.refusedTunnel(r)
	http.Error(w, "codeagent egress proxy: "+r.String(), http.StatusForbidden)
}

// credentialOf is the user and password of req's Proxy-Authorization:
// Basic; sent is false when there is none. Read leniently (busybox wget
// sends a user alone without its colon, and the userinfo as it is in the
// URL, escapes and all).
func credentialOf(req *http.Request) (user, pass string, sent bool) {
	scheme, cred, ok := strings.Cut(req.Header.Get("Proxy-Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return "", "", false
	}
	user, pass, _ = strings.Cut(string(raw), ":")
	if u, err := url.PathUnescape(user); err == nil {
		user = u
	}
	if p, err := url.PathUnescape(pass); err == nil {
		pass = p
	}
	return user, pass, true
}

// refusedTunnel logs and reports a refusal that has no HTTP answer: a
// tunnel already established is closed instead.
func (p *Proxy) refusedTunnel(r Refusal) {
	args := []any{"method", r.Method, "host", r.Host, "port", r.Port, "reason", r.Reason}
	if r.Client != "" {
		args = append(args, "client", r.Client)
	}
	p.log.Warn("egress refused", args...)
	if p.opts.OnRefuse != nil {
		p.opts.OnRefuse(r)
	}
}
