package webui

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/events"
	"github.com/codeagent/codeagent/internal/planspec"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/tokens"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/runview"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

const runID = "run-20261123-010000-00aa"

// fixture is volumes with a run in flight: a completed (with a report), b
// in progress (with events), c pending after b.
type fixture struct {
	l  volume.Layout
	st *runrecord.State
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	p := &planspec.Plan{Title: "Three", Tasks: []planspec.Task{
		{ID: "a", Title: "First <b>bold</b>", Description: "a"},
		{ID: "b", Title: "Second", Description: "b", Dependencies: []string{"a"}},
		{ID: "c", Title: "Third", Description: "c", Dependencies: []string{"b"}},
	}}
	now := time.Now().UTC().Add(-time.Minute)
	st, err := runrecord.NewState(runID, "three things", p, tokens.Usage{Prompt: 10, Completion: 2}, now)
	if err != nil {
		t.Fatal(err)
	}
	st.Settings = &runrecord.Settings{Model: "m1", Workspace: l.Workspace()}
	st.Tasks[0].Status, st.Tasks[0].Attempts, st.Tasks[0].Result = taskgraph.Completed, 1, "a done"
	st.Tasks[1].Status, st.Tasks[1].Attempts = taskgraph.InProgress, 1
	st.Info["a"] = &runrecord.TaskInfo{Attempt: 1, Tokens: protocol.Tokens{Prompt: 100, Completion: 20}, FilesChanged: []string{"a.txt"},
		Subagents: []runrecord.Subagent{{Attempt: 1, ID: "a.sub1", Goal: "look around", Tokens: protocol.Tokens{Prompt: 40, Completion: 5}}},
		Results: []runrecord.AttemptResult{
			{Attempt: 1, Status: "failed", Error: "acceptance failed", Tokens: protocol.Tokens{Prompt: 60, Completion: 10}},
			{Attempt: 2, Status: "completed", Rank: 1, Hinted: true, Tokens: protocol.Tokens{Prompt: 40, Completion: 10}}},
		Spans: []runrecord.Span{{Attempt: 1, Start: now.Add(time.Second), End: now.Add(5 * time.Second), Status: "completed"}}}
	st.Info["b"] = &runrecord.TaskInfo{Attempt: 1, Spans: []runrecord.Span{{Attempt: 1, Start: now.Add(6 * time.Second)}}}
	if err := st.Save(l, now.Add(7*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := protocol.WriteReport(l.ReportFile("a"), &protocol.Report{ID: "a", RunID: runID, Attempt: 1,
		Status: protocol.StatusCompleted, Summary: "wrote a.txt", Body: "All of a is done."}); err != nil {
		t.Fatal(err)
	}
	f := &fixture{l: l, st: st}
	f.event(t, "b", events.Event{Type: events.ToolCall, Tool: "write_file", Args: `{"path":"b.txt"}`})
	return f
}

// event appends one line to task id's events file, as the watcher does.
func (f *fixture) event(t testing.TB, id string, e events.Event) {
	t.Helper()
	e.RunID, e.TaskID, e.Time = runID, id, time.Now().UTC()
	b, _ := json.Marshal(e)
	file, err := os.OpenFile(f.l.EventsFile(id), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if _, err := file.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
}

// serve runs the server on a loopback port for the test's duration.
func (f *fixture) serve(t testing.TB) string {
	return f.serveToken(t, "")
}

// serveToken is serve with the session token that lets the page write.
func (f *fixture) serveToken(t testing.TB, token string) string {
	t.Helper()
	ln, warning, err := Listen("127.0.0.1:0")
	if err != nil || warning != "" {
		t.Fatalf("listen: %v %q", err, warning)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- New(Options{Layout: f.l, View: runview.Options{Prices: runview.Prices{"m1": {Input: 1, Output: 2}}}, Reconcile: time.Hour, Token: token}).Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func get(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", url, err, b)
		}
	}
	return resp.StatusCode
}

func TestAPI(t *testing.T) {
	f := newFixture(t)
	base := f.serve(t)

	var rows []runview.Row
	if code := get(t, base+"/api/runs", &rows); code != 200 || len(rows) != 1 || rows[0].ID != runID || rows[0].CostUSD == nil {
		t.Fatalf("runs: %d %+v", code, rows)
	}
	var run runview.Run
	if code := get(t, base+"/api/runs/"+runID, &run); code != 200 || len(run.Tasks) != 3 || run.Tasks[1].Status != "in_progress" || run.Tasks[2].Level != 2 {
		t.Fatalf("run: %d %+v", code, run)
	}
	// JSON as written, not for an HTML page: "First <b>bold</b>", not \u003cb\u003e.
	resp, err := http.Get(base + "/api/runs/" + runID)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(raw), `"First <b>bold</b>"`) {
		t.Errorf("run JSON escapes < and >:\n%s", raw)
	}
	var d TaskDetail
	if code := get(t, base+"/api/runs/"+runID+"/tasks/a", &d); code != 200 || !strings.Contains(d.Report, "All of a is done.") ||
		len(d.FilesChanged) != 1 || d.Diff != "" || !strings.Contains(d.DiffNote, "no checkpoint") {
		t.Errorf("task a: %d %+v", code, d)
	}
	// The detail pane lists the sub-agents with their part of the cost.
	if len(d.Subagents) != 1 || d.Subagents[0].ID != "a.sub1" || d.Subagents[0].Tokens.Prompt != 40 || d.Subagents[0].CostUSD == nil {
		t.Errorf("task a's sub-agents: %+v", d.Subagents)
	}
	// And its attempts, each with its verdict and cost, for the side-by-side panel.
	if len(d.Attempts) != 2 || d.Attempts[0].Status != "failed" || d.Attempts[0].Error != "acceptance failed" ||
		d.Attempts[1].Rank != 1 || !d.Attempts[1].Hinted || d.Attempts[1].CostUSD == nil {
		t.Errorf("task a's attempts: %+v", d.Attempts)
	}
	for path, want := range map[string]int{
		"/api/runs/run-nope":                  404,
		"/api/runs/..%2f..%2fetc":             400,
		"/api/runs/" + runID + "/tasks/zzz":   404,
		"/assets/app.js":                      200,
		"/":                                   200,
		"/nowhere":                            404,
		"/api/runs/" + runID + "/tasks/a/../": 404,
	} {
		if code := get(t, base+path, nil); code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}
	resp, err = http.Post(base+"/api/runs", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d: the view must be read-only", resp.StatusCode)
	}
	css, err := http.Get(base + "/assets/status.css")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(css.Body)
	css.Body.Close()
	if !strings.Contains(string(b), ".st-in_progress{--fill:#bbdefb;--stroke:#1565c0}") {
		t.Errorf("status.css:\n%s", b)
	}

	// A page elsewhere that rebinds its name to 127.0.0.1 is refused.
	req, _ := http.NewRequest(http.MethodGet, base+"/api/runs", nil)
	req.Host = "evil.example:7420"
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: %d, want 403", resp.StatusCode)
	}
}

// The web view of a stopped run (Ctrl-C) shows no task running and no
// attempt whose clock keeps growing.
func TestAPIStoppedRunShowsNothingRunning(t *testing.T) {
	f := newFixture(t)
	f.st.Status = runrecord.RunInterrupted
	if err := f.st.Save(f.l, f.st.Updated.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	base := f.serve(t)
	var run runview.Run
	if code := get(t, base+"/api/runs/"+runID, &run); code != 200 {
		t.Fatalf("run: %d", code)
	}
	b := run.Tasks[1]
	if b.Status != runview.StatusInterrupted || run.Counts["in_progress"] != 0 || run.Counts[runview.StatusInterrupted] != 1 {
		t.Errorf("task b %q, counts %v: want it interrupted, nothing in progress", b.Status, run.Counts)
	}
	if s := b.Timeline[0]; s.End == nil || s.Status != runview.StatusInterrupted {
		t.Errorf("b's attempt %+v: want it ended, interrupted", s)
	}
	var rows []runview.Row
	if code := get(t, base+"/api/runs", &rows); code != 200 || len(rows) != 1 || rows[0].Counts["in_progress"] != 0 {
		t.Errorf("runs: %d %+v", code, rows)
	}
}

func TestListenRefusesBadAddr(t *testing.T) {
	if _, _, err := Listen("7420"); err == nil || !strings.Contains(err.Error(), "host:port") {
		t.Errorf("addr without host: %v", err)
	}
	ln, _, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, _, err := Listen(ln.Addr().String()); err == nil || !strings.Contains(err.Error(), "--addr") {
		t.Errorf("taken port: %v", err)
	}
	if ln2, warning, err := Listen("0.0.0.0:0"); err == nil {
		ln2.Close()
		if !strings.Contains(warning, "beyond this machine") {
			t.Errorf("no warning for a non-loopback address: %q", warning)
		}
	}
}

// The printed URL of a view on every interface is one a browser can open.
func TestURLOfAnyInterfaceIsUsable(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "127.0.0.1:0"} {
		ln, _, err := Listen(addr)
		if err != nil {
			t.Logf("%s: %v (no such interface here)", addr, err)
			continue
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })}
		go func() { _ = srv.Serve(ln) }()
		u := URL(ln)
		if strings.Contains(u, "[::]") || strings.Contains(u, "0.0.0.0") {
			t.Errorf("URL of %s = %s: not an address to open", addr, u)
		}
		resp, err := http.Get(u + "/")
		if err != nil {
			t.Errorf("GET %s (listening on %s): %v", u, addr, err)
		} else {
			_ = resp.Body.Close()
		}
		_ = srv.Close()
	}
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name, data string
}

