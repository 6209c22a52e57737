//go:build e2e

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llmtest"
)

// Each way a run ends names its stop reason, the same in run_end, status
// --json, runs --json and summary.md, with its exit code. (budget_tokens is
// checked in budget_e2e_test.go, interrupted in run_e2e_test.go.)
func TestE2EStopReasons(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		task         scriptTask
		acceptance   string
		code         int
		tasks        []string
	}{
		{name: "completed", reason: "completed", code: 0,
			task: scriptTask{token: "TOKEN-ONE", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "a.txt", "content": "a\n"})}}},
		{name: "task failed", reason: "task_failed", code: 1, acceptance: `,"acceptance":["test -f missing.txt"]`, tasks: []string{"one"},
			task: scriptTask{token: "TOKEN-ONE", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "a.txt", "content": "a\n"})}}},
		{name: "model error", reason: "model_error", code: 1, tasks: []string{"one"},
			task: scriptTask{token: "TOKEN-ONE", fail: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeModel{plan: `{"title":"One","overview":"x","tasks":[{"id":"one","title":"Write a","description":"TOKEN-ONE: write a.txt","dependencies":[]` + tc.acceptance + `}]}`,
				tasks: []scriptTask{tc.task}}
			e := newRunEnv(t, f)
			writeConfig(t, e, "retries: 0\n")
			out, stderr, code := e.run("run", "--yes", "--json", "--max-retries", "0", "write a")
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, stderr)
			}
			stop, _ := runEndOf(t, out)["data"].(map[string]any)["stop_reason"].(map[string]any)
			if stop["reason"] != tc.reason {
				t.Errorf("run_end stop_reason = %v, want %s", stop, tc.reason)
			}
			if got := strings.Join(anyStrings(stop["tasks"]), ","); got != strings.Join(tc.tasks, ",") {
				t.Errorf("stop_reason tasks = %q, want %q", got, tc.tasks)
			}
			if tc.reason == "model_error" && !strings.Contains(stop["detail"].(string), "HTTP 500") {
				t.Errorf("model_error detail %q does not carry the provider's error", stop["detail"])
			}
			sout, _, _ := e.run("status", "--json")
			var st struct {
				Stop struct{ Reason string } `json:"stop_reason"`
			}
			if err := json.Unmarshal([]byte(sout), &st); err != nil || st.Stop.Reason != tc.reason {
				t.Errorf("status --json stop_reason = %q (%v), want %s", st.Stop.Reason, err, tc.reason)
			}
			rout, _, _ := e.run("runs", "--json")
			var rows []struct {
				Stop struct{ Reason string } `json:"stop_reason"`
			}
			if err := json.Unmarshal([]byte(rout), &rows); err != nil || len(rows) != 1 || rows[0].Stop.Reason != tc.reason {
				t.Errorf("runs --json: %v %s", err, rout)
			}
			if md := readFile(t, filepath.Join(e.volumes, "reports"), "summary.md"); !strings.Contains(md, "Stop reason: "+tc.reason) {
				t.Errorf("summary.md has no stop reason:\n%s", md)
			}
		})
	}
}

func anyStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// Notifications from a real run: a command sink and a webhook hear that a
// task failed for good and that the run finished (with its stop reason);
// a sink that hangs is cut at its timeout and the run's exit code is the
// same.
func TestE2ENotifications(t *testing.T) {
	var mu sync.Mutex
	var hooked []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		hooked = append(hooked, r.Header.Get("Authorization")+" "+string(b))
		mu.Unlock()
	}))
	defer hook.Close()
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer hang.Close()
	defer close(stop) // before Close, which waits for the handler
	f := &fakeModel{plan: `{"title":"One","overview":"x","tasks":[{"id":"one","title":"Write a","description":"TOKEN-ONE: write a.txt","dependencies":[],"acceptance":["false"]}]}`,
		tasks: []scriptTask{{token: "TOKEN-ONE", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "a.txt", "content": "a\n"})}}}}
	e := newRunEnv(t, f)
	got := filepath.Join(e.dir, "notified.jsonl")
	writeConfig(t, e, "notify:\n  command: \"cat >> "+got+"; echo >> "+got+"\"\n  webhook: "+hook.URL+"\n  headers: {Authorization: \"Bearer ${HOOK_TOKEN}\"}\n  ntfy: "+hang.URL+"\n  timeout: 2s\n")
	e.env = append(e.env, "HOOK_TOKEN=tok-123")
	start := time.Now()
	_, stderr, code := e.run("run", "--yes", "--max-retries", "0", "write a")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	if d := time.Since(start); d > 50*time.Second {
		t.Errorf("the hanging sink held the run: %v", d)
	}
	lines := strings.Split(strings.TrimSpace(readFile(t, e.dir, "notified.jsonl")), "\n")
	kinds := map[string]map[string]any{}
	for _, l := range lines {
		var ev map[string]any
		if strings.TrimSpace(l) == "" {
			continue
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		kinds[ev["event"].(string)] = ev
	}
	if ev := kinds["task_failed"]; ev == nil || ev["task"] != "one" {
		t.Errorf("no task_failed for one: %v", lines)
	}
	if ev := kinds["run_finished"]; ev == nil || ev["stop_reason"].(map[string]any)["reason"] != "task_failed" {
		t.Errorf("no run_finished with its stop reason: %v", lines)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hooked) != 2 || !strings.HasPrefix(hooked[0], "Bearer tok-123 ") {
		t.Errorf("webhook got %q", hooked)
	}
	if !strings.Contains(stderr, "notification not sent") || !strings.Contains(stderr, "sink=ntfy") {
		t.Errorf("the hanging sink's failure is not logged:\n%s", stderr)
	}
	assertNoKey(t, e.volumes, "tok-123")
}

