//go:build e2e

package main

import (
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llmtest"
)

// A project whose acceptance command needs an ignored .env and a file its
// setup command generates: with the .env named in .worktreeinclude and
// setup_command set, the agent's shell sees both in its copy, acceptance
// passes, and neither enters the task's commit; without the include the
// acceptance fails; a failing setup fails the attempt with its tail.
func TestE2ECheckpointsIgnoredFilesAndSetupCommand(t *testing.T) {
	ignoredFilesAndSetupCommand(t, localRuntime)
}

func TestE2EDockerCheckpointsIgnoredFilesAndSetupCommand(t *testing.T) {
	dockerE2E(t)
	ignoredFilesAndSetupCommand(t, dockerRuntime)
}

func ignoredFilesAndSetupCommand(t *testing.T, rt e2eRuntime) {
	const setup = "mkdir -p gen && echo generated-by-setup > gen/setup.txt"
	for _, tc := range []struct {
		name     string
		include  bool
		setup    string
		wantCode int
		wantErr  []string // in the failure line
	}{
		{name: "with the include", include: true, setup: setup},
		{name: "without the include", setup: setup, wantCode: 1, wantErr: []string{"acceptance command", "exited 2: grep: .env: No such file or directory"}},
		{name: "a failing setup", include: true, setup: "echo the-setup-broke >&2; exit 3", wantCode: 1,
			wantErr: []string{"setup command", "exit code: 3", "the-setup-broke"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := `{"title":"Env","overview":"x","tasks":[{"id":"env","title":"Use the env","description":"TOKEN-ENV: write ok.txt","dependencies":[],
			 "acceptance":["grep -q TOKEN=from-the-env-file .env && grep -q generated-by-setup gen/setup.txt && test -f ok.txt"]}]}`
			f := &fakeModel{plan: plan, tasks: []scriptTask{{token: "TOKEN-ENV", steps: []llmtest.ToolCall{
				llmtest.Call("shell_exec", map[string]any{"command": "cat .env gen/setup.txt; echo > ok.txt # see-setup"}),
			}}}}
			e := rt(t, f)
			ws := gitWorkspace(t, e)
			writeFile(t, ws, ".gitignore", "build/\n.env\ngen/\n")
			if tc.include {
				writeFile(t, ws, ".worktreeinclude", ".env\n")
			}
			gitIn(t, ws, "add", "-A")
			gitIn(t, ws, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-q", "-m", "ignore .env")
			writeFile(t, ws, ".env", "TOKEN=from-the-env-file\n")
			e.env = append(e.env, "CODEAGENT_SETUP_COMMAND="+tc.setup)

			out, stderr, code := e.run("run", "--yes", "--workspace", ws, "--max-retries", "0", "use the env")
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.wantCode, out, stderr)
			}
			if tc.wantCode != 0 {
				// The progress line is cut to the terminal's width; status
				// keeps the error's end, where the cause is.
				status, statusErr, _ := e.run("status", "--workspace", ws)
				for _, w := range tc.wantErr {
					if !strings.Contains(stderr+status+statusErr, w) {
						t.Errorf("the failure does not say %q:\n%s%s%s", w, stderr, status, statusErr)
					}
				}
				if tc.setup != setup && f.startCount("TOKEN-ENV") != 0 {
					t.Errorf("the agent started %d times after its setup failed", f.startCount("TOKEN-ENV"))
				}
				return
			}
			if tc.include {
				if !strings.Contains(stderr, "1 ignored file (") {
					t.Errorf("the run did not say what it copies into the copies:\n%s", stderr)
				}
			}
			seen := e.toolResult("see-setup")
			for _, w := range []string{"TOKEN=from-the-env-file", "generated-by-setup", "exit code: 0"} {
				if !strings.Contains(seen, w) {
					t.Errorf("the agent's shell did not see %q in its copy:\n%s", w, seen)
				}
			}
			if files := gitIn(t, ws, "show", "--name-only", "--format=", "HEAD"); files != "ok.txt" {
				t.Errorf("the task's commit holds %q, want ok.txt alone (never .env or gen/)", files)
			}
			if got := readFile(t, ws, ".env"); got != "TOKEN=from-the-env-file\n" {
				t.Errorf("the workspace's .env became %q", got)
			}
		})
	}
}
