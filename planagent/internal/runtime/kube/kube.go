package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/egress"
	"github.com/codeagent/codeagent/planagent/internal/runlock"
	"github.com/codeagent/codeagent/planagent/internal/runtime/boundary"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
	"github.com/codeagent/codeagent/planagent/internal/runtime/output"
)

// ErrClusterUnreachable: no Kubernetes API server answers with the given
// kubeconfig/context, or the namespace is missing or forbidden.
var ErrClusterUnreachable = errors.New("kubernetes cluster not usable")

// Tolerations are the pods' tolerations for the parsed kube_tolerations
// setting: with a value the taint must have it (Equal), without any value
// (Exists). cli hands them over so, linking no Kubernetes API package.
func Tolerations(ts []config.Toleration) []corev1.Toleration {
	var out []corev1.Toleration
	for _, t := range ts {
		op := corev1.TolerationOpExists
		if t.Value != "" {
			op = corev1.TolerationOpEqual
		}
		out = append(out, corev1.Toleration{Key: t.Key, Operator: op, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	return out
}

// Gateway serves the model API to the pods with the provider's key, which
// it alone holds (planagent/internal/gateway): a pod gets a token of its
// own and the gateway's URL instead of the key.
type Gateway interface {
	// Listen serves on addr (port 0: any) and returns the address got.
	Listen(addr string) (*net.TCPAddr, error)
	// Issue makes a token for one attempt and the function that revokes it.
	Issue(name string) (token string, revoke func(), err error)
	// Grant takes again a token issued by an earlier process for name (an
	// adopted attempt's, read back from its Job) until revoked.
	Grant(name, token string) (revoke func(), err error)
	// Path is the base path of the model API, which the pods' base URL
	// keeps so their clients build the provider's paths.
	Path() string
}

// Options configures the kubernetes runtime.
type Options struct {
	Volumes volume.Layout
	RunID   string
	// Image is the user's toolchain image the agent works in (any image
	// with /bin/sh); AgentImage holds the static codingagent at
	// AgentImageBinary and busybox (sh, cp, tar): its init container
	// copies the binary into the pod and its io container moves the
	// attempt's files in and out over pods/exec.
	Image, AgentImage string
	// Kubeconfig and Context pick the cluster ("" and "": $KUBECONFIG or
	// ~/.kube/config and its current context, or the in-cluster config when
	// planagent runs in a pod); Namespace "" is the context's namespace.
	Kubeconfig, Context, Namespace string
	PullPolicy                     corev1.PullPolicy // default IfNotPresent
	TaskTimeout                    time.Duration     // activeDeadlineSeconds of an attempt's Job
	Memory                         string            // limits.memory in docker units, "" none
	CPUs                           float64           // limits.cpu, 0 none
	// Env holds the agent's settings; the API key and those SecretEnv
	// names reach the pod only by reference to a Secret, never in a Job spec.
	Env       map[string]string
	SecretEnv []string
	// Secret names an existing Secret that holds the secret settings under
	// their variable names; "" creates one for the run, deleted after it.
	Secret string
	// Gateway, when set, serves the model API to the pods with the key,
	// which then is in no Secret or Job spec: each attempt's pod gets a
	// token of its own and the gateway's URL (kube_gateway.go).
	Gateway Gateway
	// GatewayAddr is where planagent listens for the pods (host or
	// host:port): an address the cluster's pods route to. "": in a pod of
	// the cluster, that pod's IP; outside, the address this host reaches
	// the image check's pod from (serveGateway).
	GatewayAddr string
	// ClosedEgress, with the gateway: a NetworkPolicy of the run lets its
	// pods reach the gateway and the egress proxy beside it, and nothing
	// else (docs/egress.md). The proxy admits the hosts of Egress (nil:
	// none) and tells EgressRefused (nil: nobody) of each refusal, under
	// the task and attempt the pod named (kube_egress.go).
	ClosedEgress  bool
	Egress        *egress.Policy
	EgressRefused func(task string, attempt int, r egress.Refusal)
	// Where the attempts' pods may run, and the agent container's requests
	// (0 and "": 100m and 128Mi).
	NodeSelector  map[string]string
	Tolerations   []corev1.Toleration
	CPURequest    float64
	MemoryRequest string // docker units
	// PendingTimeout: a pod not running after this long (unschedulable,
	// image missing) fails its attempt; 0 is 3 minutes.
	PendingTimeout time.Duration
	Logger         *slog.Logger
	Log            io.Writer // the agents' pod logs, line by line
	Verbose        bool
}

const (
	// AgentImageBinary is where `make image` puts the static codingagent.
	AgentImageBinary   = "/app/codingagent"
	kubePendingDefault = 3 * time.Minute
	kubePoll           = 300 * time.Millisecond
	kubeJobTTL         = 300 // seconds a finished Job stays, for `kubectl logs`
)

// Kube runs each task attempt as a batch/v1 Job in a namespace; nothing is
// shared with the host but the API server: inputs go in and results come
// out as tar streams over pods/exec (kube_sync.go).
type Kube struct {
	api    kubeAPI
	exec   podExecer
	opts   Options
	ns     string
	log    *slog.Logger
	exited chan Exit
	poll   time.Duration // between looks at a Job or pod that is not there yet (kubePoll)
	// secret is the Secret the pods take the secret settings from: the
	// run's own (ownSecret, created by Start, deleted by Stop) or the
	// user's; secretKeys are the variables the pods take from it.
	secret    string
	ownSecret bool
	// policy is the run's NetworkPolicy, "" when it has none.
	policy string
	// gatewayBase is the model gateway's URL as the pods reach it; "":
	// no gateway, the key comes from the Secret.
	gatewayBase string
	secretKeys  []string
	redact      []string // secret values masked in what the pods print
	// granted are the gateway grants of the tokens of a killed process's
	// attempt Jobs, by Job name, until Launch adopts the Job or
	// DropUnadopted (or Stop) revokes them.
	granted map[string]func()
	// key is the provider's key, which the boundary probe looks for in its
	// pod's environment; boundary is the probe's verdict.
	key      string
	boundary boundary.Verdict
	// proxy serves the egress proxy at proxyURL (as the pods reach it)
	// under closed egress; probing is set while the boundary probe runs.
	proxy    *http.Server
	proxyURL string
	probing  atomic.Bool
	// creds are the pods' credentials at the egress proxy.
	creds proxyCreds
	// execSeq numbers the acceptance commands' Jobs of this process.
	execSeq atomic.Uint64

	mu       sync.Mutex
	started  bool
	attempts map[string]*kubeAttempt // by attempt (Name: "task.n"): a task may run several at once
	// orphans are the attempt Jobs a killed planagent of this run left, by
	// name, until Launch adopts one or DropUnadopted deletes the rest.
	orphans map[string]*batchv1.Job
}

// New loads the client configuration, checks that the API server
// answers and that the namespace's Jobs can be listed: a wrong setup is
// named here, before the run plans anything.
func New(ctx context.Context, opts Options) (*Kube, error) {
	cfg, ns, where, err := kubeClientConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrClusterUnreachable, err)
	}
	c, err := newKubeClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: client for %s: %w", ErrClusterUnreachable, where, err)
	}
	if opts.Gateway != nil && opts.GatewayAddr == "" && where == "in-cluster" {
		opts.GatewayAddr = podAddress() // the pods reach planagent's own pod
	}
	k, err := newKube(c, &spdyExec{cfg: cfg, c: c}, ns, opts)
	if err != nil {
		return nil, err
	}
	if _, err := c.Jobs(ns).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		switch {
		case apierrors.IsForbidden(err):
			return nil, fmt.Errorf("%w: list jobs in namespace %s at %s is forbidden: bind the Role of docs/kubernetes.md (jobs, pods, pods/exec, pods/log, networkpolicies): %w", ErrClusterUnreachable, ns, where, err)
		case apierrors.IsNotFound(err):
			return nil, fmt.Errorf("%w: namespace %s not found at %s: create it or pass --namespace: %w", ErrClusterUnreachable, ns, where, err)
		default:
			return nil, fmt.Errorf("%w: API server at %s (%s) does not answer: check --kubeconfig/--context: %w", ErrClusterUnreachable, cfg.Host, where, err)
		}
	}
	if _, err := c.Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: namespace %s not found at %s: create it or pass --namespace", ErrClusterUnreachable, ns, where)
	}
	if err := k.checkSecret(ctx); err != nil {
		return nil, err
	}
	podIP, err := k.probe(ctx)
	if err != nil {
		return nil, err
	}
	if opts.Gateway != nil {
		if err := k.serveGateway(ctx, podIP, cfg.Host); err != nil {
			return nil, err
		}
		if err := k.probeBoundary(ctx); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// newKube checks the options; the tests pass client-go's fake clientset
// (clientsetAPI).
func newKube(api kubeAPI, ex podExecer, ns string, opts Options) (*Kube, error) {
	if opts.RunID == "" {
		return nil, errors.New("kubernetes runtime: empty run id: the orchestrator must pass the run's id")
	}
	if opts.Volumes.Root == "" {
		return nil, errors.New("kubernetes runtime: no volumes dir: pass --volumes")
	}
	if opts.Image == "" {
		opts.Image = layout.DefaultImage
	}
	if opts.AgentImage == "" {
		opts.AgentImage = layout.DefaultImage
	}
	if opts.PullPolicy == "" {
		opts.PullPolicy = corev1.PullIfNotPresent
	}
	if opts.TaskTimeout <= 0 {
		opts.TaskTimeout = 30 * time.Minute
	}
	if opts.PendingTimeout <= 0 {
		opts.PendingTimeout = kubePendingDefault
	}
	for what, v := range map[string]string{"memory limit": opts.Memory, "memory request": opts.MemoryRequest} {
		if v != "" {
			if _, err := config.ParseMemory(v); err != nil {
				return nil, fmt.Errorf("%s %q: use a size such as 2g or 512m", what, v)
			}
		}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.Log != nil {
		opts.Log = &output.LockedWriter{W: opts.Log}
	}
	k := &Kube{api: api, exec: ex, opts: opts, ns: ns, poll: kubePoll, log: logger.With("runtime", "kubernetes"),
		exited: make(chan Exit, 16), secret: opts.Secret, attempts: make(map[string]*kubeAttempt), orphans: make(map[string]*batchv1.Job),
		granted: make(map[string]func())}
	if k.secret == "" {
		// Named even when it will hold nothing: Start removes a Secret of
		// this run that an older planagent made (it held the key then).
		k.secret, k.ownSecret = secretName(opts.RunID), true
	}
	if opts.Gateway != nil {
		k.key = opts.Env[config.APIKeyEnv]
		// The key stays in planagent: not in the Secret, not in a spec.
		opts.Env = maps.Clone(opts.Env)
		for name := range opts.Env {
			if isModelKey(name) {
				delete(opts.Env, name)
			}
		}
		opts.SecretEnv = slices.DeleteFunc(slices.Clone(opts.SecretEnv), isModelKey)
		k.opts = opts
	}
	for _, name := range append([]string{config.APIKeyEnv}, k.opts.SecretEnv...) {
		v := k.opts.Env[name]
		if v == "" || slices.Contains(k.secretKeys, name) {
			continue
		}
		k.secretKeys = append(k.secretKeys, name)
		if len(v) >= 8 { // shorter values would mask ordinary words
			k.redact = append(k.redact, v)
		}
	}
	sort.Strings(k.secretKeys)
	return k, nil
}

// isSecret reports whether the agent's variable name reaches the pod from the Secret.
func (k *Kube) isSecret(name string) bool {
	return (name == config.APIKeyEnv && k.gatewayBase == "") || slices.Contains(k.opts.SecretEnv, name)
}

// mask hides the secret values in s.
func (k *Kube) mask(s string) string {
	for _, v := range k.redact {
		s = output.Redact(s, v)
	}
	return s
}

// kubeClientConfig: an explicit kubeconfig or context wins; else the
// in-cluster config when planagent runs in a pod; else kubectl's rules.
func kubeClientConfig(opts Options) (*rest.Config, string, string, error) {
	if opts.Kubeconfig == "" && opts.Context == "" && os.Getenv("KUBECONFIG") == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, "", "", fmt.Errorf("in-cluster config: %w", err)
		}
		ns := opts.Namespace
		if ns == "" {
			if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
				ns = string(b)
			}
		}
		if ns == "" {
			ns = "default"
		}
		return cfg, ns, "in-cluster", nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = opts.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: opts.Context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", "", fmt.Errorf("load kubeconfig (--kubeconfig %q, --context %q): %w", opts.Kubeconfig, opts.Context, err)
	}
	ns := opts.Namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil || ns == "" {
			ns = "default"
		}
	}
	where := "the kubeconfig's current context"
	if opts.Context != "" {
		where = "context " + opts.Context
	}
	// Many small calls (status polls, execs) per attempt: the default 5 QPS throttles a --parallel run.
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, ns, where, nil
}

