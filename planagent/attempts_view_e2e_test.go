//go:build e2e

package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/poll"
	"github.com/codeagent/codeagent/internal/protocol"
	"github.com/codeagent/codeagent/internal/volume"
	"github.com/codeagent/codeagent/planagent/internal/plan"
	"github.com/codeagent/codeagent/planagent/internal/runrecord"
	"github.com/codeagent/codeagent/planagent/internal/taskgraph"
)

// The web view shows a task's attempts side by side with their verdicts,
// in the real browser: a run record of a task whose first attempt failed
// its acceptance and whose second was merged, served by planagent ui.
func TestE2EViewAttemptsSideBySide(t *testing.T) {
	processE2E(t)
	exe := chromium(t)
	buildPrograms(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := volume.New(filepath.Join(dir, "volumes"), ws)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Add(-time.Minute)
	p := &plan.Plan{Title: "parser", Tasks: []plan.Task{{ID: "parse", Description: "write the parser", Acceptance: []string{"go test ./parser"}, Attempts: 3}}}
	const runID = "run-20261128-040000-0001"
	st, err := runrecord.NewState(runID, "a parser", p, llm.Usage{}, now)
	if err != nil {
		t.Fatal(err)
	}
	st.Status = runrecord.RunCompleted
	st.Tasks[0].Status, st.Tasks[0].Attempts, st.Tasks[0].Result = taskgraph.Completed, 2, "parser written"
	st.Info["parse"] = &runrecord.TaskInfo{Attempt: 2, Results: []runrecord.AttemptResult{
		{Attempt: 1, Status: "failed", Error: `acceptance command "go test ./parser" exited 1: want 7, got 6`,
			Tokens: protocol.Tokens{Prompt: 1200, Completion: 300}, Duration: 4 * time.Second},
		{Attempt: 2, Status: "completed", Rank: 1, Hinted: true, Tokens: protocol.Tokens{Prompt: 900, Completion: 200}, Duration: 3 * time.Second},
	}}
	if err := st.Save(l, now.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}

	addr := freeAddr(t)
	ui := exec.Command(filepath.Join(binDir, "planagent"), "ui", "--addr", addr)
	ui.Dir = dir
	ui.Env = append(os.Environ(), "CODEAGENT_VOLUMES_DIR="+l.Root, "CODEAGENT_WORKSPACE_DIR="+ws, "OPENAI_API_KEY=unused")
	var uiErr bytes.Buffer
	ui.Stderr = &uiErr
	if err := ui.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = ui.Process.Signal(os.Interrupt)
		_ = ui.Wait()
	}()
	listening := poll.Wait(t.Context(), 30*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	if !listening {
		t.Fatalf("planagent ui does not listen on %s:\n%s", addr, uiErr.String())
	}
	page := startBrowser(t, exe, "http://"+addr+"/#"+runID)
	page.waitFor(`document.querySelector('#graph [data-task="parse"]')`)
	page.eval(`document.querySelector('#graph [data-task="parse"]').dispatchEvent(new MouseEvent("click"))`)
	dom := page.waitFor(`document.querySelectorAll('#detail-attempts .attempt').length === 2`)
	for _, want := range []string{
		`data-attempt="1" data-status="failed" data-rank="0"`,
		`data-attempt="2" data-status="completed" data-rank="1"`,
		"Attempt 1: failed",
		"Attempt 2: merged (rank 1)",
		"want 7, got 6",
		"told why the previous attempt failed",
		"tokens 1200/300",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the attempts panel lacks %s\n%s", want, dom)
		}
	}
	// Side by side: the two cards share a row.
	page.waitFor(`(() => { const c = document.querySelectorAll('#detail-attempts .attempt');
		return c[0].getBoundingClientRect().top === c[1].getBoundingClientRect().top && c[0].getBoundingClientRect().left < c[1].getBoundingClientRect().left })()`)
}
