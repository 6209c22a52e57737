package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codeagent/codeagent/internal/llm"
	"github.com/codeagent/codeagent/internal/tools"
)

// The scripted session: 100 turns over 20 files of ~5 000 characters each
// (twice what the focused files hold), in the rhythm of real work: read a
// file, edit it, run a command, look something up in another file, read
// the edited file again. Files drop out of the focused set and come back,
// so every way a request is shaped takes part.
const (
	scriptFiles = 20
	scriptTurns = 100
)

// scriptedRequest is one request of the session, as sent and as the naive
// history (every message in full, no focused files) would be.
type scriptedRequest struct {
	shaped, naive int // tokens (chars/4)
	req           llm.Request
}

// scriptedSession runs the session against real files and the real tools
// and returns its requests: before each turn and after the last.
func scriptedSession(tb testing.TB) (*Agent, []scriptedRequest, []scriptCall) {
	tb.Helper()
	dir := tb.TempDir()
	writeScriptFiles(tb, dir)
	a, set := offlineAgent(tb, dir, "# Task script: rework the helpers of every file")
	var reqs []scriptedRequest
	measure := func() {
		shaped := a.buildRequest()
		naive := a.buildRequestWith(viewOpts{})
		reqs = append(reqs, scriptedRequest{shaped: llm.EstimateTokens(shaped.Messages), naive: llm.EstimateTokens(naive.Messages), req: shaped})
	}
	var script []scriptCall
	ctx := tb.Context()
	for turn := range scriptTurns {
		measure()
		c := scriptTurn(turn)
		script = append(script, c)
		raw, _ := json.Marshal(c.args)
		call := llm.ToolCall{ID: fmt.Sprintf("call_%d", turn), Name: c.name, Arguments: string(raw)}
		if err := a.appendMessage(llm.Message{Role: llm.RoleAssistant, Content: "Next step.", ToolCalls: []llm.ToolCall{call}}); err != nil {
			tb.Fatal(err)
		}
		res, err := tools.Call(ctx, set, c.name, string(raw))
		if err != nil {
			tb.Fatal(err)
		}
		if err := a.appendMessage(toolMessage(call.ID, res.Content)); err != nil {
			tb.Fatal(err)
		}
		if err := a.noteFiles(c.name, res.Files); err != nil {
			tb.Fatal(err)
		}
	}
	measure()
	return a, reqs, script
}

