package volume

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLayout(t *testing.T) {
	root := t.TempDir()
	elsewhere := t.TempDir()
	t.Chdir(root)
	tests := []struct {
		name, root, workspace string
		wantWorkspace         string
	}{
		{name: "relative root is made absolute", root: "volumes", wantWorkspace: filepath.Join(root, "volumes", "workspace")},
		{name: "workspace elsewhere", root: "volumes", workspace: elsewhere, wantWorkspace: elsewhere},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := New(tt.root, tt.workspace)
			if err != nil {
				t.Fatal(err)
			}
			if !filepath.IsAbs(l.Root) || l.Workspace() != tt.wantWorkspace {
				t.Fatalf("root %q workspace %q, want absolute and %q", l.Root, l.Workspace(), tt.wantWorkspace)
			}
			// The names the two programs and the README agree on.
			for got, want := range map[string]string{
				l.CommandFile("t1"):            "commands/t1.md",
				l.Claimed():                    "commands/.claimed",
				l.ReportFile("t1"):             "reports/t1.md",
				l.EventsFile("t1"):             "reports/t1.events.jsonl",
				l.Watchers():                   "reports/.watchers",
				l.Summary():                    "reports/summary.md",
				l.TaskContext("t1"):            "context/task/t1",
				l.ProjectContext():             "context/project",
				l.Memory():                     "context/memory.md",
				l.Sessions():                   "context/sessions",
				l.Run("run-1"):                 "runs/run-1",
				filepath.Join(l.Context(), ""): "context",
			} {
				rel, err := filepath.Rel(l.Root, got)
				if err != nil || rel != want {
					t.Errorf("%s is %q under the root, want %q", got, rel, want)
				}
			}
			if err := l.Ensure(); err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{l.ProjectContext(), l.Claimed(), l.Watchers(), l.Workspace(), l.Runs(), l.Sessions()} {
				if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
					t.Errorf("Ensure did not create %s: %v", d, err)
				}
			}
		})
	}
}

func TestEnsureNamesTheProblem(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := New(file, "")
	if err != nil {
		t.Fatal(err)
	}
	err = l.Ensure()
	if err == nil || !strings.Contains(err.Error(), "create volumes dir") || !strings.Contains(err.Error(), "not-a-dir") {
		t.Fatalf("Ensure over a file: %v", err)
	}
}

// AttemptOf reads back the task and attempt of an attempt's copy and of
// its acceptance copy, and nothing else.
func TestAttemptOf(t *testing.T) {
	l := Layout{Root: "/v"}
	tests := []struct {
		dir string
		id  string
		n   int
		ok  bool
	}{
		{dir: l.Attempt("r1", "build", 2), id: "build", n: 2, ok: true},
		{dir: l.Attempt("r1", "v1.2-api", 13) + AcceptSuffix, id: "v1.2-api", n: 13, ok: true},
		{dir: l.Attempt("r1", "build", 2) + "/", id: "build", n: 2, ok: true},
		{dir: l.Attempt("r2", "build", 2)},          // another run's
		{dir: l.Workspace()},                        // the shared workspace
		{dir: l.Attempt("r1", "build", 2) + "/sub"}, // inside a copy, not one
		{dir: "/v/attempts/r1/build"},               // no attempt number
		{dir: "/v/attempts/r1/build.0"},
		{dir: "/v/attempts/r1/.3"},
		{dir: "/v/attempts/r1/build.x.accept"},
	}
	for _, tt := range tests {
		id, n, ok := l.AttemptOf("r1", tt.dir)
		if id != tt.id || n != tt.n || ok != tt.ok {
			t.Errorf("AttemptOf(%q) = %q, %d, %v; want %q, %d, %v", tt.dir, id, n, ok, tt.id, tt.n, tt.ok)
		}
	}
}
