package kube

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/planagent/internal/runtime/agentlog"
	"github.com/codeagent/codeagent/planagent/internal/runtime/heartbeat"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// kubeAttempt is one attempt's Job and the goroutine that feeds it its
// inputs, mirrors its liveness into a heartbeat on the host and collects
// its results.
type kubeAttempt struct {
	task, job string
	uid       string // of the Job this process created: a pod of an earlier Job of the same name is not its
	attempt   int
	adopted   bool // the Job of a killed planagent: its inputs may be in already
	cancel    context.CancelFunc
	done      chan struct{}
	revoke    func() // the attempt's gateway token and egress proxy credential
}

// Launch creates the attempt's Job and returns; a goroutine then waits for
// its pod, streams the inputs in, and once the agent container has exited
// streams the results out into the attempt's copy and reports/ on the
// host. An attempt that ends without its report is an Exit on Exited().
func (k *Kube) Launch(ctx context.Context, a Attempt) error {
	k.mu.Lock()
	if !k.started {
		k.mu.Unlock()
		return errors.New("kubernetes runtime: Launch before Start: start the runtime first")
	}
	// Only this very attempt launched again is replaced: the task's other
	// attempts run on beside it (best-of-N: several at once).
	earlier := k.attempts[a.Name()]
	delete(k.attempts, a.Name())
	k.mu.Unlock()
	if earlier != nil {
		earlier.cancel()
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
		err := k.deleteJob(dctx, earlier.job)
		cancel()
		if err != nil {
			return fmt.Errorf("task %s: delete the Job of attempt %d: %w", a.TaskID, earlier.attempt, err)
		}
		<-earlier.done
	}
	// Without shared storage the attempt's results come back by replacing
	// its directory: that must be its own copy, never the workspace itself.
	if a.Rel == "" {
		return fmt.Errorf("task %s: the kubernetes runtime needs the attempt's own copy of the workspace (checkpoints); this run works in the workspace itself: start a new run, or resume it with --runtime docker", a.TaskID)
	}
	if err := protocol.ValidateWorkspace(a.Rel); err != nil {
		return fmt.Errorf("task %s: %w", a.TaskID, err)
	}
	workdir := path.Join(layout.VolumesDir, a.Rel)
	if fi, err := os.Stat(a.Dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("task %s: the attempt's workspace %s is not a directory", a.TaskID, a.Dir)
	}
	spec := podSpec{
		name: jobName(k.opts.RunID, a.TaskID, a.Attempt), role: "attempt", task: a.TaskID, attempt: a.Attempt,
		deadline:  int64(math.Ceil(k.opts.TaskTimeout.Seconds())),
		command:   []string{layout.AgentBinary, "watch", "--task", a.TaskID, "--volumes", layout.VolumesDir, "--workspace", workdir},
		workdir:   workdir,
		withAgent: true,
		proxyUser: a.Name(),
	}
	revoke := func() {}
	if k.gatewayBase != "" {
		var err error
		if spec.token, revoke, err = k.opts.Gateway.Issue(a.Name()); err != nil {
			return fmt.Errorf("task %s attempt %d: %w", a.TaskID, a.Attempt, err)
		}
	}
	secret, revokeProxy, err := k.issueProxy(a.Name())
	if err != nil {
		revoke()
		return fmt.Errorf("task %s attempt %d: %w", a.TaskID, a.Attempt, err)
	}
	spec.proxySecret = secret
	revokeToken := revoke
	revoke = func() { revokeToken(); revokeProxy() }
	launched := false
	defer func() {
		if !launched {
			revoke()
		}
	}()
	job := k.jobSpec(spec)
	created := time.Now()
	made, adopted, err := k.adopt(ctx, a.TaskID, job.Name)
	if err != nil {
		return fmt.Errorf("task %s attempt %d: %w", a.TaskID, a.Attempt, err)
	}
	if adopted {
		k.log.Info("adopted the attempt's job a previous process created", "task", a.TaskID, "attempt", a.Attempt, "job", job.Name, "namespace", k.ns)
		if grant := k.takeGrant(job.Name); grant != nil {
			// Its pod holds the token the killed process issued, taken
			// again by serveGateway: the fresh one is not needed.
			revoke()
			revoke = grant
		}
	} else {
		made, err = k.api.Jobs(k.ns).Create(ctx, job, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// A Job of this very attempt that cannot be adopted (its pod
			// ended without its results collected): start over.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
			_ = k.deleteJob(dctx, job.Name)
			err = k.waitGone(dctx, job.Name)
			cancel()
			if err == nil {
				made, err = k.api.Jobs(k.ns).Create(ctx, job, metav1.CreateOptions{})
			}
		}
		if err != nil {
			return fmt.Errorf("task %s attempt %d: create job %s in namespace %s: %w", a.TaskID, a.Attempt, job.Name, k.ns, err)
		}
		k.log.Info("created the attempt's job", "task", a.TaskID, "attempt", a.Attempt, "job", job.Name, "namespace", k.ns)
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	at := &kubeAttempt{task: a.TaskID, job: job.Name, uid: string(made.UID), attempt: a.Attempt, adopted: adopted, cancel: cancel, done: make(chan struct{}), revoke: revoke}
	k.mu.Lock()
	if !k.started {
		k.mu.Unlock()
		cancel()
		dctx, c2 := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
		defer c2()
		_ = k.deleteJob(dctx, job.Name)
		return errors.New("kubernetes runtime stopped while the attempt's job was created")
	}
	k.attempts[a.Name()] = at
	k.mu.Unlock()
	launched = true
	go k.follow(bg, at, a, workdir, created)
	return nil
}

// adopt takes the Job name a killed planagent of this run left for this
// attempt when its pod can still deliver (running, or its agent done and its
// results not yet collected), and deletes the task's other leftover Jobs.
func (k *Kube) adopt(ctx context.Context, task, name string) (*batchv1.Job, bool, error) {
	k.mu.Lock()
	orphan := k.orphans[name]
	var others []string
	for n, j := range k.orphans {
		if j.Annotations[layout.LabelTask] == task {
			others = append(others, n)
			delete(k.orphans, n)
		}
	}
	k.mu.Unlock()
	for _, n := range others {
		if n == name {
			continue
		}
		if err := k.deleteJob(ctx, n); err != nil {
			return nil, false, fmt.Errorf("delete the job %s of an earlier attempt: %w", n, err)
		}
	}
	if orphan == nil {
		return nil, false, nil
	}
	if !k.adoptable(orphan) {
		// Its pod was told another model address (the gateway could not
		// listen where it did, or the key came from the Secret): it
		// cannot finish, so its attempt runs again.
		k.log.Info("the job a previous process created cannot be adopted: its pod's model gateway or egress proxy is not this one's; its attempt runs again",
			"job", name, "its_gateway", jobGateway(orphan), "gateway", k.gatewayBase, "its_proxy", jobProxy(orphan), "proxy", k.proxyURL)
		if g := k.takeGrant(name); g != nil {
			g()
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
		defer cancel()
		if err := k.deleteJob(dctx, name); err != nil {
			return nil, false, fmt.Errorf("delete job %s: %w", name, err)
		}
		return nil, false, k.waitGone(dctx, name)
	}
	pods, err := k.api.Pods(k.ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
	if err != nil {
		return nil, false, fmt.Errorf("list the pod of job %s: %w", name, err)
	}
	p := ownPod(pods.Items, string(orphan.UID))
	if d := dyingPod(pods.Items, string(orphan.UID)); p == nil && d != nil {
		p = d
	}
	if p != nil {
		if why := podProblem(p); why != "" || containerTerminated(p, "io") != nil {
			// Its results are gone with it (or were collected, and lost
			// with the killed process before the report landed).
			k.log.Info("the job a previous process created cannot be adopted: its attempt runs again", "job", name, "pod", p.Name, "why", why)
			if g := k.takeGrant(name); g != nil {
				g()
			}
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), layout.StopDeadline)
			defer cancel()
			if err := k.deleteJob(dctx, name); err != nil {
				return nil, false, fmt.Errorf("delete job %s: %w", name, err)
			}
			return nil, false, k.waitGone(dctx, name)
		}
	}
	return orphan, true, nil
}

// inputsIn reports whether the pod already has its inputs (the ready marker).
func (k *Kube) inputsIn(ctx context.Context, pod string) (bool, error) {
	var out strings.Builder
	script := fmt.Sprintf("if [ -e %s ]; then echo yes; else echo no; fi", kubeReady)
	if err := k.exec.Exec(ctx, k.ns, pod, "io", []string{"/bin/sh", "-c", script}, nil, &out); err != nil {
		return false, err
	}
	return strings.TrimSpace(out.String()) == "yes", nil
}

// waitGone waits until the Job name is deleted.
func (k *Kube) waitGone(ctx context.Context, name string) error {
	for {
		_, err := k.api.Jobs(k.ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("job %s still there: %w", name, ctx.Err())
		case <-time.After(k.poll):
		}
	}
}

// follow carries an attempt through: inputs in, heartbeat while its agent
// runs, results out, Job deleted. Cancelled by Abandon, Stop or a newer
// attempt, it just stops (they delete the Job).
func (k *Kube) follow(ctx context.Context, at *kubeAttempt, a Attempt, workdir string, created time.Time) {
	defer close(at.done)
	defer at.revoke() // the attempt is over (or given up): its token with it
	carried := make(chan struct{})
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); k.heartbeat(ctx, at.job, carried) }()
	err := k.carry(ctx, at, a, workdir, created)
	close(carried)
	<-hbDone
	if ctx.Err() != nil {
		return // someone else ended it and deletes the Job
	}
	if err == nil && !k.reported(a.Files(), a.Attempt) {
		err = errors.New("the pod ended without the attempt's report")
	}
	dctx, cancel := context.WithTimeout(context.Background(), layout.StopDeadline)
	if derr := k.deleteJob(dctx, at.job); derr != nil {
		k.log.Warn("delete the attempt's job", "job", at.job, "err", derr)
	}
	cancel()
	k.mu.Lock()
	if k.attempts[a.Name()] == at {
		delete(k.attempts, a.Name())
	}
	k.mu.Unlock()
	if err != nil {
		err = fmt.Errorf("the agent of task %s (attempt %d) in job %s died: %w", a.TaskID, a.Attempt, at.job, err)
		k.log.Error("an attempt's pod ended without its report", "task", a.TaskID, "attempt", a.Attempt, "err", err)
		select {
		case k.exited <- Exit{TaskID: a.TaskID, Attempt: a.Attempt, Err: err}:
		case <-ctx.Done():
		}
	}
}