// writeScriptFiles writes the session's files into dir.
func writeScriptFiles(tb testing.TB, dir string) {
	tb.Helper()
	for i := range scriptFiles {
		var src strings.Builder
		fmt.Fprintf(&src, "package pkg%02d\n\n", i)
		for j := range 60 {
			fmt.Fprintf(&src, "func F%02d_%02d(x int) int { return x*%d + %d } // helper %d of file %d\n", i, j, j, i, j, i)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.go", i)), []byte(src.String()), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

type scriptCall struct {
	name string
	args map[string]any
	file int // the file the call is about (-1: none)
}

// scriptTurn is turn t: five turns per file k = t/5.
func scriptTurn(t int) scriptCall {
	k := t / 5
	path := func(i int) string { return fmt.Sprintf("f%02d.go", i%scriptFiles) }
	switch t % 5 {
	case 0:
		return scriptCall{"read_file", map[string]any{"path": path(k)}, k}
	case 1:
		return scriptCall{"edit_file", map[string]any{"path": path(k),
			"old_string": fmt.Sprintf("// helper %d of file %d\n", t%60, k), "new_string": fmt.Sprintf("// helper %d of file %d (reworked in turn %d)\n", t%60, k, t)}, k}
	case 2:
		return scriptCall{"shell_exec", map[string]any{"command": fmt.Sprintf("grep -c helper %s; seq 1 400; echo checked turn %d", path(k), t)}, -1}
	case 3:
		return scriptCall{"read_file", map[string]any{"path": path(k + 7)}, (k + 7) % scriptFiles}
	default:
		return scriptCall{"read_file", map[string]any{"path": path(k)}, k}
	}
}

// BenchmarkScriptedSession reports the tokens of the scripted 100-turn
// session: in total against the naive history, the largest ratio of one
// request to its naive counterpart, and the last request's ratio.
func BenchmarkScriptedSession(b *testing.B) {
	var reqs []scriptedRequest
	for b.Loop() {
		_, reqs, _ = scriptedSession(b)
	}
	shaped, naive, worst := 0, 0, 0.0
	for _, r := range reqs {
		shaped += r.shaped
		naive += r.naive
		worst = max(worst, float64(r.shaped)/float64(r.naive))
	}
	last := reqs[len(reqs)-1]
	b.ReportMetric(float64(shaped)/float64(naive), "total-ratio")
	b.ReportMetric(worst, "max-req-ratio")
	b.ReportMetric(float64(last.shaped)/float64(last.naive), "last-req-ratio")
	for _, i := range []int{10, 25, 50, 75} {
		b.ReportMetric(float64(reqs[i].shaped)/float64(reqs[i].naive), fmt.Sprintf("req%d-ratio", i))
	}
	b.ReportMetric(float64(shaped), "tokens-sent")
	b.ReportMetric(float64(naive), "tokens-naive")
}

// TestScriptedSessionTokens: no request of the scripted session is larger
// than the naive history, the whole session sends at most 45% of the naive
// tokens (35% when every request was shaped afresh, which broke the prompt
// cache each turn; see stableView), and the last request still carries
// what later turns need: the current content of the files in play, no
// stale version of an edited line after its edit, and every command's
// outcome.
func TestScriptedSessionTokens(t *testing.T) {
	a, reqs, script := scriptedSession(t)
	shaped, naive := 0, 0
	for i, r := range reqs {
		shaped += r.shaped
		naive += r.naive
		if r.shaped > r.naive {
			t.Errorf("request %d: %d tokens, more than the naive history's %d", i, r.shaped, r.naive)
		}
	}
	if ratio := float64(shaped) / float64(naive); ratio > 0.45 {
		t.Errorf("the session sent %d tokens, %.0f%% of the naive %d; want at most 45%%", shaped, 100*ratio, naive)
	}
	last := reqs[len(reqs)-1].req
	// texts[i] is message i and everything after it: what the model reads
	// as newer than message i.
	texts := make([]string, len(last.Messages)+1)
	calledAt := map[string]int{} // tool call id → its message
	for i := len(last.Messages) - 1; i >= 0; i-- {
		m := last.Messages[i]
		var b strings.Builder
		b.WriteString(m.Content)
		for _, c := range m.ToolCalls {
			b.WriteString(c.Arguments)
			calledAt[c.ID] = i
		}
		texts[i] = b.String() + texts[i+1]
	}
	all := texts[0]
	// The files of the last two groups of turns, current and complete.
	for _, k := range []int{18, 19, (18 + 7) % scriptFiles, (19 + 7) % scriptFiles} {
		data, err := os.ReadFile(filepath.Join(a.opts.Workspace.Root(), fmt.Sprintf("f%02d.go", k)))
		if err != nil {
			t.Fatal(err)
		}
		numbered, _ := numberLines(string(data))
		if !strings.Contains(all, strings.TrimSuffix(numbered, "\n")) {
			t.Errorf("the last request lacks the current content of f%02d.go", k)
		}
	}
	for turn, c := range script {
		switch c.name {
		case "edit_file":
			// The frozen part may show the line as it was before the edit,
			// but nothing after the edit may.
			at, ok := calledAt[fmt.Sprintf("call_%d", turn)]
			if !ok {
				at = 0 // condensed away: nothing may show the old line
			}
			if old := c.args["old_string"].(string); strings.Contains(texts[at], old) {
				t.Errorf("the last request shows f%02d.go's line before turn %d's edit after that edit: %q", c.file, turn, old)
			}
			if !strings.Contains(all, strings.TrimSuffix(c.args["new_string"].(string), "\n")) {
				t.Errorf("the last request lacks turn %d's edit of f%02d.go", turn, c.file)
			}
		case "shell_exec":
			if !strings.Contains(all, fmt.Sprintf("checked turn %d\n", turn)) {
				t.Errorf("the last request lacks the outcome of turn %d's command", turn)
			}
		}
	}
	t.Logf("session: %d of %d naive tokens (%.1f%%); last request %d of %d", shaped, naive, 100*float64(shaped)/float64(naive),
		reqs[len(reqs)-1].shaped, reqs[len(reqs)-1].naive)
}
