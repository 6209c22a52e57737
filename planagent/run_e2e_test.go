//go:build e2e

package main

// End-to-end tests of `planagent run --runtime local`: the real binaries as
// subprocesses, real files and fsnotify, and the strict llmtest server
// standing in for the model.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// binDir holds the planagent and codingagent binaries the process-level
// tests run, built once, by the first test that needs them.
var (
	binDir    string
	buildOnce sync.Once
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	kubeDown() // the cluster of the kubernetes e2e tests, when one was started
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// processE2E skips a test that runs the built programs as subprocesses
// unless CODEAGENT_E2E=1 (make e2e, which .ci/run runs): they take minutes
// in all and keep `go test ./...` out of the edit-test loop.
func processE2E(t *testing.T) {
	t.Helper()
	if os.Getenv("CODEAGENT_E2E") != "1" {
		t.Skip("process-level end-to-end test (builds and runs planagent and codingagent): set CODEAGENT_E2E=1 (make e2e) to run it")
	}
}

// buildPrograms builds planagent and codingagent into binDir once.
func buildPrograms(tb testing.TB) {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "planagent-e2e-bin-") //nolint:usetesting // the binaries outlive the first test that builds them: TestMain removes them
		if err != nil {
			buildErr = err
			return
		}
		binDir = dir
		for _, prog := range []string{"planagent", "codingagent"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, prog), "github.com/codeagent/codeagent/"+prog)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("build %s: %w\n%s", prog, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
}

// scriptTask is what the fake model does for one task: a sequence of tool
// calls, then a final answer. A task is recognised by a token in its description.
type scriptTask struct {
	token     string
	steps     []llmtest.ToolCall
	fail      bool          // every request of this task gets HTTP 500
	failAtEnd bool          // after the steps, HTTP 500 instead of the final answer
	delay     time.Duration // before the first step
	// after: the first step waits (up to a minute) until the task with
	// this token got its final answer, then delay.
	after string
	// answer is the final answer ("" for the usual one line).
	answer string
}

// fakeModel answers the planner, the agent, the memory and the decider.
type fakeModel struct {
	// plan (create_plan arguments) and tasks: set before the model server
	// starts, or with setScript once it runs (its handlers read them from
	// requests of another process, which the race detector sees as
	// unsynchronised).
	plan  string
	tasks []scriptTask

	mu     sync.Mutex
	starts map[string]int // first requests per token: how many times a task was started
	decide string         // decide arguments
	// started, when set, receives the token of every task start (buffer it):
	// tests wait on it instead of polling startCount.
	started chan string
	// finished is closed per token once its task got a final answer.
	finished map[string]chan struct{}
	// together, when set, holds each task's first step (up to two minutes)
	// until that many tasks have started; met is closed then. Tasks that
	// met ran at the same time, however slow the machine.
	together int
	met      chan struct{}
}

func firstUser(req llmtest.Request) string {
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser {
			return m.Content
		}
	}
	return ""
}

func hasTool(req llmtest.Request, name string) bool {
	for _, t := range req.Tools {
		if t.Function != nil && t.Function.Name == name {
			return true
		}
	}
	return false
}