// carry is follow's work; an error means the attempt failed.
func (k *Kube) carry(ctx context.Context, at *kubeAttempt, a Attempt, workdir string, created time.Time) error {
	pod, err := k.waitPod(ctx, jobRef{at.job, at.uid}, func(p *corev1.Pod) bool { return containerRunning(p, "io") })
	if err != nil {
		return err
	}
	k.log.Info("the attempt's pod runs", "job", at.job, "pod", pod, "after", time.Since(created).Round(time.Millisecond))
	send := true
	if at.adopted {
		// The killed process may have sent them: the marker is touched
		// only once the whole stream is in.
		in, err := k.inputsIn(ctx, pod)
		if err != nil {
			return fmt.Errorf("look for the inputs in pod %s: %w", pod, err)
		}
		send = !in
	}
	if send {
		if err := k.sendInputs(ctx, pod, a, workdir); err != nil {
			return fmt.Errorf("send the inputs to pod %s: %w", pod, err)
		}
		k.log.Info("inputs sent", "job", at.job, "after", time.Since(created).Round(time.Millisecond))
	}
	logsDone := make(chan struct{})
	go func() { defer close(logsDone); k.streamLogs(ctx, pod) }()
	ectx, stopEvents := context.WithCancel(ctx)
	eventsDone := make(chan struct{})
	go func() { defer close(eventsDone); k.mirrorEvents(ectx, pod, a.TaskID, a.Files()) }()
	p, err := k.waitPodObj(ctx, jobRef{at.job, at.uid}, func(p *corev1.Pod) bool { return containerTerminated(p, "agent") != nil })
	stopEvents()
	<-eventsDone
	if err != nil {
		return err
	}
	term := containerTerminated(p, "agent")
	k.log.Info("the agent exited", "job", at.job, "code", term.ExitCode, "after", time.Since(created).Round(time.Millisecond))
	if !containerRunning(p, "io") {
		return fmt.Errorf("the io container of pod %s ended before the results were collected (%s)", pod, podProblem(p))
	}
	// The report only of an agent that ended normally: one killed after a
	// report its shell forged must not complete the task.
	if err := k.collect(ctx, pod, a, workdir, term.ExitCode == 0); err != nil {
		return fmt.Errorf("collect the results from pod %s: %w", pod, err)
	}
	select {
	case <-logsDone:
	case <-time.After(layout.LogsDrain):
	}
	if term.ExitCode != 0 {
		return fmt.Errorf("codingagent exited with code %d (%s): a report is taken only from an agent that ended normally", term.ExitCode, term.Reason)
	}
	return nil
}

