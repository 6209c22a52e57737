package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/codeagent/codeagent/planagent/internal/runtime"
)

// addKubeFlags adds the kubernetes runtime's flags to run and resume.
func addKubeFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.String("namespace", "", "kubernetes runtime: namespace of the attempts' Jobs (default: the context's namespace, config kube_namespace)")
	fl.String("kubeconfig", "", "kubernetes runtime: kubeconfig file (default $KUBECONFIG or ~/.kube/config; in a pod the in-cluster config)")
	fl.String("context", "", "kubernetes runtime: kubeconfig context (default: the current context, config kube_context)")
}

// newKubeRuntime builds the kubernetes runtime from the effective settings:
// the task image is the user's toolchain, the codingagent comes from the
// default image (`make image`), imported into the cluster's nodes.
func newKubeRuntime(ctx context.Context, s *session, runID string, env map[string]string, log io.Writer) (runtime.Runtime, error) {
	return runtime.NewKube(ctx, runtime.KubeOptions{
		Volumes: s.layout, RunID: runID, Image: s.cfg.Image, AgentImage: runtime.DefaultImage,
		Kubeconfig: s.cfg.Kubeconfig, Context: s.cfg.KubeContext, Namespace: s.cfg.KubeNamespace,
		TaskTimeout: s.cfg.TaskTimeout, Memory: s.cfg.ContainerMemory, CPUs: s.cfg.ContainerCPUs,
		Env: env, Logger: s.logger, Log: log, Verbose: s.verbose,
	})
}
