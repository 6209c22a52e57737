package kube

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// policyName is the name of the run's NetworkPolicy.
func policyName(run string) string { return kubeName("ca", run, "egress") }

// ensurePolicy creates the run's NetworkPolicy under closed egress with
// the model gateway: the run's pods may open connections to the gateway's
// address, on its port and the egress proxy's, and nowhere else, and
// accept none. Only a CNI that
// enforces NetworkPolicy makes this a wall (a plain bridge CNI ignores it);
// the run's boundary record says so. It reports whether it replaced one
// that was there (a killed process's: its pods may still run under it).
func (k *Kube) ensurePolicy(ctx context.Context) (bool, error) {
	if !k.opts.ClosedEgress || k.gatewayBase == "" {
		return false, nil
	}
	p, err := k.policySpec()
	if err != nil {
		return false, err
	}
	replaced := false
	_, err = k.api.NetworkPolicies(k.ns).Create(ctx, p, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// A killed process's: its ports may not be this one's (the gateway
		// or the proxy could not listen where they did, or it predates the
		// proxy). Replaced in place, never deleted first: the pods it
		// left (adopted, or about to be) are under a policy all along.
		// Without a resourceVersion the update is unconditional: the name
		// is the run's own, and this process its only writer.
		replaced = true
		_, err = k.api.NetworkPolicies(k.ns).Update(ctx, p, metav1.UpdateOptions{})
		if apierrors.IsForbidden(err) {
			return false, fmt.Errorf("replace the run's network policy %s in namespace %s (a killed process of this run left it) is forbidden: add the verb update on networkpolicies to the Role of docs/kubernetes.md (create, update, delete); the policy it left stays in place: %w", p.Name, k.ns, err)
		}
	}
	switch {
	case err == nil:
	case apierrors.IsForbidden(err):
		return false, fmt.Errorf("create the run's network policy in namespace %s is forbidden: bind the Role of docs/kubernetes.md (networkpolicies create/update/delete), or set egress: open: %w", k.ns, err)
	default:
		return false, fmt.Errorf("make the run's network policy %s in namespace %s: %w", p.Name, k.ns, err)
	}
	if replaced {
		k.log.Info("replaced in place the network policy a killed process of this run left", "policy", p.Name, "namespace", k.ns)
	}
	k.policy = p.Name
	return replaced, nil
}

// policySpec is the run's NetworkPolicy: the pods of the run (attempts,
// acceptance commands, the boundary probe: all carry the run's label),
// egress to the gateway's IP and its port and the egress proxy's only, no
// ingress.
func (k *Kube) policySpec() (*networkingv1.NetworkPolicy, error) {
	u, err := url.Parse(k.gatewayBase)
	if err != nil {
		return nil, fmt.Errorf("the model gateway's URL %q: %w", k.gatewayBase, err)
	}
	ip := net.ParseIP(u.Hostname())
	port, perr := strconv.Atoi(u.Port())
	if ip == nil || perr != nil || port < 1 || port > 65535 {
		return nil, fmt.Errorf("closed egress on kubernetes needs the model gateway at an IP address and port, not %q: set kube_gateway to one, or egress: open", u.Host)
	}
	cidr := ip.String() + "/32"
	if ip.To4() == nil {
		cidr = ip.String() + "/128"
	}
	tcp := corev1.ProtocolTCP
	gwPort := intstr.FromInt32(int32(port))
	ports := []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &gwPort}}
	if pp := k.proxyPort(); pp > 0 {
		// The egress proxy listens beside the gateway, on the same address.
		proxyPort := intstr.FromInt32(int32(pp))
		ports = append(ports, networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &proxyPort})
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName(k.opts.RunID), Namespace: k.ns,
			Labels:      map[string]string{layout.LabelManaged: "true", layout.LabelRun: labelValue(k.opts.RunID)},
			Annotations: map[string]string{layout.LabelRun: k.opts.RunID}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{layout.LabelRun: labelValue(k.opts.RunID)}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: cidr}}},
				Ports: ports,
			}},
		},
	}, nil
}
