package kube

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
	"github.com/codeagent/codeagent/planagent/internal/runtime/output"
)

// mirrorEvents copies the task's events file, as codingagent writes it in
// the pod, onto the host's reports/ while the agent runs, so progress (the
// run's tool-call events, the web view) shows as with docker's bind mount.
// It follows the file over pods/exec (tail -f in the io container) until
// ctx ends; the host file is started afresh, so an adopted attempt's
// mirror does not repeat what a killed process copied.
func (k *Kube) mirrorEvents(ctx context.Context, pod, task, stem string) {
	host := k.opts.Volumes.EventsFile(stem)
	in := layout.VolumesDir + "/reports/" + filepath.Base(k.opts.Volumes.EventsFile(task))
	script := fmt.Sprintf(`until [ -e %[1]s ]; do sleep 0.2; done; exec tail -c +1 -f %[1]s`, shellQuote(in))
	w := &output.CappedFile{Path: host, Limit: layout.EventsMirrorCap}
	defer w.Close()
	err := k.exec.Exec(ctx, k.ns, pod, "io", []string{"/bin/sh", "-c", script}, nil, w)
	if err != nil && ctx.Err() == nil {
		k.log.Warn("follow the attempt's events", "pod", pod, "err", err)
	}
}
