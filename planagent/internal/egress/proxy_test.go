package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// fakeDNS answers from a table: a name that resolves to an internal
// address stands in for DNS rebinding and for split-horizon names.
type fakeDNS map[string][]netip.Addr

func (f fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

type refusals struct {
	mu  sync.Mutex
	got []Refusal
}

func (r *refusals) add(x Refusal) { r.mu.Lock(); r.got = append(r.got, x); r.mu.Unlock() }
func (r *refusals) list() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Refusal(nil), r.got...)
}

// start serves a Proxy for the allow-list on loopback and returns its URL
// and the refusals it reported.
func start(t *testing.T, entries, hosts []string, dns fakeDNS) (*url.URL, *refusals) {
	t.Helper()
	pol, err := Parse(entries, hosts)
	if err != nil {
		t.Fatal(err)
	}
	seen := &refusals{}
	srv := httptest.NewServer(New(Options{Policy: pol, Resolver: dns, OnRefuse: seen.add}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u, seen
}

func port(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

func viaProxy(proxy *url.URL, tlsConf *tls.Config) *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy), TLSClientConfig: tlsConf}}
}

func TestForwardAdmitsOnlyNamedHosts(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s %s", r.Method, r.Host)
	}))
	defer backend.Close()
	p := port(t, backend.URL)
	proxy, seen := start(t, []string{"allowed.test"}, []string{"allowed.test=127.0.0.1"}, fakeDNS{
		"denied.test": {netip.MustParseAddr("127.0.0.1")},
	})
	c := viaProxy(proxy, nil)

	resp, err := c.Get("http://allowed.test:" + p + "/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hello GET allowed.test:"+p {
		t.Fatalf("allowed host: %d %q", resp.StatusCode, body)
	}

	for _, target := range []string{
		"http://denied.test:" + p + "/",      // not listed
		"http://127.0.0.1:" + p + "/",        // loopback literal
		"http://169.254.169.254/latest/",     // metadata literal
		"http://[fd00:ec2::254]/latest/",     // AWS IPv6 metadata
		"http://[::ffff:127.0.0.1]:" + p,     // v4-mapped loopback
		"http://sub.allowed.test:" + p + "/", // an exact name does not cover its subdomains
	} {
		resp, err := c.Get(target)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "refused") {
			t.Errorf("%s: want 403 refused, got %d %q", target, resp.StatusCode, body)
		}
	}
	if got := len(seen.list()); got != 6 {
		t.Errorf("refusals reported: %d, want 6: %v", got, seen.list())
	}
}

func TestForwardHostHeaderCannotSteer(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Host)
	}))
	defer backend.Close()
	p := port(t, backend.URL)
	proxy, _ := start(t, []string{"allowed.test"}, []string{"allowed.test=127.0.0.1"}, nil)
	// Raw: Go's client would put its Host into the request line itself.
	conn, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET http://allowed.test:%s/ HTTP/1.1\r\nHost: metadata.google.internal\r\nConnection: close\r\n\r\n", p)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "allowed.test:"+p {
		t.Fatalf("upstream saw Host %q, want the URL's host", body)
	}
}

func TestRedirectToInternalAddressRefused(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/meta":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/rebind":
			http.Redirect(w, r, "http://rebind.test:"+r.URL.Query().Get("p")+"/", http.StatusFound)
		default:
			fmt.Fprint(w, "reached")
		}
	}))
	defer backend.Close()
	p := port(t, backend.URL)
	// rebind.test is allowed by name but resolves to loopback: the
	// resolved address is checked, not just the name.
	proxy, seen := start(t, []string{"allowed.test", "rebind.test"}, []string{"allowed.test=127.0.0.1"}, fakeDNS{
		"rebind.test": {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.1.2.3")},
	})
	c := viaProxy(proxy, nil)
	for _, path := range []string{"/meta", "/rebind?p=" + p} {
		resp, err := c.Get("http://allowed.test:" + p + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: redirect followed to %d %q, want 403", path, resp.StatusCode, body)
		}
	}
	got := seen.list()
	if len(got) != 2 || got[0].Host != "169.254.169.254" || got[1].Host != "rebind.test" || !strings.Contains(got[1].Reason, "127.0.0.1, 10.1.2.3") {
		t.Fatalf("refusals: %+v", got)
	}
}