// sendInputs streams what the agent reads: the context layers it needs, its
// command file and its copy of the workspace; then the ready marker.
func (k *Kube) sendInputs(ctx context.Context, pod string, a Attempt, workdir string) error {
	v := k.opts.Volumes
	rel := strings.TrimPrefix(workdir, layout.VolumesDir+"/")
	entries := []tarEntry{
		{host: v.ProjectContext(), name: "context/project", optional: true},
		{host: v.TaskContext(a.TaskID), name: "context/task/" + a.TaskID, optional: true},
		{host: v.Memory(), name: "context/memory.md", optional: true},
		{host: v.CommandFile(a.Files()), name: "commands/" + filepath.Base(v.CommandFile(a.TaskID))},
		{host: a.Dir, name: rel},
	}
	return k.pushTar(ctx, pod, entries, true)
}

// pushTar streams entries into the pod's volumes and touches the ready
// marker. withAgent: first copies codingagent from the io container (the
// codeagent image) into the shared directory for the agent container, by
// rename (a resumed run may send the inputs again), before the marker the
// agent container waits for. An init container did that before; the
// kubelet started the pod's containers only once it had seen the init
// container's exit, which cost 0.7-1.1 s an attempt on the test cluster.
func (k *Kube) pushTar(ctx context.Context, pod string, entries []tarEntry, withAgent bool) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(pw, entries)) }()
	script := fmt.Sprintf("mkdir -p %[1]s/reports/.watchers %[1]s/commands/.claimed %[1]s/context %[3]s && tar -x -f - -C %[1]s && touch %[2]s",
		layout.VolumesDir, kubeReady, path.Dir(kubeReady))
	if withAgent {
		script = fmt.Sprintf("mkdir -p %[1]s/bin && cp %[2]s %[3]s.tmp && chmod 0555 %[3]s.tmp && mv -f %[3]s.tmp %[3]s && ",
			layout.AgentDir, AgentImageBinary, layout.AgentBinary) + script
	}
	err := k.exec.Exec(ctx, k.ns, pod, "io", []string{"/bin/sh", "-c", script}, pr, io.Discard)
	pr.CloseWithError(err)
	return err
}

