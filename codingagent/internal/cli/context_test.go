package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/cmdutil"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestContextCommand(t *testing.T) {
	volumes := t.TempDir()
	writeFile(t, filepath.Join(volumes, "context", "project", "project-overview.md"), "PROJECT-FROM-VOLUMES\n")
	writeFile(t, filepath.Join(volumes, "context", "task", "t1", "task-context.md"), "TASK-FROM-VOLUMES\n")
	runtime := t.TempDir()
	writeFile(t, filepath.Join(runtime, "project", "project-overview.md"), "PROJECT-FROM-RUNTIME\n")
	templates := t.TempDir()
	writeFile(t, filepath.Join(templates, "global", "rules.md"), "GLOBAL-FROM-TEMPLATES\n")
	writeFile(t, filepath.Join(templates, "project", "project-overview.md"), "PROJECT-FROM-TEMPLATES\n")
	writeFile(t, filepath.Join(templates, "task", "task-context.md"), "TASK-FROM-TEMPLATES\n")
	out := filepath.Join(t.TempDir(), "combined.md")

	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string // substrings of stdout
		wantNot  []string
		wantErr  string
	}{
		{name: "no task id", args: []string{}, wantCode: cmdutil.ExitUsage, wantErr: "--task-id is required"},
		{name: "bad task id", args: []string{"--task-id", "../etc"}, wantCode: cmdutil.ExitUsage, wantErr: "--task-id: id \"../etc\""},
		{name: "templates dir missing", args: []string{"--task-id", "t1", "--templates", filepath.Join(templates, "nope")},
			wantCode: cmdutil.ExitUsage, wantErr: "not a readable directory"},
		{name: "volumes context over templates", args: []string{"--task-id", "t1", "--templates", templates},
			want: []string{"GLOBAL-FROM-TEMPLATES", "PROJECT-FROM-VOLUMES", "TASK-FROM-VOLUMES"}, wantNot: []string{"PROJECT-FROM-TEMPLATES", "TASK-FROM-TEMPLATES"}},
		{name: "runtime dir flag, task falls back to templates", args: []string{"--task-id", "t1", "--templates", templates, "--runtime-dir", runtime},
			want: []string{"GLOBAL-FROM-TEMPLATES", "PROJECT-FROM-RUNTIME", "TASK-FROM-TEMPLATES"}, wantNot: []string{"VOLUMES"}},
		{name: "embedded templates", args: []string{"--task-id", "t1"}, want: []string{"PROJECT-FROM-VOLUMES", "TASK-FROM-VOLUMES"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, nil, append([]string{"context", "--volumes", volumes}, tt.args...)...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantErr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, tt.wantCode, tt.wantErr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(stdout, w) {
					t.Errorf("output has %q:\n%s", w, stdout)
				}
			}
		})
	}

	t.Run("output file", func(t *testing.T) {
		args := []string{"context", "--volumes", volumes, "--task-id", "t1", "--templates", templates}
		_, want, _ := run(t, nil, args...)
		code, stdout, stderr := run(t, nil, append(args, "--output", out)...)
		if code != cmdutil.ExitOK || stdout != "" {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		got, err := os.ReadFile(out)
		if err != nil || string(got) != want {
			t.Fatalf("--output file = %q, %v; want what stdout shows: %q", got, err, want)
		}
	})
}

// `codingagent context` shows the workspace's AGENTS.md first in the
// project layer (CLAUDE.md when there is no AGENTS.md), from the default
// workspace or --workspace.
func TestContextShowsAgentsMD(t *testing.T) {
	volumes := t.TempDir()
	writeFile(t, filepath.Join(volumes, "context", "project", "project-overview.md"), "PROJECT-FROM-VOLUMES\n")
	writeFile(t, filepath.Join(volumes, "workspace", "AGENTS.md"), "# Conventions\n\nRun `make check` before you finish.\n")
	own := t.TempDir()
	writeFile(t, filepath.Join(own, "CLAUDE.md"), "Use tabs, never spaces.\n")

	code, stdout, stderr := run(t, nil, "context", "--volumes", volumes, "--task-id", "t1")
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	doc := strings.Index(stdout, "## [project] AGENTS.md (workspace)\n\n# Conventions\n\nRun `make check` before you finish.\n")
	overview := strings.Index(stdout, "PROJECT-FROM-VOLUMES")
	if doc < 0 || overview < doc {
		t.Errorf("AGENTS.md is not the project layer's first section:\n%s", stdout)
	}

	code, stdout, stderr = run(t, nil, "context", "--volumes", volumes, "--workspace", own, "--task-id", "t1")
	if code != cmdutil.ExitOK || !strings.Contains(stdout, "## [project] CLAUDE.md (workspace)\n\nUse tabs, never spaces.\n") || strings.Contains(stdout, "make check") {
		t.Errorf("with --workspace: exit %d, stderr %s, output:\n%s", code, stderr, stdout)
	}
}
