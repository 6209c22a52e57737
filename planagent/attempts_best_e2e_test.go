//go:build e2e

package main

// The best-of-N scenario of issue 40 shared by the runtimes' end-to-end
// tests (attempts_docker_e2e_test.go, attempts_kube_e2e_test.go): one task
// of three attempts, the strict test model scripted per attempt, and what
// a finished run must show whatever runs the attempts.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// bestPlan is one task of three attempts whose acceptance wants 42 in
// answer.txt; with no planner call every token is an agent's.
const bestPlan = `{"title":"Answer","overview":"One task, three attempts.","tasks":[
 {"id":"best","title":"Write the answer","description":"Write 42 into answer.txt.","dependencies":[],
  "acceptance":["grep -qx 42 answer.txt"],"attempts":3}]}`

// bigLines is the size of the large passing attempt's extra file: its
// diff is far larger than the small one's single line.
const bigLines = 300

// bestModel is the agent's model for task best, scripted per attempt.
// Which attempt asks is read from the workspace root its system prompt
// names: each attempt works in its own copy, attempts/<run>/best.<n>.
// Attempt 1 writes 41 (its acceptance fails); an even attempt writes 42
// and a file of bigLines lines (passes, large diff); an odd one from 3 on
// writes 42 alone (passes, small diff).
type bestModel struct {
	mu       sync.Mutex
	starts   map[int]int // first requests per attempt: how many times each was started
	requests map[int]int // agent requests per attempt
	answers  map[int]int // final answers per attempt: how many times each ended
	memory   int         // requests of the memory maintainer
	other    []string    // requests it could not place (the test fails on any)
	started  chan int    // every attempt's start (buffered)
	// together holds the first step of each attempt listed (up to two
	// minutes) until all of them have started: attempts that met ran at
	// the same time, however slow the machine. met is closed then.
	together []int
	met      chan struct{}
	// hold, before the kill of the kill test, delays an attempt's first
	// step: the kill lands while the agent waits on the model (the
	// gateway dies with planagent, ending the request).
	hold   map[int]time.Duration
	killed bool
}

func newBestModel(together ...int) *bestModel {
	return &bestModel{starts: map[int]int{}, requests: map[int]int{}, answers: map[int]int{},
		started: make(chan int, 32), together: together, met: make(chan struct{}), hold: map[int]time.Duration{}}
}

var attemptRoot = regexp.MustCompile(`Workspace root: \S*/attempts/[^/\s]+/best\.(\d+)\s`)

func (m *bestModel) steps(n int) []llmtest.ToolCall {
	switch {
	case n == 1:
		return []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "answer.txt", "content": "41\n"})}
	case n%2 == 0:
		var big strings.Builder
		for i := 1; i <= bigLines; i++ {
			fmt.Fprintf(&big, "line %d of the long way round\n", i)
		}
		return []llmtest.ToolCall{
			llmtest.Call("write_file", map[string]any{"path": "answer.txt", "content": "42\n"}),
			llmtest.Call("write_file", map[string]any{"path": "big.txt", "content": big.String()}),
		}
	default:
		return []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "answer.txt", "content": "42\n"})}
	}
}

func (m *bestModel) handle(req llmtest.Request) llmtest.Reply {
	r := m.reply(req)
	if r.Status == 0 {
		// Every answer costs the same: the run's tokens are then a count
		// of the answers.
		r.Usage = &llmtest.Usage{PromptTokens: 1000, CompletionTokens: 100, TotalTokens: 1100}
	}
	return r
}

