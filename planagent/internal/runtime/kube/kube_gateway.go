package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// The model gateway for the kubernetes runtime: the pods get the gateway's
// URL and a token of their attempt, never the key (no Secret holds it, no
// Job spec names it). planagent listens on an address the pods route to:
// GatewayAddr when set, else in a pod of the cluster its own pod IP, else
// (on a host) the address this host reaches the API server from.

// errNoGatewayAddr: no address of this host was found that the pods reach.
var errNoGatewayAddr = errors.New("kubernetes runtime: the model gateway needs an address of this host that the cluster's pods reach: " +
	"set kube_gateway (e.g. kube_gateway: 10.244.0.1, the CNI bridge's gateway, or the host's address on the nodes' network), " +
	"or run planagent in a pod of the cluster")

// gatewayDownGrace is how long an attempt's agent keeps trying the gateway
// while nothing listens (config.ModelDownGraceEnv): planagent killed and
// resumed, by a person or by its Job's restart, serves it again on the
// same address within minutes; an agent waiting longer than that holds a
// pod for a run nobody resumes. The Job's deadline (task_timeout) bounds
// it too.
const gatewayDownGrace = "10m"

// gatewayStateFile keeps host:port of the run's gateway in the run's
// directory, so that a resumed planagent listens where its adopted Jobs
// were told to go.
func (k *Kube) gatewayStateFile() string {
	return filepath.Join(k.opts.Volumes.Run(k.opts.RunID), "kube-gateway")
}

// listenGateway starts the gateway on addr (host or host:port; no port:
// the run's earlier one when the run had one on that host, else any) and
// returns the base URL the pods use.
func (k *Kube) listenGateway(addr string) (string, error) {
	if addr == "" {
		return "", errNoGatewayAddr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, "0"
	}
	var got *net.TCPAddr
	if port == "0" {
		if b, err := os.ReadFile(k.gatewayStateFile()); err == nil {
			if h, p, err := net.SplitHostPort(strings.TrimSpace(string(b))); err == nil && h == host {
				if got, err = k.opts.Gateway.Listen(net.JoinHostPort(host, p)); err != nil {
					k.log.Warn("the run's model gateway cannot listen where its earlier process did: attempts adopted from it run again", "address", net.JoinHostPort(h, p), "err", err)
				}
			}
		}
	}
	if got == nil {
		if got, err = k.opts.Gateway.Listen(net.JoinHostPort(host, port)); err != nil {
			return "", fmt.Errorf("kubernetes runtime: the model gateway cannot listen on %s (kube_gateway must be an address of this host that the pods reach): %w", addr, err)
		}
	}
	hp := net.JoinHostPort(host, strconv.Itoa(got.Port))
	werr := os.MkdirAll(filepath.Dir(k.gatewayStateFile()), 0o755)
	if werr == nil {
		werr = os.WriteFile(k.gatewayStateFile(), []byte(hp+"\n"), 0o644)
	}
	if err := werr; err != nil {
		k.log.Warn("could not record the model gateway's address: a resumed run cannot adopt this one's Jobs", "err", err)
	}
	return "http://" + hp + k.opts.Gateway.Path(), nil
}

// orphanTokens lists the run's unfinished attempt Jobs a killed planagent
// left and the gateway tokens their pods hold, by Job name, so that the
// gateway takes them again before it listens: an agent retrying meanwhile
// never meets a gateway that refuses its token.
func orphanTokens(ctx context.Context, api kubeAPI, ns, run string) (map[string]*batchv1.Job, error) {
	list, err := api.Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: labelSelector(map[string]string{layout.LabelRun: labelValue(run), layout.LabelRole: "attempt"})})
	if err != nil {
		return nil, fmt.Errorf("list the run's jobs in namespace %s: %w", ns, err)
	}
	jobs := map[string]*batchv1.Job{}
	for i := range list.Items {
		j := &list.Items[i]
		if j.DeletionTimestamp == nil && jobFinished(j) == "" && jobGateway(j) != "" {
			jobs[j.Name] = j
		}
	}
	return jobs, nil
}

// jobEnv is the value of name in the agent container of an attempt's Job.
func jobEnv(j *batchv1.Job, name string) string {
	for _, c := range j.Spec.Template.Spec.Containers {
		if c.Name != "agent" {
			continue
		}
		for _, e := range c.Env {
			if e.Name == name && e.ValueFrom == nil {
				return e.Value
			}
		}
	}
	return ""
}

// jobGateway is the gateway URL an attempt's Job was given, "" none (its
// key came from the Secret).
func jobGateway(j *batchv1.Job) string {
	u := jobEnv(j, "OPENAI_BASE_URL")
	if jobEnv(j, config.ModelDownGraceEnv) == "" {
		return "" // not a gateway's pod: the base URL is the provider's
	}
	return u
}

