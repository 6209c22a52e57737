package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/cmdutil"
	"github.com/codeagent/codeagent/internal/volume"
)

// A comment on a file the task did not change is refused (exit 2, the
// task's files named); one on its own file is saved.
func TestCommentOnlyOnTheTasksChange(t *testing.T) {
	t.Parallel()
	vol, ws, _, st := checkpointedRun(t, true)
	st.Info["a"].FilesChanged = []string{"a.txt"}
	l, err := volume.New(vol, ws)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Save(l, time.Now()); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runPlanagent(t, vol, ws, "comment", st.RunID, "a", "b.txt:1", "make it louder")
	if code != cmdutil.ExitUsage || !strings.Contains(errOut, "task a did not change b.txt") || !strings.Contains(errOut, "a.txt") {
		t.Errorf("comment on another task's file: exit %d, %q", code, errOut)
	}
	code, _, errOut = runPlanagent(t, vol, ws, "comment", st.RunID, "a", "a.txt:1", "make it louder")
	if code != 0 || !strings.Contains(errOut, "comment 1 on a a.txt:1 saved") {
		t.Errorf("comment on the task's file: exit %d, %q", code, errOut)
	}
}
