package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/llmtest"
)

// runChatCmd runs `codingagent chat` with input on stdin (not a terminal).
func runChatCmd(t *testing.T, env map[string]string, input string, args ...string) (int, string, string) {
	t.Helper()
	f, out, errb := testFactory(env)
	f.IO.In = strings.NewReader(input)
	code := cmdutil.Main(f, NewCmdRoot(f), append([]string{"chat"}, args...))
	return code, out.String(), errb.String()
}

func TestChatCommandContinue(t *testing.T) {
	srv := llmtest.New(t)
	srv.Handle(memoryAware(func(req llmtest.Request) llmtest.Reply {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == llm.RoleTool:
			return llmtest.Text("Wrote note.txt.")
		case strings.Contains(last.Content, "write the note"):
			return llmtest.Calls(llmtest.Call("write_file", map[string]any{"path": "note.txt", "content": "n\n"}))
		}
		return llmtest.Text("You asked me to write the note.")
	}))
	vol, ws := t.TempDir(), t.TempDir()
	code, out, stderr := runChatCmd(t, execEnv(srv), "write the note\n/exit\n", "--volumes", vol, "--workspace", ws, "--approval", "auto_edit")
	if code != cmdutil.ExitOK || !strings.Contains(out, "Wrote note.txt.") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "note.txt")); err != nil {
		t.Errorf("note.txt: %v", err)
	}
	sessions, _ := filepath.Glob(filepath.Join(vol, "context", "sessions", "chat-*.jsonl"))
	if len(sessions) != 1 {
		t.Fatalf("sessions = %v", sessions)
	}
	code, out, stderr = runChatCmd(t, execEnv(srv), "what did I ask?\n", "--volumes", vol, "--workspace", ws, "--continue")
	if code != cmdutil.ExitOK || !strings.Contains(out, "messages restored") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	reqs := srv.Requests()
	var last llmtest.Request
	for _, r := range reqs {
		if !strings.HasPrefix(r.Messages[0].Content, "You maintain") {
			last = r
		}
	}
	found := false
	for _, m := range last.Messages {
		found = found || strings.Contains(m.Content, "Wrote note.txt.")
	}
	if !found {
		t.Errorf("the continued session's request lacks the first session")
	}
	if len(srv.Rejections()) > 0 {
		t.Fatalf("server rejections: %v", srv.Rejections())
	}
	if strings.Contains(out+stderr, execKey) {
		t.Error("the API key appeared in the output")
	}
}

func TestChatCommandUsageErrors(t *testing.T) {
	vol := t.TempDir()
	withKey := map[string]string{"OPENAI_API_KEY": "k"}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"no api key", nil, []string{"--volumes", vol}, "no API key"},
		{"bad approval", withKey, []string{"--volumes", vol, "--approval", "always"}, `approval mode "always" is not one of default, auto_edit, yolo`},
		{"unknown session", withKey, []string{"--volumes", vol, "--resume", "nope"}, "chat-nope.jsonl"},
		{"nothing to continue", withKey, []string{"--volumes", vol, "--continue"}, "found no chat session"},
		{"both", withKey, []string{"--volumes", vol, "--continue", "--resume", "x"}, "use one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runChatCmd(t, tt.env, "", tt.args...)
			if code != cmdutil.ExitUsage || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.want)
			}
		})
	}
}

// TestChatCommandRepoMapAndSecrets: the chat's system prompt carries the
// repo map and repo_map is offered (unless repo_map_tokens is 0), and a shell
// command that prints the API key puts only [redacted] into the session log.
func TestChatCommandRepoMapAndSecrets(t *testing.T) {
	for _, tt := range []struct {
		name    string
		tokens  string
		wantMap bool
	}{
		{"default budget", "", true},
		{"turned off", "0", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Handle(memoryAware(func(req llmtest.Request) llmtest.Reply {
				if req.Messages[len(req.Messages)-1].Role == llm.RoleTool {
					return llmtest.Text("Read it.")
				}
				return llmtest.Calls(llmtest.Call("shell_exec", map[string]any{"command": "cat settings.yaml"}))
			}))
			vol, ws := t.TempDir(), t.TempDir()
			files := map[string]string{
				"settings.yaml": "api_key: " + execKey + "\n",
				"shapes.go":     "package shapes\n\n// Area of a square.\nfunc SquareArea(side float64) float64 { return side * side }\n",
			}
			for name, body := range files {
				if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			env := execEnv(srv)
			if tt.tokens != "" {
				env["CODEAGENT_REPO_MAP_TOKENS"] = tt.tokens
			}
			code, out, stderr := runChatCmd(t, env, "show the settings\n", "--volumes", vol, "--workspace", ws, "--approval", "yolo")
			if code != cmdutil.ExitOK || !strings.Contains(out, "Read it.") {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
			}
			req := srv.Requests()[0]
			system := req.Messages[0].Content
			hasMap := strings.Contains(system, "## Repository map") && strings.Contains(system, "func SquareArea(side float64) float64")
			offered := false
			for _, tl := range req.Tools {
				offered = offered || tl.Function.Name == "repo_map"
			}
			if hasMap != tt.wantMap || offered != tt.wantMap {
				t.Errorf("repo map in the system prompt = %v, repo_map offered = %v; want %v\n%s", hasMap, offered, tt.wantMap, system)
			}
			logs, _ := filepath.Glob(filepath.Join(vol, "context", "sessions", "chat-*"))
			for _, p := range logs {
				if b, _ := os.ReadFile(p); strings.Contains(string(b), execKey) {
					t.Errorf("%s holds the API key", p)
				}
			}
			if strings.Contains(out+stderr, execKey) {
				t.Error("the API key appeared in the chat's output")
			}
			if len(srv.Rejections()) > 0 {
				t.Fatalf("server rejections: %v", srv.Rejections())
			}
		})
	}
}