func (f *fakeModel) handle(req llmtest.Request) llmtest.Reply {
	sys := ""
	if len(req.Messages) > 0 && req.Messages[0].Role == llm.RoleSystem {
		sys = req.Messages[0].Content
	}
	switch {
	case strings.HasPrefix(sys, "You maintain the long-term memory"):
		return llmtest.Text("- Files are plain text.")
	case hasTool(req, "create_plan"):
		last := req.Messages[len(req.Messages)-1]
		if last.Role == llm.RoleTool {
			return llmtest.Text("Plan submitted.")
		}
		f.mu.Lock()
		plan := f.plan
		f.mu.Unlock()
		return llmtest.Calls(llmtest.Call("create_plan", plan))
	case hasTool(req, "decide"):
		f.mu.Lock()
		d := f.decide
		f.mu.Unlock()
		if d == "" {
			d = `{"action":"continue","reason":"not essential"}`
		}
		return llmtest.Calls(llmtest.Call("decide", d))
	}
	user := firstUser(req)
	f.mu.Lock()
	tasks := f.tasks
	f.mu.Unlock()
	for _, t := range tasks {
		if !strings.Contains(user, t.token) {
			continue
		}
		if t.fail {
			return llmtest.Reply{Status: 500}
		}
		// The next step is the number of tool calls that really ran: a call
		// answered "cancelled"/"not run" (an interrupted attempt) is redone,
		// as a real model would.
		n, asked := 0, 0
		for _, m := range req.Messages {
			switch m.Role {
			case llm.RoleAssistant:
				asked++
			case llm.RoleTool:
				if !strings.HasPrefix(m.Content, "cancelled") && !strings.HasPrefix(m.Content, "not run") && !strings.HasPrefix(m.Content, "no result") {
					n++
				}
			}
		}
		if asked == 0 {
			f.mu.Lock()
			f.starts[t.token]++
			started := f.started
			if f.together > 0 && len(f.starts) >= f.together && !isClosed(f.metLocked()) {
				close(f.metLocked())
			}
			f.mu.Unlock()
			if started != nil {
				select {
				case started <- t.token:
				default: // a full buffer must not hold up the model's reply
				}
			}
		}
		if n < len(t.steps) {
			r := llmtest.Calls(t.steps[n])
			if n == 0 {
				if t.after != "" {
					select {
					case <-f.finishedChan(t.after):
					case <-time.After(time.Minute):
					}
				}
				if f.together > 0 {
					select {
					case <-f.metChan():
					case <-time.After(2 * time.Minute):
					}
				}
				r.Delay = t.delay
			}
			return r
		}
		if t.failAtEnd {
			return llmtest.Reply{Status: 500}
		}
		f.mu.Lock()
		if ch := f.finishedLocked(t.token); !isClosed(ch) {
			close(ch)
		}
		f.mu.Unlock()
		if t.answer != "" {
			return llmtest.Text(t.answer)
		}
		return llmtest.Text("Finished the task; all files written.")
	}
	return llmtest.Reply{Status: 400, ErrorBody: `{"error":{"message":"fake model: unrecognised request","type":"invalid_request_error"}}`}
}

// setScript sets plan and tasks of a model whose server already runs.
func (f *fakeModel) setScript(plan string, tasks []scriptTask) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.plan, f.tasks = plan, tasks
}

func (f *fakeModel) finishedChan(token string) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.finishedLocked(token)
}

func (f *fakeModel) finishedLocked(token string) chan struct{} {
	if f.finished == nil {
		f.finished = map[string]chan struct{}{}
	}
	if f.finished[token] == nil {
		f.finished[token] = make(chan struct{})
	}
	return f.finished[token]
}

func (f *fakeModel) metChan() chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.metLocked()
}

