//go:build clientgo

package kube

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/codeagent/codeagent/internal/poll"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// podFiles plays the io container: it keeps what planagent streams in and
// answers the results streams with the files given.
type podFiles struct {
	mu       sync.Mutex
	in       map[string]string // names in the input tar → content
	results  map[string]string // what `tar -c` of the copy returns (names under the copy's rel)
	report   []byte            // reports/<id>.md in the pod, nil for none
	reportID string
	pushed   chan struct{}
	ready    bool   // the inputs-ready marker is in the pod (a Job a killed planagent fed)
	events   string // what `tail -f` of the events file prints, then it follows until cancelled
	pushes   int
	scripts  []string // the scripts of the input streams
}

func (p *podFiles) Exec(ctx context.Context, _, _, container string, argv []string, stdin io.Reader, stdout io.Writer) error {
	if container != "io" {
		return io.ErrUnexpectedEOF
	}
	script := argv[len(argv)-1]
	switch {
	case strings.Contains(script, "echo yes"): // is the ready marker there?
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.ready {
			_, err := io.WriteString(stdout, "yes\n")
			return err
		}
		_, err := io.WriteString(stdout, "no\n")
		return err
	case strings.Contains(script, "tail -c +1 -f"):
		if _, err := io.WriteString(stdout, p.events); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	}
	if stdin != nil {
		tr := tar.NewReader(stdin)
		p.mu.Lock()
		defer p.mu.Unlock()
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			b, _ := io.ReadAll(tr)
			p.in[h.Name] = string(b)
		}
		p.pushes++
		p.scripts = append(p.scripts, script)
		if p.pushes == 1 {
			close(p.pushed)
		}
		return nil
	}
	tw := tar.NewWriter(stdout)
	add := func(name string, b []byte) {
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg})
		_, _ = tw.Write(b)
	}
	if argv[0] == "tar" { // the copy
		for name, c := range p.results {
			add(name, []byte(c))
		}
	} else if p.report != nil { // reports/
		add(p.reportID+".md", p.report)
	}
	return tw.Close()
}

// runFakeAttempt launches alpha's attempt 1 on the fake clientset, plays
// its pod (io running, then the agent exited with code) and returns the
// attempt's host copy.
func runFakeAttempt(t *testing.T, pf *podFiles, code int32) (*Kube, string) {
	t.Helper()
	k, cs := newTestKube(t)
	k.exec = pf
	ctx := t.Context()
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Stop(context.WithoutCancel(ctx)) })
	rel := "attempts/r/alpha.1"
	dir := filepath.Join(k.opts.Volumes.Root, rel)
	_ = os.MkdirAll(dir, 0o755)
	_ = os.WriteFile(filepath.Join(dir, "old.txt"), []byte("base\n"), 0o644)
	_ = os.MkdirAll(filepath.Dir(k.opts.Volumes.CommandFile("alpha")), 0o755)
	_ = os.WriteFile(k.opts.Volumes.CommandFile("alpha"), []byte("command"), 0o644)
	if err := k.Launch(ctx, Attempt{RunID: k.opts.RunID, TaskID: "alpha", Attempt: 1, Dir: dir, Rel: rel}); err != nil {
		t.Fatal(err)
	}
	job := jobName(k.opts.RunID, "alpha", 1)
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job + "-x", Namespace: "agents", Labels: map[string]string{"job-name": job}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "agent", State: running}, {Name: "io", State: running}}}}
	if _, err := cs.CoreV1().Pods("agents").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-pf.pushed:
	case <-time.After(30 * time.Second):
		t.Fatal("no inputs were streamed into the pod")
	}
	pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	if _, err := cs.CoreV1().Pods("agents").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return k, dir
}

