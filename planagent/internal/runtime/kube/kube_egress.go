package kube

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/codeagent/codeagent/planagent/internal/egress"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
)

// The egress proxy for the kubernetes runtime under closed egress: the
// run's NetworkPolicy lets the pods reach only planagent, so the hosts
// named in egress: are reached through planagent's CONNECT/forward proxy,
// which listens beside the model gateway (same address, a port of its
// own that the policy opens too). One proxy serves every pod of the run;
// each pod's HTTP(S)_PROXY carries its attempt's name as the user and a
// random secret as the password (proxyCreds), sent back in
// Proxy-Authorization: the proxy serves only a pod whose secret is valid
// for the name it sends, so a refusal's task and attempt are proven and
// one pod cannot go out as another.
//
// The secret is the proxy's own, not the attempt's gateway token: a proxy
// URL is printed by many tools (pip, npm, git config, error messages) and
// acceptance commands and the probe get one but no token; leaked, it
// opens the allow-list under one attempt's name for that attempt's life,
// never the model and its budget.

// probeClient is the proxy user of the boundary probe's pod: its refusals
// are expected, not the run's.
const probeClient = "boundary"

// runClient is the proxy user of an acceptance or setup command that runs
// in no attempt's copy (the shared workspace): its refusals are the run's.
// An attempt's name always has a dot, so it is none.
const runClient = "run"

// proxyCreds are the egress proxy's credentials: for each name (an
// attempt's, probeClient, runClient) the secrets issued or taken again for
// it, each valid until revoked (when its attempt, command or probe ends).
type proxyCreds struct {
	mu   sync.Mutex
	seq  uint64
	live map[string]map[uint64]string // name → grant → secret
}

// secretLen is the length of a secret: hex of 32 random bytes, which no
// client escapes in a URL.
const secretLen = 64

// issue makes a new secret for name.
func (c *proxyCreds) issue(name string) (string, func(), error) {
	b := make([]byte, secretLen/2)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("egress proxy credential: %w", err)
	}
	secret := hex.EncodeToString(b)
	return secret, c.grant(name, secret), nil
}

// grant makes secret valid for name (one a killed process issued, read
// back from its Job) until the returned function revokes it.
func (c *proxyCreds) grant(name, secret string) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live == nil {
		c.live = map[string]map[uint64]string{}
	}
	if c.live[name] == nil {
		c.live[name] = map[uint64]string{}
	}
	c.seq++
	id := c.seq
	c.live[name][id] = secret
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			delete(c.live[name], id)
			if len(c.live[name]) == 0 {
				delete(c.live, name)
			}
		})
	}
}

// authenticate is egress.Options.Authenticate: ok when pass is a live
// secret of user, compared in constant time.
func (c *proxyCreds) authenticate(user, pass string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ok := false
	for _, s := range c.live[user] {
		if subtle.ConstantTimeCompare([]byte(s), []byte(pass)) == 1 {
			ok = true
		}
	}
	return user, ok && pass != ""
}