func TestNamedAddressAdmitsInternal(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer backend.Close()
	p := port(t, backend.URL)
	// A name resolving to loopback is dialed when the address (and port)
	// is named; another port of the same address is not.
	proxy, _ := start(t, []string{"mirror.test", "127.0.0.1:" + p}, nil, fakeDNS{
		"mirror.test": {netip.MustParseAddr("127.0.0.1")},
	})
	c := viaProxy(proxy, nil)
	for target, want := range map[string]int{
		"http://mirror.test:" + p + "/": 200,
		"http://127.0.0.1:" + p + "/":   200,
		"http://127.0.0.1:1/":           403,
		"http://mirror.test:1/":         403,
	} {
		resp, err := c.Get(target)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", target, resp.StatusCode, want)
		}
	}
}

func TestConnectTunnelsTLSToAllowedHostOnly(t *testing.T) {
	backend := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "secure")
	}))
	defer backend.Close()
	p := port(t, backend.URL)
	// httptest's certificate is for example.com: the name goes through
	// the tunnel to TLS unchanged.
	proxy, seen := start(t, []string{"*.example.com", "example.com"}, []string{"example.com=127.0.0.1", "www.example.com=127.0.0.1"}, nil)
	tlsConf := backend.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	c := viaProxy(proxy, tlsConf)
	resp, err := c.Get("https://example.com:" + p + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "secure" {
		t.Fatalf("through the tunnel: %q", body)
	}

	// Raw CONNECTs, as any client sends them.
	for target, want := range map[string]string{
		"www.example.com:" + p: "200",
		"github.com:443":       "403",
		"127.0.0.1:" + p:       "403",
		"169.254.169.254:80":   "403",
		"example.com":          "400",
	} {
		conn, err := net.Dial("tcp", proxy.Host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		line, err := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if err != nil || !strings.Contains(line, " "+want+" ") {
			t.Errorf("CONNECT %s: %q (%v), want %s", target, line, err, want)
		}
	}
	got := seen.list()
	if len(got) != 3 || got[0].Method != http.MethodConnect {
		t.Fatalf("refusals: %+v", got)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      []string
		want    string
		wantErr string
	}{
		{in: []string{"proxy.golang.org", "*.GitHub.com.", "10.0.0.0/8", "10.1.1.1:8080", "[::1]:80", "pypi.org:443"},
			want: "proxy.golang.org *.github.com 10.0.0.0/8 10.1.1.1:8080 [::1]:80 pypi.org:443"},
		{in: []string{"open"}, want: "open"},
		{in: []string{"open", "pypi.org"}, wantErr: "cannot be combined"},
		{in: []string{"https://pypi.org"}, wantErr: "not a URL"},
		{in: []string{"pypi.org:99999"}, wantErr: "port"},
		{in: []string{"a.*.com"}, wantErr: "not a host name"},
		{in: []string{""}, wantErr: "empty"},
		{in: []string{"get  Head options GET pypi.org", "POST 10.0.0.5:8080", "CONNECT GET *.example.com"},
			want: "GET HEAD OPTIONS pypi.org POST 10.0.0.5:8080 CONNECT GET *.example.com"},
		{in: []string{"GET, pypi.org"}, wantErr: "method"},
		{in: []string{"GET https://pypi.org"}, wantErr: "not a URL"},
	} {
		p, err := Parse(tc.in, nil)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := strings.Join(p.Entries(), " "); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
	if _, err := Parse(nil, []string{"mirror"}); err == nil {
		t.Error("egress_hosts without an address accepted")
	}
}

func TestInternal(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "10.2.3.4": true, "172.17.0.1": true, "192.168.1.1": true,
		"169.254.169.254": true, "fd00:ec2::254": true, "::1": true, "0.0.0.0": true,
		"100.100.100.200": true, "::ffff:10.0.0.1": true, "fe80::1": true, "64:ff9b::a00:1": true,
		"8.8.8.8": false, "2606:4700::1111": false, "140.82.112.3": false,
	} {
		if got := Internal(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Internal(%s) = %v, want %v", addr, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"proxy.golang.org", "*.github.com", "10.0.0.0/8", "[::1]:80", "open", "a=b", "GET HEAD pypi.org:80", "post 10.0.0.0/8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse([]string{s}, nil)
		if err != nil {
			return
		}
		// What parses renders to something that parses to the same.
		again, err := Parse(p.Entries(), nil)
		if err != nil || strings.Join(again.Entries(), " ") != strings.Join(p.Entries(), " ") {
			t.Fatalf("%q → %q → %v %v", s, p.Entries(), again, err)
		}
	})
}

// connectRaw opens a tunnel through the proxy to target and returns it
// once the proxy answered 200.
func connectRaw(t *testing.T, proxy *url.URL, target string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	// Byte by byte: nothing after the answer's head may be swallowed.
	var head []byte
	one := make([]byte, 1)
	for !strings.HasSuffix(string(head), "\r\n\r\n") {
		if _, err := conn.Read(one); err != nil {
			t.Fatalf("CONNECT %s: %q: %v", target, head, err)
		}
		head = append(head, one[0])
	}
	if !strings.HasPrefix(string(head), "HTTP/1.1 200 ") {
		t.Fatalf("CONNECT %s: %q", target, head)
	}
	return conn
}

// A TLS client that names another host in its ClientHello than in its
// CONNECT (domain fronting through an allowed name) is cut off before its
// hello reaches the server, and the refusal is reported; the same tunnel
// with the CONNECT host as the server name completes its handshake.
func TestConnectRefusesAnotherServerName(t *testing.T) {
	var hellos sync.Map // server names the backend saw
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "secure")
	}))
	backend.TLS = &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		hellos.Store(h.ServerName, true)
		return nil, nil
	}}
	backend.StartTLS()
	defer backend.Close()
	p := port(t, backend.URL)
	proxy, seen := start(t, []string{"example.com"}, []string{"example.com=127.0.0.1"}, nil)
	roots := backend.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs

	// The honest client: its server name is the CONNECT host.
	conn := tls.Client(connectRaw(t, proxy, "example.com:"+p), &tls.Config{ServerName: "example.com", RootCAs: roots})
	if err := conn.Handshake(); err != nil {
		t.Fatalf("handshake with the CONNECT host as the server name: %v", err)
	}
	conn.Close()

	// The fronting client: CONNECT example.com, SNI another name (it
	// skips verification: the point is what the proxy lets through).
	for _, name := range []string{"evil.test", "www.example.com"} {
		front := tls.Client(connectRaw(t, proxy, "example.com:"+p), &tls.Config{ServerName: name, InsecureSkipVerify: true}) //nolint:gosec // the client of a fronting attempt, not a real one
		if err := front.Handshake(); err == nil {
			t.Errorf("a handshake naming %s through a CONNECT to example.com completed", name)
		}
		front.Close()
		if _, ok := hellos.Load(name); ok {
			t.Errorf("the server got a ClientHello naming %s", name)
		}
	}
	got := seen.list()
	if len(got) != 2 {
		t.Fatalf("refusals: %+v, want the two fronting tunnels", got)
	}
	for _, r := range got {
		if r.Method != http.MethodConnect || r.Host != "example.com" || !strings.Contains(r.Reason, "(SNI)") || !strings.Contains(r.Reason, "domain fronting") {
			t.Errorf("refusal %+v does not say the server name was not the CONNECT host", r)
		}
	}

	// Through an HTTP client too: the transport's server name is the
	// URL's host unless set otherwise.
	tlsConf := &tls.Config{ServerName: "evil.test", InsecureSkipVerify: true} //nolint:gosec // as above
	if resp, err := viaProxy(proxy, tlsConf).Get("https://example.com:" + p + "/"); err == nil {
		resp.Body.Close()
		t.Error("an HTTPS request with another server name went through")
	}
	if n := len(seen.list()); n != 3 {
		t.Errorf("%d refusals after the HTTP client's, want 3", n)
	}
}