// The whole way of an attempt without a cluster: the inputs go in, the
// copy comes back swapped in whole, the report lands, the Job goes.
func TestKubeAttemptCarriesFilesBothWays(t *testing.T) {
	var rep bytes.Buffer
	tmp := filepath.Join(t.TempDir(), "alpha.md")
	if err := protocol.WriteReport(tmp, &protocol.Report{ID: "alpha", RunID: "run-20261125-1", Attempt: 1, Status: protocol.StatusCompleted, Summary: "done"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(tmp)
	rep.Write(b)
	pf := &podFiles{in: map[string]string{}, pushed: make(chan struct{}), reportID: "alpha", report: rep.Bytes(),
		results: map[string]string{"attempts/r/alpha.1/new.txt": "made in the pod\n"}}
	k, dir := runFakeAttempt(t, pf, 0)
	poll.Until(t, 30*time.Second, "the report to reach the host", func() bool { return k.reported("alpha", 1) })
	pf.mu.Lock()
	if pf.in["commands/alpha.md"] != "command" || pf.in["attempts/r/alpha.1/old.txt"] != "base\n" {
		t.Errorf("inputs streamed: %v", pf.in)
	}
	// codingagent comes from the io container with the inputs, before the
	// marker the agent container waits for (no init container).
	if len(pf.scripts) != 1 || !strings.Contains(pf.scripts[0], "cp "+AgentImageBinary+" ") ||
		strings.Index(pf.scripts[0], layout.AgentBinary) > strings.Index(pf.scripts[0], "touch "+kubeReady) {
		t.Errorf("input scripts %q: want codingagent copied into %s, then the ready marker", pf.scripts, layout.AgentBinary)
	}
	pf.mu.Unlock()
	if b, _ := os.ReadFile(filepath.Join(dir, "new.txt")); string(b) != "made in the pod\n" {
		t.Errorf("new.txt on the host = %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "old.txt")); err == nil {
		t.Error("a file deleted in the pod stayed on the host")
	}
	waitJobGone(t, k, jobName(k.opts.RunID, "alpha", 1))
	select {
	case ex := <-k.Exited():
		t.Errorf("an attempt with its report is an Exit: %v", ex.Err)
	default:
	}
	entries, _ := os.ReadDir(k.opts.Volumes.Watchers())
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "kube-") {
			t.Errorf("heartbeat %s stayed after the attempt", e.Name())
		}
	}
}

// An agent that exits without a report is an Exit naming its exit code.
func TestKubeAttemptWithoutReportIsAnExit(t *testing.T) {
	pf := &podFiles{in: map[string]string{}, pushed: make(chan struct{}), reportID: "alpha", results: map[string]string{}}
	k, _ := runFakeAttempt(t, pf, 3)
	select {
	case ex := <-k.Exited():
		if ex.TaskID != "alpha" || ex.Err == nil || !strings.Contains(ex.Err.Error(), "code 3") {
			t.Errorf("exit %q: %v", ex.TaskID, ex.Err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no Exit for an agent that died without its report")
	}
	waitJobGone(t, k, jobName(k.opts.RunID, "alpha", 1))
}

func waitJobGone(t *testing.T, k *Kube, name string) {
	t.Helper()
	poll.Until(t, 30*time.Second, "job "+name+" to be deleted after the attempt", func() bool {
		_, err := k.api.Jobs("agents").Get(t.Context(), name, metav1.GetOptions{})
		return err != nil
	})
}

// A report in the pod of an agent that did not end normally (its shell
// forged the report and killed it) does not reach the host: an Exit.
func TestKubeReportOfAKilledAgentIsNotTaken(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "alpha.md")
	if err := protocol.WriteReport(tmp, &protocol.Report{ID: "alpha", RunID: "run-20261125-1", Attempt: 1, Status: protocol.StatusCompleted, Summary: "forged"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(tmp)
	pf := &podFiles{in: map[string]string{}, pushed: make(chan struct{}), reportID: "alpha", report: b, results: map[string]string{}}
	k, _ := runFakeAttempt(t, pf, 137)
	select {
	case ex := <-k.Exited():
		if ex.Err == nil || !strings.Contains(ex.Err.Error(), "ended normally") {
			t.Errorf("exit: %v", ex.Err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no Exit for an agent killed after a forged report")
	}
	if k.reported("alpha", 1) {
		t.Error("the forged report reached reports/")
	}
}

// Attempt 2 of a task with several attempts side by side: its pod is
// given the command of its stem (commands/alpha@2.md on the host) under
// the name the agent knows, and its report comes back under the stem.
func TestKubeAttemptOfSeveralUsesItsStem(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "alpha.md")
	if err := protocol.WriteReport(tmp, &protocol.Report{ID: "alpha", RunID: "run-20261125-1", Attempt: 2, Status: protocol.StatusCompleted, Summary: "done 2"}); err != nil {
		t.Fatal(err)
	}
	rep, _ := os.ReadFile(tmp)
	pf := &podFiles{in: map[string]string{}, pushed: make(chan struct{}), reportID: "alpha", report: rep, results: map[string]string{}}
	k, cs := newTestKube(t)
	k.exec = pf
	ctx := t.Context()
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Stop(context.WithoutCancel(ctx)) })
	v := k.opts.Volumes
	rel := "attempts/r/alpha.2"
	dir := filepath.Join(v.Root, rel)
	_ = os.MkdirAll(dir, 0o755)
	_ = os.MkdirAll(v.Commands(), 0o755)
	stem := protocol.Stem("alpha", 2)
	_ = os.WriteFile(v.CommandFile("alpha"), []byte("another attempt's command"), 0o644)
	_ = os.WriteFile(v.CommandFile(stem), []byte("command 2"), 0o644)
	if err := k.Launch(ctx, Attempt{RunID: k.opts.RunID, TaskID: "alpha", Attempt: 2, Dir: dir, Rel: rel, Stem: stem}); err != nil {
		t.Fatal(err)
	}
	job := jobName(k.opts.RunID, "alpha", 2)
	setPod(t, cs, job, running, running)
	select {
	case <-pf.pushed:
	case <-time.After(30 * time.Second):
		t.Fatal("no inputs were streamed into the pod")
	}
	setPod(t, cs, job, exited0, running)
	poll.Until(t, 30*time.Second, "the report under the stem", func() bool { return k.reported(stem, 2) })
	pf.mu.Lock()
	if got := pf.in["commands/alpha.md"]; got != "command 2" {
		t.Errorf("the pod's commands/alpha.md = %q, want attempt 2's command", got)
	}
	pf.mu.Unlock()
	if _, err := os.Lstat(v.ReportFile("alpha")); err == nil {
		t.Error("a report under the bare task id")
	}
}
