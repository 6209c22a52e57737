package kube

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/codeagent/codeagent/planagent/internal/runtime/attempt"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
	"github.com/codeagent/codeagent/planagent/internal/runtime/output"
)

// Exec runs an acceptance command (sh -c) in a fresh Job of the user's
// image on a copy of dir streamed into its pod, with none of the model
// settings; its output is the agent container's log, its exit code the
// container's. What the command changes in the pod stays there. Under
// closed egress its pod is under the run's NetworkPolicy like an
// attempt's and reaches the allow-list through the egress proxy.
func (k *Kube) Exec(ctx context.Context, dir, command string, timeout time.Duration) (ExecResult, error) {
	workdir, err := k.podPath(dir)
	if err != nil {
		return ExecResult{}, err
	}
	if timeout <= 0 {
		timeout = layout.ExecDefaultTimeout
	}
	name := execJobName(k.opts.RunID, k.execSeq.Add(1))
	// At the egress proxy the command goes by the attempt whose copy it
	// runs in (attempts/<run>/<task>.<n>, or its .accept copy), so its
	// refusals are that task's; in the shared workspace, the run's.
	user := runClient
	if task, n, ok := k.opts.Volumes.AttemptOf(k.opts.RunID, dir); ok {
		user = attempt.Name(task, n)
	}
	// Its credential lives as long as the command's Job: the attempt's own
	// may be revoked already (acceptance runs after its agent ended).
	secret, revoke, err := k.issueProxy(user)
	if err != nil {
		return ExecResult{ExitCode: -1}, fmt.Errorf("acceptance command %q: %w", command, err)
	}
	defer revoke()
	job := k.jobSpec(podSpec{name: name, role: "exec",
		deadline: int64(math.Ceil(timeout.Seconds())) + int64(math.Ceil(k.opts.PendingTimeout.Seconds())),
		command:  []string{"/bin/sh", "-c", command}, workdir: workdir, proxyUser: user, proxySecret: secret})
	made, err := k.api.Jobs(k.ns).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		return ExecResult{ExitCode: -1}, fmt.Errorf("acceptance command %q: create job %s in namespace %s: %w", command, name, k.ns, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
		defer cancel()
		if err := k.deleteJob(dctx, name); err != nil {
			k.log.Warn("delete the acceptance command's job", "job", name, "err", err)
		}
	}()
	ref := jobRef{name, string(made.UID)}
	pod, err := k.waitPod(ctx, ref, func(p *corev1.Pod) bool { return containerRunning(p, "io") })
	if err != nil {
		return ExecResult{ExitCode: -1}, fmt.Errorf("acceptance command %q: %w", command, err)
	}
	rel := strings.TrimPrefix(workdir, layout.VolumesDir+"/")
	if err := k.pushTar(ctx, pod, []tarEntry{{host: dir, name: rel, skip: k.opts.Volumes.Root}}, false); err != nil {
		return ExecResult{ExitCode: -1}, fmt.Errorf("acceptance command %q: send %s to pod %s: %w", command, dir, pod, err)
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p, err := k.waitPodObj(tctx, ref, func(p *corev1.Pod) bool { return containerTerminated(p, "agent") != nil })
	if err != nil {
		if ctx.Err() == nil && tctx.Err() != nil {
			out, _ := k.podLog(context.WithoutCancel(ctx), pod)
			return ExecResult{Output: output.Redact(out, secret) + fmt.Sprintf("\n[command timed out after %s]", timeout), ExitCode: layout.TimeoutExitCode}, nil
		}
		return ExecResult{ExitCode: -1}, fmt.Errorf("acceptance command %q: %w", command, err)
	}
	// The output goes into the task's result: not its credential, dead
	// as it is once the command ended.
	out, err := k.podLog(ctx, pod)
	out = output.Redact(out, secret)
	if err != nil {
		return ExecResult{Output: out, ExitCode: -1}, err
	}
	return ExecResult{Output: out, ExitCode: int(containerTerminated(p, "agent").ExitCode)}, nil
}

// podLog is the agent container's whole log, its end kept, the key masked.
func (k *Kube) podLog(ctx context.Context, pod string) (string, error) {
	rc, err := k.api.Pods(k.ns).GetLogs(pod, &corev1.PodLogOptions{Container: "agent"}).Stream(ctx)
	if err != nil {
		return "", fmt.Errorf("read the output of pod %s (RBAC needs get on pods/log): %w", pod, err)
	}
	defer rc.Close()
	out := &output.Tail{Limit: layout.ExecOutputCap}
	_, err = io.Copy(out, rc)
	s := k.mask(out.String())
	if err != nil {
		return s, fmt.Errorf("read the output of pod %s: %w", pod, err)
	}
	return s, nil
}

// podPath maps a host directory under the volumes to its path in the pod.
func (k *Kube) podPath(dir string) (string, error) {
	if p, ok := layout.ContainerDir(k.opts.Volumes, dir); ok {
		return p, nil
	}
	return "", fmt.Errorf("kubernetes runtime: %s is neither the workspace nor under %s", dir, k.opts.Volumes.Attempts())
}