func readEvents(body io.Reader) <-chan sseEvent {
	ch := make(chan sseEvent, 100)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			case line == "":
				ch <- ev
				ev = sseEvent{}
			}
		}
	}()
	return ch
}

// next waits for the next event named name, with a deadline.
func next(t testing.TB, ch <-chan sseEvent, name string) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended waiting for %s", name)
			}
			if ev.name == name {
				return ev.data
			}
		case <-deadline:
			t.Fatalf("no %s event within 10s", name)
		}
	}
}

func TestStreamFollowsTheRun(t *testing.T) {
	f := newFixture(t)
	base := f.serve(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/runs/"+runID+"/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	ch := readEvents(resp.Body)

	var run runview.Run
	data := next(t, ch, "run")
	if err := json.Unmarshal([]byte(data), &run); err != nil || run.Tasks[1].Status != "in_progress" {
		t.Fatalf("first run event: %v %+v", err, run)
	}
	if !strings.Contains(data, `"First <b>bold</b>"`) {
		t.Errorf("run event escapes < and >: %s", data)
	}
	var te TaskEvent
	if err := json.Unmarshal([]byte(next(t, ch, "task_event")), &te); err != nil || te.Task != "b" || !strings.Contains(te.Line, "write_file") {
		t.Fatalf("replayed task event: %v %+v", err, te)
	}

	// The running task goes on: its new events come as they are written.
	f.event(t, "b", events.Event{Type: events.ToolResult, Tool: "write_file", Text: "wrote b.txt"})
	if err := json.Unmarshal([]byte(next(t, ch, "task_event")), &te); err != nil || !strings.Contains(te.Line, "wrote b.txt") {
		t.Fatalf("live task event: %v %+v", err, te)
	}

	// b completes and c starts: a new picture of the run.
	f.st.Tasks[1].Status, f.st.Tasks[1].Result = taskgraph.Completed, "b done"
	f.st.Tasks[2].Status, f.st.Tasks[2].Attempts = taskgraph.InProgress, 1
	if err := f.st.Save(f.l, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	for {
		if err := json.Unmarshal([]byte(next(t, ch, "run")), &run); err != nil {
			t.Fatal(err)
		}
		if run.Tasks[1].Status == "completed" {
			break
		}
	}
	if run.Tasks[2].Status != "in_progress" || run.Counts["completed"] != 2 {
		t.Errorf("after the change: %+v", run)
	}
}

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{"localhost:7420": true, "127.0.0.1:1": true, "[::1]:7420": true, "127.0.0.1": true,
		"example.com:7420": false, "10.0.0.1:80": false, "": false} {
		if got := loopbackHost(host); got != want {
			t.Errorf("loopbackHost(%q) = %v", host, got)
		}
	}
}

// A completed task's checkpoint shows as its diff: a real repository where
// the task's commit is a merge of its attempt into the integration branch.
func TestTaskDiffFromCheckpoint(t *testing.T) {
	f := newFixture(t)
	ws := f.l.Workspace()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-C", ws}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(ws, "base.txt"), []byte("base\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "start")
	start := git("rev-parse", "HEAD")
	git("checkout", "-q", "-b", "attempt")
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("written by a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "a: First")
	git("checkout", "-q", "main")
	if err := os.WriteFile(filepath.Join(ws, "other.txt"), []byte("meanwhile\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "other work")
	git("merge", "-q", "--no-ff", "-m", "a: First (merged)", "attempt")
	merged := git("rev-parse", "HEAD")

	f.st.Checkpoints = &runrecord.Checkpoints{Mode: "git", Branch: "main", Start: start, Head: merged}
	f.st.Info["a"].Commit = merged
	if err := f.st.Save(f.l, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	base := f.serve(t)
	var d TaskDetail
	if code := get(t, base+"/api/runs/"+runID+"/tasks/a", &d); code != 200 {
		t.Fatalf("task a: %d", code)
	}
	if !strings.Contains(d.Diff, "+written by a") || !strings.Contains(d.Diff, "a: First (merged)") || strings.Contains(d.Diff, "other.txt") || d.DiffNote != "" {
		t.Errorf("diff of a:\n%s\nnote: %s", d.Diff, d.DiffNote)
	}
	f.st.Info["a"].Commit = "not-a-sha;rm"
	if err := f.st.Save(f.l, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	var bad TaskDetail
	if get(t, base+"/api/runs/"+runID+"/tasks/a", &bad); bad.Diff != "" || !strings.Contains(bad.DiffNote, "not readable") {
		t.Errorf("a bad commit name gave %q / %q", bad.Diff, bad.DiffNote)
	}
	// A completed task of a run with checkpoints that has no commit
	// changed nothing: it says so, not "no checkpoint".
	f.st.Info["a"].Commit = ""
	if err := f.st.Save(f.l, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	var none TaskDetail
	if get(t, base+"/api/runs/"+runID+"/tasks/a", &none); none.Diff != "" || !strings.HasPrefix(none.DiffNote, "no changes") {
		t.Errorf("a task that changed nothing gave %q / %q", none.Diff, none.DiffNote)
	}
}

// Task b runs two attempts side by side: the stream follows each one's
// own events file (reports/b@<n>.events.jsonl), and the task's page shows
// the report of its attempt under its stem.
func TestStreamFollowsAttemptsSideBySide(t *testing.T) {
	f := newFixture(t)
	f.st.Info["b"] = &runrecord.TaskInfo{Attempt: 2, Series: &runrecord.Series{From: 1, Size: 2},
		Results: []runrecord.AttemptResult{{Attempt: 1, Status: "running"}, {Attempt: 2, Status: "running"}}}
	if err := f.st.Save(f.l, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 2; n++ {
		f.event(t, protocol.Stem("b", n), events.Event{Type: events.ToolCall, Tool: "write_file", Args: fmt.Sprintf(`{"path":"b%d.txt"}`, n)})
	}
	if err := protocol.WriteReport(f.l.ReportFile(protocol.Stem("b", 2)), &protocol.Report{ID: "b", RunID: runID, Attempt: 2,
		Status: protocol.StatusCompleted, Summary: "wrote b2.txt", Body: "Attempt two of b."}); err != nil {
		t.Fatal(err)
	}
	base := f.serve(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/runs/"+runID+"/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ch := readEvents(resp.Body)
	seen := map[string]bool{}
	for len(seen) < 2 {
		var te TaskEvent
		if err := json.Unmarshal([]byte(next(t, ch, "task_event")), &te); err != nil || te.Task != "b" {
			t.Fatalf("task event: %v %+v", err, te)
		}
		for _, f := range []string{"b1.txt", "b2.txt"} {
			if strings.Contains(te.Line, f) {
				seen[f] = true
			}
		}
	}
	var d TaskDetail
	if code := get(t, base+"/api/runs/"+runID+"/tasks/b", &d); code != 200 || !strings.Contains(d.Report, "Attempt two of b.") {
		t.Errorf("task b: %d, report %q from %s", code, d.Report, d.ReportFile)
	}
}