// validSecret reports whether s has the shape of an issued secret: a Job
// of an older planagent (password "attempt") has none to take again.
func validSecret(s string) bool {
	if len(s) != secretLen {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// issueProxy is a credential for a pod named user at the egress proxy and
// its revocation; none without the proxy.
func (k *Kube) issueProxy(user string) (string, func(), error) {
	if k.proxyURL == "" {
		return "", func() {}, nil
	}
	return k.creds.issue(user)
}

// jobProxyCredential is the user and password of the egress proxy URL an
// attempt's Job was given ("" none).
func jobProxyCredential(j *batchv1.Job) (user, pass string) {
	u, err := url.Parse(jobEnv(j, "HTTPS_PROXY"))
	if err != nil || u.User == nil {
		return "", ""
	}
	pass, _ = u.User.Password()
	return u.User.Username(), pass
}

// egressStateFile keeps host:port of the run's egress proxy, so that a
// resumed planagent listens where its adopted Jobs were told to go.
func (k *Kube) egressStateFile() string {
	return filepath.Join(k.opts.Volumes.Run(k.opts.RunID), "kube-egress")
}

// serveEgress starts the egress proxy on host, the gateway's address (on
// the port the run's earlier process used when it can, else any), under
// closed egress with the gateway (the NetworkPolicy's condition too).
func (k *Kube) serveEgress(host string) error {
	if !k.opts.ClosedEgress || k.gatewayBase == "" {
		return nil
	}
	pol, err := kubeOwnEgress(k.opts.Egress, k.opts.Env)
	if err != nil {
		return err
	}
	var l net.Listener
	if b, err := os.ReadFile(k.egressStateFile()); err == nil {
		if h, p, err := net.SplitHostPort(strings.TrimSpace(string(b))); err == nil && h == host {
			if l, err = net.Listen("tcp", net.JoinHostPort(host, p)); err != nil {
				k.log.Warn("the run's egress proxy cannot listen where its earlier process did: attempts adopted from it run again", "address", net.JoinHostPort(h, p), "err", err)
			}
		}
	}
	if l == nil {
		if l, err = net.Listen("tcp", net.JoinHostPort(host, "0")); err != nil {
			return fmt.Errorf("kubernetes runtime: the egress proxy cannot listen on %s beside the model gateway: %w", host, err)
		}
	}
	hp := net.JoinHostPort(host, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	werr := os.MkdirAll(filepath.Dir(k.egressStateFile()), 0o755)
	if werr == nil {
		werr = os.WriteFile(k.egressStateFile(), []byte(hp+"\n"), 0o644)
	}
	if werr != nil {
		k.log.Warn("could not record the egress proxy's address: a resumed run cannot adopt this one's Jobs", "err", werr)
	}
	// This host's address on the pods' side is never dialed unless named,
	// whatever its range: its services are not the pods' to reach.
	var refuse []netip.Prefix
	if a, err := netip.ParseAddr(host); err == nil {
		refuse = append(refuse, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	srv := &http.Server{ReadHeaderTimeout: 30 * time.Second,
		Handler: egress.New(egress.Options{Policy: pol, Refuse: refuse, Logger: k.log.With("egress", "proxy"), OnRefuse: k.egressRefused,
			Authenticate: k.creds.authenticate})}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			k.log.Error("the egress proxy stopped serving", "err", err)
		}
	}()
	k.proxy, k.proxyURL = srv, "http://"+hp
	k.log.Info("the egress proxy serves the run's pods", "url", k.proxyURL, "allowed", strings.Join(pol.Entries(), ","))
	return nil
}

// egressRefused reports a refusal under the task and attempt the client's
// credential proves, the run's for one without a valid credential (or a
// command of the run's); the boundary probe's while it runs are expected
// and dropped (the proxy's log has them).
func (k *Kube) egressRefused(r egress.Refusal) {
	if k.probing.Load() && (r.Client == probeClient || r.Reason == egress.ReasonNoCredential && r.Host == probeDisallowed) {
		// The probe's own tries, those without its credential too: no
		// credential names them, the name they ask for does.
		return
	}
	if k.opts.EgressRefused == nil {
		return
	}
	task, n, _ := attempt.ParseName(r.Client)
	k.opts.EgressRefused(task, n, r)
}

// closeEgress stops the proxy; a tunnel still open ends with it.
func (k *Kube) closeEgress() {
	if k.proxy != nil {
		_ = k.proxy.Close()
	}
}

// proxyEnv is a pod's way to the egress proxy: HTTP(S)_PROXY (both
// spellings) with user and its secret as the proxy's credential, and
// NO_PROXY for loopback and direct (the gateway's host for a pod that
// calls the model, which the policy lets it reach itself). None without
// the proxy.
func (k *Kube) proxyEnv(user, secret string, direct ...string) []corev1.EnvVar {
	if k.proxyURL == "" {
		return nil
	}
	u, err := url.Parse(k.proxyURL)
	if err != nil {
		return nil
	}
	u.User = url.UserPassword(user, secret)
	proxy := u.String()
	noProxy := strings.Join(append([]string{"localhost", "127.0.0.1", "::1"}, direct...), ",")
	return []corev1.EnvVar{
		{Name: "HTTPS_PROXY", Value: proxy}, {Name: "https_proxy", Value: proxy},
		{Name: "HTTP_PROXY", Value: proxy}, {Name: "http_proxy", Value: proxy},
		{Name: "NO_PROXY", Value: noProxy}, {Name: "no_proxy", Value: noProxy},
	}
}

// gatewayHost is the model gateway's host as the pods reach it ("" none).
func (k *Kube) gatewayHost() string {
	u, err := url.Parse(k.gatewayBase)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// proxyPort is the egress proxy's port, 0 without one.
func (k *Kube) proxyPort() int {
	u, err := url.Parse(k.proxyURL)
	if err != nil {
		return 0
	}
	p, _ := strconv.Atoi(u.Port())
	return p
}

// jobProxy is host:port of the egress proxy an attempt's Job was given
// ("" none).
func jobProxy(j *batchv1.Job) string {
	u, err := url.Parse(jobEnv(j, "HTTPS_PROXY"))
	if err != nil {
		return ""
	}
	return u.Host
}

// kubeOwnEgress adds to the allow-list the traces' collector when the
// pods are told one that is not on loopback (a loopback one is the pod's
// own, which the proxy is not asked for: NO_PROXY). The model server is
// never added: on kubernetes the proxy serves only runs with the gateway.
func kubeOwnEgress(p *egress.Policy, env map[string]string) (*egress.Policy, error) {
	if p == nil {
		var err error
		if p, err = egress.Parse(nil, nil); err != nil {
			return nil, err
		}
	}
	var entries []string
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		u, err := url.Parse(env[k])
		if err != nil || u.Hostname() == "" {
			continue
		}
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			continue
		}
		entries = append(entries, egress.EntryFor(u))
	}
	if len(entries) == 0 {
		return p, nil
	}
	return p.With(entries, nil)
}