func (f *fakeModel) metLocked() chan struct{} {
	if f.met == nil {
		f.met = make(chan struct{})
	}
	return f.met
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (f *fakeModel) startCount(token string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.starts[token]
}

type runEnv struct {
	t       *testing.T
	dir     string
	volumes string
	srv     *llmtest.Server
	key     string // OPENAI_API_KEY given to planagent
	env     []string
	// attempts records the attempt containers of a run in containers
	// (nil for the local runtime): see assertAttemptContainers.
	attempts *containerWatch
	// cred, when set, runs planagent as that user, e.dir given to it
	// before each run (asUser).
	cred *syscall.Credential
}

// newRunEnv starts the fake model's server (opts: e.g. llmtest.WithAddr so
// that a container reaches it) and a fresh volumes dir.
func newRunEnv(t *testing.T, f *fakeModel, opts ...llmtest.Option) *runEnv {
	t.Helper()
	processE2E(t)
	buildPrograms(t)
	f.starts = map[string]int{}
	srv := llmtest.New(t, opts...)
	srv.Handle(f.handle)
	dir := t.TempDir()
	return &runEnv{t: t, dir: dir, volumes: filepath.Join(dir, "volumes"), srv: srv, key: "test-key"}
}

func (e *runEnv) command(args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(binDir, "planagent"), args...)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(),
		"OPENAI_API_KEY="+e.key, "OPENAI_BASE_URL="+e.srv.URL, "OPENAI_MODEL=test-model",
		"CODEAGENT_VOLUMES_DIR="+e.volumes, "CODEAGENT_RUNTIME=local", "CODEAGENT_RETRIES=0")
	// Later entries win: tests add DOCKER_HOST and the like here.
	cmd.Env = append(cmd.Env, e.env...)
	if e.cred != nil {
		// What the test made there since is the user's too.
		if err := chownTree(e.dir, int(e.cred.Uid), int(e.cred.Gid)); err != nil {
			e.t.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: e.cred}
		cmd.Env = append(cmd.Env, "HOME="+e.dir)
	}
	return cmd
}

func chownTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

func (e *runEnv) run(args ...string) (string, string, int) {
	cmd := e.command(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("start planagent: %v", err)
	}
	// A hung run must fail the test with its output, not hang the suite.
	timer := time.AfterFunc(90*time.Second, func() { _ = cmd.Process.Signal(syscall.SIGQUIT) })
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

func (e *runEnv) read(rel string) string {
	b, err := os.ReadFile(filepath.Join(e.volumes, rel))
	if err != nil {
		e.t.Fatalf("read %s: %v", rel, err)
	}
	return string(b)
}

// toolResult is what the agent answered to the model's tool call whose
// arguments contain mark, as the model got it in its next request.
func (e *runEnv) toolResult(mark string) string {
	e.t.Helper()
	for _, req := range e.srv.Requests() {
		calls := map[string]bool{}
		for _, m := range req.Messages {
			for _, c := range m.ToolCalls {
				if strings.Contains(c.Function.Arguments, mark) {
					calls[c.ID] = true
				}
			}
			if m.Role == llm.RoleTool && calls[m.ToolCallID] {
				return m.Content
			}
		}
	}
	e.t.Fatalf("the model got no result of a tool call with %q", mark)
	return ""
}

func jsonEvents(t *testing.T, out string) []map[string]any {
	var evs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stdout line is not JSON: %q", line)
		}
		evs = append(evs, ev)
	}
	return evs
}

const threeTaskPlan = `{"title":"Greeting files","overview":"Write three files.","tasks":[
 {"id":"alpha","title":"Write hello","description":"TOKEN-ALPHA: write hello.txt","dependencies":[],"acceptance":["test -f hello.txt"]},
 {"id":"beta","title":"Combine","description":"TOKEN-BETA: write world.txt and combine","dependencies":["alpha"],"acceptance":["grep -q hello both.txt"]},
 {"id":"gamma","title":"Notes","description":"TOKEN-GAMMA: write notes.md","dependencies":[]}]}`

func threeTasks() []scriptTask {
	return []scriptTask{
		{token: "TOKEN-ALPHA", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "hello.txt", "content": "hello\n"})}},
		{token: "TOKEN-BETA", steps: []llmtest.ToolCall{
			llmtest.Call("write_file", map[string]any{"path": "world.txt", "content": "world\n"}),
			llmtest.Call("shell_exec", map[string]any{"command": "cat hello.txt world.txt > both.txt"}),
		}},
		{token: "TOKEN-GAMMA", steps: []llmtest.ToolCall{
			llmtest.Call("write_file", map[string]any{"path": "docs/notes.md", "content": "# Notes\n"}),
			// A model trying to read the API key out of the agent's environment.
			llmtest.Call("shell_exec", map[string]any{"command": "tr '\\0' '\\n' < /proc/$PPID/environ | grep OPENAI_API_KEY; echo searched"}),
		}},
	}
}

