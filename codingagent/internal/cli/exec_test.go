package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
)

const execKey = "secret-exec-key"

func execEnv(srv *llmtest.Server) map[string]string {
	return map[string]string{"OPENAI_API_KEY": execKey, "OPENAI_BASE_URL": srv.URL, "OPENAI_MODEL": "m", "CODEAGENT_RETRIES": "0"}
}

// memoryAware answers the memory distillation request and passes the rest to f.
func memoryAware(f func(llmtest.Request) llmtest.Reply) func(llmtest.Request) llmtest.Reply {
	return func(req llmtest.Request) llmtest.Reply {
		if strings.HasPrefix(req.Messages[0].Content, "You maintain the long-term memory") {
			return llmtest.Text("- hello.txt holds the greeting.")
		}
		return f(req)
	}
}

func TestExecJSON(t *testing.T) {
	srv := llmtest.New(t)
	srv.Handle(memoryAware(func(req llmtest.Request) llmtest.Reply {
		if req.Messages[len(req.Messages)-1].Role == llm.RoleTool {
			return llmtest.Text("Created hello.txt.")
		}
		return llmtest.Calls(llmtest.Call("write_file", map[string]any{"path": "hello.txt", "content": "hi\n"}))
	}))
	vol, ws := t.TempDir(), t.TempDir()
	code, stdout, stderr := run(t, execEnv(srv), "exec", "Write hello.txt", "--volumes", vol, "--workspace", ws, "--json")
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if len(srv.Rejections()) > 0 {
		t.Fatalf("server rejections: %v", srv.Rejections())
	}
	if b, err := os.ReadFile(filepath.Join(ws, "hello.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("hello.txt = %q, %v", b, err)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var last map[string]any
	types := map[string]bool{}
	for _, line := range lines {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stdout line is not JSON: %q", line)
		}
		types[ev["type"].(string)] = true
		last = ev
	}
	for _, want := range []string{"task_start", "response_start", "tool_call", "tool_result", "response_end", "task_end"} {
		if !types[want] {
			t.Errorf("no %s event in %v", want, types)
		}
	}
	data, _ := last["data"].(map[string]any)
	if last["type"] != "task_end" || last["status"] != "completed" || data["answer"] != "Created hello.txt." ||
		!strings.HasPrefix(last["task_id"].(string), "exec-") {
		t.Errorf("last event = %v", last)
	}
	if files, _ := data["files_changed"].([]any); len(files) != 1 || files[0] != "hello.txt" {
		t.Errorf("files_changed = %v", data["files_changed"])
	}
	sessions, _ := filepath.Glob(filepath.Join(vol, "context", "sessions", "exec-*.jsonl"))
	if len(sessions) != 1 {
		t.Errorf("sessions = %v, want one exec session", sessions)
	}
	if b, err := os.ReadFile(filepath.Join(vol, "context", "memory.md")); err != nil || !strings.Contains(string(b), "greeting") {
		t.Errorf("memory.md = %q, %v", b, err)
	}
	if strings.Contains(stdout+stderr, execKey) {
		t.Error("the API key appears in the output")
	}
}

func TestExecTextReportWithFileReference(t *testing.T) {
	srv := llmtest.New(t)
	srv.Handle(memoryAware(func(req llmtest.Request) llmtest.Reply {
		if !strings.Contains(req.Messages[0].Content, "Always run the tests before you finish") {
			return llmtest.Text("the context file is not in the system prompt")
		}
		if strings.Contains(req.Messages[1].Content, `<File path="lib/util.go">`) &&
			strings.Contains(req.Messages[1].Content, "return 42") {
			return llmtest.Text("Foo returns 42.")
		}
		return llmtest.Text("the file was not attached")
	}))
	vol := t.TempDir()
	ws := filepath.Join(vol, "workspace") // the default workspace
	if err := os.MkdirAll(filepath.Join(ws, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "lib", "util.go"), []byte("package lib\nfunc Foo() int { return 42 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctxFile := filepath.Join(t.TempDir(), "rules.md")
	if err := os.WriteFile(ctxFile, []byte("Always run the tests before you finish.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, execEnv(srv), "exec", "What does Foo in @file:util.go return?", "--volumes", vol, "--context-file", ctxFile)
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"status: completed", "files changed: (none)", "tokens: ", "Foo returns 42."} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
}

func TestExecExitCodes(t *testing.T) {
	srv := llmtest.New(t)
	srv.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Status: 400} })
	ctxFile := filepath.Join(t.TempDir(), "ctx.md")
	if err := os.WriteFile(ctxFile, []byte("# Project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		want     int
		inStderr string
		inStdout string
	}{
		{name: "model refuses: failed", env: execEnv(srv), args: []string{"exec", "do it", "--context-file", ctxFile},
			want: cmdutil.ExitFailed, inStdout: "status: failed"},
		{name: "no api key", env: map[string]string{}, args: []string{"exec", "do it"},
			want: cmdutil.ExitUsage, inStderr: "no API key"},
		{name: "missing workspace", env: execEnv(srv), args: []string{"exec", "do it", "--workspace", "/nonexistent/ws"},
			want: cmdutil.ExitUsage, inStderr: "/nonexistent/ws"},
		{name: "missing context file", env: execEnv(srv), args: []string{"exec", "do it", "--context-file", "/nonexistent/ctx.md"},
			want: cmdutil.ExitUsage, inStderr: "--context-file"},
		{name: "empty goal", env: execEnv(srv), args: []string{"exec", "  "},
			want: cmdutil.ExitUsage, inStderr: "GOAL is empty"},
		{name: "no goal", env: execEnv(srv), args: []string{"exec"},
			want: cmdutil.ExitUsage, inStderr: "missing GOAL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(tt.args, "--volumes", t.TempDir())
			code, stdout, stderr := run(t, tt.env, args...)
			if code != tt.want || !strings.Contains(stderr, tt.inStderr) || !strings.Contains(stdout, tt.inStdout) {
				t.Fatalf("exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want %q)", code, tt.want, stdout, tt.inStdout, stderr, tt.inStderr)
			}
		})
	}
}

// TestExecModelServerUnusable: a server that cannot be reached, or refuses
// the key, URL or model on the first call, is the configuration (exit 2,
// with what to check); a server that refuses one request is a failed task.
func TestExecModelServerUnusable(t *testing.T) {
	strict := llmtest.New(t, llmtest.WithKey(execKey))
	strict.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text("never the right key") })
	down := llmtest.New(t)
	downURL := down.URL
	down.Close()
	env := func(edit map[string]string) map[string]string {
		e := execEnv(strict)
		for k, v := range edit {
			e[k] = v
		}
		return e
	}
	tests := []struct {
		name string
		env  map[string]string
		want int
		says string
	}{
		{name: "wrong key", env: env(map[string]string{"OPENAI_API_KEY": "sk-not-the-right-one"}),
			want: cmdutil.ExitUsage, says: "check OPENAI_API_KEY"},
		{name: "base URL without /v1", env: env(map[string]string{"OPENAI_BASE_URL": strings.TrimSuffix(strict.URL, "/v1")}),
			want: cmdutil.ExitUsage, says: "check OPENAI_BASE_URL"},
		{name: "server not running", env: env(map[string]string{"OPENAI_BASE_URL": downURL}),
			want: cmdutil.ExitUsage, says: "is the server running?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tt.env, "exec", "do it", "--volumes", t.TempDir())
			if code != tt.want || !strings.Contains(stdout, "status: failed") || !strings.Contains(stdout, tt.says) {
				t.Fatalf("exit %d (want %d)\nstdout %q (want %q)\nstderr %q", code, tt.want, stdout, tt.says, stderr)
			}
			if strings.Contains(stdout+stderr, "sk-not-the-right-one") {
				t.Error("the API key appears in the output")
			}
		})
	}
}