// collect streams the attempt's copy back into its host directory (swapped
// in whole) and then its events and report (the report last and by rename:
// the orchestrator takes its appearance for the attempt's end), then lets
// the io container end.
func (k *Kube) collect(ctx context.Context, pod string, a Attempt, workdir string, withReport bool) error {
	rel := strings.TrimPrefix(workdir, layout.VolumesDir+"/")
	pr, pw := io.Pipe()
	var werr error
	go func() {
		err := k.exec.Exec(ctx, k.ns, pod, "io", []string{"tar", "-c", "-f", "-", "-C", layout.VolumesDir, rel}, nil, pw)
		werr = err
		pw.CloseWithError(err)
	}()
	err := replaceDir(pr, a.Dir, func(name string) (string, bool) {
		if name == rel {
			return ".", true
		}
		r, ok := strings.CutPrefix(name, rel+"/")
		return filepath.FromSlash(r), ok
	})
	pr.CloseWithError(err)
	if err != nil {
		return fmt.Errorf("the attempt's workspace: %w", errors.Join(err, werr))
	}
	v := k.opts.Volumes
	stage, err := os.MkdirTemp(v.Reports(), ".kube-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	report, events := filepath.Base(v.ReportFile(a.TaskID)), filepath.Base(v.EventsFile(a.TaskID))
	script := fmt.Sprintf("cd %s/reports && for f in %s %s; do [ -f \"$f\" ] && set -- \"$@\" \"$f\"; done; tar -c -f - \"$@\" </dev/null; touch %s",
		layout.VolumesDir, shellQuote(report), shellQuote(events), kubeCollected)
	pr2, pw2 := io.Pipe()
	go func() {
		pw2.CloseWithError(k.exec.Exec(ctx, k.ns, pod, "io", []string{"/bin/sh", "-c", script}, nil, pw2))
	}()
	err = extractTar(pr2, stage, func(name string) (string, bool) {
		return name, name == report || name == events
	})
	pr2.CloseWithError(err)
	if err != nil {
		return fmt.Errorf("the attempt's report: %w", err)
	}
	for _, f := range []string{events, report} {
		if f == report && !withReport {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(stage, f)); err == nil && fi.Mode().IsRegular() {
			// The pod names them by task; the run's volumes by the attempt's stem.
			dst := v.ReportFile(a.Files())
			if f == events {
				dst = v.EventsFile(a.Files())
			}
			if err := os.Rename(filepath.Join(stage, f), dst); err != nil {
				return err
			}
		}
	}
	return nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// heartbeat keeps a heartbeat file of the attempt in the host's watchers
// dir fresh while its goroutine carries it, so the orchestrator's watcher
// check sees the pod (codingagent's own heartbeat stays in the pod).
func (k *Kube) heartbeat(ctx context.Context, job string, carried <-chan struct{}) {
	heartbeat.Keep(ctx, k.opts.Volumes.Watchers(), "kube-"+job, job, carried)
}

// streamLogs copies the agent container's log into the run's log, line by
// line with the task as prefix and the API key masked.
func (k *Kube) streamLogs(ctx context.Context, pod string) {
	if k.opts.Log == nil {
		k.log.Debug("no log writer for the agent's log", "pod", pod)
		return
	}
	rc, err := k.api.Pods(k.ns).GetLogs(pod, &corev1.PodLogOptions{Container: "agent", Follow: true}).Stream(ctx)
	if err != nil {
		k.log.Warn("stream the agent's log", "pod", pod, "err", err)
		return
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := k.mask(sc.Text())
		if !k.opts.Verbose && !agentlog.WarningsOnly([]byte(line)) {
			continue // the task's progress shows from its events, as with docker
		}
		fmt.Fprintln(k.opts.Log, line)
	}
	k.log.Debug("the agent's log ended", "pod", pod, "lines", n, "err", sc.Err())
}

// reported reports whether the report of the attempt of this run whose
// files are named stem is in.
func (k *Kube) reported(stem string, attempt int) bool {
	rep, err := protocol.ReadReport(k.opts.Volumes.ReportFile(stem))
	return err == nil && rep.RunID == k.opts.RunID && rep.Attempt == attempt
}

// jobRef names a Job this process created: its name and UID ("" unknown).
type jobRef struct{ name, uid string }

// waitPod waits for the Job's pod to satisfy ok and returns its name.
func (k *Kube) waitPod(ctx context.Context, job jobRef, ok func(*corev1.Pod) bool) (string, error) {
	p, err := k.waitPodObj(ctx, job, ok)
	if err != nil {
		return "", err
	}
	return p.Name, nil
}

// waitPodObj polls the Job's pod until ok; a pod that failed, was evicted,
// lost its node, waits on an image it cannot get, or stays pending past
// PendingTimeout is an error naming why, as is a Job that failed
// (deadline) or vanished.
func (k *Kube) waitPodObj(ctx context.Context, ref jobRef, ok func(*corev1.Pod) bool) (*corev1.Pod, error) {
	since := time.Now()
	limit := k.opts.PendingTimeout
	job := ref.name
	sel := metav1.ListOptions{LabelSelector: "job-name=" + job}
	for {
		list, err := k.api.Pods(k.ns).List(ctx, sel)
		if err != nil && ctx.Err() == nil {
			k.log.Warn("list the attempt's pod", "job", job, "err", err)
		}
		var p *corev1.Pod
		if err == nil {
			p = ownPod(list.Items, ref.uid)
			if d := dyingPod(list.Items, ref.uid); p == nil && d != nil {
				return nil, fmt.Errorf("pod %s: %s", d.Name, podLost(d))
			}
		}
		if p != nil {
			if ok(p) {
				return p, nil
			}
			if msg := podProblem(p); msg != "" {
				return nil, fmt.Errorf("pod %s: %s", p.Name, msg)
			}
			if p.Status.Phase == corev1.PodPending && time.Since(since) > limit {
				return nil, fmt.Errorf("pod %s pending for %s (kube_pending_timeout): %s", p.Name, limit, pendingReason(p))
			}
		} else if err == nil {
			j, jerr := k.api.Jobs(k.ns).Get(ctx, job, metav1.GetOptions{})
			if apierrors.IsNotFound(jerr) {
				return nil, fmt.Errorf("job %s was deleted", job)
			}
			if jerr == nil && jobFailed(j) != "" {
				return nil, fmt.Errorf("job %s failed: %s", job, jobFailed(j))
			}
			if time.Since(since) > limit {
				return nil, fmt.Errorf("job %s has no pod after %s (kube_pending_timeout; quota? admission?)", job, limit)
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(k.poll):
		}
	}
}

// ownPod is the pod of the Job with uid that is not being deleted: a
// Job deleted and created again under the same name (a resumed run) may
// still have its old pod, terminating, under the same job-name label.
func ownPod(pods []corev1.Pod, uid string) *corev1.Pod {
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp == nil && (uid == "" || ownedBy(p, uid)) {
			return p
		}
	}
	return nil
}

// dyingPod is the Job's own pod being deleted under its attempt (nil when
// there is none, or the Job's uid is unknown).
func dyingPod(pods []corev1.Pod, uid string) *corev1.Pod {
	for i := range pods {
		if p := &pods[i]; p.DeletionTimestamp != nil && uid != "" && ownedBy(p, uid) {
			return p
		}
	}
	return nil
}

func ownedBy(p *corev1.Pod, uid string) bool {
	for _, o := range p.OwnerReferences {
		if string(o.UID) == uid {
			return true
		}
	}
	return false
}

func jobFailed(j *batchv1.Job) string {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return c.Reason + ": " + c.Message
		}
	}
	return ""
}