func TestE2ERunLocalThreeTasks(t *testing.T) {
	f := &fakeModel{plan: threeTaskPlan, tasks: threeTasks()}
	e := newRunEnv(t, f)
	// Some code in the workspace, so the planner and the agent get a repo map.
	if err := os.MkdirAll(filepath.Join(e.volumes, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.volumes, "workspace", "greet.go"), []byte("package greet\n\n// Greet says hello.\nfunc Greet(name string) string { return \"hello \" + name }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := e.run("run", "--yes", "--json", "write greeting files")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if got := e.read("workspace/both.txt"); got != "hello\nworld\n" {
		t.Errorf("both.txt = %q", got)
	}
	e.read("workspace/docs/notes.md")
	for _, id := range []string{"alpha", "beta", "gamma"} {
		rep := e.read("reports/" + id + ".md")
		if !strings.Contains(rep, "status: completed") {
			t.Errorf("report %s:\n%s", id, rep)
		}
		// The task context was written and archived with the run.
		if _, err := os.Stat(filepath.Join(e.volumes, "context", "task", id)); !os.IsNotExist(err) {
			t.Errorf("task context of %s not archived: %v", id, err)
		}
	}
	overview := e.read("context/project/project-overview.md")
	if !strings.Contains(overview, "write greeting files") || !strings.Contains(overview, "[X] alpha") {
		t.Errorf("project overview:\n%s", overview)
	}
	if s := e.read("reports/summary.md"); !strings.Contains(s, "3 completed") {
		t.Errorf("summary:\n%s", s)
	}
	var types []string
	count := map[string]int{}
	var runEnd map[string]any
	for _, ev := range jsonEvents(t, out) {
		typ := ev["type"].(string)
		types = append(types, typ)
		count[typ]++
		if typ == "run_end" {
			runEnd = ev
		}
	}
	for typ, want := range map[string]int{"plan_created": 1, "task_start": 3, "task_end": 3, "run_end": 1} {
		if count[typ] != want {
			t.Errorf("%d %s events, want %d: %v", count[typ], typ, want, types)
		}
	}
	// run_end carries the totals: every token of the run, agents included.
	if runEnd != nil {
		usage, _ := runEnd["usage"].(map[string]any)
		data, _ := runEnd["data"].(map[string]any)
		agent, _ := data["agent_tokens"].(map[string]any)
		planner, _ := data["planner_tokens"].(map[string]any)
		total, _ := usage["prompt"].(float64)
		a, _ := agent["prompt"].(float64)
		p, _ := planner["prompt"].(float64)
		if a == 0 || p == 0 || total != a+p || data["completed"] != float64(3) {
			t.Errorf("run_end totals: %v", runEnd)
		}
	}
	if r := e.srv.Rejections(); len(r) != 0 {
		t.Errorf("the strict server rejected requests: %v", r)
	}
	// The API key never lands in a file of the volumes, even when the model
	// goes looking for it.
	assertNoKey(t, e.volumes, e.key)
	if !strings.Contains(e.read("context/sessions/"+sessionFile(t, e.volumes, "gamma")), "searched") {
		t.Errorf("the key-hunting command did not run")
	}
	// The repo map reached the planner's prompt and the agent's system
	// prompt, and repo_map is offered to both.
	var plannerMap, agentMap bool
	for _, req := range e.srv.Requests() {
		all := ""
		for _, m := range req.Messages {
			all += m.Content
		}
		if !strings.Contains(all, "Repository map") || !strings.Contains(all, "func Greet(name string) string") || !hasTool(req, "repo_map") {
			continue
		}
		if hasTool(req, "create_plan") {
			plannerMap = true
		}
		if hasTool(req, "write_file") {
			agentMap = true
		}
	}
	if !plannerMap || !agentMap {
		t.Errorf("repo map in planner prompt: %v, in agent prompt: %v", plannerMap, agentMap)
	}
	for _, tok := range []string{"TOKEN-ALPHA", "TOKEN-BETA", "TOKEN-GAMMA"} {
		if n := f.startCount(tok); n != 1 {
			t.Errorf("%s started %d times, want 1", tok, n)
		}
	}
	// status prints the plan summary of the finished run.
	sout, _, scode := e.run("status")
	if scode != 0 || !strings.Contains(sout, "[X] beta") {
		t.Errorf("status exit %d:\n%s", scode, sout)
	}
}

func TestE2ERunLocalFailureSkipsDownstream(t *testing.T) {
	plan := `{"title":"Branches","overview":"Two branches.","tasks":[
 {"id":"bad","description":"TOKEN-BAD: this one cannot work","dependencies":[]},
 {"id":"after-bad","description":"TOKEN-AFTER: depends on bad","dependencies":["bad"]},
 {"id":"good","description":"TOKEN-GOOD: independent","dependencies":[]}]}`
	f := &fakeModel{plan: plan, tasks: []scriptTask{
		{token: "TOKEN-BAD", fail: true},
		{token: "TOKEN-AFTER", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "after.txt", "content": "x"})}},
		{token: "TOKEN-GOOD", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "good.txt", "content": "good"})}},
	}, decide: `{"action":"retry","reason":"transient","hints":["try again"]}`}
	e := newRunEnv(t, f)
	out, stderr, code := e.run("run", "--yes", "--max-retries", "1", "write the branches")
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if got := e.read("workspace/good.txt"); got != "good" {
		t.Errorf("good.txt = %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.volumes, "workspace", "after.txt")); !os.IsNotExist(err) {
		t.Errorf("after.txt exists: the downstream of a failed task ran")
	}
	sout, _, _ := e.run("status")
	for _, want := range []string{"[!] bad", "[-] after-bad", "[X] good"} {
		if !strings.Contains(sout, want) {
			t.Errorf("status lacks %q:\n%s", want, sout)
		}
	}
	var st struct {
		Tasks []struct {
			ID       string `json:"id"`
			Attempts int    `json:"attempts"`
		} `json:"tasks"`
		Decisions []struct{ Action string } `json:"decisions"`
	}
	runs, _ := filepath.Glob(filepath.Join(e.volumes, "runs", "*", "state.json"))
	if len(runs) != 1 {
		t.Fatalf("runs: %v", runs)
	}
	b, _ := os.ReadFile(runs[0])
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	for _, tk := range st.Tasks {
		if tk.ID == "bad" && tk.Attempts != 2 {
			t.Errorf("bad attempted %d times, want 2 (one retry)", tk.Attempts)
		}
	}
	if len(st.Decisions) != 2 || st.Decisions[0].Action != "retry" || st.Decisions[1].Action != "continue" {
		t.Errorf("decisions = %+v, want retry then continue (retries exhausted)", st.Decisions)
	}
}