// TestExecReportsRetries: while the client waits to retry, the person sees why.
func TestExecReportsRetries(t *testing.T) {
	t.Parallel() // waits out the client's backoff (0.5–1 s); its environment is the factory's map, not the process's
	srv := llmtest.New(t)
	srv.Enqueue(llmtest.Reply{Status: 429, RetryAfter: "0.05"})
	srv.Handle(memoryAware(func(llmtest.Request) llmtest.Reply { return llmtest.Text("Done after a retry.") }))
	env := execEnv(srv)
	env["CODEAGENT_RETRIES"] = "2"
	code, stdout, stderr := run(t, env, "exec", "do it", "--volumes", t.TempDir())
	if code != cmdutil.ExitOK || !strings.Contains(stdout, "Done after a retry.") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "HTTP 429") || !strings.Contains(stderr, "retry 1 of 2 in ") {
		t.Errorf("stderr does not report the retry: %q", stderr)
	}
}

func TestExecInterrupted(t *testing.T) {
	srv := llmtest.New(t)
	f, stdout, _ := testFactory(execEnv(srv))
	root := NewCmdRoot(f)
	root.SetArgs([]string{"exec", "do it", "--volumes", t.TempDir()})
	root.SilenceErrors, root.SilenceUsage = true, true
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // Ctrl-C before the first model call
	err := root.ExecuteContext(ctx)
	if code := cmdutil.ExitCode(ctx, err); code != cmdutil.ExitInterrupted {
		t.Fatalf("exit %d (%v), want 130", code, err)
	}
	if !strings.Contains(stdout.String(), "status: interrupted") {
		t.Errorf("report = %q", stdout.String())
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d model requests after cancellation", n)
	}
}

