//go:build e2e

package main

// Best-of-N attempts end to end (docs/attempts.md, issue 40's "Show it"):
// the real planagent and codingagent, the docker runtime, a git
// repository with an acceptance command, and the strict test model
// scripted per attempt.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/codeagent/codeagent/internal/poll"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runtime/layout"
)

// TestE2EDockerAttemptsEscalate: attempt 1 fails its acceptance; attempts 2
// and 3 then run side by side (the model holds each one's first step until
// both have started, and the record's times overlap); both pass, and the
// smaller diff, attempt 3's, is merged.
func TestE2EDockerAttemptsEscalate(t *testing.T) {
	bestOfThree(t, "escalate", []int{2, 3})
}

// TestE2EDockerAttemptsParallel: the three attempts at once, each in its
// own container and copy, at --parallel 3; attempt 3 is merged.
func TestE2EDockerAttemptsParallel(t *testing.T) {
	bestOfThree(t, "parallel", []int{1, 2, 3})
}

func bestOfThree(t *testing.T, policy string, together []int) {
	cli := dockerE2E(t)
	ensureTestImages(t, cli)
	m := newBestModel(together...)
	e, ws, planFile := newBestEnv(t, m, newDockerRunEnv)
	attempts := watchContainers(t, cli, layout.LabelVolumes+"="+e.volumes, layout.LabelRole+"=attempt")

	st := runBestOfThree(t, e, m, ws, planFile, policy, together, "--runtime", "docker", "--image", busyboxImage)

	// A container per attempt, none left.
	if created := attempts.settled(t); len(created) != 3 {
		t.Errorf("%d attempt containers, want 3: %v", len(created), attempts.named(created))
	}
	assertNoContainers(t, cli, layout.LabelRun+"="+st.ID)
	assertNoContainers(t, cli, layout.LabelVolumes+"="+e.volumes)
}

// TestE2EDockerAttemptsKilledThenResumed kills planagent (SIGKILL) at a
// random moment within each phase of an escalated task (and in one of a
// parallel one), then resumes it:
// one winner, one commit for the task, no container left, and no attempt
// run twice — an attempt that had ended is not started again, one cut
// short is taken up once, none ends twice, and every attempt the model
// ended is one the run's record kept (none thrown away and redone).
func TestE2EDockerAttemptsKilledThenResumed(t *testing.T) {
	cli := dockerE2E(t)
	ensureTestImages(t, cli)
	seed := uint64(time.Now().UnixNano())
	t.Logf("random kill moments: seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, phase := range []struct {
		name, policy string
		// hold: attempts whose first step the model delays until the kill.
		hold []int
		// ready says the moment has come, from the run's volumes and the model.
		ready func(e *runEnv, m *bestModel) bool
	}{
		{"attempt 1 working", "escalate", []int{1}, func(_ *runEnv, m *bestModel) bool { s, _, _, _, _ := m.counts(); return s[1] > 0 }},
		{"attempts 2 and 3 working", "escalate", []int{2, 3}, func(_ *runEnv, m *bestModel) bool { s, _, _, _, _ := m.counts(); return s[2] > 0 && s[3] > 0 }},
		// Attempt 3 passed and waits for 2, still working, to be ranked.
		{"attempt 3 passed, 2 working", "escalate", []int{2}, func(e *runEnv, _ *bestModel) bool { return acceptedInState(e, 3) }},
		// parallel: 1 failed and 3 passed while 2 works.
		{"parallel, 1 failed, 3 passed, 2 working", "parallel", []int{2}, func(e *runEnv, _ *bestModel) bool {
			return acceptedInState(e, 1) && acceptedInState(e, 3)
		}},
	} {
		jitter := time.Duration(rng.Int64N(int64(2 * time.Second)))
		t.Run(phase.name, func(t *testing.T) { killDuringAttempts(t, cli, phase.policy, phase.hold, phase.ready, jitter) })
	}
}

// acceptedInState reports whether the run's record (its state and the
// journal after it, read as status reads them) holds attempt n of best
// with its acceptance output.
func acceptedInState(e *runEnv, n int) bool {
	l, err := volume.New(e.volumes, "")
	if err != nil {
		return false
	}
	st, err := runrecord.LoadState(l, "", false)
	if err != nil || st.Info["best"] == nil {
		return false
	}
	for _, r := range st.Info["best"].Results {
		if r.Attempt == n && r.Acceptance != "" {
			return true
		}
	}
	return false
}