// Namespace is where the run's Jobs and Secret go.
func (k *Kube) Namespace() string { return k.ns }

// Start creates the run's Secret (when it has one) and looks for what a killed earlier
// process of this run left: its unfinished attempt Jobs wait for Launch to
// adopt them (DropUnadopted deletes the rest); its other Jobs go.
func (k *Kube) Start(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.started {
		return nil
	}
	list, err := k.api.Jobs(k.ns).List(ctx, metav1.ListOptions{LabelSelector: labelSelector(map[string]string{layout.LabelRun: labelValue(k.opts.RunID)})})
	if err != nil {
		return fmt.Errorf("list the run's jobs in namespace %s: %w", k.ns, err)
	}
	var errs []error
	for i := range list.Items {
		j := &list.Items[i]
		if j.Labels[layout.LabelRole] == "attempt" && j.DeletionTimestamp == nil && jobFinished(j) == "" {
			k.orphans[j.Name] = j
			k.log.Info("found an attempt's job of a previous process: adopted if its task is still in progress", "job", j.Name)
			continue
		}
		if err := k.deleteJob(ctx, j.Name); err != nil {
			errs = append(errs, fmt.Errorf("delete job %s: %w", j.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	k.dropDeadRunsSecrets(ctx)
	if err := k.ensureSecret(ctx); err != nil {
		return err
	}
	if _, err := k.ensurePolicy(ctx); err != nil {
		return err
	}
	k.started = true
	return nil
}

// DropUnadopted deletes the Jobs of a previous process that no Launch
// adopted: the orchestrator calls it once it relaunched every task still in
// progress, so no pod of the run works for nothing.
func (k *Kube) DropUnadopted(ctx context.Context) error {
	k.mu.Lock()
	names := slices.Sorted(maps.Keys(k.orphans))
	clear(k.orphans)
	k.mu.Unlock()
	var errs []error
	for _, name := range names {
		k.log.Info("deleting a job of a previous process no task adopted", "job", name)
		if err := k.deleteJob(ctx, name); err != nil {
			errs = append(errs, fmt.Errorf("delete job %s: %w", name, err))
		}
	}
	k.dropGrants()
	return errors.Join(errs...)
}

// checkSecret makes sure a user-named Secret exists and holds every secret
// setting planagent has a value for.
func (k *Kube) checkSecret(ctx context.Context) error {
	if k.ownSecret {
		return nil
	}
	s, err := k.api.Secrets(k.ns).Get(ctx, k.secret, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("%w: the secret %s (kube_secret) in namespace %s: %w: create it with one key per variable (kubectl create secret generic %s --from-literal=%s=...) or unset kube_secret",
			ErrClusterUnreachable, k.secret, k.ns, err, k.secret, config.APIKeyEnv)
	}
	var missing []string
	for _, name := range k.secretKeys {
		if _, ok := s.Data[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: the secret %s (kube_secret) in namespace %s has no key %s: add it (the pods take each secret setting from the key of its variable's name)",
			ErrClusterUnreachable, k.secret, k.ns, strings.Join(missing, ", "))
	}
	return nil
}

// makesSecret reports whether the run has a Secret of its own: only when
// there is a secret setting for it to hold (an MCP server's variable, the
// key without a gateway). With the gateway and no such setting nothing
// secret goes into the cluster, and the run needs no RBAC on secrets.
func (k *Kube) makesSecret() bool {
	return k.ownSecret && len(k.secretKeys) > 0
}

// ensureSecret creates (or replaces) the run's own Secret; a user-named
// one is only read. A run with nothing secret for its pods makes none and
// removes the one an older planagent of this run left (it held the key
// before the gateway), quietly when the Role has no secrets verbs.
func (k *Kube) ensureSecret(ctx context.Context) error {
	if !k.ownSecret {
		return nil
	}
	if !k.makesSecret() {
		err := k.api.Secrets(k.ns).Delete(ctx, k.secret, metav1.DeleteOptions{})
		switch {
		case err == nil:
			k.log.Info("deleted the Secret an earlier process of this run left: the run needs none", "secret", k.secret)
		case apierrors.IsNotFound(err):
		case apierrors.IsForbidden(err):
			k.log.Debug("no delete on secrets: a Secret an older planagent of this run made, if any, stays", "secret", k.secret)
		default:
			k.log.Info("could not delete the Secret an earlier process of this run may have left", "secret", k.secret, "error", err)
		}
		return nil
	}
	s := k.secretSpec()
	api := k.api.Secrets(k.ns)
	_, err := api.Create(ctx, s, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = api.Update(ctx, s, metav1.UpdateOptions{})
	}
	if err != nil {
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("create the run's secret %s in namespace %s is forbidden: the pods take %s from it: add the secrets rule of docs/kubernetes.md to the Role (create, update, delete), or name a Secret of yours with kube_secret: %w",
				s.Name, k.ns, strings.Join(k.secretKeys, ", "), err)
		}
		return fmt.Errorf("create the run's secret %s in namespace %s (it holds %s): %w", s.Name, k.ns, strings.Join(k.secretKeys, ", "), err)
	}
	return nil
}

func (k *Kube) Exited() <-chan Exit { return k.exited }

// Abandon deletes the Job of attempt n of a task, which the orchestrator
// gave up on; the task's other attempts run on.
func (k *Kube) Abandon(ctx context.Context, taskID string, n int) error {
	k.mu.Lock()
	key := Attempt{TaskID: taskID, Attempt: n}.Name()
	a := k.attempts[key]
	delete(k.attempts, key)
	k.mu.Unlock()
	if a == nil {
		return nil
	}
	a.cancel()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
	defer cancel()
	if err := k.deleteJob(ctx, a.job); err != nil {
		return fmt.Errorf("task %s: delete the Job of attempt %d: %w", taskID, a.attempt, err)
	}
	<-a.done
	return nil
}

// Stop deletes every Job of the run (background propagation, so their pods
// go too) and the run's Secret; idempotent, works with a cancelled ctx.
func (k *Kube) Stop(ctx context.Context) error {
	k.mu.Lock()
	running := make([]*kubeAttempt, 0, len(k.attempts))
	for _, a := range k.attempts {
		running = append(running, a)
	}
	clear(k.attempts)
	clear(k.orphans)
	k.started = false
	k.mu.Unlock()
	k.dropGrants()
	for _, a := range running {
		a.cancel()
	}
	defer k.closeEgress()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
	defer cancel()
	var errs []error
	if err := k.deleteJobs(ctx, labelSelector(map[string]string{layout.LabelRun: labelValue(k.opts.RunID)})); err != nil {
		errs = append(errs, err)
	}
	for _, a := range running {
		select {
		case <-a.done:
		case <-ctx.Done():
		}
	}
	if k.makesSecret() {
		err := k.api.Secrets(k.ns).Delete(ctx, k.secret, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete the run's secret %s: %w", k.secret, err))
		}
	}
	if k.policy != "" {
		err := k.api.NetworkPolicies(k.ns).Delete(ctx, k.policy, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete the run's network policy %s: %w", k.policy, err))
		}
	}
	return errors.Join(errs...)
}

// deleteJob deletes one Job with its pods.
func (k *Kube) deleteJob(ctx context.Context, name string) error {
	bg := metav1.DeletePropagationBackground
	err := k.api.Jobs(k.ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// deleteJobs deletes the Jobs matching selector, with their pods.
func (k *Kube) deleteJobs(ctx context.Context, selector string) error {
	list, err := k.api.Jobs(k.ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("list the run's jobs in namespace %s: %w", k.ns, err)
	}
	var errs []error
	for _, j := range list.Items {
		if err := k.deleteJob(ctx, j.Name); err != nil {
			errs = append(errs, fmt.Errorf("delete job %s: %w", j.Name, err))
		}
	}
	return errors.Join(errs...)
}

// dropDeadRunsSecrets deletes the Secrets that earlier runs of this volumes
// dir left behind when they were killed and not resumed (their lock is
// free): such a Secret holds the key and outlives every Job of its run.
// A run of another volumes dir (its state not here) or one still alive is
// left alone; resume creates its run's Secret again. Failures are only
// logged: a Role without list on secrets keeps the old behaviour.
func (k *Kube) dropDeadRunsSecrets(ctx context.Context) {
	list, err := k.api.Secrets(k.ns).List(ctx, metav1.ListOptions{LabelSelector: labelSelector(map[string]string{layout.LabelManaged: "true"})})
	if apierrors.IsForbidden(err) {
		// The default Role has no secrets verbs: runs with the gateway make none.
		k.log.Debug("not looking for the Secrets of killed runs: the Role has no list on secrets", "error", err)
		return
	}
	if err != nil {
		k.log.Info("could not look for the Secrets of killed runs", "error", err)
		return
	}
	for i := range list.Items {
		s := &list.Items[i]
		run := s.Annotations[layout.LabelRun]
		if run == "" || run == k.opts.RunID || run == "." || run == ".." || strings.ContainsAny(run, `/\`) {
			continue
		}
		dir := k.opts.Volumes.Run(run)
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			continue
		}
		if free, err := runlock.Free(dir); err != nil || !free {
			continue
		}
		if err := k.api.Secrets(k.ns).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			k.log.Info("could not delete the Secret of a killed run", "secret", s.Name, "run", run, "error", err)
			continue
		}
		k.log.Info("deleted the Secret a killed run left", "secret", s.Name, "run", run)
	}
}