// A failed run names the way out, and resume --retry-failed takes it: the
// failed task and the one skipped because of it run again.
func TestE2EResumeRetryFailed(t *testing.T) {
	e0 := t.TempDir()
	seen := filepath.Join(e0, "seen")
	plan := `{"title":"Two","overview":"x","tasks":[{"id":"one","title":"Make ok","description":"TOKEN-ONE: make ok.txt","dependencies":[],"acceptance":["test -f ok.txt"]},` +
		`{"id":"two","title":"After","description":"TOKEN-TWO: write two.txt","dependencies":["one"]}]}`
	f := &fakeModel{plan: plan, tasks: []scriptTask{
		// ok.txt only from the second attempt on.
		{token: "TOKEN-ONE", steps: []llmtest.ToolCall{llmtest.Call("shell_exec", map[string]any{"command": "if [ -f " + seen + " ]; then echo ok > ok.txt; fi; touch " + seen})}},
		{token: "TOKEN-TWO", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "two.txt", "content": "2\n"})}},
	}}
	e := newRunEnv(t, f)
	_, stderr, code := e.run("run", "--yes", "--max-retries", "0", "two things")
	if code != 1 {
		t.Fatalf("run: exit %d, want 1\n%s", code, stderr)
	}
	runID, _ := e.runState()
	if !strings.Contains(stderr, "planagent resume "+runID+" --retry-failed") {
		t.Errorf("the failure does not name the way out:\n%s", stderr)
	}
	if _, stderr, code := e.run("resume"); code != 2 || !strings.Contains(stderr, "--retry-failed") {
		t.Errorf("resume of a failed run without the flag: exit %d\n%s", code, stderr)
	}
	out, stderr, code := e.run("resume", "--retry-failed", "--json")
	if code != 0 {
		t.Fatalf("resume --retry-failed: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "retrying the failed tasks of "+runID+": one") {
		t.Errorf("resume does not say what it retries:\n%s", stderr)
	}
	if stop, _ := runEndOf(t, out)["data"].(map[string]any)["stop_reason"].(map[string]any); stop["reason"] != "completed" {
		t.Errorf("stop_reason after the retry: %v", stop)
	}
	if f.startCount("TOKEN-ONE") != 2 || f.startCount("TOKEN-TWO") != 1 {
		t.Errorf("one started %d times, two %d; want 2 and 1", f.startCount("TOKEN-ONE"), f.startCount("TOKEN-TWO"))
	}
	if _, stderr, code := e.run("resume", "--retry-failed"); code != 2 || !strings.Contains(stderr, "no failed task") {
		t.Errorf("a second --retry-failed: exit %d\n%s", code, stderr)
	}
}

// Volumes named by the flag are repeated in the hints a command prints, and
// a command that finds no run says how to name other volumes.
func TestE2EHintsRepeatTheVolumesFlag(t *testing.T) {
	f := &fakeModel{plan: `{"title":"One","overview":"x","tasks":[{"id":"one","title":"Write a","description":"TOKEN-ONE: write a.txt","dependencies":[],"acceptance":["false"]}]}`,
		tasks: []scriptTask{{token: "TOKEN-ONE", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "a.txt", "content": "a\n"})}}}}
	e := newRunEnv(t, f)
	vols := filepath.Join(e.dir, "elsewhere")
	e.env = append(e.env, "CODEAGENT_VOLUMES_DIR=") // only the flag names them
	_, stderr, code := e.run("run", "--yes", "--volumes", vols, "--max-retries", "0", "write a")
	if code != 1 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "--volumes "+vols+" --retry-failed") {
		t.Errorf("the failure's hint does not repeat --volumes:\n%s", stderr)
	}
	if _, stderr, code := e.run("diff"); code != 2 || !strings.Contains(stderr, "--volumes DIR") {
		t.Errorf("diff without the volumes: exit %d\n%s", code, stderr)
	}
}