func killDuringAttempts(t *testing.T, cli *client.Client, policy string, hold []int, ready func(*runEnv, *bestModel) bool, jitter time.Duration) {
	m := newBestModel()
	for _, n := range hold {
		m.hold[n] = 10 * time.Minute // ended by the kill
	}
	e, ws, planFile := newBestEnv(t, m, newDockerRunEnv)
	cmd := e.command("run", "--runtime", "docker", "--image", busyboxImage, "--workspace", ws, "--plan", planFile, "--attempt-policy", policy, "--parallel", "3", "--yes")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	came := poll.Wait(t.Context(), 5*time.Minute, func() bool {
		select {
		case err := <-exited:
			exited <- err
			return true
		default:
		}
		return ready(e, m)
	})
	select {
	case err := <-exited:
		t.Fatalf("planagent exited (%v) before the moment to kill it\n%s", err, errb.String())
	default:
	}
	if !came {
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("the moment to kill did not come within 5 minutes\n%s", errb.String())
	}
	time.Sleep(jitter)
	_ = cmd.Process.Kill() // SIGKILL: the attempts' containers go on alone
	<-exited
	m.mu.Lock()
	m.killed = true
	m.mu.Unlock()
	before, _, answeredBefore, _, _ := m.counts()
	t.Logf("killed %s after the moment; attempts started %v, ended %v", jitter.Round(time.Millisecond), before, answeredBefore)

	out, stderr, code := runLong(e, "resume", "--runtime", "docker")
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, out, stderr)
	}
	st := statusOf(t, e)
	task := st.Tasks[0]
	if st.Status != "completed" || task.Status != "completed" {
		t.Fatalf("after resume: run %s, best %s; want completed", st.Status, task.Status)
	}
	starts, _, answers, _, other := m.counts()
	if len(other) != 0 {
		t.Errorf("requests of no attempt of best: %q", other)
	}
	var verdicts []string
	for _, a := range task.AttemptResults {
		verdicts = append(verdicts, fmt.Sprintf("%d %s rank %d", a.Attempt, a.Status, a.Rank))
	}
	t.Logf("after resume: attempts started %v, ended %v; the record: %s", starts, answers, strings.Join(verdicts, ", "))
	ended := 0
	winners := []int{}
	var small, large bool
	for _, a := range task.AttemptResults {
		// Ended by its agent: merged, passed and ranked below, or failed.
		if a.Status == "completed" || a.Status == "passed" || a.Status == "failed" {
			ended++
		}
		if a.Rank == 1 {
			winners = append(winners, a.Attempt)
		}
		if a.Rank > 0 && a.Attempt%2 == 1 {
			small = true
		}
		if a.Rank > 0 && a.Attempt%2 == 0 {
			large = true
		}
	}
	// An attempt the model had ended before the kill is not started again;
	// one cut short is taken up again at most once (under its number or
	// another); none ends twice.
	for n, c := range starts {
		again := c - before[n]
		if (answeredBefore[n] > 0 && again != 0) || again > 1 || answers[n] > 1 {
			t.Errorf("attempt %d: started %d times before the kill and %d after, ended %d times: an attempt ran twice (before %v/%v, in all %v/%v)",
				n, before[n], again, answers[n], before, answeredBefore, starts, answers)
		}
	}
	total := 0
	for _, c := range answers {
		total += c
	}
	if total != ended {
		t.Errorf("the model ended %d attempts %v, the run's record has %d ended: an attempt's work was thrown away and redone\n%+v",
			total, answers, ended, task.AttemptResults)
	}
	if len(winners) != 1 {
		t.Fatalf("attempts ranked 1: %v, want one winner\n%+v", winners, task.AttemptResults)
	}
	// The smaller diff wins whenever both kinds passed; the tree is the winner's.
	w := winners[0]
	if small && large && w%2 == 0 {
		t.Errorf("attempt %d (the large diff) won over a passing small one: %+v", w, task.AttemptResults)
	}
	if got := readFile(t, ws, "answer.txt"); got != "42\n" {
		t.Errorf("answer.txt = %q, want 42", got)
	}
	_, err := os.Stat(filepath.Join(ws, "big.txt"))
	if hasBig := err == nil; hasBig != (w%2 == 0) {
		t.Errorf("big.txt in the workspace: %v, winner attempt %d", hasBig, w)
	}
	if n := gitIn(t, ws, "rev-list", "--count", "HEAD"); n != "2" {
		t.Errorf("%s commits on the branch, want the user's and best's\n%s", n, gitIn(t, ws, "log", "--oneline"))
	}
	assertNoContainers(t, cli, layout.LabelRun+"="+st.ID)
	assertNoContainers(t, cli, layout.LabelVolumes+"="+e.volumes)
}
