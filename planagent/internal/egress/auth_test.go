package egress

import (
	"bufio"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// With Authenticate the proxy serves only a request whose credential is
// valid for the name it sends: none, a wrong password or another
// attempt's name with this one's password is answered 407 and refused as
// nobody's; the right one reaches the allowed host, and its refusals are
// its proven name's, for plain http and CONNECT alike. The credential
// never reaches the upstream.
func TestAuthenticateMakesTheUserACredential(t *testing.T) {
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
	pol, err := Parse([]string{"allowed.test"}, []string{"allowed.test=127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{"fetch.1": "s3cret-of-fetch-1", "other.2": "s3cret-of-other-2"}
	seen := &refusals{}
	srv := httptest.NewServer(New(Options{Policy: pol, Resolver: fakeDNS{}, OnRefuse: seen.add,
		Authenticate: func(user, pass string) (string, bool) {
			want, ok := secrets[user]
			return user, ok && subtle.ConstantTimeCompare([]byte(want), []byte(pass)) == 1
		}}))
	defer srv.Close()
	proxy, _ := url.Parse(srv.URL)
	as := func(user, pass string) *http.Client {
		u := *proxy
		if user != "" {
			u.User = url.UserPassword(user, pass)
		}
		return viaProxy(&u, nil)
	}
	code := func(c *http.Client, target string) int {
		resp, err := c.Get(target)
		if err != nil {
			// A refused CONNECT is an error of the client's: its text
			// carries the proxy's status.
			if strings.Contains(err.Error(), "Proxy Authentication Required") {
				return http.StatusProxyAuthRequired
			}
			if strings.Contains(err.Error(), "Forbidden") {
				return http.StatusForbidden
			}
			t.Fatalf("GET %s: %v", target, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusProxyAuthRequired && !strings.HasPrefix(resp.Header.Get("Proxy-Authenticate"), "Basic") {
			t.Errorf("407 without a Basic challenge: %q", resp.Header.Get("Proxy-Authenticate"))
		}
		return resp.StatusCode
	}
	allowed := "http://allowed.test:" + p + "/"
	for _, c := range []struct {
		name   string
		client *http.Client
		want   int
	}{
		{"no credential", as("", ""), http.StatusProxyAuthRequired},
		{"a wrong password", as("fetch.1", "attempt"), http.StatusProxyAuthRequired},
		{"another attempt's name with its own password", as("other.2", secrets["fetch.1"]), http.StatusProxyAuthRequired},
		{"an unknown name", as("nobody.1", secrets["fetch.1"]), http.StatusProxyAuthRequired},
		{"its own credential", as("fetch.1", secrets["fetch.1"]), http.StatusOK},
	} {
		if got := code(c.client, allowed); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if got := code(as("fetch.1", "wrong"), "https://allowed.test:"+p+"/"); got != http.StatusProxyAuthRequired {
		t.Errorf("CONNECT with a wrong password: %d, want 407", got)
	}
	// Its refusals are its own, proven.
	if got := code(as("fetch.1", secrets["fetch.1"]), "http://denied.test:"+p+"/"); got != http.StatusForbidden {
		t.Errorf("a name not allowed, with the credential: %d, want 403", got)
	}
	if got := code(as("other.2", secrets["other.2"]), "https://denied.test:"+p+"/"); got != http.StatusForbidden {
		t.Errorf("CONNECT to a name not allowed, with the credential: %d, want 403", got)
	}
	// A raw CONNECT without Proxy-Authorization: 407, the tunnel never opened.
	conn, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "CONNECT allowed.test:%s HTTP/1.1\r\nHost: allowed.test:%s\r\n\r\n", p, p)
	line, err := bufio.NewReader(conn).ReadString('\n')
	conn.Close()
	if err != nil || !strings.Contains(line, " 407 ") {
		t.Errorf("raw CONNECT without a credential: %q (%v), want 407", line, err)
	}

	var got []string
	for _, r := range seen.list() {
		got = append(got, fmt.Sprintf("%s %s:%d %q %s", r.Method, r.Host, r.Port, r.Client, r.Reason))
	}
	nobody := func(method string) string {
		return fmt.Sprintf("%s allowed.test:%s %q %s", method, p, "", ReasonNoCredential)
	}
	want := []string{nobody("GET"), nobody("GET"), nobody("GET"), nobody("GET"), nobody("CONNECT"),
		fmt.Sprintf("GET denied.test:%s %q %s", p, "fetch.1", "not in the egress allow-list (add it with --egress denied.test or to egress: in the config)"),
		fmt.Sprintf("CONNECT denied.test:%s %q %s", p, "other.2", "not in the egress allow-list (add it with --egress denied.test or to egress: in the config)"),
		nobody("CONNECT"),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("refusals:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(upstreamAuth) != 1 || upstreamAuth[0] != "" {
		t.Errorf("the upstream saw %d requests with Proxy-Authorization %q, want one without", len(upstreamAuth), upstreamAuth)
	}
}
