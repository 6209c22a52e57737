package kube

import (
	"context"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// probeName is the Job that checks, at start, that the images run.
func probeName(run string) string { return kubeName("ca", run, "probe") }

// probe runs a Job of the user's image and the codeagent image, placed as
// the attempts' pods will be, that only checks what they need (/bin/sh;
// codingagent in the codeagent image) and exits. A setup that cannot work
// (an image the nodes do not have, no node that fits) is then named once,
// at start, instead of failing every attempt. It returns the pod's IP,
// which tells where this host is on the pods' network ("" unknown).
func (k *Kube) probe(ctx context.Context) (string, error) {
	sc := restrictedContainer()
	containers := []corev1.Container{{
		Name: "image", Image: k.opts.Image, ImagePullPolicy: k.opts.PullPolicy,
		Command: []string{"/bin/sh", "-c", "true"}, SecurityContext: sc, Resources: k.agentResources(),
	}}
	if k.opts.AgentImage != k.opts.Image {
		containers = append(containers, corev1.Container{
			Name: "codeagent", Image: k.opts.AgentImage, ImagePullPolicy: k.opts.PullPolicy,
			Command: []string{"/bin/sh", "-c", "test -x " + AgentImageBinary}, SecurityContext: sc,
		})
	} else {
		containers[0].Command[2] = "test -x " + AgentImageBinary
	}
	labels := map[string]string{layout.LabelManaged: "true", layout.LabelRun: labelValue(k.opts.RunID), layout.LabelRole: "probe"}
	limit := k.opts.PendingTimeout
	job := k.job(probeName(k.opts.RunID), labels, map[string]string{layout.LabelRun: k.opts.RunID},
		int64(math.Ceil(limit.Seconds()))+60, k.restrictedPod(containers...))
	// A probe left by a killed planagent of this run is replaced.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
	_ = k.deleteJob(dctx, job.Name)
	err := k.waitGone(dctx, job.Name)
	cancel()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrClusterUnreachable, err)
	}
	made, err := k.api.Jobs(k.ns).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("%w: create the image check job %s in namespace %s: %w", ErrClusterUnreachable, job.Name, k.ns, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
		defer cancel()
		if err := k.deleteJob(dctx, job.Name); err != nil {
			k.log.Warn("delete the image check job", "job", job.Name, "err", err)
		}
	}()
	start := time.Now()
	p, err := k.waitPodObj(ctx, jobRef{job.Name, string(made.UID)}, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if err != nil {
		return "", fmt.Errorf("%w: the attempts' pods cannot run: %w: fix the image (--image; import it into the nodes or push it where they pull from) or the placement (kube_node_selector, kube_tolerations, kube_cpu_request, kube_memory_request)", ErrClusterUnreachable, err)
	}
	if p.Status.Phase == corev1.PodFailed {
		for _, s := range p.Status.ContainerStatuses {
			if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
				want := "/bin/sh"
				if s.Name == "codeagent" || k.opts.AgentImage == k.opts.Image {
					want = "/bin/sh and " + AgentImageBinary + " (make image)"
				}
				img := k.opts.Image
				if s.Name == "codeagent" {
					img = k.opts.AgentImage
				}
				return "", fmt.Errorf("%w: image %s cannot run the attempts: its check exited with code %d (%s): it needs %s", ErrClusterUnreachable, img, t.ExitCode, t.Reason, want)
			}
		}
		return "", fmt.Errorf("%w: the image check pod %s failed: %s %s", ErrClusterUnreachable, p.Name, p.Status.Reason, p.Status.Message)
	}
	k.log.Info("the images run in the cluster", "after", time.Since(start).Round(time.Millisecond), "pod_ip", p.Status.PodIP)
	return p.Status.PodIP, nil
}
