package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/internal/cmdutil"
)

// boundaryCheck is one thing the probe tried, as planagent reads it.
type boundaryCheck struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// boundaryResult is the probe's one line of JSON. Environ is what this
// process and PID 1 hold: planagent, which alone knows the key, looks for
// it there.
type boundaryResult struct {
	Checks  []boundaryCheck `json:"checks"`
	Environ []string        `json:"environ"`
}

// NewCmdBoundary builds `codingagent boundary`, planagent's check at the
// start of a run that the attempts' boundary holds, run in a short-lived
// container made like an attempt's.
func NewCmdBoundary(f *cmdutil.Factory) *cobra.Command {
	var timeout time.Duration
	var refused []string
	var disallowed string
	var proxyCredential bool
	cmd := &cobra.Command{
		Use:   "boundary",
		Short: "Try the ways out of this container and print what held as JSON",
		Long: `Try the model gateway (OPENAI_BASE_URL) with the token (OPENAI_API_KEY), without
it and with a wrong one; a host name not allowed, through the egress proxy
(HTTPS_PROXY) and directly; and each --refused address (the cloud metadata
address, the host's bridge gateway, a host loopback service) directly and
through the proxy. With --proxy-credential the proxy must take only the
credential HTTP_PROXY carries: without one and with a wrong password it must
answer 407. Print one JSON line: each check and whether it held, and
the environment of this process and of PID 1, in which planagent looks for
its key. planagent runs it at the start of every run.`,
		Args:   cobra.NoArgs,
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			res := boundaryResult{Environ: environ()}
			base := strings.TrimRight(os.Getenv("OPENAI_BASE_URL"), "/")
			token := os.Getenv("OPENAI_API_KEY")
			direct := &http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: nil}}
			// Every try through the proxy, loopback too, which
			// ProxyFromEnvironment would send direct.
			var viaProxy func(*http.Request) (*url.URL, error)
			if u, err := url.Parse(os.Getenv("HTTP_PROXY")); err == nil && u.Host != "" {
				viaProxy = http.ProxyURL(u)
			}
			proxied := &http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: viaProxy}}
			status := func(c *http.Client, target, bearer string) (int, error) {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
				if err != nil {
					return 0, err
				}
				if bearer != "" {
					req.Header.Set("Authorization", "Bearer "+bearer)
				}
				resp, err := c.Do(req)
				if err != nil {
					return 0, err
				}
				resp.Body.Close()
				return resp.StatusCode, nil
			}
			add := func(name string, ok bool, format string, args ...any) {
				res.Checks = append(res.Checks, boundaryCheck{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
			}
			if base != "" {
				code, err := status(direct, base+"/models", token)
				add("gateway with the token", err == nil && code != http.StatusUnauthorized, "HTTP %d %v", code, err)
				code, err = status(direct, base+"/models", "")
				add("gateway without a token", err == nil && code == http.StatusUnauthorized, "HTTP %d %v (want 401)", code, err)
				code, err = status(direct, base+"/models", "sk-boundary-probe-invented")
				add("gateway with an invented key", err == nil && code == http.StatusUnauthorized, "HTTP %d %v (want 401)", code, err)
			}
			if proxyCredential {
				tryProxyCredential(ctx, timeout, disallowed, add)
			}
			if disallowed != "" {
				if os.Getenv("HTTP_PROXY") != "" {
					code, err := status(proxied, "http://"+disallowed+"/", "")
					add("a host not allowed, through the proxy", code == http.StatusForbidden, "HTTP %d %v (want 403)", code, err)
				}
				conn, err := net.DialTimeout("tcp", net.JoinHostPort(disallowed, "80"), timeout)
				if err == nil {
					conn.Close()
				}
				add("a host not allowed, directly", err != nil, "dial: %v", err)
			}
			for _, target := range refused {
				name, addr, _ := strings.Cut(target, "=")
				conn, err := net.DialTimeout("tcp", addr, timeout)
				if err == nil {
					conn.Close()
				}
				add(name+", directly", err != nil, "dial %s: %v", addr, err)
				if os.Getenv("HTTP_PROXY") != "" {
					code, err := status(proxied, (&url.URL{Scheme: "http", Host: addr, Path: "/"}).String(), "")
					add(name+", through the proxy", code == http.StatusForbidden, "HTTP %d %v (want 403)", code, err)
				}
			}
			return json.NewEncoder(f.IO.Out).Encode(res)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "how long each try may take")
	cmd.Flags().StringArrayVar(&refused, "refused", nil, "name=host:port that must not be reachable; repeatable")
	cmd.Flags().StringVar(&disallowed, "disallowed", "", "a host name the allow-list does not hold")
	cmd.Flags().BoolVar(&proxyCredential, "proxy-credential", false, "the egress proxy takes only HTTP_PROXY's user and password: try it without them and with a wrong password (want 407)")
	return cmd
}

// tryProxyCredential asks the egress proxy of HTTP_PROXY, whose URL carries
// this pod's credential, for target without a credential and with a wrong
// password: both must be answered 407 before the proxy looks at the host,
// or any client of the network could use it under any name.
func tryProxyCredential(ctx context.Context, timeout time.Duration, target string, add func(string, bool, string, ...any)) {
	u, err := url.Parse(os.Getenv("HTTP_PROXY"))
	if err != nil || u.Host == "" || u.User == nil {
		add("the egress proxy's credential", false, "HTTP_PROXY carries no credential to withhold")
		return
	}
	if target == "" {
		target = "boundary-probe.invalid"
	}
	user := u.User.Username()
	for _, try := range []struct {
		name string
		cred *url.Userinfo
	}{
		{"the egress proxy without a credential", nil},
		{"the egress proxy with a wrong password", url.UserPassword(user, "boundary-probe-wrong")},
	} {
		proxy := *u
		proxy.User = try.cred
		c := &http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: http.ProxyURL(&proxy)}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+target+"/", nil)
		code := 0
		if err == nil {
			var resp *http.Response
			if resp, err = c.Do(req); err == nil {
				code = resp.StatusCode
				resp.Body.Close()
			}
		}
		add(try.name, code == http.StatusProxyAuthRequired, "HTTP %d %v (want 407)", code, err)
	}
}

// environ is this process's environment and PID 1's (the agent's, in an
// attempt), as far as they can be read.
func environ() []string {
	out := os.Environ()
	if b, err := os.ReadFile("/proc/1/environ"); err == nil {
		for _, kv := range strings.Split(string(b), "\x00") {
			if kv != "" {
				out = append(out, kv)
			}
		}
	}
	return out
}