func (m *bestModel) reply(req llmtest.Request) llmtest.Reply {
	sys := ""
	if len(req.Messages) > 0 && req.Messages[0].Role == llm.RoleSystem {
		sys = req.Messages[0].Content
	}
	if strings.HasPrefix(sys, "You maintain the long-term memory") {
		m.mu.Lock()
		m.memory++
		m.mu.Unlock()
		return llmtest.Text("- answer.txt holds the answer.")
	}
	match := attemptRoot.FindStringSubmatch(sys)
	if match == nil {
		m.mu.Lock()
		m.other = append(m.other, firstUser(req))
		m.mu.Unlock()
		return llmtest.Reply{Status: 400, ErrorBody: `{"error":{"message":"best model: a request of no attempt of task best","type":"invalid_request_error"}}`}
	}
	n, _ := strconv.Atoi(match[1])
	done := 0
	asked := 0
	for _, msg := range req.Messages {
		switch msg.Role {
		case llm.RoleAssistant:
			asked++
		case llm.RoleTool:
			// A call answered "cancelled"/"not run" is redone, as by a real model.
			if !strings.HasPrefix(msg.Content, "cancelled") && !strings.HasPrefix(msg.Content, "not run") && !strings.HasPrefix(msg.Content, "no result") {
				done++
			}
		}
	}
	steps := m.steps(n)
	m.mu.Lock()
	m.requests[n]++
	var hold time.Duration
	if asked == 0 {
		m.starts[n]++
		select {
		case m.started <- n:
		default:
		}
		if m.groupStartedLocked() && !isClosed(m.met) {
			close(m.met)
		}
		if !m.killed {
			hold = m.hold[n]
		}
	}
	inGroup := !m.killed && contains(m.together, n)
	if done >= len(steps) {
		m.answers[n]++
	}
	m.mu.Unlock()
	if done >= len(steps) {
		return llmtest.Text(fmt.Sprintf("Attempt %d: wrote answer.txt.", n))
	}
	r := llmtest.Calls(steps[done])
	if done == 0 && asked == 0 {
		if inGroup {
			select {
			case <-m.met:
			case <-time.After(2 * time.Minute):
			}
		}
		r.Delay = hold
	}
	return r
}

func (m *bestModel) groupStartedLocked() bool {
	if len(m.together) == 0 {
		return false
	}
	for _, n := range m.together {
		if m.starts[n] == 0 {
			return false
		}
	}
	return true
}

func contains(list []int, n int) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

// counts copies the model's tallies.
func (m *bestModel) counts() (starts, requests, answers map[int]int, memory int, other []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := func(in map[int]int) map[int]int {
		out := map[int]int{}
		for k, v := range in {
			out[k] = v
		}
		return out
	}
	return cp(m.starts), cp(m.requests), cp(m.answers), m.memory, append([]string(nil), m.other...)
}

// bestEnv is a run environment for task best: the model above, serving
// where containers reach it, and the user's git repository.

// runLong is e.run with room for three attempts in containers and their
// acceptance runs on a loaded machine: a hung run fails with its
// goroutines (SIGQUIT) after ten minutes, not after e.run's 90 s.
func runLong(e *runEnv, args ...string) (string, string, int) {
	e.t.Helper()
	cmd := e.command(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("start planagent: %v", err)
	}
	timer := time.AfterFunc(10*time.Minute, func() { _ = cmd.Process.Signal(syscall.SIGQUIT) })
	err := cmd.Wait()
	timer.Stop()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("run planagent: %v", err)
	}
	return out.String(), errb.String(), code
}

// bestStatus is what status --json says of a run of task best.
type bestStatus struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Tokens struct {
		Prompt     int `json:"prompt"`
		Completion int `json:"completion"`
		Total      int `json:"total"`
	} `json:"tokens"`
	Tasks []struct {
		ID       string `json:"id"`
		Status   string `json:"status"`
		Attempts int    `json:"attempts"`
		Tokens   struct {
			Prompt, Completion, Total int
		} `json:"tokens"`
		Timeline []struct {
			Attempt int        `json:"attempt"`
			Start   time.Time  `json:"start"`
			End     *time.Time `json:"end"`
			Status  string     `json:"status"`
		} `json:"timeline"`
		AttemptResults []struct {
			Attempt    int    `json:"attempt"`
			Status     string `json:"status"`
			Error      string `json:"error"`
			Hinted     bool   `json:"hinted"`
			Rank       int    `json:"rank"`
			Ref        string `json:"ref"`
			Acceptance string `json:"acceptance"`
			DiffLines  *int   `json:"diff_lines"`
			Tokens     struct {
				Prompt     int `json:"prompt"`
				Completion int `json:"completion"`
			} `json:"tokens"`
			DurationMS int64 `json:"duration_ms"`
		} `json:"attempt_results"`
	} `json:"tasks"`
}

