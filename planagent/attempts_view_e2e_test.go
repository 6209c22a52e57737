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
// its acceptance, whose second passed and was ranked second (kept as its
// ref) and whose third was merged, served by planagent ui. Each card says
// its rank, how its acceptance commands ended and where a loser is kept.
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
	st.Tasks[0].Status, st.Tasks[0].Attempts, st.Tasks[0].Result = taskgraph.Completed, 3, "parser written"
	loserRef := "refs/codeagent/" + runID + "/parse/attempt-2"
	st.Info["parse"] = &runrecord.TaskInfo{Attempt: 3, Results: []runrecord.AttemptResult{
		{Attempt: 1, Status: "failed", Error: `acceptance command "go test ./parser" exited 1: want 7, got 6`,
			Acceptance: "$ go test ./parser\nFAIL: want 7, got 6\n(exit 1)\n", Ref: "refs/codeagent/" + runID + "/parse/attempt-1",
			Tokens: protocol.Tokens{Prompt: 1200, Completion: 300}, Duration: 4 * time.Second},
		{Attempt: 2, Status: "passed", Rank: 2, Hinted: true, Acceptance: "$ go test ./parser\nok parser 0.2s\n(exit 0)\n", Ref: loserRef,
			Tokens: protocol.Tokens{Prompt: 900, Completion: 200}, Duration: 3 * time.Second},
		{Attempt: 3, Status: "completed", Rank: 1, Acceptance: "$ go test ./parser\nok parser 0.1s\n(exit 0)\n",
			Tokens: protocol.Tokens{Prompt: 700, Completion: 100}, Duration: 2 * time.Second},
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
	dom := page.waitFor(`document.querySelectorAll('#detail-attempts .attempt').length === 3`)
	for _, want := range []string{
		`data-attempt="1" data-status="failed" data-rank="0" data-acceptance="failed (exit 1)" data-ref="refs/codeagent/` + runID + `/parse/attempt-1"`,
		`data-attempt="2" data-status="passed" data-rank="2" data-acceptance="passed" data-ref="` + loserRef + `"`,
		`data-attempt="3" data-status="completed" data-rank="1" data-acceptance="passed" data-ref=""`,
		"Attempt 1: failed",
		"Attempt 2: passed, rank 2",
		"Attempt 3: merged (rank 1)",
		"want 7, got 6",
		"acceptance failed (exit 1)",
		"acceptance passed",
		"kept as <code>" + loserRef + "</code>",
		"told why the previous attempt failed",
		"tokens 1200/300",
		"tokens 700/100",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the attempts panel lacks %s\n%s", want, dom)
		}
	}
	// The merged one is outlined, and only it.
	page.waitFor(`[...document.querySelectorAll('#detail-attempts .attempt.winner')].map(e => e.dataset.attempt).join(",") === "3"`)
	// The acceptance output is one click away: open attempt 2's.
	page.eval(`document.querySelector('#detail-attempts [data-attempt="2"] details.acceptance').open = true`)
	page.waitFor(`document.querySelector('#detail-attempts [data-attempt="2"] details.acceptance pre').getBoundingClientRect().height > 0 &&
		document.querySelector('#detail-attempts [data-attempt="2"] details.acceptance pre').textContent.includes("ok parser 0.2s")`)
	// Side by side: the three cards share a row, left to right.
	page.waitFor(`(() => { const c = [...document.querySelectorAll('#detail-attempts .attempt')].map(e => e.getBoundingClientRect());
		return c[0].top === c[1].top && c[1].top === c[2].top && c[0].left < c[1].left && c[1].left < c[2].left })()`)
}
