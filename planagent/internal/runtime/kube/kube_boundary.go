package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/codeagent/codeagent/planagent/internal/runtime/boundary"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
	"github.com/codeagent/codeagent/planagent/internal/runtime/output"
)

// boundaryJobName is the Job of the start-of-run boundary probe.
func boundaryJobName(run string) string { return kubeName("ca", run, "boundary") }

// probeDisallowed is the name the probe asks the egress proxy for, which
// no allow-list holds (.invalid never resolves).
const probeDisallowed = "boundary-probe.invalid"

// notEnforced prefixes the record of a cluster whose network plugin let
// the probe through the run's NetworkPolicy.
const notEnforced = "egress not enforced by this cluster"

// verifyBoundary runs `codingagent boundary` in a pod of the run (its
// labels put it under the run's NetworkPolicy, as an attempt's pod) with
// a token of its own, and a canary on this host beside the gateway: the
// policy allows the gateway's port only, so a connection to the canary
// shows the cluster does not enforce it. Through the egress proxy (its
// pod gets the proxy like the others') a name not allowed, the metadata
// address and the canary must be refused, and the proxy must answer 407
// without the pod's credential and with a wrong one. The probe runs from the codeagent
// image, which holds codingagent; the pod's network is the attempts'.
func (k *Kube) verifyBoundary(ctx context.Context) (boundary.Verdict, error) {
	ctx, cancel := context.WithTimeout(ctx, k.opts.PendingTimeout+boundary.Timeout)
	defer cancel()
	u, err := url.Parse(k.gatewayBase)
	if err != nil {
		return boundary.Verdict{}, fmt.Errorf("the model gateway's URL %q: %w", k.gatewayBase, err)
	}
	args := []string{AgentImageBinary, "boundary", "--disallowed", probeDisallowed,
		"--refused", "the cloud metadata address=169.254.169.254:80"}
	beside := boundary.NewCanary(net.JoinHostPort(u.Hostname(), "0"))
	defer beside.Close()
	if beside != nil {
		args = append(args, "--refused", "a service of this host beside planagent="+beside.Addr())
	}
	if k.proxyURL != "" {
		// The proxy is reachable by whatever the policy lets in: only the
		// credential of a pod of the run may use it.
		args = append(args, "--proxy-credential")
	}
	token, revoke, err := k.opts.Gateway.Issue("boundary")
	if err != nil {
		return boundary.Verdict{}, err
	}
	defer revoke()
	secret, revokeProxy, err := k.issueProxy(probeClient)
	if err != nil {
		return boundary.Verdict{}, err
	}
	defer revokeProxy()
	sc := restrictedContainer()
	c := corev1.Container{Name: "boundary", Image: k.opts.AgentImage, ImagePullPolicy: k.opts.PullPolicy, Command: args,
		SecurityContext: sc, Resources: k.agentResources(),
		Env: append([]corev1.EnvVar{{Name: "HOME", Value: "/tmp"}, {Name: "OPENAI_API_KEY", Value: token}, {Name: "OPENAI_BASE_URL", Value: k.gatewayBase}},
			k.proxyEnv(probeClient, secret, u.Hostname())...)}
	// Its tries through the egress proxy are refused on purpose.
	k.probing.Store(true)
	defer k.probing.Store(false)
	labels := map[string]string{layout.LabelManaged: "true", layout.LabelRun: labelValue(k.opts.RunID), layout.LabelRole: "boundary"}
	job := k.job(boundaryJobName(k.opts.RunID), labels, map[string]string{layout.LabelRun: k.opts.RunID},
		int64((k.opts.PendingTimeout + boundary.Timeout).Seconds()), k.restrictedPod(c))
	dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
	_ = k.deleteJob(dctx, job.Name)
	err = k.waitGone(dctx, job.Name)
	dcancel()
	if err != nil {
		return boundary.Verdict{}, err
	}
	made, err := k.api.Jobs(k.ns).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		return boundary.Verdict{}, fmt.Errorf("create the boundary probe job %s in namespace %s: %w", job.Name, k.ns, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
		defer cancel()
		if err := k.deleteJob(dctx, job.Name); err != nil {
			k.log.Warn("delete the boundary probe job", "job", job.Name, "err", err)
		}
	}()
	start := time.Now()
	p, err := k.waitPodObj(ctx, jobRef{job.Name, string(made.UID)}, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if err != nil {
		return boundary.Verdict{}, fmt.Errorf("the boundary probe's pod: %w", err)
	}
	rc, err := k.api.Pods(k.ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: "boundary"}).Stream(ctx)
	if err != nil {
		return boundary.Verdict{}, fmt.Errorf("the boundary probe's output: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	rc.Close()
	if err != nil {
		return boundary.Verdict{}, fmt.Errorf("the boundary probe's output: %w", err)
	}
	var rep boundary.Report
	// Never the output itself in an error: it holds the probe's environment.
	if err := json.Unmarshal([]byte(output.LastLine(string(out))), &rep); err != nil {
		return boundary.Verdict{}, fmt.Errorf("the boundary probe's pod ended %s without its report: %w", p.Status.Phase, err)
	}
	if p.Status.Phase != corev1.PodSucceeded {
		return boundary.Verdict{}, fmt.Errorf("the boundary probe's pod ended %s after its report (%s %s): check the codeagent image (make image)", p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
	k.log.Info("the boundary probe ran", "after", time.Since(start).Round(time.Millisecond))
	return k.judge(rep, beside), nil
}

// judge turns the probe's report into a Boundary. What a NetworkPolicy
// should have stopped (the canary, the refused addresses) is told apart
// from what planagent itself guards (the gateway's token check, the key):
// reachTrouble reports the former.
func (k *Kube) judge(rep boundary.Report, beside *boundary.Canary) boundary.Verdict {
	var b boundary.Verdict
	for _, c := range rep.Checks {
		if !c.OK {
			b.Failed = append(b.Failed, c.Name+" ("+c.Detail+")")
		}
	}
	if len(rep.Checks) == 0 {
		b.Failed = append(b.Failed, "the probe tried nothing")
	}
	if beside != nil && beside.Touched() {
		b.Failed = append(b.Failed, "a canary on "+beside.Addr()+" was connected to")
	}
	if k.key != "" {
		for _, kv := range rep.Environ {
			if strings.Contains(kv, k.key) {
				name, _, _ := strings.Cut(kv, "=")
				b.Failed = append(b.Failed, "the provider key is in the pod's environment ("+name+")")
				break
			}
		}
	}
	b.Verified = len(b.Failed) == 0
	return b
}

// reachOnly reports whether every failure of b is a way out the network
// let through (not the gateway's token check, not the egress proxy, not
// the key).
func reachOnly(b boundary.Verdict) bool {
	for _, f := range b.Failed {
		// The egress proxy is planagent's: what it let through is no
		// network plugin's doing.
		if strings.HasPrefix(f, "gateway ") || strings.Contains(f, "provider key") || strings.Contains(f, "tried nothing") ||
			strings.Contains(f, "through the proxy") || strings.HasPrefix(f, "the egress proxy") {
			return false
		}
	}
	return len(b.Failed) > 0
}

// checkBoundary probes the boundary at the start of a run under closed
// egress. A cluster that lets the probe through the run's NetworkPolicy
// is recorded as "egress not enforced by this cluster" and the run goes
// on with a warning: the key stays behind the gateway either way, and
// only the cluster's network plugin can close the network. A failure of
// what planagent guards (the gateway took no token or any token, the key
// in the pod) stops the run (boundary.ErrBreached).
func (k *Kube) checkBoundary(ctx context.Context) error {
	if !k.opts.ClosedEgress || k.gatewayBase == "" {
		return nil
	}
	b, err := k.verifyBoundary(ctx)
	if err != nil {
		return fmt.Errorf("%w: the boundary probe: %w", ErrClusterUnreachable, err)
	}
	if reachOnly(b) {
		b = boundary.Verdict{Note: notEnforced + ": a pod under the run's NetworkPolicy reached " + strings.Join(b.Failed, "; ") +
			"; the key stays in planagent's gateway, but the attempts reach what the cluster routes: use a network plugin that enforces NetworkPolicy (Calico, Cilium, ...), or set egress: open to say it is meant"}
		k.log.Warn("the cluster does not enforce the run's NetworkPolicy", "boundary", b.Note)
	}
	k.boundary = b
	if len(b.Failed) > 0 {
		return fmt.Errorf("%w: %s: check planagent's model gateway (kube_gateway) and the image, or set egress: open to run anyway", boundary.ErrBreached, strings.Join(b.Failed, "; "))
	}
	return nil
}

// Boundary is the run's boundary record: the probe's verdict, or what
// was not probed and why.
func (k *Kube) Boundary() boundary.Verdict {
	if k.boundary.Verified || k.boundary.Note != "" || len(k.boundary.Failed) > 0 {
		return k.boundary
	}
	switch {
	case k.gatewayBase == "":
		return boundary.Verdict{Note: "not enforced: no model gateway (no key): the pods reach what the cluster allows"}
	case !k.opts.ClosedEgress:
		return boundary.Verdict{Note: "not enforced: egress: open; the key stays in planagent (the model gateway)"}
	}
	return boundary.Verdict{Note: "not verified: the boundary probe has not run"}
}

// probeBoundary runs the boundary probe at start (run, run --check,
// resume) under the run's NetworkPolicy, made for it and removed after:
// Start makes the run's own, which Stop removes. One a killed process of
// the run left is replaced and kept: the pods of that process, which this
// one may adopt, stay under a policy.
func (k *Kube) probeBoundary(ctx context.Context) error {
	if !k.opts.ClosedEgress || k.gatewayBase == "" {
		return nil
	}
	replaced, err := k.ensurePolicy(ctx)
	if err != nil {
		return err
	}
	if replaced {
		return k.checkBoundary(ctx)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
		defer cancel()
		if err := k.api.NetworkPolicies(k.ns).Delete(dctx, k.policy, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			k.log.Warn("delete the run's network policy after the boundary probe", "policy", k.policy, "err", err)
		}
		k.policy = ""
	}()
	return k.checkBoundary(ctx)
}