// TestExecToolCallAsText: a server that leaves the model's tool call in the
// text (no tool parser) ends exec with exit 2 and the server setting to fix,
// not with the call taken for the final answer.
func TestExecToolCallAsText(t *testing.T) {
	for name, content := range map[string]string{
		"vllm hermes block": "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}\n</tool_call>",
		"llama.cpp json":    `{"name": "list_dir", "parameters": {"path": "."}}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text(content) })
			code, stdout, stderr := run(t, execEnv(srv), "exec", "read a.go", "--volumes", t.TempDir())
			if code != cmdutil.ExitUsage {
				t.Fatalf("exit %d, want %d\nstdout %q\nstderr %q", code, cmdutil.ExitUsage, stdout, stderr)
			}
			for _, want := range []string{"status: failed", "as text", "--enable-auto-tool-choice", "--jinja"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("report lacks %q:\n%s", want, stdout)
				}
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d model calls, want 1 (no retry of a configuration error)", n)
			}
		})
	}
}

// A local server serving less than the first request needs stops exec
// before any model call: exit 2 and the fix (here llama.cpp's slots).
func TestExecRefusesASmallLocalWindow(t *testing.T) {
	var chats atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/props": // llama.cpp's answer, cut to the fields read
			fmt.Fprint(w, `{"default_generation_settings":{"n_ctx":2048},"total_slots":2}`)
		case "/v1/chat/completions":
			chats.Add(1)
			http.Error(w, "not expected", http.StatusTeapot)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	env := map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_MODEL": "m"}
	code, stdout, stderr := run(t, env, "exec", "do it", "--volumes", t.TempDir())
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, "llama.cpp") || !strings.Contains(stderr, "-c 131072 --parallel 2") {
		t.Fatalf("exit %d (want 2)\nstdout %q\nstderr %q", code, stdout, stderr)
	}
	if n := chats.Load(); n != 0 {
		t.Errorf("%d chat requests", n)
	}
}

// exec --workspace DIR run from elsewhere keeps its sessions and memory
// outside both the current directory and the project: under
// $XDG_STATE_HOME/codeagent/workspaces/, one dir per project, found again
// by the next exec there.
func TestExecWithAWorkspaceLeavesTheCurrentDirectoryAlone(t *testing.T) {
	srv := llmtest.New(t)
	srv.Handle(memoryAware(func(llmtest.Request) llmtest.Reply { return llmtest.Text("Nothing to do.") }))
	cwd, ws, state := t.TempDir(), t.TempDir(), t.TempDir()
	t.Chdir(cwd)
	env := execEnv(srv)
	env["XDG_STATE_HOME"] = state
	for range 2 {
		code, _, stderr := run(t, env, "exec", "Say hello", "--workspace", ws)
		if code != cmdutil.ExitOK {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
	}
	if entries, _ := os.ReadDir(cwd); len(entries) != 0 {
		t.Errorf("exec wrote into the current directory: %v", entries)
	}
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Errorf("exec wrote into the project: %v", entries)
	}
	sessions, _ := filepath.Glob(filepath.Join(state, "codeagent", "workspaces", filepath.Base(ws)+"-*", "context", "sessions", "exec-*.jsonl"))
	if len(sessions) != 2 {
		t.Errorf("sessions under the state dir: %v, want the two execs' in one project dir", sessions)
	}
}

// An exec that fails (the model server refuses the key) writes nothing
// into the project either; without HOME or XDG_STATE_HOME a git project
// keeps the agent's state in its .git, where no commit takes it.
func TestExecStateStaysOutOfTheProject(t *testing.T) {
	srv := llmtest.New(t)
	srv.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Status: 401} })
	ws, state := t.TempDir(), t.TempDir()
	t.Chdir(t.TempDir())
	env := execEnv(srv)
	env["HOME"] = state
	if code, _, stderr := run(t, env, "exec", "Say hello", "--workspace", ws); code == cmdutil.ExitOK {
		t.Fatalf("exit 0 with a refused key: %s", stderr)
	}
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Errorf("a failed exec wrote into the project: %v", entries)
	}
	if err := os.Mkdir(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv.Handle(memoryAware(func(llmtest.Request) llmtest.Reply { return llmtest.Text("Nothing to do.") }))
	delete(env, "HOME")
	if code, _, stderr := run(t, env, "exec", "Say hello", "--workspace", ws); code != cmdutil.ExitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if entries, _ := os.ReadDir(ws); len(entries) != 1 {
		t.Errorf("the project holds %v, want only .git", entries)
	}
	if sessions, _ := filepath.Glob(filepath.Join(ws, ".git", "codeagent", "context", "sessions", "exec-*.jsonl")); len(sessions) != 1 {
		t.Errorf("sessions under .git/codeagent: %v, want one", sessions)
	}
}

// The top-level help names the settings a first run needs.
func TestHelpNamesTheModelSettings(t *testing.T) {
	code, stdout, stderr := run(t, nil, "--help")
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("codingagent --help does not name %s:\n%s", want, stdout)
		}
	}
}
