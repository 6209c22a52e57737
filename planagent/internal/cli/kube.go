package cli

import (
	"context"
	"io"

	"github.com/codeagent/codeagent/internal/config"
	"github.com/codeagent/codeagent/planagent/internal/orchestrator"
	"github.com/codeagent/codeagent/planagent/internal/runtime/kube"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// newKubeRuntime builds the kubernetes runtime from the effective settings:
// the task image is the user's toolchain, the codingagent comes from the
// default image (`make image`), imported into the cluster's nodes. The
// secret settings (the API key, the variables the MCP servers refer to,
// and mcp_servers itself, which may hold literal headers, unless the user
// names their own Secret) reach the pods only through a Secret.
func newKubeRuntime(ctx context.Context, s *session, runID string, env map[string]string, log io.Writer) (orchestrator.Runtime, error) {
	secretEnv := config.MCPVarRefs(s.cfg.MCPServers)
	if s.cfg.KubeSecret == "" {
		secretEnv = append(secretEnv, config.EnvMCPServers)
	}
	// The config was validated on load: these parse.
	selector, _ := config.ParseNodeSelector(s.cfg.KubeNodeSelector)
	tols, _ := config.ParseTolerations(s.cfg.KubeTolerations)
	// The model gateway keeps the key in planagent: each attempt's pod
	// gets a token of its own and the gateway's URL, and no Secret or Job
	// spec holds the key. kube_gateway says where the pods reach this
	// process; "pod" (or nothing, in a pod of the cluster) is its pod IP.
	gw, err := s.modelGateway(env)
	if err != nil {
		return nil, err
	}
	gatewayAddr := s.cfg.KubeGateway
	if gatewayAddr == "pod" {
		gatewayAddr = ""
	}
	policy, err := s.egressPolicy()
	if err != nil {
		return nil, err
	}
	opts := kube.Options{
		ClosedEgress: !policy.IsOpen(),
		Volumes:      s.layout, RunID: runID, Image: s.cfg.Image, AgentImage: layout.DefaultImage,
		Kubeconfig: s.cfg.Kubeconfig, Context: s.cfg.KubeContext, Namespace: s.cfg.KubeNamespace,
		TaskTimeout: s.cfg.TaskTimeout, Memory: s.cfg.ContainerMemory, CPUs: s.cfg.ContainerCPUs,
		CPURequest: s.cfg.KubeCPURequest, MemoryRequest: s.cfg.KubeMemoryRequest, PendingTimeout: s.cfg.KubePendingTimeout,
		NodeSelector: selector, Tolerations: kube.Tolerations(tols),
		Env: env, SecretEnv: secretEnv, Secret: s.cfg.KubeSecret, Logger: s.logger, Log: log, Verbose: s.verbose,
		GatewayAddr: gatewayAddr,
		// Under closed egress the pods reach the allow-list through
		// planagent's egress proxy; refusals are events of their task.
		Egress: policy, EgressRefused: s.egressRefused(runID),
	}
	if gw != nil {
		opts.Gateway = gw // none without a key: a nil *Gateway is no nil interface
	}
	return kube.New(ctx, opts)
}