// jobFinished names how a Job ended ("" while it has not).
func jobFinished(j *batchv1.Job) string {
	if why := jobFailed(j); why != "" {
		return why
	}
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return "complete"
		}
	}
	return ""
}

// podProblem names what makes a pod unable to go on ("" when nothing does).
func podProblem(p *corev1.Pod) string {
	if lost := podLost(p); lost != "" {
		return lost
	}
	if p.Status.Phase == corev1.PodFailed {
		return fmt.Sprintf("failed: %s %s", p.Status.Reason, p.Status.Message)
	}
	all := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, s := range all {
		if w := s.State.Waiting; w != nil {
			if w.Reason == "CreateContainerConfigError" && strings.Contains(w.Message, "failed to sync") {
				// The kubelet's cache of a secret or config map just made
				// was not yet in sync ("failed to sync secret cache: timed
				// out waiting for the condition"): it retries, and the pod
				// starts a moment later. A missing one stays fatal.
				continue
			}
			switch w.Reason {
			case "ErrImageNeverPull", "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
				return fmt.Sprintf("container %s cannot start: %s: %s (import the image into the node, or check imagePullPolicy)", s.Name, w.Reason, w.Message)
			}
		}
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 && isInit(p, s.Name) {
			return fmt.Sprintf("init container %s failed with code %d: %s", s.Name, t.ExitCode, t.Message)
		}
	}
	return ""
}