func TestE2EKillAndResume(t *testing.T) {
	plan := `{"title":"Chain","overview":"A chain.","tasks":[
 {"id":"one","description":"TOKEN-ONE","dependencies":[]},
 {"id":"two","description":"TOKEN-TWO","dependencies":["one"]},
 {"id":"three","description":"TOKEN-THREE","dependencies":["two"]}]}`
	f := &fakeModel{plan: plan, started: make(chan string, 8), tasks: []scriptTask{
		{token: "TOKEN-ONE", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "one.txt", "content": "1"})}},
		{token: "TOKEN-TWO", delay: 1500 * time.Millisecond, steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "two.txt", "content": "2"})}},
		{token: "TOKEN-THREE", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "three.txt", "content": "3"})}},
	}}
	e := newRunEnv(t, f)
	cmd := e.command("run", "--yes", "build the chain")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill -9 once task two is being worked on.
	deadline := time.After(60 * time.Second)
	for tok := ""; tok != "TOKEN-TWO"; {
		select {
		case tok = <-f.started:
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("task two never started; stderr:\n%s", errb.String())
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()

	if b, err := exec.Command("find", e.volumes, "-name", "*.json").CombinedOutput(); err == nil {
		t.Logf("files: %s", b)
	}
	out, stderr, code := e.run("resume")
	if code != 0 {
		t.Fatalf("resume exit %d\nstdout:\n%s\nstderr:\n%s\nfirst run stderr:\n%s", code, out, stderr, errb.String())
	}
	t.Logf("resume stderr:\n%s", stderr)
	for _, name := range []string{"one.txt", "two.txt", "three.txt"} {
		e.read("workspace/" + name)
	}
	for _, tok := range []string{"TOKEN-ONE", "TOKEN-THREE"} {
		if n := f.startCount(tok); n != 1 {
			t.Errorf("%s started %d times, want exactly 1", tok, n)
		}
	}
	// Task two was in flight when planagent died: its watcher either
	// finished it (report read on resume) or it was interrupted and redone;
	// either way it completed exactly once.
	if !strings.Contains(e.read("reports/two.md"), "status: completed") {
		t.Errorf("two not completed")
	}
	if n := f.startCount("TOKEN-TWO"); n < 1 || n > 2 {
		t.Errorf("TOKEN-TWO started %d times", n)
	}
}

// A run started with --runtime local and --workspace elsewhere (without
// --yes: there is no terminal, so it does not ask), stopped with Ctrl-C
// (exit 130), resumes with that runtime and workspace without being told
// again. The environment says docker, at an engine that does not exist, so a
// resume that forgot the run's settings would exit 2.
func TestE2EInterruptAndResumeKeepsSettings(t *testing.T) {
	plan := `{"title":"Pair","overview":"Two files.","tasks":[
 {"id":"first","description":"TOKEN-FIRST","dependencies":[]},
 {"id":"second","description":"TOKEN-SECOND","dependencies":["first"]}]}`
	f := &fakeModel{plan: plan, started: make(chan string, 8), tasks: []scriptTask{
		{token: "TOKEN-FIRST", delay: time.Second, steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "first.txt", "content": "1"})}},
		{token: "TOKEN-SECOND", steps: []llmtest.ToolCall{llmtest.Call("write_file", map[string]any{"path": "second.txt", "content": "2"})}},
	}}
	e := newRunEnv(t, f)
	e.env = append(e.env, "CODEAGENT_RUNTIME=docker", "DOCKER_HOST=unix://"+filepath.Join(e.dir, "no-docker.sock"))
	ws := filepath.Join(e.dir, "project")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	// No --yes: without a terminal (stdin is not one here) run does not ask.
	cmd := e.command("run", "--runtime", "local", "--workspace", ws, "--max-retries", "0", "write the pair")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case tok := <-f.started:
		if tok != "TOKEN-FIRST" {
			t.Fatalf("first task started: %s", tok)
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the first task never started; stderr:\n%s", errb.String())
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("run after Ctrl-C: %v, want exit 130; stderr:\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "planagent resume run-") {
		t.Errorf("no hint how to resume; stderr:\n%s", errb.String())
	}
	if sout, _, _ := e.run("status"); !strings.Contains(sout, "(interrupted)") {
		t.Errorf("status after Ctrl-C:\n%s", sout)
	}
	if sout, _, _ := e.run("status", "--json"); !strings.Contains(sout, `"reason": "interrupted"`) {
		t.Errorf("status --json after Ctrl-C has no stop_reason interrupted:\n%s", sout)
	}

	out, stderr, code := e.run("resume")
	if code != 0 {
		t.Fatalf("resume exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	for _, name := range []string{"first.txt", "second.txt"} {
		if _, err := os.Stat(filepath.Join(ws, name)); err != nil {
			t.Errorf("%s not in the run's workspace: %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(e.volumes, "workspace", name)); err == nil {
			t.Errorf("%s was written to the default workspace", name)
		}
	}
	if n := f.startCount("TOKEN-SECOND"); n != 1 {
		t.Errorf("second task started %d times, want 1", n)
	}
}

// assertNoKey fails when any file under dir contains key.
func assertNoKey(t *testing.T, dir, key string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(key)) {
			t.Errorf("%s contains the API key", p)
		}
		return nil
	})
}

