//go:build e2e

package main

import (
	"strings"
	"testing"
)

// With no inotify instance to be had (the per-user limit taken by other
// programs: "couldn't initialize inotify: too many open files"), a run
// polls instead: it completes, and says so in one warning line, the
// watcher process told to poll rather than warn again.
func TestE2EInotifyExhaustedPolls(t *testing.T) {
	f := &fakeModel{plan: threeTaskPlan, tasks: threeTasks()}
	e := newRunEnv(t, f)
	e.env = []string{"CODEAGENT_FAILPOINT=inotify"}
	out, stderr, code := e.run("run", "--yes", "write greeting files")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	if got := e.read("workspace/both.txt"); got != "hello\nworld\n" {
		t.Errorf("both.txt = %q", got)
	}
	var warnings []string
	for line := range strings.SplitSeq(stderr, "\n") {
		if strings.Contains(line, "inotify") || strings.Contains(line, "fsnotify") || strings.Contains(line, "polling") {
			warnings = append(warnings, line)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "too many open files") || !strings.Contains(warnings[0], "polling instead") {
		t.Errorf("want one warning about polling, got %d:\n%s", len(warnings), strings.Join(warnings, "\n"))
	}
}