// regrant makes the gateway take the tokens of the adopted Jobs' pods
// again, and the egress proxy their credentials (both are in their Job
// specs, which only this namespace's readers see, as before the kill;
// planagent keeps them nowhere else); Launch keeps a grant when it adopts
// the Job, DropUnadopted and Stop revoke the rest.
func (k *Kube) regrant(jobs map[string]*batchv1.Job) error {
	for name, j := range jobs {
		n, err := strconv.Atoi(j.Annotations[layout.LabelAttempt])
		token := jobEnv(j, config.APIKeyEnv)
		if err != nil || j.Annotations[layout.LabelTask] == "" || token == "" {
			continue // not one of ours to adopt: DropUnadopted deletes it
		}
		who := attempt.Name(j.Annotations[layout.LabelTask], n)
		revoke, err := k.opts.Gateway.Grant(who, token)
		if err != nil {
			return fmt.Errorf("take again the gateway token of job %s: %w", name, err)
		}
		if user, secret := jobProxyCredential(j); user == who && validSecret(secret) {
			revokeToken, revokeProxy := revoke, k.creds.grant(who, secret)
			revoke = func() { revokeToken(); revokeProxy() }
		}
		k.granted[name] = revoke
	}
	return nil
}

// takeGrant hands the grant of an adopted Job to its attempt ("": none).
func (k *Kube) takeGrant(job string) func() {
	k.mu.Lock()
	defer k.mu.Unlock()
	revoke := k.granted[job]
	delete(k.granted, job)
	return revoke
}

// dropGrants revokes the tokens of the Jobs no attempt adopted.
func (k *Kube) dropGrants() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for name, revoke := range k.granted {
		revoke()
		delete(k.granted, name)
	}
}

// adoptable reports whether an orphan's pod reaches this process's
// gateway and egress proxy (its URLs are the ones they serve on).
func (k *Kube) adoptable(j *batchv1.Job) bool {
	if jobProxy(j) != strings.TrimPrefix(k.proxyURL, "http://") {
		return false // told another egress proxy, or none: its downloads would fail
	}
	if k.proxyURL != "" {
		if _, ok := k.creds.authenticate(jobProxyCredential(j)); !ok {
			return false // its credential was not taken again (an older planagent's name alone): the proxy would refuse it
		}
	}
	if k.gatewayBase == "" {
		return jobGateway(j) == ""
	}
	return jobGateway(j) == k.gatewayBase
}

// podAddress is the address of the pod planagent runs in: POD_IP (the
// downward API's status.podIP, which the Deployment should set), else
// the address its hostname resolves to (a pod's hostname resolves to its
// IP through /etc/hosts).
func podAddress() string {
	if ip := os.Getenv("POD_IP"); ip != "" {
		return ip
	}
	name, err := os.Hostname()
	if err != nil {
		return ""
	}
	addrs, err := net.LookupHost(name)
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip != nil && !ip.IsLoopback() {
			return a
		}
	}
	return ""
}

// hostAddress is the default gateway address of a planagent outside the
// cluster: the local address this host uses to reach the API server,
// which is on the path to the nodes. A loopback API server (a cluster on
// this machine: kind, minikube, the tests' own) says nothing about where
// the pods are: then no default, and kube_gateway must say.
func hostAddress(ctx context.Context, apiURL string) string {
	u, err := url.Parse(apiURL)
	if err != nil || u.Host == "" {
		return ""
	}
	hp := u.Host
	if u.Port() == "" {
		hp = net.JoinHostPort(u.Hostname(), "443")
	}
	return routeFrom(ctx, hp)
}

// routeFrom is the local address this host sends to hostport from ("":
// none, or loopback, which no pod reaches).
func routeFrom(ctx context.Context, hostport string) string {
	var d net.Dialer
	c, err := d.DialContext(ctx, "udp", hostport) // no packet is sent: only the route is looked up
	if err != nil {
		return ""
	}
	defer c.Close()
	ip := c.LocalAddr().(*net.UDPAddr).IP
	if ip.IsLoopback() || ip.IsUnspecified() {
		return ""
	}
	return ip.String()
}

// isModelKey reports whether name is a provider key variable, which never
// reaches a pod when the gateway serves the model.
func isModelKey(name string) bool {
	return name == config.APIKeyEnv || name == config.AnthropicKeyEnv
}

// serveGateway takes again the tokens of the attempt Jobs a killed process
// of this run left, then listens where the pods reach this process:
// GatewayAddr (kube_gateway, or in a pod of the cluster its IP), else the
// local address this host sends to podIP (the image check's pod) from —
// its side of the pods' network, the bridge's address on a one-machine
// cluster —, else the one it reaches the API server (apiURL) from.
func (k *Kube) serveGateway(ctx context.Context, podIP, apiURL string) error {
	addr := k.opts.GatewayAddr
	if addr == "" && net.ParseIP(podIP) != nil {
		addr = routeFrom(ctx, net.JoinHostPort(podIP, "1"))
	}
	if addr == "" {
		addr = hostAddress(ctx, apiURL)
	}
	orphans, err := orphanTokens(ctx, k.api, k.ns, k.opts.RunID)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrClusterUnreachable, err)
	}
	if err := k.regrant(orphans); err != nil {
		return err
	}
	base, err := k.listenGateway(addr)
	if err != nil {
		k.dropGrants()
		return err
	}
	k.gatewayBase = base
	k.log.Info("the model gateway serves the attempts' pods", "url", base)
	if err := k.serveEgress(k.gatewayHost()); err != nil {
		k.dropGrants()
		return err
	}
	return nil
}