// sessionFile is the session file name of task id under volumes.
func sessionFile(t *testing.T, volumes, id string) string {
	t.Helper()
	// <run>--<id>.<attempt>.jsonl: an attempt in its own copy has its own.
	m, _ := filepath.Glob(filepath.Join(volumes, "context", "sessions", "*--"+id+".[0-9]*.jsonl"))
	if len(m) != 1 {
		t.Fatalf("session files of %s: %v", id, m)
	}
	return filepath.Base(m[0])
}

func TestE2EPlanCommand(t *testing.T) {
	t.Run("prints the validated plan as JSON", func(t *testing.T) {
		f := &fakeModel{plan: threeTaskPlan, tasks: threeTasks()}
		e := newRunEnv(t, f)
		out, stderr, code := e.run("plan", "--json", "write greeting files")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		var p struct {
			Title string `json:"title"`
			Tasks []struct {
				ID           string   `json:"id"`
				Dependencies []string `json:"dependencies"`
			} `json:"tasks"`
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("stdout is not the plan JSON: %v\n%s", err, out)
		}
		if p.Title != "Greeting files" || len(p.Tasks) != 3 || p.Tasks[1].Dependencies[0] != "alpha" {
			t.Errorf("plan = %+v", p)
		}
		// plan only plans: nothing dispatched, no run recorded.
		if runs, _ := filepath.Glob(filepath.Join(e.volumes, "runs", "*")); len(runs) != 0 {
			t.Errorf("plan created runs: %v", runs)
		}
	})
	t.Run("a plan the model cannot fix exits 2 naming the problem", func(t *testing.T) {
		cyclic := `{"title":"loop","tasks":[{"id":"a","description":"A","dependencies":["b"]},{"id":"b","description":"B","dependencies":["a"]}]}`
		f := &fakeModel{plan: cyclic}
		e := newRunEnv(t, f)
		_, stderr, code := e.run("plan", "loop forever")
		if code != 2 || !strings.Contains(stderr, "a -> b -> a") {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
		if r := e.srv.Rejections(); len(r) != 0 {
			t.Errorf("rejections: %v", r)
		}
	})
}

// Without an API key, run and resume stop at once, exit 2, naming the
// variable: no runtime check, no checkpoint repository, no model call.
func TestE2ERunWithoutAPIKey(t *testing.T) {
	f := &fakeModel{plan: chainPlan, tasks: chainTasks()}
	e := newRunEnv(t, f)
	e.key = ""
	for _, args := range [][]string{{"run", "--yes", "three steps"}, {"resume"}} {
		_, stderr, code := e.run(args...)
		if code != 2 || !strings.Contains(stderr, "no API key: set OPENAI_API_KEY") {
			t.Errorf("%s: exit %d, want 2 naming OPENAI_API_KEY\n%s", args[0], code, stderr)
		}
	}
	if _, err := os.Stat(e.volumes); !os.IsNotExist(err) {
		t.Error("a run without a key made the volumes directory")
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("the model was called %d times without a key", n)
	}
}

// The commands that only read the volumes (status, runs, graph, diff,
// rollback) leave no volumes directory behind where there was none.
func TestE2EReadingCommandsMakeNoVolumes(t *testing.T) {
	e := newRunEnv(t, &fakeModel{})
	for _, args := range [][]string{{"status"}, {"runs"}, {"graph"}, {"diff"}, {"rollback", "--start"}} {
		_, stderr, code := e.run(args...)
		if (code != 2 && code != 0) || (code == 2 && !strings.Contains(stderr, "no run")) {
			t.Errorf("%v: exit %d\n%s", args, code, stderr)
		}
	}
	if _, err := os.Stat(e.volumes); !os.IsNotExist(err) {
		t.Error("a reading command made the volumes directory")
	}
}