func statusOf(t *testing.T, e *runEnv) bestStatus {
	t.Helper()
	out, stderr, code := e.run("status", "--json")
	if code != 0 {
		t.Fatalf("status --json: exit %d\n%s", code, stderr)
	}
	var st bestStatus
	decodeJSON(t, "status --json", out, &st)
	if len(st.Tasks) != 1 || st.Tasks[0].ID != "best" {
		t.Fatalf("status --json tasks: %+v, want best alone", st.Tasks)
	}
	return st
}

// window is when an attempt ran, from the run's record (status --json's
// timeline): its agent's start and end.
type window struct{ start, end time.Time }

func windows(t *testing.T, st bestStatus) map[int]window {
	t.Helper()
	w := map[int]window{}
	for _, s := range st.Tasks[0].Timeline {
		if s.End == nil {
			t.Errorf("attempt %d has no end in the timeline of a finished run", s.Attempt)
			continue
		}
		w[s.Attempt] = window{s.Start, *s.End}
	}
	return w
}

func overlap(a, b window) bool { return a.start.Before(b.end) && b.start.Before(a.end) }

// newBestEnv is a run environment for task best on one runtime (rt: the
// env of a runtime whose containers reach the model): the model above,
// and the user's git repository.
func newBestEnv(t *testing.T, m *bestModel, rt e2eRuntime) (*runEnv, string, string) {
	t.Helper()
	e := rt(t, &fakeModel{})
	e.srv.Handle(m.handle)
	ws := gitWorkspace(t, e)
	planFile := filepath.Join(e.dir, "plan.json")
	if err := os.WriteFile(planFile, []byte(bestPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	return e, ws, planFile
}

// runBestOfThree runs task best under policy at --parallel 3 (runtimeArgs:
// the flags that pick the runtime and its image) and checks what the run
// shows whatever the runtime: each attempt started and ended once, the
// attempts listed in together ran at once, 1 failed its acceptance, 2 and
// 3 passed and 3, the smaller diff, was merged as the task's one commit,
// 1 and 2 kept as refs that git and `diff --attempt` read, the ranking in
// status --json and summary.md, every attempt's tokens counted. It returns
// the run's status for the runtime's own checks.
func runBestOfThree(t *testing.T, e *runEnv, m *bestModel, ws, planFile, policy string, together []int, runtimeArgs ...string) bestStatus {
	t.Helper()
	args := append([]string{"run"}, runtimeArgs...)
	out, stderr, code := runLong(e, append(args, "--workspace", ws, "--plan", planFile, "--attempt-policy", policy, "--parallel", "3", "--yes", "--json")...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if r := e.srv.Rejections(); len(r) != 0 {
		t.Errorf("the strict server rejected requests: %v", r)
	}
	starts, requests, answers, memory, other := m.counts()
	if len(other) != 0 {
		t.Errorf("requests of no attempt of best: %q", other)
	}
	for n := 1; n <= 3; n++ {
		if starts[n] != 1 || answers[n] != 1 {
			t.Errorf("attempt %d started %d and ended %d times, want once each (starts %v, answers %v)", n, starts[n], answers[n], starts, answers)
		}
	}
	if len(starts) != 3 {
		t.Errorf("attempts started: %v, want 1, 2 and 3", starts)
	}
	if !isClosed(m.met) {
		t.Errorf("attempts %v did not run at once: started %v", together, starts)
	}

	st := statusOf(t, e)
	task := st.Tasks[0]
	if st.Status != "completed" || task.Status != "completed" {
		t.Fatalf("run %s, best %s; want both completed\nstderr:\n%s", st.Status, task.Status, stderr)
	}

	// When each ran, as the run recorded it.
	w := windows(t, st)
	if len(w) != 3 {
		t.Fatalf("timeline %+v, want attempts 1, 2 and 3", task.Timeline)
	}
	t.Logf("attempts (%s): 1 %s–%s, 2 %s–%s, 3 %s–%s", policy,
		w[1].start.Format("15:04:05.000"), w[1].end.Format("15:04:05.000"), w[2].start.Format("15:04:05.000"),
		w[2].end.Format("15:04:05.000"), w[3].start.Format("15:04:05.000"), w[3].end.Format("15:04:05.000"))
	if !overlap(w[2], w[3]) {
		t.Errorf("attempts 2 and 3 did not overlap: %+v and %+v", w[2], w[3])
	}
	switch policy {
	case "escalate":
		// 2 and 3 start only once 1 failed, from the same base.
		if w[2].start.Before(w[1].end) || w[3].start.Before(w[1].end) {
			t.Errorf("escalate started attempts 2 (%s) or 3 (%s) before 1 ended (%s)", w[2].start, w[3].start, w[1].end)
		}
	case "parallel":
		if !overlap(w[1], w[2]) || !overlap(w[1], w[3]) {
			t.Errorf("parallel: attempt 1 %+v does not overlap 2 %+v and 3 %+v", w[1], w[2], w[3])
		}
	}

	// The verdicts: 1 failed its acceptance, 2 passed and ranks second, 3
	// passed with the smaller diff and was merged.
	ref := func(n int) string { return fmt.Sprintf("refs/codeagent/%s/best/attempt-%d", st.ID, n) }
	res := map[int]int{}
	for i, a := range task.AttemptResults {
		res[a.Attempt] = i
	}
	if len(task.AttemptResults) != 3 || len(res) != 3 {
		t.Fatalf("attempt_results %+v, want attempts 1, 2 and 3", task.AttemptResults)
	}
	a1, a2, a3 := task.AttemptResults[res[1]], task.AttemptResults[res[2]], task.AttemptResults[res[3]]
	if a1.Status != "failed" || a1.Rank != 0 || !strings.Contains(a1.Error, "grep -qx 42 answer.txt") || !strings.Contains(a1.Acceptance, "(exit 1)") || a1.Ref != ref(1) {
		t.Errorf("attempt 1: %+v; want failed by its acceptance (exit 1), no rank, kept as %s", a1, ref(1))
	}
	if a2.Rank != 2 || a2.Ref != ref(2) || !strings.Contains(a2.Acceptance, "(exit 0)") || a2.Error != "" {
		t.Errorf("attempt 2: %+v; want passed (exit 0), rank 2, kept as %s", a2, ref(2))
	}
	if a3.Status != "completed" || a3.Rank != 1 || a3.Ref != "" || !strings.Contains(a3.Acceptance, "(exit 0)") {
		t.Errorf("attempt 3: %+v; want completed, rank 1 (merged), no ref", a3)
	}
	// The ranking weighed their diffs: answer.txt's line, and big.txt's too.
	if a2.DiffLines == nil || *a2.DiffLines != bigLines+1 || a3.DiffLines == nil || *a3.DiffLines != 1 {
		t.Errorf("diff_lines: attempt 2 %v, attempt 3 %v; want %d and 1", deref(a2.DiffLines), deref(a3.DiffLines), bigLines+1)
	}
	if policy == "escalate" && (a1.Hinted || !a2.Hinted || a3.Hinted) {
		t.Errorf("told the failure: 1 %v, 2 %v, 3 %v; want 2 alone", a1.Hinted, a2.Hinted, a3.Hinted)
	}

	// The budgets count all three: the run's tokens are every answer the
	// model gave, each attempt's at least its agent's.
	served := len(e.srv.Requests())
	t.Logf("tokens: run %d/%d for the %d answers of the model (agents %v, memory %d)", st.Tokens.Prompt, st.Tokens.Completion, served, requests, memory)
	if st.Tokens.Prompt != 1000*served || st.Tokens.Completion != 100*served {
		t.Errorf("run tokens %d/%d, want %d/%d: the model answered %d requests (agents %v, memory %d)",
			st.Tokens.Prompt, st.Tokens.Completion, 1000*served, 100*served, served, requests, memory)
	}
	sum := 0
	for _, a := range task.AttemptResults {
		sum += a.Tokens.Prompt
		if a.Tokens.Prompt < 1000*requests[a.Attempt] {
			t.Errorf("attempt %d: %d prompt tokens, want at least %d for its %d requests", a.Attempt, a.Tokens.Prompt, 1000*requests[a.Attempt], requests[a.Attempt])
		}
	}
	if sum != st.Tokens.Prompt || task.Tokens.Prompt != st.Tokens.Prompt {
		t.Errorf("prompt tokens: attempts %d, task %d, run %d; want all equal", sum, task.Tokens.Prompt, st.Tokens.Prompt)
	}

	// One commit for the task on the branch, attempt 3's: 42, no big.txt.
	if n := gitIn(t, ws, "rev-list", "--count", "HEAD"); n != "2" {
		t.Errorf("%s commits on the branch, want the user's and best's\n%s", n, gitIn(t, ws, "log", "--oneline"))
	}
	if got := readFile(t, ws, "answer.txt"); got != "42\n" {
		t.Errorf("answer.txt = %q, want 42", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "big.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("big.txt of the larger attempt is in the workspace (%v): attempt 3 should have won", err)
	}
	// The losers stay as refs, readable with git.
	refs := gitIn(t, ws, "for-each-ref", "--format=%(refname)", "refs/codeagent/"+st.ID+"/best/")
	if refs != ref(1)+"\n"+ref(2) {
		t.Errorf("the task's refs:\n%s\nwant %s and %s", refs, ref(1), ref(2))
	}
	if got := gitIn(t, ws, "show", ref(2)+":answer.txt"); got != "42" {
		t.Errorf("git show %s:answer.txt = %q", ref(2), got)
	}
	if got := gitIn(t, ws, "show", ref(1)+":answer.txt"); got != "41" {
		t.Errorf("git show %s:answer.txt = %q", ref(1), got)
	}

	// diff --attempt: 2's large patch, 3's one line.
	d2, stderr2, code := e.run("diff", st.ID, "best", "--attempt", "2")
	if code != 0 || !strings.Contains(d2, "+++ b/big.txt") || strings.Count(d2, "\n+line ") != bigLines || !strings.Contains(d2, "+42") {
		t.Errorf("diff --attempt 2: exit %d, want big.txt's %d lines and answer.txt\n%s%s", code, bigLines, clipText(d2), stderr2)
	}
	d3, stderr3, code := e.run("diff", st.ID, "best", "--attempt", "3")
	if code != 0 || strings.Contains(d3, "big.txt") || !strings.Contains(d3, "+42") {
		t.Errorf("diff --attempt 3: exit %d, want answer.txt alone\n%s%s", code, d3, stderr3)
	}

	// The summary's ranking.
	summary := e.read("reports/summary.md")
	// Each row says what the ranking weighed: the lines each changed.
	for _, row := range []string{`(?m)^\| best \| 1 \| failed[^|]* \| - \|`,
		fmt.Sprintf(`(?m)^\| best \| 2 \| passed \(%d lines\) \| 2 \|`, bigLines+1), `(?m)^\| best \| 3 \| completed \(1 lines\) \| 1 \|`} {
		if !regexp.MustCompile(row).MatchString(summary) {
			t.Errorf("summary.md lacks a row matching %s:\n%s", row, summary)
		}
	}
	if !strings.Contains(summary, "`"+ref(2)+"`") {
		t.Errorf("summary.md does not say where attempt 2 is kept:\n%s", summary)
	}
	return st
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func clipText(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "\n…"
	}
	return s
}
