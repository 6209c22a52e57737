package runrecord

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/planspec"
	"github.com/codeagent/codeagent/internal/tokens"
	"github.com/codeagent/codeagent/internal/volume"
)

func newLayout(t testing.TB) volume.Layout {
	l, err := volume.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	return l
}

func newTestState(t testing.TB, tasks ...planspec.Task) *State {
	p := &planspec.Plan{Title: "test", Overview: "a test plan", Tasks: tasks}
	st, err := NewState("run-test-1", "the goal", p, tokens.Usage{Prompt: 100, Completion: 20}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// chain is n tasks, each depending on the one before.
func chain(n int) []planspec.Task {
	tasks := make([]planspec.Task, n)
	for i := range tasks {
		id := benchID(i)
		tasks[i] = planspec.Task{ID: id, Description: "task " + id, Dependencies: []string{}}
		if i > 0 {
			tasks[i].Dependencies = []string{benchID(i - 1)}
		}
	}
	return tasks
}

// A corrupt state.json is named, not skipped: skipping it would say "no
// runs" or resume an older run without a word.
func TestLatestRunNamesACorruptState(t *testing.T) {
	for _, withOlder := range []bool{false, true} {
		l := newLayout(t)
		if withOlder {
			older := newTestState(t, chain(1)...)
			older.RunID = "run-20260101-000000-aaaa"
			if err := older.Save(l, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		corrupt := l.Run("run-20261122-000000-bbbb") + "/state.json"
		if err := os.MkdirAll(filepath.Dir(corrupt), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(corrupt, []byte(`{"run_id": "run-20261122-000000-bbbb", "tasks": [`), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, unfinished := range []bool{false, true} {
			st, err := LoadState(l, "", unfinished)
			if err == nil || !strings.Contains(err.Error(), corrupt) || !strings.Contains(err.Error(), "corrupt") {
				t.Errorf("older run %v, unfinished %v: got %v, %v; want an error naming %s", withOlder, unfinished, st, err, corrupt)
			}
		}
	}
}

func benchID(i int) string { return fmt.Sprintf("t%05d", i) }