// podLost names a pod taken away from under its attempt: evicted (node
// pressure, preemption, the eviction API), its node lost (unreachable, the
// taint manager's deletion), or deleted by someone else.
func podLost(p *corev1.Pod) string {
	node := p.Spec.NodeName
	if node == "" {
		node = "its node"
	}
	if p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted" {
		return fmt.Sprintf("evicted from %s: %s", node, p.Status.Message)
	}
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.DisruptionTarget || c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Reason {
		case "DeletionByTaintManager":
			return fmt.Sprintf("node %s lost (%s): %s", node, c.Reason, c.Message)
		default:
			return fmt.Sprintf("evicted from %s (%s): %s", node, c.Reason, c.Message)
		}
	}
	if p.Status.Phase == corev1.PodUnknown {
		return fmt.Sprintf("node %s lost: the pod's state is unknown (%s)", node, p.Status.Message)
	}
	if p.DeletionTimestamp != nil {
		return fmt.Sprintf("deleted while its attempt ran (by someone else, or %s went away)", node)
	}
	return ""
}

func isInit(p *corev1.Pod, name string) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

func pendingReason(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			return "unschedulable: " + c.Message
		}
	}
	return "not started"
}

func containerRunning(p *corev1.Pod, name string) bool { //nolint:unparam // only "io" is asked about today, but the pod has two containers (agent, io): the name says which, as containerTerminated's does
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == name {
			return s.State.Running != nil
		}
	}
	return false
}

func containerTerminated(p *corev1.Pod, name string) *corev1.ContainerStateTerminated {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == name {
			return s.State.Terminated
		}
	}
	return nil
}