// A tunnel that does not start with TLS is passed on unchanged, and a
// server that speaks first is heard before the client says anything.
func TestConnectPassesOtherProtocols(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprint(c, "BANNER\n")
		line, _ := bufio.NewReader(c).ReadString('\n')
		fmt.Fprint(c, "echo "+line)
	}()
	proxy, seen := start(t, []string{"banner.test"}, []string{"banner.test=127.0.0.1"}, nil)
	conn := connectRaw(t, proxy, fmt.Sprintf("banner.test:%d", l.Addr().(*net.TCPAddr).Port))
	r := bufio.NewReader(conn)
	if line, err := r.ReadString('\n'); line != "BANNER\n" {
		t.Fatalf("the server's banner: %q (%v)", line, err)
	}
	fmt.Fprint(conn, "hello\n")
	if line, err := r.ReadString('\n'); line != "echo hello\n" {
		t.Fatalf("the echo: %q (%v)", line, err)
	}
	if got := seen.list(); len(got) != 0 {
		t.Errorf("refusals: %+v", got)
	}
}

// A host named with methods takes those methods in plain http, on a fresh
// connection and on one the proxy keeps from an earlier request alike; a
// tunnel is CONNECT, admitted only when the entry lists it.
func TestMethodRules(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.Method)
	}))
	defer backend.Close()
	p := port(t, backend.URL)
	proxy, seen := start(t, []string{"GET HEAD OPTIONS ro.test", "rw.test", "CONNECT GET tunnel.test"},
		[]string{"ro.test=127.0.0.1", "rw.test=127.0.0.1", "tunnel.test=127.0.0.1"}, nil)
	c := viaProxy(proxy, nil)
	do := func(method, host string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), method, "http://"+host+":"+p+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, host, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, tc := range []struct {
		method, host string
		want         int
	}{
		{"GET", "ro.test", 200},    // opens a connection the proxy keeps
		{"POST", "ro.test", 403},   // would reuse it
		{"DELETE", "ro.test", 403}, //
		{"HEAD", "ro.test", 200},
		{"POST", "rw.test", 200},
		{"POST", "tunnel.test", 403},
	} {
		code, body := do(tc.method, tc.host)
		if code != tc.want {
			t.Errorf("%s %s: %d %q, want %d", tc.method, tc.host, code, body, tc.want)
		}
		if code == 403 && !strings.Contains(body, "do not allow "+tc.method) {
			t.Errorf("%s %s: the refusal does not name the method: %q", tc.method, tc.host, body)
		}
	}
	got := seen.list()
	if len(got) != 3 || got[0].Method != "POST" || got[0].Host != "ro.test" || got[1].Method != "DELETE" {
		t.Errorf("refusals: %+v", got)
	}
	// https: a CONNECT, only for the entry that lists it.
	for target, want := range map[string]string{"ro.test:" + p: "403", "tunnel.test:" + p: "200", "rw.test:" + p: "200"} {
		conn, err := net.Dial("tcp", proxy.Host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		line, err := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if err != nil || !strings.Contains(line, " "+want+" ") {
			t.Errorf("CONNECT %s: %q (%v), want %s", target, line, err, want)
		}
	}
	if got := seen.list(); len(got) != 4 || !strings.Contains(got[3].Reason, "methods inside it are encrypted") {
		t.Errorf("the CONNECT refusal does not say why: %+v", got)
	}
}

