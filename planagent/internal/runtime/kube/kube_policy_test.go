//go:build clientgo

package kube

import (
	"net/url"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/codeagent/codeagent/planagent/internal/runtime/boundary"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// Closed egress with the gateway: the run's NetworkPolicy selects the
// run's pods, lets them open connections only to the gateway's IP and
// port, and takes no ingress; Stop removes it. With egress open there is
// none, and the boundary record says what was set up and not verified.
func TestKubeNetworkPolicyAllowsOnlyTheGateway(t *testing.T) {
	k, cs, err := kubeWithGateway(t, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	k.opts.ClosedEgress = true
	ctx := t.Context()
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := cs.NetworkingV1().NetworkPolicies("agents").Get(ctx, policyName(k.opts.RunID), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no network policy for the run: %v", err)
	}
	u, err := url.Parse(k.gatewayBase)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Spec.PodSelector.MatchLabels[layout.LabelRun]; got != labelValue(k.opts.RunID) {
		t.Errorf("the policy selects pods of run label %q, want %q", got, labelValue(k.opts.RunID))
	}
	if len(p.Spec.PolicyTypes) != 2 || len(p.Spec.Ingress) != 0 {
		t.Errorf("policy types %v, ingress %v: want both types and no ingress allowed", p.Spec.PolicyTypes, p.Spec.Ingress)
	}
	if len(p.Spec.Egress) != 1 || len(p.Spec.Egress[0].To) != 1 || len(p.Spec.Egress[0].Ports) != 1 {
		t.Fatalf("egress %+v, want one rule: the gateway's address and port", p.Spec.Egress)
	}
	rule := p.Spec.Egress[0]
	if rule.To[0].IPBlock == nil || rule.To[0].IPBlock.CIDR != u.Hostname()+"/32" || rule.Ports[0].Port.String() != u.Port() {
		t.Errorf("egress to %+v port %v, want %s/32 port %s", rule.To[0].IPBlock, rule.Ports[0].Port, u.Hostname(), u.Port())
	}
	if err := k.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	list, err := cs.NetworkingV1().NetworkPolicies("agents").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("after Stop: %v, %v; want no policy left", list, err)
	}

	open, cs2, err := kubeWithGateway(t, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if err := open.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = open.Stop(ctx) }()
	if b := open.Boundary().String(); !strings.HasPrefix(b, "not enforced: egress: open") {
		t.Errorf("egress open: boundary %q", b)
	}
	var none *networkingv1.NetworkPolicyList
	if none, err = cs2.NetworkingV1().NetworkPolicies("agents").List(ctx, metav1.ListOptions{}); err != nil || len(none.Items) != 0 {
		t.Errorf("egress open: %v, %v; want no policy", none, err)
	}
}

// The probe's report judged: a way out the network let through (the
// canary, a refused address reached) is the cluster not enforcing the
// policy, which is recorded and warned about; the gateway taking a wrong
// token or the key in the pod's environment fails the boundary.
func TestKubeBoundaryJudge(t *testing.T) {
	k := &Kube{key: kubeTestKey}
	rep := func(checks map[string]bool, environ ...string) boundary.Report {
		var r boundary.Report
		for name, ok := range checks {
			r.Checks = append(r.Checks, struct {
				Name   string `json:"name"`
				OK     bool   `json:"ok"`
				Detail string `json:"detail"`
			}{Name: name, OK: ok, Detail: "d"})
		}
		r.Environ = environ
		return r
	}
	if b := k.judge(rep(map[string]bool{"gateway with the token": true, "a service of this host beside planagent refused": true}), nil); !b.Verified {
		t.Errorf("all held: %+v", b)
	}
	reached := k.judge(rep(map[string]bool{"gateway with the token": true, "a service of this host beside planagent refused": false}), nil)
	if reached.Verified || !reachOnly(reached) {
		t.Errorf("a reach past the policy: %+v, reachOnly %v", reached, reachOnly(reached))
	}
	bad := k.judge(rep(map[string]bool{"gateway without a token": false}), nil)
	if reachOnly(bad) {
		t.Errorf("the gateway taking no token counted as the cluster's: %+v", bad)
	}
	leaked := k.judge(rep(map[string]bool{"x": true}, "OPENAI_API_KEY="+kubeTestKey), nil)
	if leaked.Verified || reachOnly(leaked) || !strings.Contains(leaked.String(), "OPENAI_API_KEY") {
		t.Errorf("the key in the pod: %+v", leaked)
	}
}