// A client that names itself in Proxy-Authorization (the local runtime's
// attempts do, config.AttemptProxyEnv) is named on its refusals, for plain
// http, CONNECT and a method rule alike; the name never reaches the
// upstream; a client without it, or with another scheme, is "".
func TestRefusalsNameTheClient(t *testing.T) {
	var upstreamAuth []string
	var mu sync.Mutex
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		upstreamAuth = append(upstreamAuth, r.Header.Get("Proxy-Authorization"))
		mu.Unlock()
		fmt.Fprint(w, "ok")
	}))
	defer backend.Close()
	p := port(t, backend.URL)
	proxy, seen := start(t, []string{"allowed.test", "GET only-get.test"}, []string{"allowed.test=127.0.0.1", "only-get.test=127.0.0.1"}, fakeDNS{})
	named := *proxy
	named.User = url.UserPassword("build.api.3", "attempt")
	c := viaProxy(&named, nil)
	get := func(c *http.Client, method, target string) int {
		req, err := http.NewRequest(method, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0 // a refused CONNECT is an error of the client's
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(c, http.MethodGet, "http://allowed.test:"+p+"/"); code != http.StatusOK {
		t.Fatalf("allowed: %d", code)
	}
	get(c, http.MethodGet, "http://denied.test:"+p+"/")
	get(c, http.MethodGet, "https://denied.test:"+p+"/")
	get(c, http.MethodPost, "http://only-get.test:"+p+"/")
	get(viaProxy(proxy, nil), http.MethodGet, "http://denied.test:"+p+"/")
	// busybox wget sends the userinfo as it is, without decoding it.
	raw, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(raw, "GET http://denied.test:%s/ HTTP/1.1\r\nHost: denied.test\r\nProxy-Authorization: Basic %s\r\nConnection: close\r\n\r\n",
		p, "Zml4LjI=") // "fix.2", no colon
	_, _ = io.Copy(io.Discard, raw)
	raw.Close()

	var got []string
	for _, r := range seen.list() {
		got = append(got, r.Method+" "+r.Host+" "+r.Client)
	}
	want := []string{"GET denied.test build.api.3", "CONNECT denied.test build.api.3", "POST only-get.test build.api.3", "GET denied.test ", "GET denied.test fix.2"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("refusals %q, want %q", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range upstreamAuth {
		if a != "" {
			t.Errorf("the upstream got Proxy-Authorization %q", a)
		}
	}
}
